// Multipart send/receive on a zmq socket as vectors of byte strings, never blocking on send.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

namespace glassbox::bus {

using Frames = std::vector<std::string>;

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
// Sends all parts as one message (as send_frames); the parts are consumed either way.
bool send_messages(zmq::socket_t& socket, Messages& parts, bool block = false) noexcept;
// The message for one frame: copied when small, else owning the moved string.
zmq::message_t message_of(std::string&& frame);
// Copies of the frames as messages.
Messages messages_of(const Frames& frames);

// Waits up to `timeout` (negative: zero) for `socket` to become readable. False on timeout or
// interruption.
bool wait_readable(zmq::socket_t& socket, std::chrono::milliseconds timeout) noexcept;

// Sets linger and both high-water marks explicitly (STYLE: never rely on libzmq defaults).
void set_socket_limits(zmq::socket_t& socket, std::chrono::milliseconds linger, int send_hwm,
                       int receive_hwm);

// One byte frame for a protocol command.
inline std::string command_frame(char command) { return std::string(1, command); }

}  // namespace glassbox::bus
