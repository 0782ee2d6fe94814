// The MCP tools: their schemas (tools/list) and their calls (tools/call) over a Backend.
#pragma once

#include <variant>

#include <nlohmann/json.hpp>

#include "gateway/mcp/backend.hpp"
#include "gateway/mcp/json_rpc.hpp"

namespace glassbox::gateway::mcp {

// resolve_intent, search_graph, explain_trace, list_traces, list_evaluations and
// show_evaluation (docs/mcp.md §4). A call that
// fails — bad arguments, a typed error from the bus — is a result with `isError: true` and the
// typed error as its text (MCP "Tools", error handling); only an unknown tool or a call without
// a name is a protocol error.
class ToolBox {
public:
    explicit ToolBox(Backend& backend);

    // The `tools/list` result.
    const nlohmann::json& list() const { return list_; }
    // The `tools/call` result for `params` ({name, arguments}), or the protocol error.
    // `control` reaches the long calls (resolve_intent): their progress and cancellation.
    std::variant<nlohmann::json, RpcError> call(const nlohmann::json& params, RunControl& control);

private:
    base::Result<nlohmann::json> run(const std::string& name, const nlohmann::json& args,
                                     nlohmann::json& content, RunControl& control);

    Backend& backend_;
    nlohmann::json list_;
};

}  // namespace glassbox::gateway::mcp
