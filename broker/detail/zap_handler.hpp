// One ZAP exchange (ZeroMQ RFC 27) on a REP socket the broker binds as a context's handler: the
// request's frames read whole, and the six-frame reply.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <zmq.hpp>

namespace glassbox::broker::detail {

// Where libzmq asks, within one context, about each handshake of a socket that needs asking.
inline constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";

struct ZapRequest {
    // version, request id, domain, address, routing id, mechanism, credentials (CURVE: one)
    std::array<zmq::message_t, 7> frames;
    std::size_t count = 0;  // frames the request had (those past the array are read, not kept)

    std::string_view frame(std::size_t i) const noexcept;
    // Version 1.0 with at least the six frames before the credentials.
    bool valid() const noexcept;
    // The client's CURVE public key in Z85; empty when the mechanism is not CURVE.
    std::string curve_key() const;
};

// The next request waiting on `socket`; nullopt when none does.
std::optional<ZapRequest> receive_zap(zmq::socket_t& socket);

// [version "1.0"] [request id] [status code] [status text] [user id] [metadata: empty]; false if
// the socket would not take it.
bool send_zap_reply(zmq::socket_t& socket, std::string_view request_id, std::string_view code,
                    std::string_view text, std::string_view user_id);

}  // namespace glassbox::broker::detail
