// Checks of one echo request's reply stream (data partials, explain messages, one terminal).
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/bus_peers.hpp"

namespace glassbox::integration {

struct EchoStream {
    std::vector<nlohmann::json> data;     // PARTIAL data bodies, in arrival order
    std::vector<nlohmann::json> explain;  // PARTIAL explain bodies, in arrival order
    std::vector<GbcMessage> terminals;    // FINAL / ERROR messages (exactly one expected)
    std::vector<GbcMessage> malformed;
    std::vector<std::string> order;  // "data", "explain", "final", "error" per message
};

EchoStream split_stream(const std::vector<GbcMessage>& messages);

// The whole stream of a successful echo request for `body` with `partials` data partials:
// partials in order, explain seq 0.. with the last `complete`, then exactly one FINAL
// {"echo": body, "session": S} naming the explain messages' session.
::testing::AssertionResult is_complete_echo_stream(const std::vector<GbcMessage>& messages,
                                                   const nlohmann::json& body, int partials);

// A human-readable dump of a stream for failure messages.
std::string describe(const std::vector<GbcMessage>& messages);

}  // namespace glassbox::integration
