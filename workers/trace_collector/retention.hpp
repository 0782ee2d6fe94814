// Retention in the trace collector's process (docs/traces.md, "Retention"): the settings, the
// counters `stats` reports, and the thread that prunes the store every interval.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/periodic_thread.hpp"
#include "base/result.hpp"
#include "schema/messages_trace.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace {

struct RetentionConfig {
    // traces.retention: traces started longer ago are pruned; nullopt keeps them forever.
    std::optional<std::chrono::milliseconds> retention;
    // traces.max_bytes: the oldest traces are pruned while the store's live bytes are over it;
    // 0: no bound.
    std::int64_t max_bytes = 0;
    // traces.prune_interval_s: how often the thread prunes.
    std::chrono::seconds interval{60};
    // Top-level traces per write transaction (ingest waits at most one batch).
    std::int64_t batch_traces = 200;

    bool enabled() const noexcept { return retention.has_value() || max_bytes > 0; }
    // The prune one interval runs.
    PruneRequest request(WallClock::time_point now) const;
};

// What was pruned since the process started, by the thread and by `prune` requests; any thread.
class RetentionCounters {
public:
    explicit RetentionCounters(const RetentionConfig& config = {});
    // A prune that deleted (a dry run is not counted).
    void add(const PruneCounts& counts);
    void failed(const std::string& error);
    schema::TraceRetentionStats snapshot() const;

private:
    mutable std::mutex mutex_;
    schema::TraceRetentionStats stats_;
};

// Prunes its own read-write store every interval on a thread of its own until stopped. A prune
// that fails is counted and logged, and the next interval tries again.
class RetentionWorker {
public:
    RetentionWorker(std::unique_ptr<TraceStore> store, RetentionConfig config,
                    std::shared_ptr<RetentionCounters> counters);
    ~RetentionWorker();
    RetentionWorker(const RetentionWorker&) = delete;
    RetentionWorker& operator=(const RetentionWorker&) = delete;

    // The first prune runs at once, then one every interval.
    void start();
    // Wakes the thread and joins it (a prune in progress finishes its batch first).
    void stop();
    // One prune as the thread runs it, counted; for tests and the thread.
    base::Result<PruneCounts> prune_once(WallClock::time_point now = WallClock::now());

private:
    // One pass of the thread: a prune, counted and logged; never throws.
    bool run_once();

    std::unique_ptr<TraceStore> store_;
    RetentionConfig config_;
    std::shared_ptr<RetentionCounters> counters_;
    base::PeriodicThread thread_;
};

}  // namespace glassbox::trace
