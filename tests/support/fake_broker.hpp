// A fake broker for worker-runtime tests: a ROUTER the test drives by hand, every receive bounded.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "bus/frame_codec.hpp"
#include "bus/frame_io.hpp"
#include "schema/protocol.hpp"

namespace glassbox::runtime::testing {

using Frames = bus::Frames;
using namespace std::chrono_literals;

// A message from a worker: its ROUTER identity and the frames after it.
struct WorkerMessage {
    std::string identity;
    Frames frames;  // [""] ["MDPW01"] [command] ... (a packed message unpacked, protocol.md §1.4)
    bool packed = false;  // it came in the packed form
    char command() const {
        return frames.size() > 2 && frames[2].size() == 1 ? frames[2][0] : '\0';
    }
};

class FakeBroker {
public:
    explicit FakeBroker(zmq::context_t& context) : router_(context, zmq::socket_type::router) {
        static std::atomic<int> counter{0};
        endpoint_ = "inproc://fake-broker-" + std::to_string(counter++);
        bus::set_socket_limits(router_, 0ms, 10'000, 10'000);
        router_.bind(endpoint_);
    }

    const std::string& endpoint() const { return endpoint_; }

    std::optional<WorkerMessage> receive(std::chrono::milliseconds timeout) {
        if (!bus::wait_readable(router_, timeout)) return std::nullopt;
        auto frames = bus::try_receive_frames(router_);
        if (!frames || frames->empty()) return std::nullopt;
        WorkerMessage message;
        message.identity = frames->front();
        message.frames.assign(frames->begin() + 1, frames->end());
        message.packed = !message.frames.empty() && bus::is_packed(message.frames[0]);
        EXPECT_TRUE(bus::unpack_frames(message.frames).ok()) << "a malformed packed message";
        return message;
    }

    // The next message with `command`, skipping heartbeats (unless asked for); nullopt on timeout.
    std::optional<WorkerMessage> expect(char command, std::chrono::milliseconds timeout = 3000ms) {
        const auto until = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                until - std::chrono::steady_clock::now());
            if (left.count() <= 0) return std::nullopt;
            auto message = receive(left);
            if (!message) return std::nullopt;
            if (message->command() == command) return message;
            if (message->command() != schema::protocol::worker_cmd::kHeartbeat) {
                skipped.push_back(*message);
            } else if (answers_heartbeats) {
                send_command(message->identity, schema::protocol::worker_cmd::kHeartbeat);
            }
        }
    }

    void send(const std::string& identity, Frames frames) {
        frames.insert(frames.begin(), identity);
        ASSERT_TRUE(bus::send_frames(router_, frames));
    }

    void send_command(const std::string& identity, char command, const Frames& rest = {},
                      bool packed = false) {
        Frames frames{"", std::string(schema::protocol::kMdpWorker), std::string(1, command)};
        frames.insert(frames.end(), rest.begin(), rest.end());
        if (packed) bus::pack_frames(frames);
        send(identity, frames);
    }

    // A REQUEST in the classic layout (GBW01), or with `packed` as the broker writes it to a
    // GBW03 worker: the compact layout, packed (protocol.md §1.4, §5.4).
    void send_request(const std::string& identity, const std::string& token,
                      const std::string& body, const std::string& request_id = "r-1",
                      long long deadline_ms = 10'000, const std::string& service = "test",
                      bool packed = false) {
        const std::string meta = R"({"request_id":")" + request_id + R"(","service":")" + service +
                                 R"(","deadline_ms":)" + std::to_string(deadline_ms) +
                                 R"(,"attempt":1,"client":"GBC01"})";
        if (packed) {
            send_command(identity, schema::protocol::worker_cmd::kRequest, {token, meta, body},
                         true);
        } else {
            send_command(identity, schema::protocol::worker_cmd::kRequest, {token, "", meta, body});
        }
    }

    std::vector<WorkerMessage> skipped;  // non-heartbeat messages expect() passed over
    // A real broker heartbeats its workers; this one is silent (the runtime tests count on that)
    // unless asked to answer each heartbeat expect() passes over. Service tests with requests
    // that run for seconds (sanitizer builds, a loaded machine) set it, or the worker, hearing
    // nothing for `liveness` intervals, reconnects and its reply is lost.
    bool answers_heartbeats = false;

private:
    zmq::socket_t router_;
    std::string endpoint_;
};

}  // namespace glassbox::runtime::testing
