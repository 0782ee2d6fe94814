// A fake broker for client tests: a ROUTER the test drives by hand, every receive bounded.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "schema/protocol.hpp"
#include "tests/support/inproc_router.hpp"

namespace glassbox::bus::testing {

using namespace std::chrono_literals;

using ClientMessage = RoutedMessage;  // [""] ["GBC01"] [command] ...

class FakeRouter : public InprocRouter {
public:
    explicit FakeRouter(zmq::context_t& context) : InprocRouter(context, "fake-router") {}

    // The next message with `command`, skipping any other; nullopt on timeout.
    std::optional<ClientMessage> expect(char command, std::chrono::milliseconds timeout = 2000ms) {
        return InprocRouter::expect(command, timeout, [](ClientMessage&&) {});
    }

    // Sends [empty] ["GBC01"] [command] rest..., packed (§1.4) if asked.
    void reply(const std::string& identity, char command, const Frames& rest, bool packed = false) {
        Frames frames{"", std::string(schema::protocol::kGbClient), std::string(1, command)};
        frames.insert(frames.end(), rest.begin(), rest.end());
        if (packed) pack_frames(frames);
        send(identity, std::move(frames));
    }
};

}  // namespace glassbox::bus::testing
