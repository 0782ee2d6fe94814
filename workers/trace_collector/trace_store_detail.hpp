// Internals the trace store's files share (schema and open, ingest, reads).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "storage/sql.hpp"
#include "workers/trace_collector/trace_store.hpp"
#include "workers/trace_collector/triple_blob.hpp"

namespace glassbox::trace::detail {

// Indexes session `session` as a turn of its conversation when it is an ended top-level run
// with gb:conversation (and not indexed yet), then drops the conversation's turns beyond the
// bounds. Runs inside the ingest transaction (conversation_index.cpp).
base::Result<void> index_turn(storage::sql::Connection& db, const StoreConfig& config,
                              std::int64_t session);

// Rewrites conversation `conversation`'s summary row from its turns left (deletes it when none
// is), dropping turns beyond the bounds (conversation_index.cpp). In a write transaction.
base::Result<void> refresh_conversation(storage::sql::Connection& db, const StoreConfig& config,
                                        const std::string& conversation);

// Queues for the SPARQL mirror the top-level run of each session row of `sessions` (itself, or
// the top of its stored parent chain) when that run has ended, due at `due_ms` (a row queued
// already gets a later due, so the mirror does not take off a change it has not written). In the
// batch's write transaction (sparql_pending.cpp).
base::Result<void> queue_mirror(storage::sql::Connection& db,
                                const std::vector<std::int64_t>& sessions, std::int64_t due_ms);
// queue_mirror's statement for the queue table `table` (sparql_pending, otel_pending).
base::Result<void> queue_top_level(storage::sql::Connection& db, std::string_view table,
                                   const std::vector<std::int64_t>& sessions, std::int64_t due_ms);
// Queues for the SPARQL mirror each ended top-level run the knowledge change of session row
// `change` recorded an invalidation for. In the batch's write transaction.
base::Result<void> queue_mirror_invalidated(storage::sql::Connection& db, std::int64_t change,
                                            std::int64_t due_ms);

// Queues for the OpenTelemetry exporter the top-level run of each session row of `sessions`, as
// queue_mirror does for the mirror (otel_pending.cpp). In the batch's write transaction.
base::Result<void> queue_otel(storage::sql::Connection& db,
                              const std::vector<std::int64_t>& sessions, std::int64_t due_ms);

// The evaluations of session row `session`, oldest first, each as schema::TraceEvaluation
// encodes it (trace_evaluations.cpp).
base::Result<nlohmann::json> session_evaluations(storage::sql::Connection& db,
                                                 std::int64_t session);

// The `sampling` section of stats (trace_sampling.cpp; docs/traces.md, "Sampling"): the decisions
// made, and the ended top-level runs waiting for one while config.sample is under 1.
base::Result<nlohmann::json> sampling_stats(storage::sql::Connection& db,
                                            const StoreConfig& config);

// PostgreSQL's events partitions (trace_store.cpp): one per day (UTC) a session started on, as
// days since the epoch; events_kept holds the rows prune had to keep from a partition it dropped,
// from kKeptPart up (no day reaches it: day_of clamps below it).
constexpr std::int64_t kDayMs = 86'400'000;
constexpr std::int64_t kKeptPart = std::int64_t{1} << 40;

inline std::int64_t day_of(std::int64_t ms) {
    const std::int64_t day = ms / kDayMs - (ms % kDayMs < 0 ? 1 : 0);
    return std::clamp(day, -kKeptPart, kKeptPart - 1);
}

// The name of day `day`'s events partition (as trace_event_partitions in the schema makes it).
inline std::string partition_name(std::int64_t day) {
    return "events_d" + (day < 0 ? "m" + std::to_string(-day) : std::to_string(day));
}

inline std::int64_t to_ms(WallClock::time_point time) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

// The body of stored text `id`; nullopt when it is gone (its triple then keeps the "" it was
// stored with).
base::Result<std::optional<std::string>> stored_text(storage::sql::Connection& db, std::int64_t id);

// A stored triple record as JSON, its stored text re-inlined into its object (a record that does
// not parse gives null).
base::Result<nlohmann::json> triple_json(storage::sql::Connection& db, const StoredTriple& record);

// Each stored triple record of session row `session`, in (seq, order) order: fn(seq, record)
// returns base::Result<bool> (false stops); the record's views last until fn returns. A blob
// that does not decode is Internal, naming the event.
template <typename Fn>
base::Result<void> each_stored_record(storage::sql::Connection& db, TripleBlobReader& reader,
                                      std::int64_t session, Fn&& fn) {
    auto q =
        db.prepare("SELECT seq, triple_count, triples FROM events WHERE session = ?1 ORDER BY seq");
    if (!q) return q.error();
    q->bind(1, session);
    return q->each([&](const storage::sql::Row& row) -> base::Result<bool> {
        const std::int64_t seq = row.int64(0);
        auto records = reader.decode(row.blob(2), row.int64(1));
        if (!records) {
            return base::make_error(base::ErrorType::kInternal,
                                    "trace store: event " + std::to_string(seq) +
                                        " of session row " + std::to_string(session) + ": " +
                                        records.error().message);
        }
        for (const StoredTriple& record : *records) {
            auto more = fn(seq, record);
            if (!more) return std::move(more).error();
            if (!*more) return false;
        }
        return true;
    });
}

}  // namespace glassbox::trace::detail
