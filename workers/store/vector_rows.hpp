// The database side of the vector indexes, the source of truth (SQLite or PostgreSQL): the tables
// (vectors_<kind>, vectors_<kind>_removed, vector_meta), their sequence numbers, and reading and
// writing rows.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "storage/sql.hpp"
#include "workers/store/vector_index.hpp"

namespace glassbox::store::detail {

// "vectors_entity" or "vectors_chunk".
std::string vector_table(IndexKind kind);

std::string mismatch_message(std::string_view held_model, std::uint32_t held_dim,
                             std::string_view model, std::size_t dim);

// Copies `v` into `out` as float32 scaled to unit length; an error message for a vector that
// cannot be (empty, zero, not finite).
template <typename T>
std::optional<std::string> normalise_into(std::span<const T> v, float* out) {
    if (v.empty()) return "empty vector";
    double norm2 = 0.0;
    for (const T x : v) {
        const auto d = static_cast<double>(x);
        if (!std::isfinite(d)) return "a component is not finite";
        norm2 += d * d;
    }
    if (!(norm2 > 0.0) || !std::isfinite(norm2)) return "zero vector (no direction to compare)";
    const double inverse = 1.0 / std::sqrt(norm2);
    for (std::size_t i = 0; i < v.size(); ++i)
        out[i] = static_cast<float>(static_cast<double>(v[i]) * inverse);
    return std::nullopt;
}

// One snapshot for a group of reads (vector_meta.seq and the rows stamped up to it), inside or
// outside a transaction of the caller: a SAVEPOINT on SQLite (outside a transaction it begins
// one) and inside any transaction; on PostgreSQL outside a transaction, where SAVEPOINT is
// refused, a read-only REPEATABLE READ transaction.
class ReadSnapshot {
public:
    static base::Result<ReadSnapshot> begin(storage::sql::Connection& db) {
        if (db.dialect() == storage::sql::Dialect::kPostgres && !db.in_transaction()) {
            if (auto r = db.begin(storage::sql::TransactionKind::kRead); !r) return r.error();
            return ReadSnapshot(db, true);
        }
        if (auto r = db.exec("SAVEPOINT gb_vectors_read"); !r) return r.error();
        return ReadSnapshot(db, false);
    }
    ReadSnapshot(ReadSnapshot&& other) noexcept : db_(other.db_), transaction_(other.transaction_) {
        other.db_ = nullptr;
    }
    ReadSnapshot(const ReadSnapshot&) = delete;
    ReadSnapshot& operator=(const ReadSnapshot&) = delete;
    ReadSnapshot& operator=(ReadSnapshot&&) = delete;
    ~ReadSnapshot() {
        if (db_ == nullptr) return;
        if (transaction_) {
            db_->rollback();  // read only: nothing to keep
        } else {
            (void)db_->exec("RELEASE gb_vectors_read");
        }
    }

private:
    ReadSnapshot(storage::sql::Connection& db, bool transaction)
        : db_(&db), transaction_(transaction) {}
    storage::sql::Connection* db_;
    bool transaction_;  // a read transaction begun here (PostgreSQL), not a savepoint
};

// A kind's row of vector_meta.
struct VectorMeta {
    std::string model;
    std::uint32_t dim = 0;
    std::int64_t seq = 0;
    std::int64_t instance = 0;
};

// Rows written (or keys removed) after some sequence number.
struct VectorChanges {
    std::vector<std::int64_t> removed;
    std::vector<std::int64_t> keys;
    std::vector<float> vectors;  // keys.size() * dim
};

// Creates the kind's tables and its vector_meta row when needed.
base::Result<void> create_vector_tables(storage::sql::Connection& db, IndexKind kind);

// `for_write`: inside the writer's transaction, the row is locked until it ends (PostgreSQL's
// FOR UPDATE; SQLite's writer already excludes every other), so no two writers of the kind ever
// draw the same next seq, and seq order is commit order: a reader that has seen seq N has seen
// every change stamped N or lower.
base::Result<VectorMeta> read_meta(storage::sql::Connection& db, IndexKind kind,
                                   bool for_write = false);

// True when vector_meta still says (seq, instance): nothing changed since.
base::Result<bool> meta_unchanged(storage::sql::Connection& db, IndexKind kind, std::int64_t seq,
                                  std::int64_t instance);

// Rows written (or keys removed) after `since`, read inside the caller's snapshot.
base::Result<VectorChanges> read_changes(storage::sql::Connection& db, IndexKind kind,
                                         std::int64_t since, std::uint32_t dim);

// count(*) and max(key) (0 when empty) of the kind's rows.
base::Result<std::pair<std::int64_t, std::int64_t>> count_rows(storage::sql::Connection& db,
                                                               IndexKind kind);

// True when the kind holds at least one vector.
base::Result<bool> holds_vectors(storage::sql::Connection& db, IndexKind kind);

// Inside the caller's transaction: upserts the rows (`flat`: keys.size() * dim normalised
// floats) stamped with `seq`, clears their tombstones, and sets vector_meta's model, dim, seq.
base::Result<void> write_rows(storage::sql::Connection& db, IndexKind kind,
                              std::span<const std::int64_t> keys, std::span<const float> flat,
                              std::size_t dim, std::string_view model, std::int64_t seq);

// Inside the caller's transaction: deletes the rows with these keys and leaves a tombstone
// stamped `seq` for each that was present; returns those keys (absent ones are skipped).
base::Result<std::vector<std::int64_t>> remove_rows(storage::sql::Connection& db, IndexKind kind,
                                                    std::span<const std::int64_t> keys,
                                                    std::int64_t seq);

base::Result<void> set_seq(storage::sql::Connection& db, IndexKind kind, std::int64_t seq);

}  // namespace glassbox::store::detail
