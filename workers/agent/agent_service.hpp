// The `agent` service: a ReAct loop (think → tool → observe → … → final answer) over the bus,
// every iteration explained (Question → (Analysis + ToolUse → Observation)* → Conclusion;
// docs/agent.md).
#pragma once

#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/messages.hpp"
#include "workers/agent/agent_config.hpp"
#include "workers/agent/tool_catalog.hpp"
#include "workers/runtime/request_context.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::agent {

// Why a run ended (gb:terminationReason, and `termination` in the FINAL).
inline constexpr std::string_view kFinalAnswer = "final-answer";
inline constexpr std::string_view kMaxIterations = "max-iterations";
inline constexpr std::string_view kDeadline = "deadline";
inline constexpr std::string_view kCancelled = "cancelled";
inline constexpr std::string_view kError = "error";

// The request with its defaults filled in and checked: a non-empty question within
// config.max_question_bytes, max_iterations 0 → config.max_iterations and never above it,
// tools a subset of `tools`, min_confidence from 0 to 1 (absent → config.min_confidence)
// (InvalidRequest naming what is wrong).
struct ResolvedRequest {
    schema::AgentRequest request;
    std::vector<Tool> tools;
};
base::Result<ResolvedRequest> resolve_agent_request(const schema::AgentRequest& request,
                                                    const AgentConfig& config,
                                                    const std::vector<Tool>& tools);

// Request: schema::AgentRequest. Replies while streaming: PARTIAL {"message_type": "thought" |
// "action" | "observation" | "explain" | "answer", ...}; explain messages per step; the FINAL
// (RagResponse fields + "termination", "iterations", "session", and the answer's confidence:
// "confidence", "confidence_words", "calibrator", "evidence", "abstained"). Safe on many threads.
void handle_agent(runtime::RequestContext& context, const AgentConfig& config,
                  const std::vector<Tool>& tools);
runtime::Handler make_agent_handler(AgentConfig config, std::vector<Tool> tools);

}  // namespace glassbox::agent
