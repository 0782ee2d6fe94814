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
    if (thread_.joinable()) return;
    thread_ = std::thread([this] { run(); });
}

void SparqlMirror::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

Result<std::size_t> SparqlMirror::mirror_once() {
    auto items = store_->mirror_pending(config_.batch);
    if (!items) return items.error();
    std::size_t mirrored = 0;
    for (const MirrorItem& item : *items) {
        {
            std::lock_guard lock(mutex_);
            if (stopping_) break;
        }
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

void SparqlMirror::run() {
    auto log = base::component_logger("trace-mirror");
    bool failing = false;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        lock.unlock();
        bool more = false;
        // No exception leaves the thread: a failure is counted and the next interval retries.
        try {
            auto mirrored = mirror_once();
            if (!mirrored) {
                if (!failing) {
                    log->warn("event=mirror_failed error=\"{}\" action=retry_every_interval",
                              mirrored.error().describe());
                }
                failing = true;
            } else {
                if (failing) log->info("event=mirror_resumed mirrored={}", *mirrored);
                failing = false;
                // A full batch: more may be queued, the next pass starts at once.
                more = *mirrored > 0 && static_cast<std::int64_t>(*mirrored) >= config_.batch;
            }
        } catch (const std::exception& e) {
            counters_->failed(e.what());
            log->error("event=mirror_failed error=\"{}\"", e.what());
        }
        lock.lock();
        if (!more) wake_.wait_for(lock, config_.interval, [this] { return stopping_; });
    }
}

}  // namespace glassbox::trace
