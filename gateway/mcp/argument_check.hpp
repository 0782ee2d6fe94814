// Checks a tool's arguments against its inputSchema (the JSON Schema subset the tools use).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace glassbox::gateway::mcp {

// nullopt when `args` satisfy `schema`, else why not (naming the argument). The subset: an
// object with `properties`, `required` and `additionalProperties: false`; properties of type
// string (`minLength`, `maxLength`, `enum`), integer (`minimum`, `maximum`), boolean, and
// object. One schema serves both `tools/list` and the check, so they cannot disagree.
std::optional<std::string> check_arguments(const nlohmann::json& schema,
                                           const nlohmann::json& args);

// A member known by two names (the question: `question`, and `query` as its alias) under its
// name: `alias` moved to `name` when only it is given, dropped when both are and are equal.
// Both given and different: why that is refused. The same rule for a tool's arguments and an
// HTTP body (docs/http.md §3, docs/mcp.md §4). `args` that is not an object is left alone.
std::optional<std::string> take_alias(nlohmann::json& args, std::string_view name,
                                      std::string_view alias);

}  // namespace glassbox::gateway::mcp
