// Counting a collection as a whole, and finding a load in progress, straight from its tables.
#include "workers/store/collection_catalog.hpp"

#include <algorithm>
#include <array>
#include <map>

#include "workers/store/source_freshness.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

Result<std::uint64_t> count_of(storage::sql::Connection& db, const std::string& sql) {
    auto st = db.prepare(sql);
    if (!st) return st.error();
    auto count = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!count) return count.error();
    return static_cast<std::uint64_t>(count->value_or(0));
}

void put_tiers(const std::array<std::uint64_t, 5>& per_tier,
               std::map<std::string, std::uint64_t>& out) {
    for (std::size_t tier = 1; tier <= 4; ++tier) {
        if (per_tier[tier] > 0) out[std::to_string(tier)] = per_tier[tier];
    }
}

}  // namespace

Result<std::string> last_loaded(storage::sql::Connection& db) {
    // Both columns hold xsd:dateTime in UTC as the loaders write it, so text order is time order.
    auto st = db.prepare(
        "SELECT max(t) FROM (SELECT max(loaded_at) AS t FROM graph_sources UNION ALL "
        "SELECT max(loaded_at) FROM documents) AS d");
    if (!st) return st.error();
    auto last = st->first([](const storage::sql::Row& row) { return std::string(row.text(0)); });
    if (!last) return last.error();
    return std::move(*last).value_or(std::string());
}

Result<schema::CollectionSummary> summarize_collection(KnowledgeBase& kb,
                                                       std::chrono::system_clock::time_point now) {
    schema::CollectionSummary out;
    out.collection = kb.collection();
    const storage::sql::ReadScope snapshot(kb.db());
    // One scan of the SPO order each: at millions of facts, a fraction of a second.
    auto facts = count_of(kb.db(), "SELECT count(*) FROM graph_quads");
    if (!facts) return facts.error();
    out.facts = *facts;
    auto entities =
        count_of(kb.db(), "SELECT count(*) FROM (SELECT DISTINCT s FROM graph_quads) AS d");
    if (!entities) return entities.error();
    out.entities = *entities;
    auto documents = kb.documents().stats();
    if (!documents) return documents.error();
    out.documents = documents->documents;
    out.chunks = documents->chunks;
    put_tiers(documents->documents_per_tier, out.documents_per_tier);
    put_tiers(documents->chunks_per_tier, out.chunks_per_tier);
    out.entity_vectors = kb.entity_vectors().size();
    out.chunk_vectors = kb.chunk_vectors().size();
    out.bytes_on_disk = kb.bytes_on_disk();
    auto loaded = last_loaded(kb.db());
    if (!loaded) return loaded.error();
    out.last_loaded = std::move(loaded).value();
    auto freshness = summarize_freshness(kb.db(), now);
    if (!freshness) return freshness.error();
    out.max_age = std::move(freshness->max_age);
    out.stale_sources = freshness->stale_sources;
    return out;
}

Result<std::vector<StagedLoadActivity>> staged_loads_since(storage::sql::Connection& db,
                                                           std::int64_t since) {
    auto st = db.prepare(
        "SELECT load, max(staged_at) FROM graph_staged_quads GROUP BY load HAVING max(staged_at) "
        ">= ?1 "
        "ORDER BY load");
    if (!st) return st.error();
    st->bind(1, since);
    return st->collect([](const storage::sql::Row& row) {
        return StagedLoadActivity{std::string(row.text(0)), row.int64(1)};
    });
}

Result<void> refuse_if_loading(KnowledgeBase& kb, std::chrono::seconds idle,
                               std::chrono::system_clock::time_point now) {
    const std::int64_t now_s =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    auto active = staged_loads_since(kb.db(), now_s - idle.count());
    if (!active) return active.error();
    if (active->empty()) return {};
    const auto& load = active->front();
    const std::int64_t ago = std::max<std::int64_t>(0, now_s - load.last_staged);
    return make_error(ErrorType::kInvalidRequest,
                      "collection \"" + kb.collection() +
                          "\" has a load in progress (staged load " + load.load + ", last batch " +
                          std::to_string(ago) + " s ago): nothing was deleted; delete it after " +
                          "the load ends (a load that sends nothing for " +
                          std::to_string(idle.count()) + " s counts as abandoned)");
}

}  // namespace glassbox::store
