// The `trace` service (docs/traces.md §2, §4): list, show, export, stats and the conversation
// ops over read-only connections to the trace store (forget over one read-write connection),
// served by the worker runtime beside the collector.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "schema/messages_trace.hpp"
#include "workers/runtime/worker.hpp"
#include "workers/trace_collector/otel_exporter.hpp"
#include "workers/trace_collector/retention.hpp"
#include "workers/trace_collector/sparql_mirror.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace {

// `limit` of a list request: default and bound.
inline constexpr std::int64_t kDefaultListLimit = 50;
inline constexpr std::int64_t kMaxListLimit = 10'000;
// `limit` of turns (the last N turns of a conversation) and of conversations.
inline constexpr std::int64_t kDefaultTurnsLimit = 10;
inline constexpr std::int64_t kMaxTurnsLimit = 100;
inline constexpr std::int64_t kDefaultConversationsLimit = 50;
inline constexpr std::int64_t kMaxConversationsLimit = 1000;

// Read-only connections, one per concurrent request (handlers run on several threads and a
// connection is single-threaded); opened on demand, kept for reuse.
class ReadStorePool {
public:
    ReadStorePool(StoreLocation location, StoreConfig config);

    // Runs `use` with a connection of its own; the connection's open error otherwise.
    base::Result<nlohmann::json> with_store(
        const std::function<base::Result<nlohmann::json>(TraceStore&)>& use);
    // Runs `use` with the one read-write connection, for the writes the service makes
    // (`forget`, `prune`, `pin`, `unpin`, `evaluate`). It waits for the collector's commit in
    // progress (the store's write lock; on SQLite within StoreConfig::busy_timeout); writes through
    // it are serialised by a mutex.
    base::Result<nlohmann::json> with_writer(
        const std::function<base::Result<nlohmann::json>(TraceStore&)>& use);

private:
    StoreLocation location_;
    StoreConfig config_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<TraceStore>> idle_;
    std::mutex writer_mutex_;
    std::unique_ptr<TraceStore> writer_;
};

// The collector's own counters for `stats` (Collector::stats), callable from any thread.
using CollectorStatsSource = std::function<schema::TraceCollectorStats()>;

// Answers one `trace` request body against `store`. export hands each {"nquads": ...} chunk to
// `partial` (false from it stops the export) and answers the FINAL counts; stats adds
// `collector` from `collector_stats` when given, and `retention` from `retention` (which also
// counts what a `prune` request deletes), and `sparql_mirror` from `mirror` with the store's
// queue, and `otel` from `otel` (the OpenTelemetry exporter's counters) with the store's queue.
// Bad input: InvalidRequest naming the field; an unknown
// id NotFound; an ambiguous prefix InvalidRequest.
base::Result<nlohmann::json> answer_trace_request(
    TraceStore& store, const nlohmann::json& body,
    const std::function<bool(const nlohmann::json&)>& partial,
    const CollectorStatsSource& collector_stats = {}, RetentionCounters* retention = nullptr,
    const MirrorCounters* mirror = nullptr, const OtelCounters* otel = nullptr);

// Whether a request body is one of the ops that write (served through with_writer).
bool is_write_request(const nlohmann::json& body);

// The runtime handler. The pool is shared by the handler copies the runtime makes (one per
// slot thread), hence shared_ptr. `collector_stats`: the collector writing the store, if any;
// `retention`: its process's retention counters, if any (shared with the retention thread);
// `mirror`: its SPARQL mirror's counters (shared with the mirror thread); `otel`: its
// OpenTelemetry exporter's (shared with the exporter thread).
runtime::Handler make_trace_handler(std::shared_ptr<ReadStorePool> pool,
                                    CollectorStatsSource collector_stats = {},
                                    std::shared_ptr<RetentionCounters> retention = nullptr,
                                    std::shared_ptr<const MirrorCounters> mirror = nullptr,
                                    std::shared_ptr<const OtelCounters> otel = nullptr);

}  // namespace glassbox::trace
