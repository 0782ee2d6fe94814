// The broker's CURVE authentication: its keys on both endpoints, the ZAP handler that admits only
// keys in the allow-list, and the roles each message is checked against (docs/security.md).
#include "broker/detail/broker_auth.hpp"

#include "base/log.hpp"
#include "broker/detail/zap_handler.hpp"
#include "bus/curve_keys.hpp"
#include "bus/frame_codec.hpp"

namespace glassbox::broker::detail {

using base::ErrorType;
using bus::printable;

namespace {

// Without a handler at kZapEndpoint libzmq would admit every CURVE key: the broker binds it
// before its endpoints.
constexpr const char* kRouterZapDomain = "glassbox";
// A peer with no roles: a key removed from the allow-list after it connected.
const AllowedPeer kNoRoles{"(no longer allowed)", {}, {}};

}  // namespace

BrokerAuth::BrokerAuth(zmq::context_t& context, const BrokerConfig& config,
                       std::shared_ptr<spdlog::logger> log, const TimePoint& now)
    : config_(config), log_(std::move(log)), now_(now), socket_(context, zmq::socket_type::rep) {}

base::Result<void> BrokerAuth::open(zmq::socket_t& router, zmq::socket_t& publisher) {
    const bool has_key = !config_.curve_secret_key.empty();
    if (!has_key) {
        if (!config_.insecure) {
            for (const auto* endpoint : {&config_.endpoint, &config_.pub_endpoint}) {
                if (!bus::is_local_endpoint(*endpoint)) {
                    return base::make_error(
                        ErrorType::kInvalidRequest,
                        "refusing plain TCP on " + *endpoint +
                            ": other machines could connect with no key; give the broker a CURVE "
                            "key (docs/security.md) or pass --insecure");
                }
            }
        }
        return {};
    }
    if (!bus::is_z85_key(config_.curve_secret_key) || !bus::is_z85_key(config_.curve_public_key)) {
        return base::make_error(ErrorType::kInvalidRequest,
                                "the broker's CURVE keys are not Z85 keys");
    }
    if (config_.allow_folder.empty()) {
        return base::make_error(ErrorType::kInvalidRequest,
                                "CURVE needs a folder of allowed keys (--curve-allow)");
    }
    auto allow = std::make_unique<AllowList>(config_.allow_folder);
    if (auto loaded = allow->load(); !loaded) return loaded.error();
    for (const auto& problem : allow->problems()) {
        log_->warn("event=allowed_key_skipped reason=\"{}\"", problem);
    }
    try {
        socket_.set(zmq::sockopt::linger, 0);
        socket_.bind(kZapEndpoint);
        for (auto* socket : {&router, &publisher}) {
            socket->set(zmq::sockopt::curve_server, 1);
            socket->set(zmq::sockopt::curve_secretkey, config_.curve_secret_key);
        }
        router.set(zmq::sockopt::zap_domain, kRouterZapDomain);
    } catch (const zmq::error_t& e) {
        return base::make_error(ErrorType::kInternal,
                                std::string{"cannot set up CURVE authentication: "} + e.what());
    }
    allow_ = std::move(allow);
    next_allow_check_ = now_ + config_.allow_reload_interval;
    log_->info("event=curve_on allowed_keys={} folder={} public_key={}", allow_->size(),
               config_.allow_folder, config_.curve_public_key);
    return {};
}

bool BrokerAuth::serve() {
    for (std::size_t handled = 0; handled < config_.max_drain; ++handled) {
        auto request = receive_zap(socket_);
        if (!request) return true;
        const bool valid = request->valid();
        const std::string key = valid ? request->curve_key() : std::string{};
        const AllowedPeer* peer = key.empty() ? nullptr : allow_->find(key);
        if (peer == nullptr) {
            refused("peer_refused", request->frame(3),
                    valid ? "key=" + (key.empty() ? std::string{"none"} : key) +
                                " mechanism=" + std::string{request->frame(5).substr(0, 16)}
                          : std::string{"malformed ZAP request"},
                    true);
        }
        const bool sent =
            peer != nullptr
                ? send_zap_reply(socket_, request->frame(1), "200", "OK", key)
                : send_zap_reply(socket_, request->frame(1), valid ? "400" : "500",
                                 valid ? "key not allowed" : "malformed ZAP request", "");
        if (!sent) log_->error("event=auth_reply_failed error=\"{}\"", zmq_strerror(zmq_errno()));
    }
    return false;
}

bool BrokerAuth::subscriber_allowed(const ZapRequest& request) {
    if (!curve()) return true;
    const std::string key = request.curve_key();
    const AllowedPeer* peer = key.empty() ? nullptr : allow_->find(key);
    if (peer != nullptr && peer->roles.subscriber) return true;
    refused("subscriber_refused", request.frame(3),
            peer == nullptr ? "key=" + (key.empty() ? std::string{"none"} : key)
                            : "key=" + key + " name=" + peer->name + " missing_role=subscriber",
            true);
    return false;
}

void BrokerAuth::read_sender(const zmq::message_t* frame) {
    if (!curve()) {
        sender_ = nullptr;
        return;
    }
    // Every message of a connection carries the User-Id its ZAP reply gave: the public key.
    const char* key = frame != nullptr ? zmq_msg_gets(frame->handle(), "User-Id") : nullptr;
    const AllowedPeer* peer = key != nullptr ? allow_->find(key) : nullptr;
    sender_ = peer != nullptr ? peer : &kNoRoles;
}

std::string_view BrokerAuth::sender_name() const noexcept {
    return sender_ == nullptr ? std::string_view{"-"} : std::string_view{sender_->name};
}

void BrokerAuth::refused(std::string_view event, std::string_view peer, std::string_view detail,
                         bool connection) {
    ++(connection ? peers_refused_ : messages_refused_);
    // A flood of refused peers must not become a flood of log lines.
    if (now_ < next_refusal_log_) {
        ++refusals_unlogged_;
        return;
    }
    next_refusal_log_ = now_ + std::chrono::seconds{1};
    log_->warn("event={} peer={} {} not_logged_since={}", event, printable(peer), detail,
               refusals_unlogged_);
    refusals_unlogged_ = 0;
}

void BrokerAuth::check_allow_list() {
    if (!curve() || now_ < next_allow_check_) return;
    next_allow_check_ = now_ + config_.allow_reload_interval;
    const auto reloaded = allow_->reload_if_changed();
    if (!reloaded) {
        log_->error("event=allowed_keys_unreadable reason=\"{}\" keeping={}",
                    reloaded.error().message, allow_->size());
        return;
    }
    if (!reloaded.value()) return;
    log_->info("event=allowed_keys_reloaded keys={} skipped={}", allow_->size(),
               allow_->problems().size());
    for (const auto& problem : allow_->problems()) {
        log_->warn("event=allowed_key_skipped reason=\"{}\"", problem);
    }
}

}  // namespace glassbox::broker::detail
