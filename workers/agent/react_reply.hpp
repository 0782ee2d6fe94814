// The model's reply to one agent-react step, parsed: a thought, then tool calls or the final
// answer. Text form (Thought / Action / Args / Final Answer) or the JSON equivalent.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"

namespace glassbox::agent {

struct ToolCall {
    std::string tool;
    nlohmann::json args = nlohmann::json::object();
};

struct ReactReply {
    std::string thought;
    std::vector<ToolCall> calls;              // empty when the reply is final
    std::optional<std::string> final_answer;  // the short answer ("" when undecided)
    std::string response;                     // the sentences after the Final Answer line
};

// Parses a reply (docs/agent.md "The model contract"). Never throws; a reply that is neither
// form is InvalidRequest saying what is wrong (the loop turns it into an error Observation):
// no Action and no Final Answer, both at once, Args that are not one JSON object, an Action
// with no name.
base::Result<ReactReply> parse_react_reply(std::string_view text);

}  // namespace glassbox::agent
