// The trace collector's retention thread and counters (docs/traces.md, "Retention").
#include "workers/trace_collector/retention.hpp"

#include <exception>
#include <utility>

#include "base/log.hpp"
#include "workers/trace_collector/trace_store_detail.hpp"

namespace glassbox::trace {

PruneRequest RetentionConfig::request(WallClock::time_point now) const {
    PruneRequest request;
    request.older_than = retention;
    if (max_bytes > 0) request.max_bytes = max_bytes;
    request.batch_traces = batch_traces;
    request.now = now;
    return request;
}

RetentionCounters::RetentionCounters(const RetentionConfig& config) {
    stats_.retention_ms = config.retention ? config.retention->count() : 0;
    stats_.max_bytes = config.max_bytes;
}

void RetentionCounters::add(const PruneCounts& counts) {
    std::lock_guard lock(mutex_);
    if (counts.traces == 0 && counts.quarantined == 0 && counts.texts == 0) return;
    ++stats_.prunes;
    stats_.traces += static_cast<std::uint64_t>(counts.traces);
    stats_.sessions += static_cast<std::uint64_t>(counts.sessions);
    stats_.events += static_cast<std::uint64_t>(counts.events);
    if (counts.bytes_before > counts.bytes_after)
        stats_.bytes += static_cast<std::uint64_t>(counts.bytes_before - counts.bytes_after);
}

void RetentionCounters::failed(const std::string& error) {
    std::lock_guard lock(mutex_);
    ++stats_.failures;
    stats_.last_error = error;
}

schema::TraceRetentionStats RetentionCounters::snapshot() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

RetentionWorker::RetentionWorker(std::unique_ptr<TraceStore> store, RetentionConfig config,
                                 std::shared_ptr<RetentionCounters> counters)
    : store_(std::move(store)), config_(config), counters_(std::move(counters)) {}

RetentionWorker::~RetentionWorker() { stop(); }

void RetentionWorker::start() {
    thread_.start(config_.interval, [this] { return run_once(); });
}

void RetentionWorker::stop() { thread_.stop(); }

base::Result<PruneCounts> RetentionWorker::prune_once(WallClock::time_point now) {
    PruneRequest request = config_.request(now);
    // PostgreSQL: the cut-off goes back to the start of its day (UTC), so a day's traces go
    // together when their partition is dropped rather than row by row as the cut-off moves
    // through the day; a trace lives up to a day past the retention.
    if (store_->backend() == "postgres" && request.older_than) {
        const std::int64_t cutoff = detail::to_ms(now) - request.older_than->count();
        const std::int64_t day_start = detail::day_of(cutoff) * detail::kDayMs;
        *request.older_than += std::chrono::milliseconds{cutoff - day_start};
    }
    auto counts = store_->prune(request);
    if (!counts) {
        counters_->failed(counts.error().describe());
        return counts.error();
    }
    counters_->add(*counts);
    return counts;
}

bool RetentionWorker::run_once() {
    static const auto log = base::component_logger("trace-retention");
    // No exception leaves the thread: a failure is counted and the next interval retries.
    try {
        auto counts = prune_once();
        if (!counts) {
            log->warn("event=prune_failed error=\"{}\"", counts.error().describe());
        } else if (counts->traces > 0 || counts->quarantined > 0) {
            log->info(
                "event=pruned traces={} sessions={} events={} texts={} quarantined={} "
                "bytes_before={} bytes_after={}",
                counts->traces, counts->sessions, counts->events, counts->texts,
                counts->quarantined, counts->bytes_before, counts->bytes_after);
        }
    } catch (const std::exception& e) {
        counters_->failed(e.what());
        log->error("event=prune_failed error=\"{}\"", e.what());
    }
    return false;
}

}  // namespace glassbox::trace
