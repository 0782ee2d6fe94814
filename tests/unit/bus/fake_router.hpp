// A fake broker for client tests: a ROUTER the test drives by hand, every receive bounded.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "bus/frame_codec.hpp"
#include "bus/frame_io.hpp"
#include "schema/protocol.hpp"

namespace glassbox::bus::testing {

using namespace std::chrono_literals;

struct ClientMessage {
    std::string identity;
    Frames frames;  // [""] ["GBC01"] [command] ... (a packed message unpacked, protocol.md §1.4)
    bool packed = false;  // it came in the packed form
    char command() const {
        return frames.size() > 2 && frames[2].size() == 1 ? frames[2][0] : '\0';
    }
};

class FakeRouter {
public:
    explicit FakeRouter(zmq::context_t& context) : router_(context, zmq::socket_type::router) {
        static std::atomic<int> counter{0};
        endpoint_ = "inproc://fake-router-" + std::to_string(counter++);
        set_socket_limits(router_, 0ms, 10'000, 10'000);
        router_.bind(endpoint_);
    }
    const std::string& endpoint() const { return endpoint_; }

    std::optional<ClientMessage> receive(std::chrono::milliseconds timeout) {
        if (!wait_readable(router_, timeout)) return std::nullopt;
        auto frames = try_receive_frames(router_);
        if (!frames || frames->empty()) return std::nullopt;
        ClientMessage message{frames->front(), Frames(frames->begin() + 1, frames->end())};
        message.packed = !message.frames.empty() && is_packed(message.frames[0]);
        EXPECT_TRUE(unpack_frames(message.frames).ok()) << "a malformed packed message";
        return message;
    }

    std::optional<ClientMessage> expect(char command, std::chrono::milliseconds timeout = 2000ms) {
        const auto until = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                until - std::chrono::steady_clock::now());
            if (left.count() <= 0) return std::nullopt;
            auto message = receive(left);
            if (!message) return std::nullopt;
            if (message->command() == command) return message;
        }
    }

    // Sends [empty] ["GBC01"] [command] rest..., packed (§1.4) if asked.
    void reply(const std::string& identity, char command, const Frames& rest, bool packed = false) {
        Frames frames{identity, "", std::string(schema::protocol::kGbClient),
                      std::string(1, command)};
        frames.insert(frames.end(), rest.begin(), rest.end());
        if (packed) pack_frames(frames, 1);
        ASSERT_TRUE(send_frames(router_, frames));
    }

private:
    zmq::socket_t router_;
    std::string endpoint_;
};

}  // namespace glassbox::bus::testing
