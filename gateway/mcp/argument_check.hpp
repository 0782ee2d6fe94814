// Checks a tool's arguments against its inputSchema (the JSON Schema subset the tools use).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace glassbox::gateway::mcp {

// nullopt when `args` satisfy `schema`, else why not (naming the argument). The subset: an
// object with `properties`, `required` and `additionalProperties: false`; properties of type
// string (`minLength`, `maxLength`, `enum`), integer (`minimum`, `maximum`), boolean, and
// object. One schema serves both `tools/list` and the check, so they cannot disagree.
std::optional<std::string> check_arguments(const nlohmann::json& schema,
                                           const nlohmann::json& args);

}  // namespace glassbox::gateway::mcp
