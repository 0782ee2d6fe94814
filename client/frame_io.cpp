// Multipart send/receive helpers shared by the bus client and the worker runtime.
#include "client/frame_io.hpp"

#include <limits>

namespace glassbox::client {

bool send_frames(zmq::socket_t& socket, const Frames& frames, bool block) noexcept {
    if (frames.empty()) return false;
    try {
        for (std::size_t i = 0; i < frames.size(); ++i) {
            auto flags = block ? zmq::send_flags::none : zmq::send_flags::dontwait;
            if (i + 1 < frames.size()) flags = flags | zmq::send_flags::sndmore;
            const auto sent = socket.send(zmq::const_buffer(frames[i].data(), frames[i].size()), flags);
            // libzmq queues a multipart message atomically: only the first part can fail on HWM.
            if (!sent) return false;
        }
        return true;
    } catch (const zmq::error_t&) {
        return false;
    }
}

std::optional<Frames> try_receive_frames(zmq::socket_t& socket) noexcept {
    try {
        Frames frames;
        zmq::message_t part;
        if (!socket.recv(part, zmq::recv_flags::dontwait)) return std::nullopt;
        frames.emplace_back(part.to_string());
        while (part.more()) {
            // The remaining parts of a message are already here: a blocking receive returns at once.
            if (!socket.recv(part, zmq::recv_flags::none)) return std::nullopt;
            frames.emplace_back(part.to_string());
        }
        return frames;
    } catch (const zmq::error_t&) {
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

}  // namespace glassbox::client
