// The database side of the vector indexes (SQLite or PostgreSQL): schema, vector_meta, and the
// rows and tombstones every write stamps with its sequence number.
#include "workers/store/vector_rows.hpp"

#include "storage/feed_rows.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>

namespace glassbox::store::detail {

using base::ErrorType;
using base::make_error;
using base::Result;

std::string vector_table(IndexKind kind) {
    return kind == IndexKind::kEntity ? "vectors_entity" : "vectors_chunk";
}

std::string mismatch_message(std::string_view held_model, std::uint32_t held_dim,
                             std::string_view model, std::size_t dim) {
    return "index holds model " + std::string(held_model) + " dim " + std::to_string(held_dim) +
           "; got model " + std::string(model) + " dim " + std::to_string(dim);
}

namespace {

// The kind's tables in SQLite's words (ddl_for gives PostgreSQL's: BIGINT keys, BYTEA vectors).
std::string vector_tables_ddl(storage::sql::Dialect dialect, const std::string& table) {
    // seq: the write that last set the row (vector_meta.seq when it committed); a reader that has
    // seen up to N applies just the rows (and removals) with seq > N.
    return storage::sql::ddl_for(
        dialect,
        "CREATE TABLE IF NOT EXISTS vector_meta(kind TEXT PRIMARY KEY, model TEXT NOT NULL DEFAULT "
        "'', dim INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL DEFAULT 0, instance INTEGER NOT "
        "NULL);"
        "CREATE TABLE IF NOT EXISTS " +
            table +
            "(key INTEGER PRIMARY KEY, vector BLOB NOT NULL, seq INTEGER NOT NULL);"
            "CREATE INDEX IF NOT EXISTS " +
            table + "_seq ON " + table +
            "(seq);"
            "CREATE TABLE IF NOT EXISTS " +
            table +
            "_removed(key INTEGER PRIMARY KEY, seq INTEGER NOT NULL);"
            "CREATE INDEX IF NOT EXISTS " +
            table + "_removed_seq ON " + table + "_removed(seq);");
}

// PostgreSQL: true when the kind's tables and vector_meta row are there already, so opening an
// existing collection does not wait for the writer lock (a long load may hold it).
Result<bool> vector_tables_exist(storage::sql::Connection& db, IndexKind kind) {
    auto stmt = db.prepare_once(
        "SELECT to_regclass(?1) IS NOT NULL AND to_regclass(?2) IS NOT "
        "NULL AND EXISTS(SELECT 1 FROM vector_meta WHERE kind = ?3)");
    if (!stmt) return stmt.error();
    const std::string table = vector_table(kind);
    stmt->bind(1, "vector_meta").bind(2, table + "_removed_seq").bind(3, to_string(kind));
    auto found = stmt->first([](const storage::sql::Row& row) { return row.int64(0) != 0; });
    if (!found) return found.error();
    return found->value_or(false);
}

Result<void> create_vector_rows(storage::sql::Connection& db, IndexKind kind) {
    if (auto r = db.exec(vector_tables_ddl(db.dialect(), vector_table(kind))); !r) return r;
    // instance: tells this database's index files from those of a deleted and recreated one, or
    // of another database (each PostgreSQL schema, each SQLite file draws its own).
    auto stmt =
        db.prepare("INSERT INTO vector_meta(kind, instance) VALUES(?1, ?2) ON CONFLICT DO NOTHING");
    if (!stmt) return stmt.error();
    std::random_device entropy;
    const auto instance = static_cast<std::int64_t>((std::uint64_t{entropy()} << 32 | entropy()) >>
                                                    1);  // positive, 63 random bits
    stmt->bind(1, to_string(kind)).bind(2, instance);
    return stmt->run();
}

}  // namespace

Result<void> create_vector_tables(storage::sql::Connection& db, IndexKind kind) {
    if (db.dialect() != storage::sql::Dialect::kPostgres || db.in_transaction())
        return create_vector_rows(db, kind);
    // PostgreSQL: vector_meta does not exist before the first open, so the existence check
    // cannot read it inside the same statement; to_regclass answers first.
    {
        auto exists = db.prepare_once("SELECT to_regclass('vector_meta') IS NOT NULL");
        if (!exists) return exists.error();
        auto found = exists->first([](const storage::sql::Row& row) { return row.int64(0) != 0; });
        if (!found) return found.error();
        if (found->value_or(false)) {
            auto complete = vector_tables_exist(db, kind);
            if (!complete) return complete.error();
            if (*complete) return {};
        }
    }
    // Two workers opening a new collection at once: the writer lock makes one create the tables
    // and draw the instance, the other find them (DDL is transactional on PostgreSQL).
    auto tx = storage::sql::Transaction::begin(db, storage::sql::TransactionKind::kWrite);
    if (!tx) return tx.error();
    if (auto r = create_vector_rows(db, kind); !r) return r;
    return tx->commit();
}

Result<VectorMeta> read_meta(storage::sql::Connection& db, IndexKind kind, bool for_write) {
    const bool lock = for_write && db.dialect() == storage::sql::Dialect::kPostgres;
    auto stmt =
        db.prepare(std::string("SELECT model, dim, seq, instance FROM vector_meta WHERE kind = ?") +
                   (lock ? " FOR UPDATE" : ""));
    if (!stmt) return stmt.error();
    stmt->bind(1, to_string(kind));
    auto meta = stmt->first([](const storage::sql::Row& row) -> Result<VectorMeta> {
        VectorMeta meta;
        meta.model = std::string(row.text(0));
        const std::int64_t dim = row.int64(1);
        if (dim < 0 || dim > std::numeric_limits<std::uint32_t>::max()) {
            return make_error(ErrorType::kInternal,
                              "vector index: vector_meta holds dimension " + std::to_string(dim));
        }
        meta.dim = static_cast<std::uint32_t>(dim);
        meta.seq = row.int64(2);
        meta.instance = row.int64(3);
        return meta;
    });
    if (!meta) return meta.error();
    if (!*meta)
        return make_error(ErrorType::kInternal, "vector index: vector_meta has no row for " +
                                                    std::string(to_string(kind)));
    return std::move(**meta);
}

Result<bool> meta_unchanged(storage::sql::Connection& db, IndexKind kind, std::int64_t seq,
                            std::int64_t instance) {
    auto stmt = db.prepare("SELECT seq, instance FROM vector_meta WHERE kind = ?");
    if (!stmt) return stmt.error();
    stmt->bind(1, to_string(kind));
    auto same = stmt->first([&](const storage::sql::Row& row) {
        return row.int64(0) == seq && row.int64(1) == instance;
    });
    if (!same) return same.error();
    if (!*same) return make_error(ErrorType::kInternal, "vector index: vector_meta row missing");
    return **same;
}

Result<VectorChanges> read_changes(storage::sql::Connection& db, IndexKind kind, std::int64_t since,
                                   std::uint32_t dim) {
    const std::string table = vector_table(kind);
    VectorChanges changes;
    {
        auto stmt = db.prepare("SELECT key FROM " + table + "_removed WHERE seq > ?");
        if (!stmt) return stmt.error();
        stmt->bind(1, since);
        auto removed = stmt->collect([](const storage::sql::Row& row) { return row.int64(0); });
        if (!removed) return removed.error();
        changes.removed = std::move(removed).value();
    }
    auto stmt = db.prepare("SELECT key, vector FROM " + table + " WHERE seq > ? ORDER BY key");
    if (!stmt) return stmt.error();
    stmt->bind(1, since);
    const std::size_t bytes = std::size_t{dim} * sizeof(float);
    auto read = stmt->each([&](const storage::sql::Row& row) -> Result<void> {
        const auto blob = row.blob(1);
        if (blob.size() != bytes) {
            return make_error(ErrorType::kInternal, table + " key " + std::to_string(row.int64(0)) +
                                                        ": " + std::to_string(blob.size()) +
                                                        " bytes, expected " +
                                                        std::to_string(bytes));
        }
        changes.keys.push_back(row.int64(0));
        const std::size_t at = changes.vectors.size();
        changes.vectors.resize(at + dim);
        std::memcpy(changes.vectors.data() + at, blob.data(), bytes);
        return {};
    });
    if (!read) return read.error();
    return changes;
}

// What a writer's graph lacks before it writes: the changes stamped after its sequence number,

Result<std::pair<std::int64_t, std::int64_t>> count_rows(storage::sql::Connection& db,
                                                         IndexKind kind) {
    auto stmt = db.prepare("SELECT count(*), coalesce(max(key), 0) FROM " + vector_table(kind));
    if (!stmt) return stmt.error();
    auto counted = stmt->first([](const storage::sql::Row& row) {
        return std::pair{row.int64(0), row.int64(1)};
    });
    if (!counted) return counted.error();
    return counted->value_or(std::pair<std::int64_t, std::int64_t>{0, 0});
}

Result<bool> holds_vectors(storage::sql::Connection& db, IndexKind kind) {
    auto stmt = db.prepare("SELECT EXISTS(SELECT 1 FROM " + vector_table(kind) + ")");
    if (!stmt) return stmt.error();
    auto exists = stmt->first([](const storage::sql::Row& row) { return row.int64(0) != 0; });
    if (!exists) return exists.error();
    return exists->value_or(false);
}

namespace {

// Rows per statement when PostgreSQL writes vectors (a 384-d vector is 3 KB of bound text).
constexpr std::size_t kPostgresVectorSlice = 1'024;

// PostgreSQL: one upsert and one tombstone delete per slice of rows (arrays bound as parameters),
// not two round trips per row: a load from another host would wait on the network per vector.
Result<void> write_rows_postgres(storage::sql::Connection& db, const std::string& table,
                                 std::span<const std::int64_t> keys, std::span<const float> flat,
                                 std::size_t dim, std::int64_t seq) {
    auto upsert = db.prepare(
        "INSERT INTO " + table +
        "(key, vector, seq) SELECT r.key, r.vector, ?3 FROM unnest(CAST(?1 AS BIGINT[]), "
        "CAST(?2 AS BYTEA[])) AS r(key, vector) ON CONFLICT(key) DO UPDATE SET vector = "
        "excluded.vector, seq = excluded.seq");
    if (!upsert) return upsert.error();
    auto unremove =
        db.prepare("DELETE FROM " + table + "_removed WHERE key = ANY(CAST(?1 AS BIGINT[]))");
    if (!unremove) return unremove.error();
    static constexpr char kHex[] = "0123456789abcdef";
    const auto* bytes = reinterpret_cast<const unsigned char*>(flat.data());
    const std::size_t row_bytes = dim * sizeof(float);
    std::string key_array;
    std::string vector_array;
    std::string hex;
    for (std::size_t first = 0; first < keys.size(); first += kPostgresVectorSlice) {
        const std::size_t last = std::min(keys.size(), first + kPostgresVectorSlice);
        key_array = "{";
        vector_array = "{";
        for (std::size_t i = first; i < last; ++i) {
            if (i != first) {
                key_array += ',';
                vector_array += ',';
            }
            key_array += std::to_string(keys[i]);
            hex = "\\x";  // bytea's hex input form
            for (std::size_t b = 0; b < row_bytes; ++b) {
                hex += kHex[bytes[i * row_bytes + b] >> 4];
                hex += kHex[bytes[i * row_bytes + b] & 0xFU];
            }
            storage::sql::append_text_array_element(vector_array, hex);
        }
        key_array += '}';
        vector_array += '}';
        upsert->bind_static(1, key_array).bind_static(2, vector_array).bind(3, seq);
        if (auto r = upsert->run(); !r) return r;
        upsert->reset();
        unremove->bind_static(1, key_array);
        if (auto r = unremove->run(); !r) return r;
        unremove->reset();
    }
    return {};
}

}  // namespace

Result<void> write_rows(storage::sql::Connection& db, IndexKind kind,
                        std::span<const std::int64_t> keys, std::span<const float> flat,
                        std::size_t dim, std::string_view model, std::int64_t seq) {
    const std::string table = vector_table(kind);
    if (db.dialect() == storage::sql::Dialect::kPostgres) {
        if (auto r = write_rows_postgres(db, table, keys, flat, dim, seq); !r) return r;
    } else {
        auto upsert = db.prepare("INSERT INTO " + table +
                                 "(key, vector, seq) VALUES(?, ?, ?) ON CONFLICT(key) DO UPDATE SET"
                                 " vector = excluded.vector, seq = excluded.seq");
        if (!upsert) return upsert.error();
        auto unremove = db.prepare("DELETE FROM " + table + "_removed WHERE key = ?");
        if (!unremove) return unremove.error();
        const auto* bytes = reinterpret_cast<const std::byte*>(flat.data());
        for (std::size_t i = 0; i < keys.size(); ++i) {
            upsert->bind(1, keys[i])
                .bind_blob(2, std::span<const std::byte>(bytes + i * dim * sizeof(float),
                                                         dim * sizeof(float)))
                .bind(3, seq);
            if (auto r = upsert->run(); !r) return r;
            upsert->reset();
            unremove->bind(1, keys[i]);
            if (auto r = unremove->run(); !r) return r;
            unremove->reset();
        }
    }
    auto stmt = db.prepare("UPDATE vector_meta SET model = ?, dim = ?, seq = ? WHERE kind = ?");
    if (!stmt) return stmt.error();
    stmt->bind(1, model)
        .bind(2, static_cast<std::int64_t>(dim))
        .bind(3, seq)
        .bind(4, to_string(kind));
    return stmt->run();
}

Result<std::vector<std::int64_t>> remove_rows(storage::sql::Connection& db, IndexKind kind,
                                              std::span<const std::int64_t> keys,
                                              std::int64_t seq) {
    const std::string table = vector_table(kind);
    std::vector<std::int64_t> removed;
    auto erase = db.prepare("DELETE FROM " + table + " WHERE key = ?");
    if (!erase) return erase.error();
    auto tombstone = db.prepare(
        "INSERT INTO " + table +
        "_removed(key, seq) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET seq = excluded.seq");
    if (!tombstone) return tombstone.error();
    for (const std::int64_t key : keys) {
        erase->bind(1, key);
        if (auto r = erase->run(); !r) return r.error();
        erase->reset();
        if (db.changes() == 0) continue;  // absent: nothing for other readers to drop
        tombstone->bind(1, key).bind(2, seq);
        if (auto r = tombstone->run(); !r) return r.error();
        tombstone->reset();
        removed.push_back(key);
    }
    return removed;
}

Result<void> set_seq(storage::sql::Connection& db, IndexKind kind, std::int64_t seq) {
    auto stmt = db.prepare("UPDATE vector_meta SET seq = ? WHERE kind = ?");
    if (!stmt) return stmt.error();
    stmt->bind(1, seq).bind(2, to_string(kind));
    return stmt->run();
}

}  // namespace glassbox::store::detail
