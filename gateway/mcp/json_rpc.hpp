// JSON-RPC 2.0 as MCP uses it: classifying an inbound message, building responses and errors.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace glassbox::gateway::mcp {

// JSON-RPC 2.0 §5.1 codes, and the one MCP adds for resources (MCP "Resources", error handling).
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kResourceNotFound = -32002;

// One inbound message after the checks of JSON-RPC 2.0 §4 and MCP's "Base protocol" (an id is
// a string or an integer, never null; params, when present, are an object).
struct Message {
    enum class Kind { kRequest, kNotification, kResponse };
    Kind kind = Kind::kRequest;
    nlohmann::json id;  // null for a notification
    std::string method;
    nlohmann::json params = nlohmann::json::object();
};

// The message, or the error response to answer instead (id null when none could be read).
struct Classified {
    std::optional<Message> message;
    nlohmann::json error_response;
};
Classified classify(const nlohmann::json& value);

nlohmann::json make_result(const nlohmann::json& id, nlohmann::json result);
nlohmann::json make_error(const nlohmann::json& id, int code, std::string message,
                          nlohmann::json data = nullptr);

// A request's outcome: the result object, or a JSON-RPC error.
struct RpcError {
    int code = kInternalError;
    std::string message;
    nlohmann::json data = nullptr;
};

}  // namespace glassbox::gateway::mcp
