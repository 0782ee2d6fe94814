// A ROUTER on its own inproc:// endpoint that a test drives by hand, every receive bounded: what
// the fake broker of the runtime tests and the fake router of the client tests share.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "bus/detail/frame_io.hpp"
#include "bus/frame_codec.hpp"

namespace glassbox::bus::testing {

// A message from a peer: its ROUTER identity and the frames after it.
struct RoutedMessage {
    std::string identity;
    Frames frames;  // [""] [protocol] [command] ... (a packed message unpacked, protocol.md §1.4)
    bool packed = false;  // it came in the packed form
    char command() const {
        return frames.size() > 2 && frames[2].size() == 1 ? frames[2][0] : '\0';
    }
};

class InprocRouter {
public:
    // Binds inproc://<name>-<n>, n counting the routers made with that name.
    InprocRouter(zmq::context_t& context, const std::string& name)
        : router_(context, zmq::socket_type::router) {
        static std::atomic<int> counter{0};
        endpoint_ = "inproc://" + name + "-" + std::to_string(counter++);
        set_socket_limits(router_, std::chrono::milliseconds{0}, 10'000, 10'000);
        router_.bind(endpoint_);
    }

    const std::string& endpoint() const { return endpoint_; }

    std::optional<RoutedMessage> receive(std::chrono::milliseconds timeout) {
        if (!wait_readable(router_, timeout)) return std::nullopt;
        auto frames = try_receive_frames(router_);
        if (!frames || frames->empty()) return std::nullopt;
        RoutedMessage message;
        message.identity = frames->front();
        message.frames.assign(frames->begin() + 1, frames->end());
        message.packed = !message.frames.empty() && is_packed(message.frames[0]);
        EXPECT_TRUE(unpack_frames(message.frames).ok()) << "a malformed packed message";
        return message;
    }

    // The next message with `command`, handing every other one to `passed`; nullopt on timeout.
    template <typename Passed>
    std::optional<RoutedMessage> expect(char command, std::chrono::milliseconds timeout,
                                        Passed&& passed) {
        const auto until = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                until - std::chrono::steady_clock::now());
            if (left.count() <= 0) return std::nullopt;
            auto message = receive(left);
            if (!message) return std::nullopt;
            if (message->command() == command) return message;
            passed(std::move(*message));
        }
    }

    void send(const std::string& identity, Frames frames) {
        frames.insert(frames.begin(), identity);
        ASSERT_TRUE(send_frames(router_, frames));
    }

private:
    zmq::socket_t router_;
    std::string endpoint_;
};

}  // namespace glassbox::bus::testing
