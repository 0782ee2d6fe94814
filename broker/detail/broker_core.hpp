// Internal to the broker: BrokerCore, the poll loop (bind, poll, drain, timers, heartbeats, the
// end-of-batch commit, shutdown), which owns the shared state (BrokerState) and the parts that
// handle the peers' messages: ClientSide, WorkerSide, ExplainRouter and CollectorSide. Defined
// in broker/broker_loop.cpp.
#pragma once

#include <atomic>
#include <optional>
#include <stop_token>

#include <zmq.hpp>

#include "base/result.hpp"
#include "broker/broker.hpp"
#include "broker/detail/broker_state.hpp"
#include "broker/detail/client_side.hpp"
#include "broker/detail/collector_side.hpp"
#include "broker/detail/explain_router.hpp"
#include "broker/detail/worker_side.hpp"

namespace glassbox::broker::detail {

class BrokerCore {
public:
    BrokerCore(zmq::context_t& context, BrokerConfig config);

    base::Result<BoundEndpoints> bind();
    void run(const std::atomic<bool>& stop_flag, const std::stop_token* token);
    const BrokerConfig& config() const noexcept { return state_.config; }

private:
    void iterate();
    // Which of the router and its ZAP handler may have input: the wait of a pass. poll_all
    // also wakes for the topic's sockets (every topic_poll_interval). nullopt: interrupted.
    struct Input {
        bool router = false;
        bool zap = false;
    };
    std::optional<Input> poll_all(milliseconds wait);
    std::optional<Input> wait_for_input(milliseconds wait);
    void drain_router();
    void handle_message();
    void end_batch();
    void fire_timers();
    void tick();
    void shutdown();
    // Requests, workers and collectors of the peers sends found gone end (§9).
    void handle_unreachable();

    BrokerState state_;
    // The parts call each other by reference (each header lists its calls); built before use.
    ClientSide client_side_;
    WorkerSide worker_side_;
    ExplainRouter explain_;
    CollectorSide collector_side_;
    TimePoint next_tick_;
    TimePoint next_topic_poll_{};  // the XPUB socket is polled no earlier (topic_poll_interval)
    int router_fd_ = -1;           // the sockets' ZMQ_FDs (wait_for_input), set by bind()
    int zap_fd_ = -1;
    bool zap_backlog_ = false;  // the ZAP handler stopped at max_drain: requests are left
};

}  // namespace glassbox::broker::detail
