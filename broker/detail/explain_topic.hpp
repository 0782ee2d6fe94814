// Internal to the broker: the explain topic (the XPUB socket in a context of its own), its
// subscribers named by its ZAP handler and monitor, their bounds and cutting one off (§6.2).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include <zmq.hpp>

#include "base/log.hpp"
#include "base/result.hpp"
#include "broker/broker_config.hpp"
#include "broker/topic_ledger.hpp"

namespace glassbox::broker::detail {

struct ZapRequest;  // broker/detail/zap_handler.hpp

class ExplainTopic {
public:
    using Clock = std::chrono::steady_clock;
    using TimePoint = Clock::time_point;
    // Whether the key of a subscriber's handshake may read the topic (CURVE roles).
    using Admit = std::function<bool(const ZapRequest&)>;

    // `now` is the poll loop's clock, read when the topic is served.
    ExplainTopic(const BrokerConfig& config, std::shared_ptr<spdlog::logger> log,
                 const TimePoint& now);
    ~ExplainTopic();
    ExplainTopic(const ExplainTopic&) = delete;
    ExplainTopic& operator=(const ExplainTopic&) = delete;

    // The socket's bounds, its ZAP handler and monitor; `curve`: the broker runs CURVE (its
    // frames carry CURVE's slack) and `admit` judges each subscriber.
    base::Result<bool> open(bool curve, Admit admit);
    // Binds the XPUB endpoint and starts the byte watch; the resolved endpoint.
    base::Result<std::string> bind(const std::string& endpoint);
    // Monitor events, ZAP requests and (un)subscriptions waiting, and the heap given back.
    void serve();

    // For the loop's poll: the XPUB, its ZAP handler and its monitor.
    std::array<zmq::pollitem_t, 3> poll_items();
    zmq::socket_t& publisher() noexcept { return publisher_; }
    const TopicLedger& ledger() const noexcept { return ledger_; }
    // Subscribers cut off, by the ledger's bounds and by the byte watch.
    std::uint64_t dropped_subscribers() const noexcept {
        return cut_for_count_ + cut_for_bytes_.load();
    }

private:
    void drain_monitor();
    void serve_auth();
    void drain_publisher();
    void cut_subscriber(std::string_view name, int fd, TopicBound bound);
    void log_subscriber_dropped(std::string_view name, std::string_view reason,
                                std::size_t subscriptions, std::uint64_t inbound);
    // The watch thread: every topic_watch_interval, each subscriber connection's bytes
    // received (TCP_INFO) against max_subscriber_inbound_bytes.
    void watch(const std::stop_token& stop);

    const BrokerConfig& config_;
    std::shared_ptr<spdlog::logger> log_;
    const TimePoint& now_;
    bool curve_ = false;
    Admit admit_;
    // One I/O thread (the order of its monitor events and ZAP requests that TopicLedger relies
    // on) and its own ZAP endpoint.
    zmq::context_t context_{1};
    zmq::socket_t publisher_;
    zmq::socket_t auth_;     // REP: the ZAP handler naming each subscriber connection
    zmq::socket_t monitor_;  // PAIR: the XPUB's monitor (connections accepted, closed)
    TopicLedger ledger_;
    TimePoint trim_at_ = TimePoint::max();  // heap given back after a cut subscriber left
    // explain_subscriber_dropped is logged at most once a second (both threads log it).
    std::mutex drop_log_mutex_;
    TimePoint next_drop_log_{};
    std::uint64_t drops_unlogged_ = 0;
    // Open subscriber connections by fd (from the monitor) for the watch thread, and the
    // topic's local port (its connections are told from any other fd by it).
    std::mutex fds_mutex_;
    std::unordered_map<int, TimePoint> fds_;
    // Signalled when fds_ gains a connection: the watch thread sleeps on it while there is
    // none, so an idle broker (or one without subscribers) does not wake up for it.
    std::condition_variable_any fds_added_;
    int port_ = -1;
    std::uint64_t cut_for_count_ = 0;              // closed by cut_subscriber (a ledger bound)
    std::atomic<std::uint64_t> cut_for_bytes_{0};  // closed by the watch thread
    std::atomic<bool> trim_wanted_{false};
    // Last: stopped and joined before anything it reads is destroyed.
    std::jthread watch_;
};

}  // namespace glassbox::broker::detail
