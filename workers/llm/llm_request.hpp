// The llm service's request: checked from a parsed body, or read from the body's text without a
// tree (the worker's WorkerConfig::text_body), with the same result either way.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string_view>

#include "base/result.hpp"
#include "schema/messages.hpp"

namespace glassbox::llm {

// The llm worker's runtime::WorkerConfig::text_body: every non-empty body is left as text for
// the handler (decode_request_text), so no tree of it is built.
bool reads_body_as_text(std::string_view body) noexcept;

// A body the runtime parsed: an LlmRequest, else kInvalidRequest saying what is wrong ("template"
// not a string, "variables" not an object of strings, a variable that is not a string).
base::Result<schema::LlmRequest> check_request(const nlohmann::json& body);

// The body's text: exactly what the runtime's parse followed by check_request gives, the error
// included; text that is not JSON is kInvalidJson "the request body: <why>" as the runtime
// answers it. The shape bus clients write (an object of "template", "variables", "streaming",
// strings without escaped keys) is read in one pass; anything else goes the tree's way.
base::Result<schema::LlmRequest> decode_request_text(std::string_view text);

}  // namespace glassbox::llm
