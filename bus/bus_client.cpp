// GBC01 client: request ids, reply decoding, heartbeats listing in-flight ids, local backstops.
#include "bus/bus_client.hpp"

#include <zmq.h>

#include <zmq.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>

#include <unistd.h>

#include "base/log.hpp"
#include "bus/detail/client_frames.hpp"
#include "bus/detail/frame_io.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::bus {
namespace {

namespace protocol = schema::protocol;
using base::Error;
using base::ErrorType;
using base::make_error;
using base::Result;

std::string random_prefix() {
    std::random_device device;
    std::uniform_int_distribution<std::uint32_t> dist;
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%08x%04x", dist(device),
                  static_cast<unsigned>(::getpid()) & 0xffffU);
    return buffer;
}

}  // namespace

std::string_view to_string(ReplyKind kind) noexcept {
    switch (kind) {
        case ReplyKind::kData:
            return "data";
        case ReplyKind::kExplain:
            return "explain";
        case ReplyKind::kFinal:
            return "final";
        case ReplyKind::kError:
            return "error";
    }
    return "error";
}

nlohmann::json Reply::to_json() const {
    nlohmann::json out = nlohmann::json::object();
    out["kind"] = std::string(to_string(kind));
    if (kind == ReplyKind::kError) {
        const Error e = error.value_or(Error{});
        out["error"] = {{"type", std::string(base::to_string(e.type))}, {"message", e.message}};
    } else {
        out["body"] = body;
    }
    return out;
}

Result<Reply> decode_reply(Frames frames, bool parse_body) {
    if (auto unpacked = unpack_frames(frames); !unpacked) return unpacked.error();
    auto decoded = decode_client_reply(views_of(frames));
    if (!decoded) return std::move(decoded).error();
    const ClientReply& frame = decoded.value();
    Reply reply;
    reply.request_id = std::string{frame.request_id};
    switch (frame.kind) {
        case ClientReplyKind::kData:
            reply.kind = ReplyKind::kData;
            break;
        case ClientReplyKind::kExplain:
            reply.kind = ReplyKind::kExplain;
            break;
        case ClientReplyKind::kFinal:
            reply.kind = ReplyKind::kFinal;
            break;
        case ClientReplyKind::kError:
            reply.kind = ReplyKind::kError;
            reply.error = frame.error;
            return reply;
    }
    std::string& text = frames[frame.body];  // moved, not copied: a reply may be large
    if (parse_body) {
        auto value = schema::parse_untrusted_json(text);
        if (!value)
            return make_error(ErrorType::kInvalidJson, "reply body: " + value.error().message);
        reply.body = std::move(value).value();
    }
    reply.text = std::move(text);
    return reply;
}

Frames encode_request(std::string_view service, std::string_view request_id,
                      std::chrono::milliseconds deadline, std::string_view body, bool packed,
                      const RequestOptions& options) {
    Frames frames;
    put_client_request(AppendFrames{frames}, service, request_id, deadline, body,
                       encode_request_options(options));
    if (packed) pack_frames(frames);
    return frames;
}

Frames encode_cancel(std::string_view request_id, bool packed) {
    Frames frames;
    put_client_cancel(AppendFrames{frames}, request_id);
    if (packed) pack_frames(frames);
    return frames;
}

Frames encode_heartbeat(const std::vector<RequestId>& request_ids, bool packed) {
    Frames frames;
    put_client_heartbeat(AppendFrames{frames}, request_ids);
    if (packed) pack_frames(frames);
    return frames;
}

// The client's context (its own, or the caller's) and its sockets.
struct BusClient::Sockets {
    explicit Sockets(zmq::context_t* shared) : context(shared) {}
    ContextHandle context;
    zmq::socket_t socket;   // the DEALER to the broker
    zmq::socket_t monitor;  // its monitor, until a broker completes a handshake
};

BusClient::BusClient(BusClientConfig config) : BusClient(nullptr, std::move(config)) {}

BusClient::BusClient(zmq::context_t& context, BusClientConfig config)
    : BusClient(&context, std::move(config)) {}

BusClient::BusClient(zmq::context_t* shared, BusClientConfig config)
    : config_(std::move(config)), sockets_(std::make_unique<Sockets>(shared)) {
    connect();
}

BusClient::~BusClient() = default;

void BusClient::connect() {
    sockets_->socket = zmq::socket_t(sockets_->context.get(), zmq::socket_type::dealer);
    set_socket_limits(sockets_->socket, config_.linger, config_.send_hwm, config_.receive_hwm);
    if (config_.curve) apply_curve_client(sockets_->socket, *config_.curve);
    if (config_.connect_timeout.count() > 0 && !config_.endpoint.starts_with("inproc://")) {
        watch_connection();
    }
    sockets_->socket.connect(config_.endpoint);
    id_prefix_ = config_.request_id_prefix.empty() ? random_prefix() : config_.request_id_prefix;
}

// A ZMQ DEALER connects in the background and queues sends while nothing listens, so a client
// cannot tell "no broker" from "a slow broker" by its sends. The socket monitor can: it reports
// when a peer completes the ZMTP handshake.
void BusClient::watch_connection() {
    static std::atomic<std::uint64_t> counter{0};
    const std::string address = "inproc://glassbox-bus-monitor-" + std::to_string(::getpid()) +
                                "-" + std::to_string(counter.fetch_add(1));
    if (zmq_socket_monitor(sockets_->socket.handle(), address.c_str(),
                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                               ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0) {
        return;  // no monitor, no check: requests wait for their deadline as before
    }
    sockets_->monitor = zmq::socket_t(sockets_->context.get(), zmq::socket_type::pair);
    sockets_->monitor.set(zmq::sockopt::linger, 0);
    sockets_->monitor.connect(address);
    broker_seen_ = false;
    connect_by_ = Clock::now() + config_.connect_timeout;
}

void BusClient::stop_watching() {
    broker_seen_ = true;
    if (sockets_->monitor.handle() == nullptr) return;
    zmq_socket_monitor(sockets_->socket.handle(), nullptr, 0);
    sockets_->monitor.close();
}

void BusClient::check_connection(Clock::time_point now) {
    if (broker_seen_) return;
    // Each event is two frames: [event: u16, value: u32] [endpoint]. The state at the check
    // counts, not the first handshake: a TCP connect to a free local port can connect to itself
    // (and handshake with itself) before it fails.
    zmq::message_t frame;
    while (sockets_->monitor.recv(frame, zmq::recv_flags::dontwait)) {
        if (frame.size() == 6) {
            std::uint16_t event = 0;
            std::memcpy(&event, frame.data(), sizeof event);
            if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) handshaken_ = true;
            if (event == ZMQ_EVENT_DISCONNECTED) handshaken_ = false;
            // Why a broker that answered still did not let us in (docs/security.md).
            if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) refused_ = Refusal::kKey;
            // A CURVE broker hangs up on a plain client's greeting (and the other way round):
            // libzmq reports that without detail, or as a mechanism mismatch.
            if ((event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
                 event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) &&
                refused_ == Refusal::kNone) {
                refused_ = Refusal::kMechanism;
            }
        }
    }
    if (now < connect_by_) return;
    if (handshaken_) {
        stop_watching();
        return;
    }
    if (in_flight_.empty()) return;
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(config_.connect_timeout);
    for (const auto& [id, state] : in_flight_) {
        Reply reply;
        reply.request_id = id;
        reply.kind = ReplyKind::kError;
        if (refused_ == Refusal::kKey) {
            reply.error = make_error(
                ErrorType::kForbidden,
                "the broker at " + config_.endpoint + " refused this client's CURVE key (" +
                    (config_.curve ? config_.curve->public_key : std::string{"none"}) +
                    "): it is not among the broker's allowed keys (glassbox keys allow, "
                    "docs/security.md)");
        } else if (refused_ == Refusal::kMechanism) {
            reply.error = make_error(
                ErrorType::kBrokerUnavailable,
                "the broker at " + config_.endpoint +
                    " ended every connection during the handshake: "
                    "this client and the broker most likely disagree on security (" +
                    (config_.curve ? "this client uses CURVE, the broker may not"
                                   : "this client has no CURVE key, the broker may require one") +
                    "): give the client the keys the broker's home holds (--home, --curve-key, "
                    "--curve-server-key), or run both with --insecure (docs/security.md)");
        } else {
            reply.error = make_error(
                ErrorType::kBrokerUnavailable,
                "no broker at " + config_.endpoint + " (nothing completed a connection in " +
                    std::to_string(waited.count()) +
                    " ms): start one with `glassbox up` (or `glassbox broker`), " +
                    "or name a running one with --broker");
        }
        buffered_.push_back(std::move(reply));
    }
    in_flight_.clear();
}

Result<RequestId> BusClient::send_raw(std::string_view service, std::string_view body_json,
                                      std::chrono::milliseconds deadline) {
    return send_raw(service, body_json, deadline, config_.request_options);
}

Result<RequestId> BusClient::send_raw(std::string_view service, std::string_view body_json,
                                      std::chrono::milliseconds deadline,
                                      const RequestOptions& options) {
    if (!protocol::is_valid_service_name(service)) {
        return make_error(ErrorType::kInvalidRequest,
                          "service name must be 1-255 printable ASCII characters");
    }
    if (deadline.count() < 0) return make_error(ErrorType::kInvalidRequest, "negative deadline");
    if (config_.max_message_bytes != 0 && body_json.size() > config_.max_message_bytes) {
        return make_error(ErrorType::kMessageTooLarge,
                          "the request to " + std::string{service} + " is " +
                              std::to_string(body_json.size()) + " bytes, above the limit of " +
                              std::to_string(config_.max_message_bytes) +
                              " bytes (the broker's max_message_bytes): nothing was sent");
    }
    RequestId id = id_prefix_ + "-" + std::to_string(next_id_++);
    if (id.size() > protocol::kMaxRequestId) id.resize(protocol::kMaxRequestId);
    if (!send_frames(sockets_->socket,
                     encode_request(service, id, deadline, body_json, config_.packed, options))) {
        return make_error(ErrorType::kInternal, "the request could not be queued to the broker");
    }
    const auto now = Clock::now();
    if (in_flight_.empty()) next_heartbeat_ = now + config_.heartbeat;
    const auto effective = deadline.count() == 0 ? config_.default_deadline : deadline;
    in_flight_[id] = InFlight{now + effective + config_.deadline_grace, false};
    return id;
}

Result<RequestId> BusClient::send(std::string_view service, const nlohmann::json& body,
                                  std::chrono::milliseconds deadline) {
    return send_raw(service, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                    deadline);
}

Result<void> BusClient::cancel(const RequestId& id) {
    const auto it = in_flight_.find(id);
    if (it == in_flight_.end()) return {};  // finished or unknown: nothing to cancel (§4.1)
    if (!send_frames(sockets_->socket, encode_cancel(id, config_.packed))) {
        return make_error(ErrorType::kInternal, "CANCEL could not be queued to the broker");
    }
    it->second.cancelled = true;
    it->second.backstop = std::min(it->second.backstop, Clock::now() + config_.deadline_grace);
    return {};
}

void BusClient::abandon(const RequestId& id) {
    if (in_flight_.erase(id) != 0) send_frames(sockets_->socket, encode_cancel(id, config_.packed));
    std::erase_if(buffered_, [&id](const Reply& r) { return r.request_id == id; });
}

void BusClient::read_available() {
    while (auto frames = try_receive_frames(sockets_->socket)) {
        if (!broker_seen_) stop_watching();  // a message came, so a broker is there
        auto decoded = decode_reply(std::move(*frames), config_.parse_bodies);
        if (!decoded) {
            base::component_logger("client")->warn("event=bad_reply error=\"{}\"",
                                                   decoded.error().describe());
            continue;
        }
        Reply reply = std::move(decoded).value();
        const auto it = in_flight_.find(reply.request_id);
        if (it == in_flight_.end()) {
            if (reply.request_id.empty()) {
                // §4.3: the broker could not read one of our messages; nothing to attribute it to.
                base::component_logger("client")->warn("event=broker_rejected error=\"{}\"",
                                                       reply.error ? reply.error->describe() : "");
            }
            continue;  // §4.1: ignore anything for a request already finished
        }
        if (reply.terminal()) in_flight_.erase(it);
        buffered_.push_back(std::move(reply));
    }
}

void BusClient::heartbeat_if_due(Clock::time_point now) {
    if (in_flight_.empty() || now < next_heartbeat_) return;
    std::vector<RequestId> ids;
    const std::size_t per_message = protocol::kMaxFrames - 3;
    for (const auto& [id, state] : in_flight_) {
        ids.push_back(id);
        if (ids.size() == per_message) {
            send_frames(sockets_->socket, encode_heartbeat(ids, config_.packed));
            ids.clear();
        }
    }
    if (!ids.empty()) send_frames(sockets_->socket, encode_heartbeat(ids, config_.packed));
    next_heartbeat_ = now + config_.heartbeat;
}

void BusClient::expire_backstops(Clock::time_point now) {
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
        if (it->second.backstop > now) {
            ++it;
            continue;
        }
        Reply reply;
        reply.request_id = it->first;
        reply.kind = ReplyKind::kError;
        if (it->second.cancelled) {
            reply.error =
                make_error(ErrorType::kCancelled, "cancelled (no confirmation from the broker)");
        } else {
            reply.error =
                make_error(ErrorType::kDeadlineExceeded, "no terminal reply from the broker at " +
                                                             config_.endpoint + " by the deadline");
            send_frames(
                sockets_->socket,
                encode_cancel(it->first, config_.packed));  // let the broker stop the work too
        }
        buffered_.push_back(std::move(reply));
        it = in_flight_.erase(it);
    }
}

std::optional<Reply> BusClient::take_buffered(const RequestId* wanted) {
    const auto it = std::find_if(buffered_.begin(), buffered_.end(), [wanted](const Reply& r) {
        return wanted == nullptr || r.request_id == *wanted;
    });
    if (it == buffered_.end()) return std::nullopt;
    Reply reply = std::move(*it);
    buffered_.erase(it);
    return reply;
}

BusClient::Clock::time_point BusClient::next_wakeup(Clock::time_point until) const {
    auto wake = until;
    if (!in_flight_.empty()) {
        if (!broker_seen_) wake = std::min(wake, connect_by_);
        wake = std::min(wake, next_heartbeat_);
        for (const auto& [id, state] : in_flight_) wake = std::min(wake, state.backstop);
    }
    return wake;
}

void BusClient::pump(Clock::time_point until) {
    const auto now = Clock::now();
    const auto wake = next_wakeup(until);
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(wake - now);
    if (wait.count() < 0) wait = std::chrono::milliseconds{0};
    if (wait_readable(sockets_->socket, wait)) read_available();
    const auto after = Clock::now();
    heartbeat_if_due(after);
    check_connection(after);
    expire_backstops(after);
}

Result<Reply> BusClient::next(std::chrono::milliseconds timeout) {
    const auto until = Clock::now() + timeout;
    read_available();
    for (;;) {
        if (auto reply = take_buffered(nullptr)) return std::move(*reply);
        if (in_flight_.empty()) {
            return make_error(ErrorType::kTimeout, "no request in flight");
        }
        if (Clock::now() >= until)
            return make_error(ErrorType::kTimeout, "no reply within the timeout");
        pump(until);
    }
}

Result<Reply> BusClient::next(const RequestId& id, std::chrono::milliseconds timeout) {
    const auto until = Clock::now() + timeout;
    read_available();
    for (;;) {
        if (auto reply = take_buffered(&id)) return std::move(*reply);
        if (!is_in_flight(id))
            return make_error(ErrorType::kNotFound, "request " + id + " is not in flight");
        if (Clock::now() >= until)
            return make_error(ErrorType::kTimeout, "no reply within the timeout");
        pump(until);
    }
}

Result<std::vector<Reply>> BusClient::call(std::string_view service, const nlohmann::json& body,
                                           std::chrono::milliseconds deadline) {
    auto id = send(service, body, deadline);
    if (!id) return std::move(id).error();
    std::vector<Reply> replies;
    // The backstop ends the request locally, so waiting without a timeout of our own terminates.
    const auto wait = std::chrono::milliseconds{std::chrono::hours{24}};
    for (;;) {
        auto reply = next(*id, wait);
        if (!reply) return std::move(reply).error();
        if (reply->kind == ReplyKind::kError) return *reply->error;
        const bool terminal = reply->terminal();
        replies.push_back(std::move(reply).value());
        if (terminal) return replies;
    }
}

Result<Reply> Stream::next(std::chrono::milliseconds timeout) {
    if (done_) return make_error(ErrorType::kNotFound, "stream " + id_ + " has ended");
    auto reply = client_->next(id_, timeout);
    if (reply && reply->terminal()) done_ = true;
    if (!reply && reply.error().type == ErrorType::kNotFound) done_ = true;
    return reply;
}

Result<Stream> open_stream(BusClient& client, std::string_view service, std::string_view body_json,
                           std::chrono::milliseconds deadline) {
    auto id = client.send_raw(service, body_json, deadline);
    if (!id) return std::move(id).error();
    return Stream(client, std::move(id).value());
}

}  // namespace glassbox::bus
