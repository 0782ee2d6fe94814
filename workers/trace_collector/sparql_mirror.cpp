// The trace collector's SPARQL mirror thread and counters (docs/traces.md, "Mirror to a SPARQL
// engine").
#include "workers/trace_collector/sparql_mirror.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "base/log.hpp"

namespace glassbox::trace {

using base::ErrorType;
using base::Result;

void MirrorCounters::mirrored() {
    std::lock_guard lock(mutex_);
    ++mirrored_;
}

void MirrorCounters::failed(const std::string& error) {
    std::lock_guard lock(mutex_);
    ++failures_;
    last_error_ = error;
}

schema::TraceMirrorStats MirrorCounters::snapshot(const MirrorBacklog& backlog,
                                                  std::int64_t now_ms) const {
    schema::TraceMirrorStats out;
    out.configured = configured_;
    out.pending = backlog.pending;
    out.watermark = backlog.oldest_due.value_or(now_ms);
    if (backlog.oldest_due)
        out.oldest_pending_ms = std::max<std::int64_t>(0, now_ms - *backlog.oldest_due);
    std::lock_guard lock(mutex_);
    out.mirrored = mirrored_;
    out.failures = failures_;
    out.last_error = last_error_;
    return out;
}

SparqlMirror::SparqlMirror(std::unique_ptr<TraceStore> store, GraphPut put, MirrorConfig config,
                           std::shared_ptr<MirrorCounters> counters)
    : store_(std::move(store)),
      put_(std::move(put)),
      config_(config),
      counters_(std::move(counters)) {}

SparqlMirror::~SparqlMirror() { stop(); }

void SparqlMirror::start() {
    thread_.start(config_.interval, [this] { return run_once(); });
}

void SparqlMirror::stop() { thread_.stop(); }

Result<std::size_t> SparqlMirror::mirror_once() {
    auto items = store_->mirror_pending(config_.batch);
    if (!items) return items.error();
    std::size_t mirrored = 0;
    for (const MirrorItem& item : *items) {
        if (thread_.stopping()) break;
        auto graph = store_->mirror_ntriples(item.session);
        // Pruned since it was read: its queue row went with it.
        if (!graph && graph.error().type == ErrorType::kNotFound) continue;
        if (!graph) return graph.error();
        auto put = put_(item.session, *graph);
        if (!put) {
            counters_->failed(item.session + ": " + put.error().describe());
            if (put.error().type != ErrorType::kInvalidRequest) return put.error();
            // This graph only: it waits behind the others and is tried again.
            if (auto r = store_->mirror_later(item); !r) return r.error();
            continue;
        }
        // Queued again meanwhile (a sub-run ended, an invalidation): it stays for the next pass.
        if (auto done = store_->mirror_done(item); !done) return done.error();
        counters_->mirrored();
        ++mirrored;
    }
    return mirrored;
}

bool SparqlMirror::run_once() {
    static const auto log = base::component_logger("trace-mirror");
    // No exception leaves the thread: a failure is counted and the next interval retries.
    try {
        auto mirrored = mirror_once();
        if (!mirrored) {
            if (!failing_) {
                log->warn("event=mirror_failed error=\"{}\" action=retry_every_interval",
                          mirrored.error().describe());
            }
            failing_ = true;
            return false;
        }
        if (failing_) log->info("event=mirror_resumed mirrored={}", *mirrored);
        failing_ = false;
        return *mirrored > 0 && static_cast<std::int64_t>(*mirrored) >= config_.batch;
    } catch (const std::exception& e) {
        counters_->failed(e.what());
        log->error("event=mirror_failed error=\"{}\"", e.what());
        return false;
    }
}

}  // namespace glassbox::trace
