// The worker runtime: N independent MDPW01/GBW01 workers in one process, each heartbeating
// from its own I/O loop while its handler runs on a separate thread (or, for the quick requests
// WorkerConfig::run_inline takes, on the I/O loop's own).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "workers/runtime/request_context.hpp"
#include "workers/runtime/worker_config.hpp"

namespace zmq {
class context_t;  // a caller's context, shared for inproc:// endpoints (<zmq.hpp>)
}
namespace glassbox::bus {
class ContextHandle;  // bus/detail/frame_io.hpp
}

namespace glassbox::runtime {

// Usage:
//   runtime::WorkerConfig config;
//   config.endpoint = "tcp://127.0.0.1:5555";
//   config.service = "echo";
//   config.threads = 4;
//   runtime::Worker worker(config, [](runtime::RequestContext& ctx) {
//       if (ctx.cancelled()) return (void)ctx.fail({base::ErrorType::kCancelled, "stopped"});
//       (void)ctx.send_partial({{"text", "..."}});
//       (void)ctx.reply({{"answer", "..."}});
//   });
//   worker.start();  ...  worker.stop(); worker.wait();   // e.g. on SIGTERM
//
// A service's logic. Called for up to `threads` requests at once (one per slot, on the slot's
// handler thread or, inline, its I/O thread), one request per call: it must be safe to call
// concurrently. Throwing is answered ERROR Internal; the worker keeps serving.
using Handler = std::function<void(RequestContext&)>;

// Each of the N slots owns a DEALER to the broker (READY with GBW01) and an I/O loop that
// heartbeats, reconnects with backoff after DISCONNECT or broker silence, and forwards CANCEL;
// the handler runs on the slot's own thread and talks to the loop over an inproc PAIR, except
// for a request WorkerConfig::run_inline takes: the loop runs the handler itself and sends its
// messages to the broker directly.
class Worker {
public:
    // Throws std::invalid_argument for a config it cannot run (bad service name, 0 threads, ...).
    Worker(WorkerConfig config, Handler handler);  // owns its own zmq context
    Worker(zmq::context_t& context, WorkerConfig config, Handler handler);
    ~Worker();  // stop() and wait()
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    // Starts the slots' threads; returns at once.
    void start();
    // Asks every slot to stop gracefully: an idle slot sends DISCONNECT at once, a busy one
    // after its in-flight request ends (cancelled after drain_timeout). Any thread may call it;
    // it returns at once (not async-signal-safe: call it from a signal-watching thread).
    void stop() noexcept;
    // Joins the slots (returns after stop() has taken effect).
    void wait();
    // start() then wait().
    void run();

    const WorkerConfig& config() const noexcept { return config_; }
    // "<worker_name>/<slot>" of each slot, as used in explain messages.
    std::string slot_worker_id(std::size_t slot) const;

private:
    Worker(zmq::context_t* shared, WorkerConfig config, Handler handler);

    std::unique_ptr<bus::ContextHandle> context_;
    WorkerConfig config_;
    Handler handler_;
    std::string base_name_;
    // The stop request is a flag, not a message: stop() may run on any thread, and a socket may
    // not be shared; each I/O loop reads it every `stop_poll`.
    std::atomic<bool> stop_requested_{false};
    std::vector<std::thread> threads_;
};

}  // namespace glassbox::runtime
