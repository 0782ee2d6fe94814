// resources/list, resources/templates/list and resources/read over the trace service.
#include "gateway/mcp/trace_resources.hpp"

#include <string>
#include <utility>

namespace glassbox::gateway::mcp {

namespace {

using nlohmann::json;

constexpr std::size_t kPageSize = 50;
constexpr std::string_view kTraceScheme = "urn:glassbox:";
constexpr std::string_view kMimeType = "application/json";

RpcError backend_error(const base::Error& error) {
    return {kInternalError,
            error.describe(),
            {{"type", std::string(base::to_string(error.type))}, {"message", error.message}}};
}

}  // namespace

std::variant<json, RpcError> TraceResources::list(const json& params) {
    json filters = {{"limit", kPageSize}};
    if (auto cursor = params.find("cursor"); cursor != params.end()) {
        if (!cursor->is_string())
            return RpcError{kInvalidParams, "cursor must be a string", nullptr};
        filters["after"] = *cursor;
    }
    auto reply = backend_.trace_list(filters);
    if (!reply) {
        // An `after` that is not a cursor of ours is the client's mistake (MCP "Pagination":
        // an invalid cursor is -32602).
        if (reply.error().type == base::ErrorType::kInvalidRequest) {
            return RpcError{kInvalidParams, reply.error().describe(), nullptr};
        }
        return backend_error(reply.error());
    }
    json resources = json::array();
    for (const auto& row : reply->value("sessions", json::array())) {
        if (!row.is_object() || !row.contains("session") || !row["session"].is_string()) continue;
        const std::string uri = row["session"].get<std::string>();
        std::string question = row.contains("question") && row["question"].is_string()
                                   ? row["question"].get<std::string>()
                                   : "";
        auto text_of = [&](const char* key) {
            return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : "";
        };
        resources.push_back(
            {{"uri", uri},
             {"name", uri},
             {"title", question.empty() ? uri : question},
             {"description", "glassbox trace: " + text_of("kind") + ", " + text_of("status") +
                                 ", started " + text_of("started")},
             {"mimeType", kMimeType}});
    }
    json result = {{"resources", std::move(resources)}};
    if (auto next = reply->find("next"); next != reply->end() && next->is_string()) {
        result["nextCursor"] = *next;
    }
    return result;
}

json TraceResources::templates() {
    return {{"resourceTemplates",
             json::array({{{"uriTemplate", "urn:glassbox:{trace}:question"},
                           {"name", "trace"},
                           {"title", "A glassbox trace"},
                           {"description",
                            "Every explain step of one run, with its PROV-O triples and sub-runs "
                            "(the trace service's show reply). {trace} is the run's UUID."},
                           {"mimeType", kMimeType}}})}};
}

std::variant<json, RpcError> TraceResources::read(const json& params) {
    auto uri_it = params.find("uri");
    if (uri_it == params.end() || !uri_it->is_string()) {
        return RpcError{kInvalidParams, "resources/read needs a uri", nullptr};
    }
    const std::string uri = uri_it->get<std::string>();
    if (uri.rfind(kTraceScheme, 0) != 0 || uri.size() > 1024) {
        return RpcError{
            kResourceNotFound, "Resource not found: not a glassbox trace URI", {{"uri", uri}}};
    }
    auto reply = backend_.trace_show(uri);
    if (!reply) {
        if (reply.error().type == base::ErrorType::kNotFound ||
            reply.error().type == base::ErrorType::kInvalidRequest) {
            return RpcError{
                kResourceNotFound, "Resource not found: " + reply.error().message, {{"uri", uri}}};
        }
        return backend_error(reply.error());
    }
    return json{{"contents",
                 json::array({{{"uri", uri}, {"mimeType", kMimeType}, {"text", reply->dump()}}})}};
}

}  // namespace glassbox::gateway::mcp
