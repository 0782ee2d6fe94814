// Reading a ZAP request and writing its reply (RFC 27), for both of the broker's handlers.
#include "broker/detail/zap_handler.hpp"

#include "bus/curve_keys.hpp"

namespace glassbox::broker::detail {

namespace {

constexpr std::size_t kCurveKeyBytes = 32;

}  // namespace

std::string_view ZapRequest::frame(std::size_t i) const noexcept {
    return i < count && i < frames.size()
               ? std::string_view{static_cast<const char*>(frames[i].data()), frames[i].size()}
               : std::string_view{};
}

bool ZapRequest::valid() const noexcept { return count >= 6 && frame(0) == "1.0"; }

std::string ZapRequest::curve_key() const {
    const std::string_view credential = frame(6);
    if (frame(5) != "CURVE" || credential.size() != kCurveKeyBytes) return {};
    std::array<char, bus::kZ85KeyLength + 1> text{};
    if (zmq_z85_encode(text.data(), reinterpret_cast<const std::uint8_t*>(credential.data()),
                       credential.size()) == nullptr) {
        return {};
    }
    return std::string{text.data(), bus::kZ85KeyLength};
}

std::optional<ZapRequest> receive_zap(zmq::socket_t& socket) {
    ZapRequest request;
    bool more = true;
    while (more) {
        zmq::message_t frame;
        // Only the first frame may be absent: the rest of a message is there once it is.
        if (zmq_msg_recv(frame.handle(), socket.handle(), request.count == 0 ? ZMQ_DONTWAIT : 0) <
            0) {
            if (request.count == 0) return std::nullopt;
            break;
        }
        more = frame.more();
        if (request.count < request.frames.size()) request.frames[request.count] = std::move(frame);
        ++request.count;
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

}  // namespace glassbox::broker::detail
