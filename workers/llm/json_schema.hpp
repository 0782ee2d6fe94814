// A small JSON Schema subset validator for template outputs and JSON variables.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

namespace glassbox::llm {

// Keywords understood: type (a name or an array of names: object, array, string, number,
// integer, boolean, null), required, properties, items, enum, minimum, maximum, minItems,
// maxItems. Other keywords are ignored, as JSON Schema does with unknown ones. Properties not
// listed in "properties" are allowed.
//
// nullopt when `value` meets `schema`, else the first violation with its location, e.g.
// `$.scores[2].score: 1.5 is above the maximum 1`.
std::optional<std::string> validate_json(const nlohmann::json& value, const nlohmann::json& schema);

// nullopt when `schema` only uses the keywords above with values of the right kind, else why
// not (checked once, when a template is loaded, so validation itself never meets a bad schema).
std::optional<std::string> check_schema(const nlohmann::json& schema);

}  // namespace glassbox::llm
