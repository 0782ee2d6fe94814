// Multipart send/receive helpers and socket options, shared by the bus's peers.
#include "bus/detail/frame_io.hpp"

#include <poll.h>

#include <algorithm>
#include <array>
#include <chrono>
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

unsigned wait_any_readable(std::span<zmq::socket_t* const> sockets,
                           std::chrono::milliseconds timeout) {
    // Not zmq_poll: it polls the sockets' FDs without waiting first, asks each socket's
    // ZMQ_EVENTS, sleeps in poll(2) and asks each again, and each ask costs a getpid and a
    // poll(2) or read of the socket's mailbox. Here ZMQ_EVENTS is asked, then the sleep is on the
    // ZMQ_FDs alone, which are edge-triggered: readable once a socket's state may have changed
    // since that ask (a message in, or commands only, which the next ask takes in). A poll(2)
    // fewer per wait, and one ask fewer per socket: a worker waits once per message it gets.
    using Clock = std::chrono::steady_clock;
    constexpr std::size_t kMost = 4;
    const std::size_t n = std::min(sockets.size(), kMost);
    const auto deadline = Clock::now() + std::max(timeout, std::chrono::milliseconds{0});
    std::array<pollfd, kMost> items{};
    for (std::size_t i = 0; i < n; ++i) items[i] = {sockets[i]->get(zmq::sockopt::fd), POLLIN, 0};
    for (;;) {
        unsigned readable = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if ((sockets[i]->get(zmq::sockopt::events) & ZMQ_POLLIN) != 0) readable |= 1U << i;
        }
        if (readable != 0) return readable;
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return 0;
        const auto wait =
            static_cast<int>(std::min<long long>(left, std::numeric_limits<int>::max()));
        if (::poll(items.data(), n, wait) <= 0) return 0;  // timed out with no change, or EINTR
    }
}

bool wait_readable(zmq::socket_t& socket, std::chrono::milliseconds timeout) noexcept {
    zmq::socket_t* const one[] = {&socket};
    try {
        return wait_any_readable(one, timeout) != 0;
    } catch (const zmq::error_t&) {
        return false;  // ETERM: the caller re-checks its own state
    }
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
