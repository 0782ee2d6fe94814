// The glassbox broker: a Majordomo-family (7/MDP + glassbox extensions) broker, docs/protocol.md.
#pragma once

#include <atomic>
#include <memory>
#include <stop_token>
#include <string>

#include "base/result.hpp"
#include "broker/broker_config.hpp"

namespace zmq {
class context_t;  // <zmq.hpp>: the caller's context, used only by reference
}

namespace glassbox::broker {

// The endpoints the broker listens on, with wildcard ports resolved (ZMQ_LAST_ENDPOINT).
struct BoundEndpoints {
    std::string endpoint;
    std::string pub_endpoint;
};

namespace detail {
class BrokerCore;
}

// One ROUTER socket (clients, workers, trace collectors) and one XPUB socket (explain topic),
// served by one thread. Use: construct, bind(), then run() on the thread that owns it until
// stop(). Construct, bind and run may happen on different threads as long as they do not
// overlap (a thread start is the memory barrier ZeroMQ sockets need to migrate).
class Broker {
public:
    Broker(zmq::context_t& context, BrokerConfig config);
    ~Broker();
    Broker(const Broker&) = delete;
    Broker& operator=(const Broker&) = delete;

    // Opens the explain spool and binds both endpoints. An Error (bind failure, spool locked
    // or unreadable) is fatal for the process; the CLI prints it and exits 1.
    base::Result<BoundEndpoints> bind();

    // Serves until stop() is called (or `token` requests a stop); returns within
    // config.poll_interval of it. On the way out the broker sends DISCONNECT to its workers
    // and commits the spool. Requires a successful bind().
    void run();
    void run(const std::stop_token& token);

    // Thread-safe and async-signal-safe (one lock-free atomic store).
    void stop() noexcept { stop_requested_.store(true, std::memory_order_relaxed); }

    const BrokerConfig& config() const noexcept;

private:
    std::unique_ptr<detail::BrokerCore> core_;
    std::atomic<bool> stop_requested_{false};
    static_assert(std::atomic<bool>::is_always_lock_free);
};

}  // namespace glassbox::broker
