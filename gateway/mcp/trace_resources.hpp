// Traces as MCP resources: listed newest first, read by their session URI, one URI template.
#pragma once

#include <variant>

#include <nlohmann/json_fwd.hpp>

#include "gateway/mcp/backend.hpp"
#include "gateway/mcp/json_rpc.hpp"

namespace glassbox::gateway::mcp {

// A trace's resource URI is its session URI, `urn:glassbox:<uuid>:question`; reading it gives
// the trace service's `show` reply as application/json (docs/mcp.md §5).
class TraceResources {
public:
    explicit TraceResources(Backend& backend) : backend_(backend) {}

    // `resources/list`: recent top-level traces, a page at a time (`cursor` = the trace
    // service's `next`).
    std::variant<nlohmann::json, RpcError> list(const nlohmann::json& params);
    // `resources/templates/list`.
    static nlohmann::json templates();
    // `resources/read`: an unknown trace is -32002 (MCP "Resources", error handling).
    std::variant<nlohmann::json, RpcError> read(const nlohmann::json& params);

private:
    Backend& backend_;
};

}  // namespace glassbox::gateway::mcp
