// The trace collector's SPARQL mirror (docs/traces.md, "Mirror to a SPARQL engine"): a thread
// that writes the graph of each top-level run queued in the store's sparql_pending (ingest
// queues a run when it or a sub-run of it ends, or a knowledge change invalidates it) to the
// engine as the named graph of the run's session URI, and takes the run off the queue once the
// engine took it. The engine down: nothing is lost, the queue waits and the thread retries
// every interval.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/periodic_thread.hpp"
#include "base/result.hpp"
#include "schema/messages_trace.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace {

struct MirrorConfig {
    // sparql.mirror_interval_ms: how often the thread looks for work when the queue is empty,
    // and how long it waits before trying again after the engine failed.
    std::chrono::milliseconds interval{1000};
    // Runs read from the queue at a time.
    std::int64_t batch = 32;
};

// Replaces the named graph `graph` in the engine by the N-Triples `ntriples` (the Graph Store
// Protocol's PUT: http::SparqlClient::put_graph). Errors as the client gives them:
// kInvalidRequest when the engine refused this graph, any other when the engine failed.
using GraphPut =
    std::function<base::Result<void>(std::string_view graph, std::string_view ntriples)>;

// What the mirror did since the process started; any thread.
class MirrorCounters {
public:
    explicit MirrorCounters(bool configured = false) : configured_(configured) {}
    void mirrored();
    void failed(const std::string& error);
    // The counters with the store's queue as `backlog` read it at `now_ms`: `watermark` is the
    // time (ms since the epoch) before which every change queued is mirrored, the oldest queued
    // run's or, with none queued, now; `oldest_pending_ms` how long that run has waited.
    schema::TraceMirrorStats snapshot(const MirrorBacklog& backlog, std::int64_t now_ms) const;
    bool configured() const noexcept { return configured_; }

private:
    const bool configured_;
    mutable std::mutex mutex_;
    std::uint64_t mirrored_ = 0;
    std::uint64_t failures_ = 0;
    std::string last_error_;
};

// Mirrors its own read-write store's queue on a thread of its own until stopped.
class SparqlMirror {
public:
    SparqlMirror(std::unique_ptr<TraceStore> store, GraphPut put, MirrorConfig config,
                 std::shared_ptr<MirrorCounters> counters);
    ~SparqlMirror();
    SparqlMirror(const SparqlMirror&) = delete;
    SparqlMirror& operator=(const SparqlMirror&) = delete;

    void start();
    // Wakes the thread and joins it (a graph being written is finished first).
    void stop();
    // One pass as the thread runs it, counted: up to config.batch queued runs, oldest first, each
    // written and taken off the queue. A graph the engine refused is counted and queued again
    // behind the others; any other failure of the engine ends the pass (the error). Answers how
    // many runs were mirrored.
    base::Result<std::size_t> mirror_once();

private:
    // One pass of the thread, logged when the engine starts or stops failing; true when a full
    // batch went (more may be queued: the next pass starts at once). Never throws.
    bool run_once();

    std::unique_ptr<TraceStore> store_;
    GraphPut put_;
    MirrorConfig config_;
    std::shared_ptr<MirrorCounters> counters_;
    bool failing_ = false;  // the last pass failed (the thread's own)
    base::PeriodicThread thread_;
};

}  // namespace glassbox::trace
