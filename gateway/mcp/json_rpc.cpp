// JSON-RPC 2.0 message checks and response builders for the MCP server.
#include "gateway/mcp/json_rpc.hpp"

#include <utility>

namespace glassbox::gateway::mcp {

namespace {

nlohmann::json readable_id(const nlohmann::json& value) {
    if (!value.is_object()) return nullptr;
    auto it = value.find("id");
    if (it == value.end() || !(it->is_string() || it->is_number_integer())) return nullptr;
    return *it;
}

Classified invalid(const nlohmann::json& value, std::string why) {
    return {std::nullopt, make_error(readable_id(value), kInvalidRequest, std::move(why))};
}

}  // namespace

Classified classify(const nlohmann::json& value) {
    if (!value.is_object()) return invalid(value, "a JSON-RPC message is an object");
    auto version = value.find("jsonrpc");
    if (version == value.end() || !version->is_string() || *version != "2.0") {
        return invalid(value, "jsonrpc must be \"2.0\"");
    }
    auto id = value.find("id");
    bool has_id = id != value.end();
    // MCP "Base protocol": request ids are strings or integers and MUST NOT be null.
    if (has_id && !(id->is_string() || id->is_number_integer())) {
        return invalid(value, "id must be a string or an integer");
    }
    auto method = value.find("method");
    if (method == value.end()) {
        // A client's response to a server request: this server sends none, so it is only
        // acknowledged, provided it has the shape of a response.
        bool has_result = value.contains("result");
        bool has_error = value.contains("error");
        if (!has_id || has_result == has_error) {
            return invalid(value, "a message needs a method, or an id with result or error");
        }
        Message m;
        m.kind = Message::Kind::kResponse;
        m.id = *id;
        return {std::move(m), nullptr};
    }
    if (!method->is_string() || method->get_ref<const std::string&>().empty()) {
        return invalid(value, "method must be a non-empty string");
    }
    Message m;
    m.kind = has_id ? Message::Kind::kRequest : Message::Kind::kNotification;
    m.id = has_id ? *id : nlohmann::json(nullptr);
    m.method = method->get<std::string>();
    if (auto params = value.find("params"); params != value.end()) {
        if (!params->is_object()) return invalid(value, "params must be an object");
        m.params = *params;
    }
    return {std::move(m), nullptr};
}

nlohmann::json make_result(const nlohmann::json& id, nlohmann::json result) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

nlohmann::json make_error(const nlohmann::json& id, int code, std::string message,
                          nlohmann::json data) {
    nlohmann::json error = {{"code", code}, {"message", std::move(message)}};
    if (!data.is_null()) error["data"] = std::move(data);
    return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

}  // namespace glassbox::gateway::mcp
