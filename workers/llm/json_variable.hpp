// A JSON template variable's text as a tree (RenderedPrompt::json_variables), read in one pass
// of the cursor (schema/json_cursor.hpp) when it can be, by nlohmann's parser otherwise.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "base/result.hpp"

namespace glassbox::llm {

// Exactly schema::parse_untrusted_json(text): the same tree or the same error, read by
// schema::parse_json_tree (the edges and concepts the graph-rag pipeline sends are built by the
// cursor, which skips the parser's per-character token copies; anything unusual goes to the
// parser).
base::Result<nlohmann::json> parse_json_variable(std::string_view text);

}  // namespace glassbox::llm
