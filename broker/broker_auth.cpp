// The broker's CURVE authentication: its keys on both endpoints, the ZAP handler that admits only
// keys in the allow-list, and the roles each message is checked against (docs/security.md).
#include "broker/broker_core.hpp"

namespace glassbox::broker::detail {

namespace {

// libzmq asks the handler bound here, in a socket's own context, about every CURVE handshake
// (RFC 27). Without a handler it would admit every key: the broker binds it before its endpoints.
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr const char* kRouterZapDomain = "glassbox";
// version, request id, domain, address, routing id, mechanism, credentials (CURVE: one).
constexpr std::size_t kZapFrames = 7;
constexpr std::size_t kMaxZapFrames = 16;
constexpr std::size_t kCurveKeyBytes = 32;

struct ZapRequest {
    std::array<zmq::message_t, kZapFrames> frames;
    std::size_t count = 0;

    std::string_view frame(std::size_t i) const noexcept {
        return i < count && i < frames.size()
                   ? std::string_view{static_cast<const char*>(frames[i].data()), frames[i].size()}
                   : std::string_view{};
    }
};

// One ZAP request from `socket`, its surplus frames read and dropped; nullopt when none waits.
std::optional<ZapRequest> receive_zap(zmq::socket_t& socket) {
    ZapRequest request;
    bool more = true;
    while (more) {
        zmq::message_t frame;
        const int flags = request.count == 0 ? ZMQ_DONTWAIT : 0;
        if (zmq_msg_recv(frame.handle(), socket.handle(), flags) < 0) {
            if (request.count == 0) return std::nullopt;
            break;
        }
        more = frame.more();
        if (request.count < request.frames.size()) request.frames[request.count] = std::move(frame);
        if (request.count < kMaxZapFrames) ++request.count;
    }
    return request;
}

bool send_zap_reply(zmq::socket_t& socket, std::string_view request_id, std::string_view code,
                    std::string_view text, std::string_view user_id) {
    const std::array<std::string_view, 6> reply{"1.0", request_id, code, text, user_id, ""};
    for (std::size_t i = 0; i < reply.size(); ++i) {
        zmq::message_t frame{reply[i].data(), reply[i].size()};
        const int flags = ZMQ_DONTWAIT | (i + 1 < reply.size() ? ZMQ_SNDMORE : 0);
        if (zmq_msg_send(frame.handle(), socket.handle(), flags) < 0) return false;
    }
    return true;
}

// A CURVE credential (the client's 32-byte public key) in Z85; empty if it is not one.
std::string credential_key(std::string_view mechanism, std::string_view credential) {
    if (mechanism != "CURVE" || credential.size() != kCurveKeyBytes) return {};
    std::array<char, bus::kZ85KeyLength + 1> text{};
    if (zmq_z85_encode(text.data(), reinterpret_cast<const std::uint8_t*>(credential.data()),
                       credential.size()) == nullptr) {
        return {};
    }
    return std::string{text.data(), bus::kZ85KeyLength};
}

// A peer with no roles: a key removed from the allow-list after it connected.
const AllowedPeer kNoRoles{"(no longer allowed)", {}, {}};

}  // namespace

base::Result<void> BrokerCore::open_auth() {
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
        return base::make_error(ErrorType::kInvalidRequest, "the broker's CURVE keys are not Z85 keys");
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
        auth_.set(zmq::sockopt::linger, 0);
        auth_.bind(kZapEndpoint);
        for (auto* socket : {&router_, &publisher_}) {
            socket->set(zmq::sockopt::curve_server, 1);
            socket->set(zmq::sockopt::curve_secretkey, config_.curve_secret_key);
        }
        router_.set(zmq::sockopt::zap_domain, kRouterZapDomain);
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

void BrokerCore::serve_auth() {
    for (std::size_t handled = 0; handled < config_.max_drain; ++handled) {
        auto request = receive_zap(auth_);
        if (!request) return;
        const bool valid = request->count >= kZapFrames && request->frame(0) == "1.0";
        const std::string key = valid ? credential_key(request->frame(5), request->frame(6)) : "";
        const AllowedPeer* peer = key.empty() ? nullptr : allow_->find(key);
        if (peer == nullptr) {
            refused("peer_refused", request->frame(3),
                    valid ? "key=" + (key.empty() ? std::string{"none"} : key) + " mechanism=" +
                                std::string{request->frame(5).substr(0, 16)}
                          : std::string{"malformed ZAP request"},
                    true);
        }
        const bool sent = peer != nullptr
                              ? send_zap_reply(auth_, request->frame(1), "200", "OK", key)
                              : send_zap_reply(auth_, request->frame(1), valid ? "400" : "500",
                                               valid ? "key not allowed" : "malformed ZAP request", "");
        if (!sent) log_->error("event=auth_reply_failed error=\"{}\"", zmq_strerror(zmq_errno()));
    }
}

bool BrokerCore::topic_peer_allowed(std::string_view mechanism, std::string_view credential,
                                    std::string_view address) {
    if (!curve()) return true;
    const std::string key = credential_key(mechanism, credential);
    const AllowedPeer* peer = key.empty() ? nullptr : allow_->find(key);
    if (peer != nullptr && peer->roles.subscriber) return true;
    refused("subscriber_refused", address,
            peer == nullptr ? "key=" + (key.empty() ? std::string{"none"} : key)
                            : "key=" + key + " name=" + peer->name + " missing_role=subscriber",
            true);
    return false;
}

void BrokerCore::read_sender() {
    if (!curve()) {
        sender_ = nullptr;
        return;
    }
    // Every message of a connection carries the User-Id its ZAP reply gave: the public key.
    const char* key = frame_count_ > 1 ? zmq_msg_gets(frames_[1].handle(), "User-Id") : nullptr;
    const AllowedPeer* peer = key != nullptr ? allow_->find(key) : nullptr;
    sender_ = peer != nullptr ? peer : &kNoRoles;
}

std::string_view BrokerCore::sender_name() const noexcept {
    return sender_ == nullptr ? std::string_view{"-"} : std::string_view{sender_->name};
}

void BrokerCore::refused(std::string_view event, std::string_view peer, std::string_view detail,
                         bool connection) {
    ++(connection ? counters_.peers_refused : counters_.messages_refused);
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

void BrokerCore::check_allow_list() {
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
