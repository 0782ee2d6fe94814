// A fake broker for worker-runtime tests: a ROUTER the test drives by hand, every receive bounded.
#pragma once

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "schema/protocol.hpp"
#include "tests/support/inproc_router.hpp"

namespace glassbox::runtime::testing {

using Frames = bus::Frames;
using namespace std::chrono_literals;

// A message from a worker: its ROUTER identity and the frames after it, [""] ["MDPW01"]
// [command] ...
using WorkerMessage = bus::testing::RoutedMessage;

class FakeBroker : public bus::testing::InprocRouter {
public:
    explicit FakeBroker(zmq::context_t& context) : InprocRouter(context, "fake-broker") {}

    // The next message with `command`, skipping heartbeats (unless asked for); nullopt on timeout.
    // A message held back earlier (see `held`) comes before anything still on the socket.
    std::optional<WorkerMessage> expect(char command, std::chrono::milliseconds timeout = 3000ms) {
        for (auto it = held.begin(); it != held.end(); ++it) {
            if (it->command() != command) continue;
            WorkerMessage message = std::move(*it);
            held.erase(it);
            return message;
        }
        return InprocRouter::expect(command, timeout, [this](WorkerMessage&& message) {
            if (message.command() != schema::protocol::worker_cmd::kHeartbeat) {
                skipped.push_back(std::move(message));
            } else if (answers_heartbeats) {
                send_command(message.identity, schema::protocol::worker_cmd::kHeartbeat);
            }
        });
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
    // Messages a test read while it looked for another kind (a worker's message can overtake a
    // client message sent before it: two sockets), for a later expect() to return in order.
    std::deque<WorkerMessage> held;
    // A real broker heartbeats its workers; this one is silent (the runtime tests count on that)
    // unless asked to answer each heartbeat expect() passes over. Service tests with requests
    // that run for seconds (sanitizer builds, a loaded machine) set it, or the worker, hearing
    // nothing for `liveness` intervals, reconnects and its reply is lost.
    bool answers_heartbeats = false;
};

}  // namespace glassbox::runtime::testing
