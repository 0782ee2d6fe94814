// Sending and reading whole multipart messages as strings, for the broker tests' peers.
#pragma once

#include <string>
#include <vector>

#include <zmq.hpp>

namespace glassbox::broker::test_frames {

using Frames = std::vector<std::string>;

inline void send_frames(zmq::socket_t& socket, const Frames& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
        socket.send(zmq::buffer(frames[i]),
                    i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
}

// Every frame of the message waiting on `socket` (it has been polled readable).
inline Frames read_frames(zmq::socket_t& socket) {
    Frames frames;
    bool more = true;
    while (more) {
        zmq::message_t frame;
        (void)socket.recv(frame);
        frames.emplace_back(frame.to_string());
        more = frame.more();
    }
    return frames;
}

}  // namespace glassbox::broker::test_frames
