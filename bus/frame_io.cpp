// Multipart send/receive helpers and socket options, shared by the bus's peers.
#include "bus/detail/frame_io.hpp"

#include <limits>
#include <memory>
#include <utility>

namespace glassbox::bus {

Messages messages_of(const Frames& frames) {
    Messages parts;
    parts.reserve(frames.size());
    for (const auto& frame : frames) parts.emplace_back(frame.data(), frame.size());
    return parts;
}

bool send_frames(zmq::socket_t& socket, const Frames& frames, bool block) noexcept {
    try {
        auto parts = messages_of(frames);
        return send_messages(socket, parts, block);
    } catch (const std::exception&) {
        return false;
    }
}

zmq::message_t message_of(std::string&& frame) {
    if (frame.size() < kZeroCopyFrame) return zmq::message_t(frame.data(), frame.size());
    auto owned = std::make_unique<std::string>(std::move(frame));
    zmq::message_t message(
        owned->data(), owned->size(),
        [](void*, void* hint) { delete static_cast<std::string*>(hint); }, owned.get());
    (void)owned.release();  // the message's free function deletes it
    return message;
}

bool send_frames(zmq::socket_t& socket, Frames&& frames, bool block) noexcept {
    if (frames.empty()) return false;
    try {
        Messages parts;
        parts.reserve(frames.size());
        for (auto& frame : frames) parts.push_back(message_of(std::move(frame)));
        return send_messages(socket, parts, block);
    } catch (const std::exception&) {
        return false;
    }
}

bool send_messages(zmq::socket_t& socket, Messages& parts, bool block) noexcept {
    if (parts.empty()) return false;
    try {
        for (std::size_t i = 0; i < parts.size(); ++i) {
            auto flags = block ? zmq::send_flags::none : zmq::send_flags::dontwait;
            if (i + 1 < parts.size()) flags = flags | zmq::send_flags::sndmore;
            // libzmq queues a multipart message atomically: only the first part can fail on HWM.
            if (!socket.send(parts[i], flags)) return false;
        }
        return true;
    } catch (const zmq::error_t&) {
        return false;
    }
}

namespace {

// One whole message; `first` says whether the first part may be waited for.
std::optional<Messages> receive_whole(zmq::socket_t& socket, zmq::recv_flags first) noexcept {
    try {
        Messages parts;
        parts.reserve(4);  // the messages of this bus are two to seven parts: one allocation
        zmq::message_t part;
        if (!socket.recv(part, first)) return std::nullopt;
        bool more = part.more();
        parts.push_back(std::move(part));
        while (more) {
            zmq::message_t next;
            // The remaining parts of a message are already here: a blocking receive returns at
            // once.
            if (!socket.recv(next, zmq::recv_flags::none)) return std::nullopt;
            more = next.more();
            parts.push_back(std::move(next));
        }
        return parts;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace

std::optional<Messages> try_receive_messages(zmq::socket_t& socket) noexcept {
    return receive_whole(socket, zmq::recv_flags::dontwait);
}

std::optional<Messages> receive_messages(zmq::socket_t& socket) noexcept {
    return receive_whole(socket, zmq::recv_flags::none);
}

std::optional<Frames> try_receive_frames(zmq::socket_t& socket) noexcept {
    auto parts = try_receive_messages(socket);
    if (!parts) return std::nullopt;
    try {
        Frames frames;
        frames.reserve(parts->size());
        for (const auto& part : *parts) frames.emplace_back(part.to_string());
        return frames;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

bool wait_readable(zmq::socket_t& socket, std::chrono::milliseconds timeout) noexcept {
    if (timeout.count() < 0) timeout = std::chrono::milliseconds{0};
    zmq_pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    try {
        zmq::poll(&item, 1, timeout);
    } catch (const zmq::error_t&) {
        return false;  // EINTR or ETERM: the caller re-checks its own state
    }
    return (item.revents & ZMQ_POLLIN) != 0;
}

void set_socket_limits(zmq::socket_t& socket, std::chrono::milliseconds linger, int send_hwm,
                       int receive_hwm) {
    const auto linger_ms = linger.count() > std::numeric_limits<int>::max()
                               ? std::numeric_limits<int>::max()
                               : static_cast<int>(linger.count());
    socket.set(zmq::sockopt::linger, linger_ms);
    socket.set(zmq::sockopt::sndhwm, send_hwm);
    socket.set(zmq::sockopt::rcvhwm, receive_hwm);
}

void apply_curve_client(zmq::socket_t& socket, const CurveClientKeys& keys) {
    socket.set(zmq::sockopt::curve_serverkey, keys.server_key);
    socket.set(zmq::sockopt::curve_publickey, keys.public_key);
    socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
}

}  // namespace glassbox::bus
