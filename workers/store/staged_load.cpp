// Staged (bulk) loads of the graph store: staging batches, committing a load group by group
// through the quad feed, aborting, and dropping abandoned loads.
#include "workers/store/staged_load.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <unordered_map>
#include <utility>

#include "storage/feed_rows.hpp"
#include "workers/store/graph_labels.hpp"
#include "workers/store/graph_sources.hpp"
#include "workers/store/quad_sort.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using base::Result;
using schema::Triple;

namespace {

// A staged load untouched this long was abandoned (its client died): the next stage or commit
// drops it.
constexpr std::int64_t kStaleStagingSeconds = std::int64_t{24} * 60 * 60;
constexpr std::size_t kStagedQuadBytes = std::size_t{5} * 8;

Result<void> check_load_name(std::string_view load) {
    bool ok = !load.empty() && load.size() <= 64;
    for (const char c : load) {
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.');
    }
    if (ok) return {};
    return make_error(ErrorType::kInvalidRequest, "load \"" + std::string(load.substr(0, 80)) +
                                                      "\" is not a valid staged-load name: 1-64 of "
                                                      "A-Z a-z 0-9 _ - .");
}

std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Little-endian, so a file moved between machines still reads; `out` has room for 8 bytes.
void put_i64(char* out, std::int64_t value) {
    auto u = static_cast<std::uint64_t>(value);
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(out, &u, sizeof u);
    } else {
        for (int i = 0; i < 8; ++i, u >>= 8) out[i] = static_cast<char>(u & 0xFF);
    }
}

// Appends one staged quad (its four ids and the load's number of its source).
void put_quad(std::string& out, const std::array<std::int64_t, 5>& quad) {
    const std::size_t at = out.size();
    out.resize(at + kStagedQuadBytes);
    for (std::size_t i = 0; i < quad.size(); ++i) put_i64(out.data() + at + 8 * i, quad[i]);
}

std::int64_t get_i64(const std::byte* in) {
    std::uint64_t u = 0;
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(&u, in, sizeof u);  // one load instead of eight (a commit reads millions)
    } else {
        for (int i = 7; i >= 0; --i) u = (u << 8) | static_cast<std::uint64_t>(in[i]);
    }
    return static_cast<std::int64_t>(u);
}

// Removes a load's staged quads and sources.
Result<void> delete_staging(storage::sql::Connection& db, std::string_view load) {
    for (const char* sql : {"DELETE FROM graph_staged_quads WHERE load = ?1",
                            "DELETE FROM graph_staged_sources WHERE load = ?1"}) {
        auto del = db.prepare(sql);
        if (!del) return del.error();
        del->bind(1, load);
        if (auto r = del->run(); !r) return r.error();
    }
    return {};
}

// A single number a query reads (0 when it returns no row).
Result<std::int64_t> int64_or_zero(storage::sql::Statement& st) {
    auto value = st.first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!value) return value.error();
    return value->value_or(0);
}

// PostgreSQL: the keys of the three quad orders (their primary keys, and the named graphs'
// GSPO index). A first load into an empty collection drops them, writes the rows into bare heaps
// and builds them after (build_quad_keys): one sort and a bottom-up build per key instead of an
// insertion into three B-trees per quad, about half the time (bench_graph --postgres). The
// ALTERs lock the collection's quad tables until the commit ends; they held nothing to read.
struct QuadKey {
    const char* table;
    const char* columns;
};
constexpr std::array<QuadKey, 3> kQuadKeys{
    {{"graph_quads", "s, p, o, g"}, {"graph_pos", "p, o, s, g"}, {"graph_osp", "o, s, p, g"}}};

Result<void> drop_quad_keys(storage::sql::Connection& db) {
    std::string sql = "DROP INDEX graph_quads_gspo";
    for (const auto& key : kQuadKeys) {
        sql +=
            std::string("; ALTER TABLE ") + key.table + " DROP CONSTRAINT " + key.table + "_pkey";
    }
    return db.exec(sql);
}

Result<void> build_quad_keys(storage::sql::Connection& db) {
    // The sort of a key's rows in memory up to 256 MB (64 MB by default), for this transaction.
    std::string sql = "SET LOCAL maintenance_work_mem = '256MB'";
    for (const auto& key : kQuadKeys) {
        sql += std::string("; ALTER TABLE ") + key.table + " ADD CONSTRAINT " + key.table +
               "_pkey PRIMARY KEY (" + key.columns + ")";
    }
    sql += "; CREATE INDEX graph_quads_gspo ON graph_quads(g, s, p, o) WHERE g <> 0";
    return db.exec(sql);
}

}  // namespace

// Whether the commit of `load` into an empty graph writes its quads before their keys (and so
// dropped them here): on PostgreSQL, when the load is one commit group (a second group would
// look its quads up in SPO). A role that may not alter the tables, or keys named otherwise than
// the store names them, leave them in place: the commit is then only slower.
Result<bool> StagedLoads::drop_quad_keys_for(std::string_view load) {
    if (db_.dialect() != storage::sql::Dialect::kPostgres) return false;
    auto sizes = staged_sizes(load);
    if (!sizes) return sizes.error();
    const std::int64_t total = sizes->first;
    if (total == 0 || static_cast<std::uint64_t>(total) > std::max<std::size_t>(1, commit_group_))
        return false;
    if (auto r = db_.exec("SAVEPOINT quad_keys"); !r) return r.error();
    if (drop_quad_keys(db_)) {
        if (auto r = db_.exec("RELEASE SAVEPOINT quad_keys"); !r) return r.error();
        return true;
    }
    if (auto r = db_.exec("ROLLBACK TO SAVEPOINT quad_keys"); !r) return r.error();
    return false;
}

Result<void> StagedLoads::drop_stale_staging() {
    auto st = db_.prepare("SELECT DISTINCT load FROM graph_staged_quads WHERE staged_at < ?1");
    if (!st) return st.error();
    st->bind(1, unix_now() - kStaleStagingSeconds);
    auto stale = st->collect([](const storage::sql::Row& row) { return std::string(row.text(0)); });
    if (!stale) return stale.error();
    st->reset();
    for (const auto& load : *stale) {
        if (auto r = delete_staging(db_, load); !r) return r;
    }
    return {};
}

Result<std::uint64_t> StagedLoads::stage(std::string_view load, const SourceRecord& source,
                                         std::span<const Triple> triples) {
    if (auto r = check_load_name(load); !r) return r.error();
    if (auto r = check_source(source); !r) return r.error();
    auto batch = TermBatch::build(triples);
    if (!batch) return batch.error();
    return stage(load, source, *batch);
}

Result<std::uint64_t> StagedLoads::stage(std::string_view load, const SourceRecord& source,
                                         const TermBatch& batch) {
    if (auto r = check_load_name(load); !r) return r.error();
    if (auto r = check_source(source); !r) return r.error();
    auto tx = storage::sql::Transaction::begin(db_, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    const auto fail = [this](const base::Error& error) -> Result<std::uint64_t> {
        dictionary_
            .forget_cached_terms();  // ids cached meanwhile are rolled back with the transaction
        return error;
    };
    TermDictionary::KnownTermsScope known{dictionary_};
    if (auto r = dictionary_.sync_known_terms(); !r) return fail(r.error());
    auto n = register_source(load, source);
    if (!n) return fail(n.error());
    if (batch.size() > 0) {
        auto blob = quads_blob(batch, *n);
        if (!blob) return fail(blob.error());
        auto st = db_.prepare(
            // The id written out (largest + 1, as SQLite's rowid gives it): PostgreSQL's table
            // has no rowid, and batches commit in id order.
            "INSERT INTO graph_staged_quads(id, load, statements, staged_at, quads) VALUES((SELECT "
            "COALESCE(MAX(id), 0) + 1 FROM graph_staged_quads), ?1, ?2, ?3, ?4)");
        if (!st) return fail(st.error());
        st->bind(1, load)
            .bind(2, static_cast<std::int64_t>(batch.size()))
            .bind(3, unix_now())
            .bind_blob(4, std::string_view{*blob});
        if (auto r = st->run(); !r) return fail(r.error());
    }
    if (auto r = tx->commit(); !r) return fail(r.error());
    return static_cast<std::uint64_t>(batch.size());
}

Result<std::int64_t> StagedLoads::register_source(std::string_view load,
                                                  const SourceRecord& source) {
    // The load's number for this source (staged sources are registered at commit).
    std::int64_t n = 0;
    {
        auto st = db_.prepare("SELECT n FROM graph_staged_sources WHERE load = ?1 AND uri = ?2");
        if (!st) return st.error();
        st->bind(1, load).bind(2, std::string_view{source.uri});
        auto found = int64_or_zero(*st);
        if (!found) return found.error();
        n = *found;
    }
    if (n == 0) {
        auto count = db_.prepare("SELECT count(*) FROM graph_staged_sources WHERE load = ?1");
        if (!count) return count.error();
        count->bind(1, load);
        auto staged = int64_or_zero(*count);
        if (!staged) return staged.error();
        n = *staged + 1;
        if (n == 1) {
            count->reset();
            if (auto r = drop_stale_staging(); !r) return r.error();
        }
    }
    auto st = db_.prepare(
        "INSERT INTO graph_staged_sources(load, uri, n, kind, document_uri, tier, loaded_at, "
        "media_type, source_date) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(load, uri) DO UPDATE SET kind = "
        "excluded.kind, "
        "document_uri = excluded.document_uri, tier = excluded.tier, loaded_at = "
        "excluded.loaded_at, "
        "media_type = excluded.media_type, "
        // A file's date is found while it is read: a batch sent before it says none, and a
        // later batch's date is kept.
        "source_date = CASE WHEN excluded.source_date <> '' THEN excluded.source_date ELSE "
        "graph_staged_sources.source_date END");
    if (!st) return st.error();
    st->bind(1, load)
        .bind(2, std::string_view{source.uri})
        .bind(3, n)
        .bind(4, static_cast<std::int64_t>(source.kind))
        .bind(5, std::string_view{source.document_uri})
        .bind(6, static_cast<std::int64_t>(source.tier))
        .bind(7, std::string_view{source.loaded_at})
        .bind(8, std::string_view{source.media_type})
        .bind(9, std::string_view{source.source_date});
    if (auto r = st->run(); !r) return r.error();
    return n;
}

Result<std::string> StagedLoads::quads_blob(const TermBatch& batch, std::int64_t n) {
    std::string blob;
    blob.reserve(batch.size() * kStagedQuadBytes);
    if (batch.by_statement()) {
        TermDictionary::StatementMemo memo;
        for (const auto& triple : batch.triples()) {
            auto ids = dictionary_.intern_statement(triple, memo);
            if (!ids) return ids.error();
            put_quad(blob, {(*ids)[0], (*ids)[1], (*ids)[2], (*ids)[3], n});
        }
        return blob;
    }
    auto ids = dictionary_.intern_batch(batch);
    if (!ids) return ids.error();
    const auto id_of = [&ids](std::uint32_t at) {
        return at == TermBatch::kDefaultGraph ? std::int64_t{0} : (*ids)[at];
    };
    for (const auto& at : batch.statements()) {
        put_quad(blob, {id_of(at[0]), id_of(at[1]), id_of(at[2]), id_of(at[3]), n});
    }
    return blob;
}

Result<void> StagedLoads::abort(std::string_view load) {
    if (auto r = check_load_name(load); !r) return r.error();
    auto tx = storage::sql::Transaction::begin(db_, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    if (auto r = delete_staging(db_, load); !r) return r;
    return tx->commit();
}

Result<void> StagedLoads::retract_replaced_sources(
    std::string_view load, const std::unordered_map<std::int64_t, std::int64_t>& source_ids,
    KnowledgeChange& change) {
    std::unordered_map<std::int64_t, std::string> uris;
    {
        auto st = db_.prepare("SELECT n, uri FROM graph_staged_sources WHERE load = ?1");
        if (!st) return st.error();
        st->bind(1, load);
        auto named = st->each([&](const storage::sql::Row& row) {
            if (const auto id = source_ids.find(row.int64(0)); id != source_ids.end())
                uris.emplace(id->second, std::string(row.text(1)));
        });
        if (!named) return named.error();
    }
    StagedQuads quads;
    auto st = db_.prepare("SELECT statements, quads FROM graph_staged_quads WHERE load = ?1");
    if (!st) return st.error();
    st->bind(1, load);
    auto read = st->each([&](const storage::sql::Row& row) -> Result<void> {
        auto appended = append_staged_batch(row, load, source_ids, quads);
        if (!appended) return appended.error();
        return {};
    });
    if (!read) return read.error();
    st->reset();
    std::vector<StagedFact> staged;
    staged.reserve(quads.size());
    for (const auto& q : quads) staged.push_back({{q.s, q.p, q.o, q.g}, q.src});
    quads = {};
    change.kind = std::string(kChangeReplace);
    return retract_replaced(db_, dictionary_, staged, uris, change);
}

Result<InsertCounts> StagedLoads::commit(std::string_view load, KnowledgeChange* replace) {
    if (auto r = check_load_name(load); !r) return r.error();
    auto tx = storage::sql::Transaction::begin(db_, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    auto source_ids = register_staged_sources(load);
    if (!source_ids) return source_ids.error();
    if (replace) {
        if (auto r = retract_replaced_sources(load, *source_ids, *replace); !r) {
            dictionary_.forget_cached_terms();
            return r.error();
        }
    }
    bool fresh = false;  // no quad stored yet: the first group cannot meet a present one
    {
        auto st = db_.prepare("SELECT NOT EXISTS (SELECT 1 FROM graph_quads)");
        if (!st) return st.error();
        auto empty = int64_or_zero(*st);
        if (!empty) return empty.error();
        fresh = *empty == 1;
    }
    auto keys_after = fresh ? drop_quad_keys_for(load) : Result<bool>(false);
    if (!keys_after) return keys_after.error();
    InsertCounts counts;
    auto statements = commit_staged_quads(load, *source_ids, counts, fresh);
    if (!statements) return statements.error();
    if (*keys_after) {
        if (auto r = build_quad_keys(db_); !r) return r.error();
    }
    if (auto r = delete_staging(db_, load); !r) return r.error();
    if (auto r = drop_stale_staging(); !r) return r.error();
    // Even with nothing added: the load's sources were registered again (their dates).
    if (auto r = note_graph_change(db_); !r) return r.error();
    if (auto r = tx->commit(); !r) return r.error();
    counts.already_present = *statements - counts.added;
    return counts;
}

Result<std::unordered_map<std::int64_t, std::int64_t>> StagedLoads::register_staged_sources(
    std::string_view load) {
    std::unordered_map<std::int64_t, std::int64_t> source_ids;
    auto st = db_.prepare("SELECT n, " + std::string(kSourceColumns) +
                          " FROM graph_staged_sources WHERE load = ?1 ORDER BY n");
    if (!st) return st.error();
    st->bind(1, load);
    auto staged = st->collect([](const storage::sql::Row& row) {
        return std::pair<std::int64_t, SourceRecord>(row.int64(0), source_record_at(row, 1));
    });
    if (!staged) return staged.error();
    st->reset();
    for (const auto& [n, record] : *staged) {
        auto id = store_source(db_, record);
        if (!id) return id.error();
        source_ids.emplace(n, *id);
    }
    return source_ids;
}

Result<std::pair<std::int64_t, std::int64_t>> StagedLoads::staged_sizes(std::string_view load) {
    auto st = db_.prepare(
        "SELECT CAST(coalesce(sum(statements), 0) AS BIGINT), coalesce(max(statements), 0) FROM "
        "graph_staged_quads WHERE load = ?1");
    if (!st) return st.error();
    st->bind(1, load);
    auto sizes = st->first([](const storage::sql::Row& row) {
        return std::pair<std::int64_t, std::int64_t>(row.int64(0), row.int64(1));
    });
    if (!sizes) return sizes.error();
    return sizes->value_or(std::pair<std::int64_t, std::int64_t>{0, 0});
}

Result<std::size_t> StagedLoads::largest_group(std::string_view load) {
    auto sizes = staged_sizes(load);
    if (!sizes) return sizes.error();
    const auto [total, batch] = *sizes;
    // A group is written once it holds commit_group quads: it ends at most one batch past that.
    const std::size_t bound = std::max<std::size_t>(1, commit_group_) - 1 +
                              static_cast<std::size_t>(std::max<std::int64_t>(batch, 0));
    return std::min(static_cast<std::size_t>(std::max<std::int64_t>(total, 0)), bound);
}

Result<std::uint64_t> StagedLoads::commit_staged_quads(
    std::string_view load, const std::unordered_map<std::int64_t, std::int64_t>& source_ids,
    InsertCounts& counts, bool fresh) {
    std::uint64_t statements = 0;
    StagedQuads group;
    // Room for the largest group at once: growing it would copy every quad again (and double
    // its memory).
    auto most = largest_group(load);
    if (!most) return most.error();
    group.reserve(*most);
    auto st = db_.prepare_once(
        "SELECT statements, quads FROM graph_staged_quads WHERE load = ?1 ORDER BY id");
    if (!st) return st.error();
    st->bind(1, load);
    auto read = st->each([&](const storage::sql::Row& row) -> Result<void> {
        auto quads = append_staged_batch(row, load, source_ids, group);
        if (!quads) return quads.error();
        statements += *quads;
        if (group.size() >= std::max<std::size_t>(1, commit_group_)) {
            if (auto r = commit_group(group, counts, fresh); !r) return r;
            fresh = false;
        }
        return {};
    });
    if (!read) return read.error();
    if (auto r = commit_group(group, counts, fresh); !r) return r.error();
    return statements;
}

Result<std::uint64_t> StagedLoads::append_staged_batch(
    const storage::sql::Row& row, std::string_view load,
    const std::unordered_map<std::int64_t, std::int64_t>& source_ids, StagedQuads& group) {
    const auto bytes = row.blob(1);
    if (bytes.size() % kStagedQuadBytes != 0 ||
        bytes.size() / kStagedQuadBytes != static_cast<std::uint64_t>(row.int64(0))) {
        return make_error(ErrorType::kInternal, "graph store: a staged batch of load " +
                                                    std::string(load) + " is damaged");
    }
    // A batch's quads share one source: it is looked up when it changes, not per quad.
    std::int64_t number = 0;
    std::int64_t source_id = 0;
    for (std::size_t at = 0; at < bytes.size(); at += kStagedQuadBytes) {
        const std::byte* q = bytes.data() + at;
        if (const std::int64_t n = get_i64(q + 32); n != number || source_id == 0) {
            const auto source = source_ids.find(n);
            if (source == source_ids.end()) {
                return make_error(ErrorType::kInternal, "graph store: a staged quad of load " +
                                                            std::string(load) + " has no source");
            }
            number = n;
            source_id = source->second;
        }
        group.push_back({get_i64(q), get_i64(q + 8), get_i64(q + 16), get_i64(q + 24), source_id});
    }
    return static_cast<std::uint64_t>(bytes.size() / kStagedQuadBytes);
}

namespace {

using StagedQuad = StagedLoads::StagedQuad;
using StagedQuads = StagedLoads::StagedQuads;

bool same_quad(const StagedQuad& a, const StagedQuad& b) {
    return a.s == b.s && a.p == b.p && a.o == b.o && a.g == b.g;
}

// The end of the run of quads equal to group[i] (the group is sorted).
std::size_t run_end(const StagedQuads& group, std::size_t i) {
    std::size_t end = i + 1;
    while (end < group.size() && same_quad(group[i], group[end])) ++end;
    return end;
}

// Deduplicates the sorted group in place: the first of each run of equal quads (its lowest
// source) stays. Returns the further sources of the kept quads: (index in the group, source).
std::vector<std::pair<std::size_t, std::int64_t>> keep_first_of_each_run(StagedQuads& group) {
    std::vector<std::pair<std::size_t, std::int64_t>> links;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < group.size();) {
        const std::size_t end = run_end(group, i);
        for (std::size_t k = i + 1; k < end; ++k) {
            if (group[k].src != group[k - 1].src) links.emplace_back(kept, group[k].src);
        }
        group[kept++] = group[i];
        i = end;
    }
    group.resize(kept);
    return links;
}

// The graph held no quad before: every quad of the group is new, and SPO is written from the
// feed in one statement. The other two orders are sorted on a second core meanwhile (`orders`).
Result<void> write_fresh_group(storage::sql::Connection& db, StagedQuads& group,
                               InsertCounts& counts, std::future<SortedOrders>& orders) {
    const auto links = keep_first_of_each_run(group);
    // The group is only read from here until `orders` is done (commit_group clears it after).
    orders = std::async(std::launch::async, [rows = std::span<const StagedQuad>(group)] {
        QuadRows added;
        added.reserve(rows.size());
        for (const auto& q : rows) added.push_back({q.s, q.p, q.o, q.g});
        return sort_pos_and_osp(std::move(added));
    });
    storage::Int64RowFeed feed{
        reinterpret_cast<const std::int64_t*>(group.data()), group.size(), 5, {0, 1, 2, 3, 4}};
    auto n = storage::sql::run_with_row_feed(
        db, kQuadFeedTable,
        std::string("INSERT INTO graph_quads(s, p, o, g, src) SELECT c0, c1, c2, c3, c4 FROM ") +
            kQuadFeedTable,
        feed);
    if (!n) return n.error();
    if (static_cast<std::size_t>(*n) != group.size()) {
        return make_error(ErrorType::kInternal, "graph store: a staged commit wrote " +
                                                    std::to_string(*n) + " of " +
                                                    std::to_string(group.size()) + " new quads");
    }
    counts.added += group.size();
    for (const auto& [index, source] : links) {
        const StagedQuad& q = group[index];
        if (auto r = link_fact_source(db, q.s, q.p, q.o, q.g, source); !r) return r;
    }
    return {};
}

// The graph held quads before: each quad is inserted unless present, and every source of it
// other than its first is linked. The new quads go to `added`.
Result<void> write_group(storage::sql::Connection& db, const StagedQuads& group,
                         InsertCounts& counts, QuadRows& added) {
    auto insert_quad = db.prepare(
        "INSERT INTO graph_quads(s, p, o, g, src) VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT DO "
        "NOTHING");
    if (!insert_quad) return insert_quad.error();
    for (std::size_t i = 0; i < group.size();) {
        const std::size_t end = run_end(group, i);
        const StagedQuad& q = group[i];
        insert_quad->reset();
        insert_quad->bind(1, q.s).bind(2, q.p).bind(3, q.o).bind(4, q.g).bind(5, q.src);
        if (auto r = insert_quad->run(); !r) return r.error();
        std::int64_t first_source = q.src;
        if (db.changes() == 1) {
            ++counts.added;
            added.push_back({q.s, q.p, q.o, q.g});
        } else {
            auto stored = first_source_of(db, q.s, q.p, q.o, q.g);
            if (!stored) return stored.error();
            first_source = stored->value_or(q.src);
        }
        for (std::size_t k = i; k < end; ++k) {
            if (group[k].src == first_source || (k > i && group[k].src == group[k - 1].src))
                continue;
            const StagedQuad& more = group[k];
            if (auto r = link_fact_source(db, more.s, more.p, more.o, more.g, more.src); !r)
                return r;
        }
        i = end;
    }
    return {};
}

// PostgreSQL: the first source stored for each quad of the (deduplicated) group, 0 for a quad
// not stored, read by one statement per slice instead of an INSERT and a SELECT per quad (each a
// round trip to the server).
Result<std::vector<std::int64_t>> stored_first_sources(storage::sql::Connection& db,
                                                       const StagedQuads& group) {
    constexpr std::size_t kSlice = 20'000;
    static const std::string kSql =
        "SELECT f.k, q.src FROM unnest(?1::bigint[], ?2::bigint[], ?3::bigint[], ?4::bigint[]) "
        "WITH ORDINALITY AS f(s, p, o, g, k) JOIN graph_quads AS q ON q.s = f.s AND q.p = f.p "
        "AND q.o = f.o AND q.g = f.g";
    std::vector<std::int64_t> stored(group.size(), 0);
    std::array<std::string, 4> arrays;
    for (std::size_t first = 0; first < group.size(); first += kSlice) {
        const std::size_t last = std::min(group.size(), first + kSlice);
        for (auto& array : arrays) array = "{";
        for (std::size_t i = first; i < last; ++i) {
            const StagedQuad& q = group[i];
            const std::int64_t ids[4] = {q.s, q.p, q.o, q.g};
            for (std::size_t c = 0; c < 4; ++c) {
                if (i != first) arrays[c].push_back(',');
                detail::append_id(arrays[c], ids[c]);
            }
        }
        auto st = db.prepare(kSql);
        if (!st) return st.error();
        for (std::size_t c = 0; c < 4; ++c) {
            arrays[c].push_back('}');
            st->bind_static(static_cast<int>(c + 1), arrays[c]);
        }
        auto read = st->each([&](const storage::sql::Row& row) {
            const auto k = static_cast<std::size_t>(row.int64(0));  // 1-based in the slice
            if (k >= 1 && first + k - 1 < last) stored[first + k - 1] = row.int64(1);
        });
        if (!read) return read.error();
    }
    return stored;
}

// PostgreSQL's write_group: the same rows by a few statements per group. The group (sorted) is
// deduplicated; the quads not stored are written to SPO from the feed and go to `added`; every
// source of a quad other than its stored first one is linked, from the feed too.
Result<void> write_group_by_sets(storage::sql::Connection& db, StagedQuads& group,
                                 InsertCounts& counts, QuadRows& added) {
    auto links = keep_first_of_each_run(group);
    auto stored = stored_first_sources(db, group);
    if (!stored) return stored.error();
    StagedQuads fresh;
    StagedQuads linked;
    for (std::size_t i = 0; i < group.size(); ++i) {
        const StagedQuad& q = group[i];
        if ((*stored)[i] == 0) {
            fresh.push_back(q);
            added.push_back({q.s, q.p, q.o, q.g});
        } else if ((*stored)[i] != q.src) {
            linked.push_back(q);  // stored from another source first: this one is a further one
        }
    }
    for (const auto& [index, source] : links) {
        const StagedQuad& q = group[index];
        if (source != ((*stored)[index] == 0 ? q.src : (*stored)[index]))
            linked.push_back({q.s, q.p, q.o, q.g, source});
    }
    const auto feed_of = [](const StagedQuads& rows) {
        return storage::Int64RowFeed{
            reinterpret_cast<const std::int64_t*>(rows.data()), rows.size(), 5, {0, 1, 2, 3, 4}};
    };
    // Under the writer lock nothing else writes: a quad found absent above is still absent.
    auto n = storage::sql::run_with_row_feed(
        db, kQuadFeedTable,
        std::string("INSERT INTO graph_quads(s, p, o, g, src) SELECT c0, c1, c2, c3, c4 FROM ") +
            kQuadFeedTable,
        feed_of(fresh));
    if (!n) return n.error();
    if (static_cast<std::size_t>(*n) != fresh.size()) {
        return make_error(ErrorType::kInternal, "graph store: a commit wrote " +
                                                    std::to_string(*n) + " of " +
                                                    std::to_string(fresh.size()) + " new quads");
    }
    counts.added += fresh.size();
    auto linked_n = storage::sql::run_with_row_feed(
        db, kQuadFeedTable,
        std::string("INSERT INTO graph_fact_sources(s, p, o, g, source) SELECT c0, c1, c2, c3, c4 "
                    "FROM ") +
            kQuadFeedTable + " ON CONFLICT DO NOTHING",
        feed_of(linked));
    if (!linked_n) return linked_n.error();
    return {};
}

// One index order written from its sorted rows by one INSERT ... SELECT from the feed.
Result<void> write_order(storage::sql::Connection& db, const std::string& insert,
                         const QuadRows& rows,
                         std::array<std::size_t, storage::kRowFeedColumns> column_at) {
    storage::Int64RowFeed feed{reinterpret_cast<const std::int64_t*>(rows.data()), rows.size(), 4,
                               column_at};
    // The rows are the quads this commit added to SPO, so no order holds them yet. SQLite keeps
    // its guard against a conflict (WHERE true: it reads ON CONFLICT after a bare FROM as a
    // join's); PostgreSQL inserts plainly, sparing a speculative insertion per row.
    const bool lite = db.dialect() == storage::sql::Dialect::kSqlite;
    if (auto r = storage::sql::run_with_row_feed(
            db, kQuadFeedTable,
            insert + " SELECT c0, c1, c2, c3 FROM " + kQuadFeedTable +
                (lite ? " WHERE true ON CONFLICT DO NOTHING" : ""),
            feed);
        !r) {
        return r.error();
    }
    return {};
}

}  // namespace

// Writes one group of staged quads: SPO in key order (the first source of a new fact is its
// lowest source id, i.e. the load's first file that has it), links for every further source,
// then the new quads into POS and OSP, each sorted into its own key order and written by one
// INSERT ... SELECT from the feed. When the graph held no quad before (`fresh`), no quad of the
// group can be present, and SPO too is written from the feed.
Result<void> StagedLoads::commit_group(StagedQuads& group, InsertCounts& counts, bool fresh) {
    // The feed reads both as arrays of int64 rows.
    static_assert(sizeof(StagedQuad) == 5 * sizeof(std::int64_t));
    static_assert(sizeof(detail::Quad) == 4 * sizeof(std::int64_t));
    if (group.empty()) return {};
    sort_spo(group);
    QuadRows added;
    // When the group is all new, sorting the new quads into POS and OSP order runs beside the
    // SPO writes; an early return waits for it (the future's destructor).
    std::future<SortedOrders> orders;
    if (fresh) {
        if (auto r = write_fresh_group(db_, group, counts, orders); !r) return r;
    } else if (db_.dialect() == storage::sql::Dialect::kSqlite) {
        added.reserve(group.size());
        if (auto r = write_group(db_, group, counts, added); !r) return r;
    } else {
        added.reserve(group.size());
        if (auto r = write_group_by_sets(db_, group, counts, added); !r) return r;
    }
    // POS then OSP: sorted into the order's key, written by one statement each. The new quads
    // are in SPO order (the group's), which sort_pos_and_osp needs.
    const SortedOrders sorted = orders.valid() ? orders.get() : sort_pos_and_osp(std::move(added));
    group.clear();
    if (auto r = write_order(db_, "INSERT INTO graph_pos(p, o, s, g)", sorted.pos, {1, 2, 0, 3, 3});
        !r) {
        return r;
    }
    return write_order(db_, "INSERT INTO graph_osp(o, s, p, g)", sorted.osp, {2, 0, 1, 3, 3});
}

}  // namespace glassbox::store
