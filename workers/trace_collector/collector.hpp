// The trace collector: a GBE01 DEALER (docs/protocol.md §6.1) that stores each batch of
// deliveries in the trace store and acknowledges them only after the commit.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "bus/curve_keys.hpp"
#include "schema/messages_trace.hpp"
#include "schema/protocol.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace {

struct CollectorConfig {
    // The broker's request endpoint (ROUTER).
    std::string endpoint = "tcp://127.0.0.1:5555";
    // CURVE (docs/security.md): the broker's public key and this collector's pair (its key needs
    // the `collector` role); none: plain TCP.
    std::optional<bus::CurveClientKeys> curve;
    // ATTACH window: unacknowledged deliveries the broker may hand us (1-65536). The overflow
    // policy beyond it is the broker's: it keeps further messages in its spool.
    std::uint64_t window = 1024;
    // Speak the packed form (docs/protocol.md §1.4): the broker then writes to us packed too, a
    // DELIVER as two frames instead of nine (with CURVE, each frame is a box and an unbox at
    // either end). Off: the classic frames, as a broker before the packed form reads them.
    bool packed = true;
    // HEARTBEAT when nothing else went to the broker for this long; match the broker's.
    std::chrono::milliseconds heartbeat = schema::protocol::kDefaultHeartbeat;
    // The broker is gone after this many intervals without a message: reconnect, re-ATTACH.
    int liveness = schema::protocol::kDefaultLiveness;
    // One transaction holds at most this many deliveries, collected for at most `batch_wait`
    // after the first one arrived (ingest rate and CPU vs. latency to the ACK). Each commit
    // writes every page its rows touched to the WAL again (the sessions', events', usage and
    // full-text indexes' leaves): 50 ms (the broker's delivery_interval is 10) puts about five of
    // the broker's delivery batches in one commit under load (issue 33: ~6 graph-rag traces of 5
    // messages at 128 questions/s, ~2.5 at 20 ms), while a trace is still readable moments after
    // its answer.
    std::size_t batch_max = 1024;
    std::chrono::milliseconds batch_wait{50};
    // After a failed commit the batch is kept (not acknowledged) and retried after this delay.
    std::chrono::milliseconds retry_delay{1000};
    // How often an idle loop looks at the stop flag.
    std::chrono::milliseconds stop_poll{50};
    // How long the final ACKs and DETACH may wait in the socket at close.
    std::chrono::milliseconds linger{1000};
    int send_hwm = 100'000;
    int receive_hwm = 100'000;
};

// The last failed commit's error text: written by the collector thread, read by the `trace`
// service's threads (stats).
class LastStoreError {
public:
    void set(std::string text) {
        std::lock_guard lock(mutex_);
        text_ = std::move(text);
    }
    std::string get() const {
        std::lock_guard lock(mutex_);
        return text_;
    }

private:
    mutable std::mutex mutex_;
    std::string text_;
};

// Read by status and tests; updated by the collector thread.
struct CollectorCounters {
    std::atomic<std::uint64_t> deliveries{0};
    std::atomic<std::uint64_t> stored{0};
    std::atomic<std::uint64_t> duplicates{0};
    std::atomic<std::uint64_t> quarantined{0};
    std::atomic<std::uint64_t> refused{
        0};  // valid, but refused by their session (after its end, ...)
    std::atomic<std::uint64_t> acked{0};
    std::atomic<std::uint64_t> batches{0};
    std::atomic<std::uint64_t> store_failures{0};
    std::atomic<std::uint64_t> reconnects{0};
    std::atomic<std::uint64_t> bad_frames{
        0};  // DELIVERs without a usable delivery id: logged, not acked
    std::atomic<std::uint64_t> iris_rewritten{0};
    // Deliveries held for the next commit (not stored, not acknowledged), and whether the last
    // commit failed (then they wait for a retry).
    std::atomic<std::uint64_t> pending{0};
    std::atomic<bool> store_failing{false};
    LastStoreError last_store_error;
};

class Collector {
public:
    // `store` must be opened read-write and outlive the collector; only run()'s thread uses it.
    Collector(zmq::context_t& context, CollectorConfig config, TraceStore& store);
    Collector(const Collector&) = delete;
    Collector& operator=(const Collector&) = delete;

    // ATTACHes and serves until stop(): then stores and acknowledges the batch in hand, and
    // DETACHes. Never throws for what the broker sends.
    void run();
    // Any thread; returns at once (the loop sees it within `stop_poll`).
    void stop() noexcept { stop_requested_ = true; }

    const CollectorCounters& counters() const noexcept { return counters_; }
    // The counters as the `trace` service's stats report them; any thread.
    schema::TraceCollectorStats stats() const;
    const CollectorConfig& config() const noexcept { return config_; }

private:
    zmq::context_t& context_;
    CollectorConfig config_;
    TraceStore& store_;
    std::atomic<bool> stop_requested_{false};
    CollectorCounters counters_;
};

}  // namespace glassbox::trace
