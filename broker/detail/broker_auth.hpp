// Internal to the broker: CURVE on the broker's endpoints, the ZAP handler that admits only the
// allowed keys, and the roles each message is checked against (docs/security.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include <zmq.hpp>

#include "base/log.hpp"
#include "base/result.hpp"
#include "broker/broker_config.hpp"
#include "broker/detail/allow_list.hpp"

namespace glassbox::broker::detail {

struct ZapRequest;  // broker/detail/zap_handler.hpp

class BrokerAuth {
public:
    using TimePoint = std::chrono::steady_clock::time_point;

    // `context`: the router's (its ZAP handler is bound there); `now`: the poll loop's clock.
    BrokerAuth(zmq::context_t& context, const BrokerConfig& config,
               std::shared_ptr<spdlog::logger> log, const TimePoint& now);

    // With CURVE: the allow-list, both sockets' CURVE options, the router's ZAP domain and
    // handler; without: refuses plain TCP on a non-local endpoint unless `insecure`. Called
    // before either endpoint is bound.
    base::Result<void> open(zmq::socket_t& router, zmq::socket_t& publisher);
    bool curve() const noexcept { return allow_ != nullptr; }
    std::size_t allowed_keys() const noexcept { return curve() ? allow_->size() : 0; }

    // For the loop's poll: the router's ZAP handler (polled on every pass: a handshake waits),
    // as a socket or as its ZMQ_FD (edge-triggered: see BrokerCore::wait_for_input).
    zmq::pollitem_t poll_item() { return {socket_.handle(), 0, ZMQ_POLLIN, 0}; }
    int poll_fd() const { return socket_.get(zmq::sockopt::fd); }
    // The router's ZAP requests: an allowed key is admitted, named by its public key. True when
    // it read them all (its last read found none), false when it stopped at max_drain.
    bool serve();
    // The topic's: an allowed key with the `subscriber` role (true without CURVE).
    bool subscriber_allowed(const ZapRequest& request);
    // Looks at the allow-list again every allow_reload_interval.
    void check_allow_list();

    // The roles of the message being handled, read from its first frame after the routing id
    // (null: none): everything is allowed without CURVE; nothing for a key no longer allowed.
    void read_sender(const zmq::message_t* frame);
    bool sender_is_client() const noexcept { return sender_ == nullptr || sender_->roles.client; }
    bool sender_is_collector() const noexcept {
        return sender_ == nullptr || sender_->roles.collector;
    }
    bool sender_may_serve(std::string_view service) const noexcept {
        return sender_ == nullptr || sender_->roles.may_serve(service);
    }
    std::string_view sender_name() const noexcept;

    // Counts and logs (at most once a second, with the count of those not logged) a message or
    // a connection the keys did not allow.
    void refused(std::string_view event, std::string_view peer, std::string_view detail,
                 bool connection);
    std::uint64_t peers_refused() const noexcept { return peers_refused_; }
    std::uint64_t messages_refused() const noexcept { return messages_refused_; }

private:
    const BrokerConfig& config_;
    std::shared_ptr<spdlog::logger> log_;
    const TimePoint& now_;
    std::unique_ptr<AllowList> allow_;  // with CURVE: the keys allowed to connect
    zmq::socket_t socket_;              // REP at inproc://zeromq.zap.01 (bound only with CURVE)
    const AllowedPeer* sender_ = nullptr;
    TimePoint next_allow_check_{};
    TimePoint next_refusal_log_{};
    std::uint64_t refusals_unlogged_ = 0;
    std::uint64_t peers_refused_ = 0;     // CURVE handshakes the ZAP handler refused
    std::uint64_t messages_refused_ = 0;  // messages a key's roles did not allow
};

}  // namespace glassbox::broker::detail
