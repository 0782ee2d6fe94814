// Source dates, revalidation ages and stale counts, straight from a collection's tables.
#include "workers/store/source_freshness.hpp"

#include <array>
#include <unordered_set>
#include <utility>

#include "schema/freshness.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

constexpr std::string_view kMaxAgeKey = "max_age";
constexpr std::array<const char*, 3> kDatedTables{"graph_sources", "graph_staged_sources",
                                                  "documents"};

Result<bool> has_source_date(storage::sql::Connection& db, const char* table) {
    const bool sqlite = db.dialect() == storage::sql::Dialect::kSqlite;
    auto st =
        db.prepare(sqlite ? "SELECT count(*) FROM pragma_table_info(?1) WHERE name = 'source_date'"
                          : "SELECT count(*) FROM information_schema.columns WHERE table_schema = "
                            "current_schema() AND table_name = CAST(?1 AS TEXT) AND column_name = "
                            "'source_date'");
    if (!st) return st.error();
    st->bind(1, std::string_view{table});
    auto count = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!count) return count.error();
    return count->value_or(0) > 0;
}

// The tables that still lack the column.
Result<std::vector<const char*>> undated_tables(storage::sql::Connection& db) {
    std::vector<const char*> out;
    for (const char* table : kDatedTables) {
        auto has = has_source_date(db, table);
        if (!has) return has.error();
        if (!*has) out.push_back(table);
    }
    return out;
}

}  // namespace

Result<void> migrate_freshness(storage::sql::Connection& db) {
    auto undated = undated_tables(db);
    if (!undated) return undated.error();
    auto tx = storage::sql::Transaction::begin(db, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    if (auto r = db.exec(storage::sql::ddl_for(
            db.dialect(),
            "CREATE TABLE IF NOT EXISTS kb_settings(key TEXT PRIMARY KEY, value TEXT NOT NULL) "
            "WITHOUT ROWID"));
        !r) {
        return r;
    }
    if (!undated->empty()) {
        undated = undated_tables(db);  // another process may have migrated meanwhile
        if (!undated) return undated.error();
    }
    for (const char* table : *undated) {
        if (auto r = db.exec(std::string("ALTER TABLE ") + table +
                             " ADD COLUMN source_date TEXT NOT NULL DEFAULT ''");
            !r) {
            return r;
        }
    }
    return tx->commit();
}

Result<std::optional<std::chrono::seconds>> read_max_age(storage::sql::Connection& db) {
    auto st = db.prepare("SELECT value FROM kb_settings WHERE key = ?1");
    if (!st) return st.error();
    st->bind(1, kMaxAgeKey);
    auto value = st->first([](const storage::sql::Row& row) { return std::string(row.text(0)); });
    if (!value) return value.error();
    if (!*value) return std::optional<std::chrono::seconds>{};
    auto age = schema::parse_max_age(**value);
    if (!age) {
        return make_error(ErrorType::kInternal,
                          "collection settings: the stored " + age.error().message);
    }
    return std::optional<std::chrono::seconds>{*age};
}

Result<void> write_max_age(storage::sql::Connection& db,
                           std::optional<std::chrono::seconds> max_age) {
    if (!max_age) {
        auto st = db.prepare("DELETE FROM kb_settings WHERE key = ?1");
        if (!st) return st.error();
        st->bind(1, kMaxAgeKey);
        return st->run();
    }
    auto st = db.prepare(
        "INSERT INTO kb_settings(key, value) VALUES(?1, ?2) ON CONFLICT(key) DO UPDATE SET value "
        "= excluded.value");
    if (!st) return st.error();
    const std::string value = schema::format_max_age(*max_age);
    st->bind(1, kMaxAgeKey).bind(2, std::string_view{value});
    return st->run();
}

Result<FreshnessSummary> summarize_freshness(storage::sql::Connection& db,
                                             std::chrono::system_clock::time_point now) {
    FreshnessSummary out;
    auto max_age = read_max_age(db);
    if (!max_age) return max_age.error();
    if (!*max_age) return out;
    out.max_age = schema::format_max_age(**max_age);
    // Files and documents (kind 2 is a chunk: its document stands for it), each uri once.
    auto st = db.prepare(
        "SELECT uri, loaded_at, source_date FROM graph_sources WHERE kind <> 2 UNION ALL "
        "SELECT uri, loaded_at, source_date FROM documents");
    if (!st) return st.error();
    std::unordered_set<std::string> seen;
    auto read = st->each([&](const storage::sql::Row& row) {
        if (seen.emplace(row.text(0)).second &&
            schema::is_stale(row.text(1), row.text(2), **max_age, now)) {
            ++out.stale_sources;
        }
        return true;
    });
    if (!read) return read.error();
    return out;
}

void mark_freshness(std::vector<schema::FactSource>& sources,
                    std::optional<std::chrono::seconds> max_age,
                    std::chrono::system_clock::time_point now) {
    if (!max_age) return;
    const std::string age = schema::format_max_age(*max_age);
    for (auto& s : sources) {
        s.max_age = age;
        s.stale = schema::is_stale(s.loaded_at, s.date.value_or(""), *max_age, now);
    }
}

void mark_freshness(schema::Chunk& chunk, std::optional<std::chrono::seconds> max_age,
                    std::chrono::system_clock::time_point now) {
    if (!max_age) return;
    chunk.max_age = schema::format_max_age(*max_age);
    chunk.stale =
        schema::is_stale(chunk.loaded_at.value_or(""), chunk.date.value_or(""), *max_age, now);
}

}  // namespace glassbox::store
