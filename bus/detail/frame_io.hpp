// Multipart send/receive on a zmq socket as vectors of byte strings, never blocking on send; frames
// as libzmq messages; socket options. The socket side of the bus, for the peers that own a socket
// (the bus's own classes, the broker, the worker runtime, the trace collector), not for clients.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "bus/curve_keys.hpp"
#include "bus/frame_codec.hpp"

namespace glassbox::bus {

// A zmq context of one's own, or the caller's (shared with peers on inproc:// endpoints): what a
// class that opens sockets holds. Declare it before the sockets, so that they close first.
class ContextHandle {
public:
    explicit ContextHandle(zmq::context_t* shared)
        : own_(shared != nullptr ? nullptr : std::make_unique<zmq::context_t>(1)),
          context_(shared != nullptr ? *shared : *own_) {}
    zmq::context_t& get() const noexcept { return context_; }

private:
    std::unique_ptr<zmq::context_t> own_;
    zmq::context_t& context_;
};

// Sends all frames as one message. Without `block`, never waits: false if the socket would
// block (HWM reached, no peer); a multipart message is atomic, so nothing was sent then. With
// `block`, waits for room (backpressure; only for inproc peers that are sure to drain).
bool send_frames(zmq::socket_t& socket, const Frames& frames, bool block = false) noexcept;

// As above, taking the strings: a frame of kZeroCopyFrame bytes or more is handed to libzmq
// without a copy (its message owns the string until the socket is done with it).
bool send_frames(zmq::socket_t& socket, Frames&& frames, bool block = false) noexcept;
inline constexpr std::size_t kZeroCopyFrame = 1024;

// Receives one whole message if one is ready now; nullopt if none is (or on a socket error).
std::optional<Frames> try_receive_frames(zmq::socket_t& socket) noexcept;

// A multipart message kept as libzmq messages, for forwarding parts without copying them.
using Messages = std::vector<zmq::message_t>;
// As try_receive_frames, keeping each part as it arrived.
std::optional<Messages> try_receive_messages(zmq::socket_t& socket) noexcept;
// Waits for one whole message, up to the socket's receive timeout (ZMQ_RCVTIMEO; none: for
// ever): one blocking receive instead of a poll and a receive. nullopt on timeout, interruption
// or a socket error.
std::optional<Messages> receive_messages(zmq::socket_t& socket) noexcept;
// Sends all parts as one message (as send_frames); the parts are consumed either way.
bool send_messages(zmq::socket_t& socket, Messages& parts, bool block = false) noexcept;
// The message for one frame: copied when small, else owning the moved string.
zmq::message_t message_of(std::string&& frame);
// Copies of the frames as messages.
Messages messages_of(const Frames& frames);

// The frame codec (bus/frame_codec.hpp) on libzmq messages: a frame's bytes, views of frames
// [first, first + count), a sink that appends messages, and the packed form written in place.
inline std::string_view view_of(const zmq::message_t& frame) noexcept {
    return {static_cast<const char*>(frame.data()), frame.size()};
}
inline void views_of(const Messages& frames, std::size_t first, std::size_t count,
                     FrameViews& out) {
    out.clear();
    for (std::size_t i = first; i < first + count; ++i) out.push_back(view_of(frames[i]));
}
inline FrameViews views_of(const Messages& frames) {
    FrameViews out;
    views_of(frames, 0, frames.size(), out);
    return out;
}
struct AppendMessages {
    Messages& messages;
    void operator()(std::string_view frame) const {
        messages.emplace_back(frame.data(), frame.size());
    }
};
void pack_messages(Messages& frames, std::size_t first = 0);

// Waits up to `timeout` (negative: zero) for `socket` to become readable. False on timeout or
// interruption.
bool wait_readable(zmq::socket_t& socket, std::chrono::milliseconds timeout) noexcept;

// Waits up to `timeout` (negative: zero) for any of `sockets` (at most 4; the rest are not
// watched) to become readable: bit i set for sockets[i] readable, 0 on timeout or interruption.
// A zmq::error_t (ETERM) goes to the caller. zmq_poll's answer, with fewer syscalls.
unsigned wait_any_readable(std::span<zmq::socket_t* const> sockets,
                           std::chrono::milliseconds timeout);

// Sets linger and both high-water marks explicitly (STYLE: never rely on libzmq defaults).
void set_socket_limits(zmq::socket_t& socket, std::chrono::milliseconds linger, int send_hwm,
                       int receive_hwm);

// Sets the socket's CURVE client options (bus/curve_keys.hpp). Throws zmq::error_t (a socket
// that cannot take them).
void apply_curve_client(zmq::socket_t& socket, const CurveClientKeys& keys);

}  // namespace glassbox::bus
