// What the MCP server asks of glassbox: the gateway implements it over the bus (docs/mcp.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/result.hpp"

namespace glassbox::gateway::mcp {

// One call per tool or resource read; each answers the JSON the matching REST route answers
// (docs/http.md), or the typed error the bus gave. Called from several HTTP threads at once.
class Backend {
public:
    virtual ~Backend() = default;
    // The query worker's FINAL plus `trace_id` (its session URI), as POST /api/v1/query.
    virtual base::Result<nlohmann::json> resolve_intent(const nlohmann::json& args) = 0;
    // `{chunks: [...], edges: [...]}`, as POST /api/v1/search.
    virtual base::Result<nlohmann::json> search_graph(const nlohmann::json& args) = 0;
    // The trace service's `show` reply for a session URI or a unique UUID prefix.
    virtual base::Result<nlohmann::json> trace_show(const std::string& id) = 0;
    // The trace service's `list` reply for the filters of GET /api/v1/traces.
    virtual base::Result<nlohmann::json> trace_list(const nlohmann::json& filters) = 0;
};

}  // namespace glassbox::gateway::mcp
