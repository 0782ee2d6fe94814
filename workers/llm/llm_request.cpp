// The llm request's two readers: the checks on a parsed body, and the tree-free pass over its text
// (schema/json_cursor.hpp) that hands anything unusual to them.
#include "workers/llm/llm_request.hpp"

#include <nlohmann/json.hpp>
#include <optional>

#include "schema/json_cursor.hpp"
#include "workers/runtime/request_context.hpp"

namespace glassbox::llm {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {

base::Error invalid_request(std::string message) {
    return make_error(ErrorType::kInvalidRequest, std::move(message));
}

// "variables": {name: string, ...}; false for anything else (a name given twice included: the
// tree keeps the last one, which the tree path then gives).
bool read_variables(schema::JsonCursor& cursor, std::map<std::string, std::string>& out) {
    return cursor.object([&](std::string_view name) {
        const auto [it, added] = out.try_emplace(std::string(name));
        return added && cursor.string(it->second);
    });
}

// The request in the shape bus clients write it, or nullopt: then the tree path decides (the
// result, or the error with its message).
std::optional<schema::LlmRequest> read_request(std::string_view text) {
    constexpr unsigned kTemplate = 1U;
    constexpr unsigned kVariables = 2U;
    constexpr unsigned kStreaming = 4U;
    schema::JsonCursor cursor(text);
    schema::JsonKeys keys;
    schema::LlmRequest request;
    const bool read = cursor.object([&](std::string_view key) {
        if (key == "template") return keys.first(kTemplate) && cursor.string(request.template_name);
        if (key == "variables")
            return keys.first(kVariables) && read_variables(cursor, request.variables);
        if (key == "streaming") return keys.first(kStreaming) && cursor.boolean(request.streaming);
        return cursor.skip();
    });
    if (!read || !cursor.at_end() || (keys.seen() & kTemplate) == 0) return std::nullopt;
    return request;
}

}  // namespace

bool reads_body_as_text(std::string_view body) noexcept { return !body.empty(); }

base::Result<schema::LlmRequest> check_request(const json& body) {
    if (!body.is_object())
        return invalid_request(
            "llm expects a JSON object {\"template\", \"variables\", \"streaming\"}");
    const auto t = body.find("template");
    if (t == body.end() || !t->is_string())
        return invalid_request("\"template\" must be a string naming a template");
    if (const auto v = body.find("variables"); v != body.end()) {
        if (!v->is_object()) return invalid_request("\"variables\" must be an object of strings");
        for (const auto& [name, value] : v->items()) {
            if (!value.is_string())
                return invalid_request("variable \"" + name +
                                       "\" must be a string (JSON values go as JSON text)");
        }
    }
    auto request = schema::decode<schema::LlmRequest>(body);
    if (!request) return invalid_request(request.error().message);
    return request;
}

base::Result<schema::LlmRequest> decode_request_text(std::string_view text) {
    if (auto request = read_request(text)) return std::move(*request);
    // As the runtime parses a body it did not leave as text (§1.1: InvalidJson before any logic).
    auto body = runtime::parse_request_body(text);
    if (!body) return std::move(body).error();
    return check_request(*body);
}

}  // namespace glassbox::llm
