// Source records of the graph store: checking, registering and reading them.
#include "workers/store/graph_sources.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

#include "schema/freshness.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using base::Result;

std::string_view to_string(SourceKind kind) noexcept {
    switch (kind) {
        case SourceKind::kFile:
            return "file";
        case SourceKind::kDocument:
            return "document";
        case SourceKind::kChunk:
            return "chunk";
    }
    return "file";
}

Result<void> check_source(const SourceRecord& source) {
    if (source.uri.empty()) return make_error(ErrorType::kInvalidRequest, "source: empty uri");
    if (source.tier < 1 || source.tier > 4) {
        return make_error(
            ErrorType::kInvalidRequest,
            "source " + source.uri + ": tier " + std::to_string(source.tier) + " is not in 1..4");
    }
    if (source.kind == SourceKind::kChunk && source.document_uri.empty()) {
        return make_error(ErrorType::kInvalidRequest,
                          "source " + source.uri + ": a chunk needs its document_uri");
    }
    if (!source.source_date.empty() && !schema::parse_source_date_ms(source.source_date)) {
        return make_error(ErrorType::kInvalidRequest,
                          "source " + source.uri + ": date \"" + source.source_date +
                              "\" is neither an xsd:date nor an xsd:dateTime");
    }
    return {};
}

Result<std::int64_t> store_source(storage::sql::Connection& db, const SourceRecord& source) {
    if (auto r = check_source(source); !r) return r.error();
    auto st = db.prepare(
        // The id written out (largest + 1, as SQLite's rowid gives it), so both engines number
        // sources alike; on a conflict the stored row keeps its id.
        "INSERT INTO graph_sources(id, uri, kind, document_uri, tier, loaded_at, media_type, "
        "source_date) "
        "VALUES((SELECT COALESCE(MAX(id), 0) + 1 FROM graph_sources), ?1, ?2, ?3, ?4, ?5, ?6, ?7) "
        "ON CONFLICT(uri) DO UPDATE SET kind = excluded.kind, "
        "document_uri = excluded.document_uri, tier = excluded.tier, loaded_at = "
        "excluded.loaded_at, "
        "media_type = excluded.media_type, source_date = excluded.source_date RETURNING id");
    if (!st) return st.error();
    st->bind(1, std::string_view{source.uri})
        .bind(2, static_cast<std::int64_t>(source.kind))
        .bind(3, std::string_view{source.document_uri})
        .bind(4, static_cast<std::int64_t>(source.tier))
        .bind(5, std::string_view{source.loaded_at})
        .bind(6, std::string_view{source.media_type})
        .bind(7, std::string_view{source.source_date});
    auto id = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!id) return id.error();
    if (!*id)
        return make_error(ErrorType::kInternal, "graph store: registering a source returned no id");
    return **id;
}

SourceRecord source_record_at(const storage::sql::Row& row, int first) {
    SourceRecord record;
    record.uri = row.text(first);
    record.kind = static_cast<SourceKind>(std::clamp<std::int64_t>(row.int64(first + 1), 0, 2));
    record.document_uri = row.text(first + 2);
    record.tier = static_cast<std::uint32_t>(row.int64(first + 3));
    record.loaded_at = row.text(first + 4);
    record.media_type = row.text(first + 5);
    record.source_date = row.text(first + 6);
    return record;
}

Result<std::optional<std::int64_t>> first_source_of(storage::sql::Connection& db, std::int64_t s,
                                                    std::int64_t p, std::int64_t o,
                                                    std::int64_t g) {
    auto st =
        db.prepare("SELECT src FROM graph_quads WHERE s = ?1 AND p = ?2 AND o = ?3 AND g = ?4");
    if (!st) return st.error();
    st->bind(1, s).bind(2, p).bind(3, o).bind(4, g);
    return st->first([](const storage::sql::Row& row) { return row.int64(0); });
}

Result<void> link_fact_source(storage::sql::Connection& db, std::int64_t s, std::int64_t p,
                              std::int64_t o, std::int64_t g, std::int64_t source) {
    auto st = db.prepare(
        "INSERT INTO graph_fact_sources(s, p, o, g, source) VALUES(?1, ?2, ?3, ?4, ?5) ON "
        "CONFLICT DO NOTHING");
    if (!st) return st.error();
    st->bind(1, s).bind(2, p).bind(3, o).bind(4, g).bind(5, source);
    return st->run();
}

Result<std::vector<SourceRecord>> read_sources(storage::sql::Connection& db,
                                               std::span<const std::int64_t> ids) {
    std::vector<SourceRecord> out;
    auto st =
        db.prepare("SELECT " + std::string(kSourceColumns) + " FROM graph_sources WHERE id = ?1");
    if (!st) return st.error();
    for (const auto id : ids) {
        st->reset();
        st->bind(1, id);
        auto record =
            st->first([](const storage::sql::Row& row) { return source_record_at(row, 0); });
        if (!record) return record.error();
        if (*record) out.push_back(std::move(**record));
    }
    std::sort(out.begin(), out.end(), [](const SourceRecord& a, const SourceRecord& b) {
        return std::tie(a.tier, a.uri) < std::tie(b.tier, b.uri);
    });
    return out;
}

}  // namespace glassbox::store
