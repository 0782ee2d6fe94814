// Streamable HTTP for MCP: headers, sessions, JSON-RPC dispatch, JSON or SSE answers.
#include "gateway/mcp/server.hpp"

#include <algorithm>
#include <cctype>
#include <exception>
#include <utility>

#ifndef GLASSBOX_VERSION
#define GLASSBOX_VERSION "0.0.0"
#endif

namespace glassbox::gateway::mcp {

namespace {

using nlohmann::json;

constexpr std::string_view kLatestVersion = "2025-11-25";
// MCP "Streamable HTTP", protocol version header: without the header the server assumes this.
constexpr std::string_view kAssumedVersion = "2025-03-26";
// The last version with JSON-RPC batches (2025-06-18 removed them).
constexpr std::string_view kBatchVersion = "2025-03-26";
constexpr const char* kSessionHeader = "Mcp-Session-Id";

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

std::string header(const HttpExchange& exchange, const char* name) {
    auto it = exchange.headers.find(name);
    return it == exchange.headers.end() ? std::string() : it->second;
}

std::string dump(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

HttpAnswer json_answer(int status, const json& body) {
    HttpAnswer answer;
    answer.status = status;
    answer.headers["Content-Type"] = "application/json";
    answer.body = dump(body);
    return answer;
}

// A transport-level refusal: the HTTP status carries the meaning; the body is a JSON-RPC error
// without an id, as the spec allows, so a client can show why.
HttpAnswer refuse(int status, int code, std::string message, const json& id = nullptr) {
    return json_answer(status, make_error(id, code, std::move(message)));
}

HttpAnswer sse_answer(const std::vector<json>& messages) {
    HttpAnswer answer;
    answer.status = 200;
    answer.sse = true;
    answer.headers["Content-Type"] = "text/event-stream";
    answer.headers["Cache-Control"] = "no-cache";
    for (const auto& m : messages) answer.body += "event: message\ndata: " + dump(m) + "\n\n";
    return answer;
}

bool supported(const std::string& version) {
    const auto& all = supported_protocol_versions();
    return std::find(all.begin(), all.end(), version) != all.end();
}

bool is_loopback_origin(const std::string& origin) {
    std::string rest;
    if (origin.rfind("http://", 0) == 0) {
        rest = origin.substr(7);
    } else if (origin.rfind("https://", 0) == 0) {
        rest = origin.substr(8);
    } else {
        return false;
    }
    for (std::string_view host : {"localhost", "127.0.0.1", "[::1]"}) {
        if (rest.rfind(host, 0) != 0) continue;
        std::string port = rest.substr(host.size());
        if (port.empty()) return true;
        return port.size() > 1 && port.size() <= 6 && port[0] == ':' &&
               std::all_of(port.begin() + 1, port.end(),
                           [](unsigned char c) { return std::isdigit(c) != 0; });
    }
    return false;
}

}  // namespace

const std::vector<std::string>& supported_protocol_versions() {
    static const std::vector<std::string> versions{std::string(kLatestVersion), "2025-06-18",
                                                   std::string(kAssumedVersion)};
    return versions;
}

Server::Server(Backend& backend, Options options)
    : options_(std::move(options)),
      sessions_(options_.session_idle, options_.max_sessions, options_.clock),
      tools_(backend),
      resources_(backend) {}

bool Server::origin_allowed(const std::string& origin) const {
    if (origin.empty()) return true;  // not a browser: DNS rebinding needs one
    const std::string o = lower(origin);
    if (is_loopback_origin(o)) return true;
    return std::any_of(options_.allowed_origins.begin(), options_.allowed_origins.end(),
                       [&](const std::string& allowed) { return lower(allowed) == o; });
}

HttpAnswer Server::handle(const HttpExchange& exchange) {
    const std::string origin = header(exchange, "origin");
    // MCP "Streamable HTTP", security: validate Origin on every request (DNS rebinding).
    if (!origin_allowed(origin)) return refuse(403, kInvalidRequest, "Forbidden: origin not allowed");
    HttpAnswer answer = route(exchange);
    if (!origin.empty()) {
        // An allowed browser origin (a web client on localhost) may read the answer and the
        // session id (CORS, Fetch standard §3.2).
        answer.headers["Access-Control-Allow-Origin"] = origin;
        answer.headers["Access-Control-Expose-Headers"] = kSessionHeader;
        answer.headers["Vary"] = "Origin";
    }
    return answer;
}

HttpAnswer Server::route(const HttpExchange& exchange) {
    try {
        if (exchange.method == "POST") return post(exchange);
        if (exchange.method == "DELETE") return remove(exchange);
        if (exchange.method == "OPTIONS") {
            // A CORS preflight: what a browser client may send.
            HttpAnswer answer;
            answer.status = 204;
            answer.headers["Access-Control-Allow-Methods"] = "POST, DELETE";
            answer.headers["Access-Control-Allow-Headers"] =
                "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID";
            answer.headers["Access-Control-Max-Age"] = "600";
            return answer;
        }
        // This server opens no stream of its own (no server-initiated messages): GET is 405,
        // which the spec allows and clients expect.
        HttpAnswer answer = refuse(405, kInvalidRequest, "Method not allowed: use POST or DELETE");
        answer.headers["Allow"] = "POST, DELETE, OPTIONS";
        return answer;
    } catch (const std::exception& e) {
        return refuse(500, kInternalError, std::string("internal error: ") + e.what());
    }
}

HttpAnswer Server::remove(const HttpExchange& exchange) {
    const std::string id = header(exchange, "mcp-session-id");
    if (id.empty()) return refuse(400, kInvalidRequest, "Bad Request: no Mcp-Session-Id header");
    if (!sessions_.close(id)) return refuse(404, kInvalidRequest, "Session not found");
    HttpAnswer answer;
    answer.status = 200;
    return answer;
}

HttpAnswer Server::post(const HttpExchange& exchange) {
    const std::string accept = lower(header(exchange, "accept"));
    const bool takes_json = accept.empty() || accept.find("application/json") != std::string::npos ||
                            accept.find("*/*") != std::string::npos ||
                            accept.find("application/*") != std::string::npos;
    const bool takes_sse = accept.find("text/event-stream") != std::string::npos;
    if (!takes_json && !takes_sse) {
        return refuse(406, kInvalidRequest,
                      "Not Acceptable: accept application/json or text/event-stream");
    }
    const bool sse = takes_sse && (!takes_json || options_.prefer_sse);
    if (lower(header(exchange, "content-type")).rfind("application/json", 0) != 0) {
        return refuse(415, kInvalidRequest, "Unsupported Media Type: send application/json");
    }
    if (exchange.body.size() > options_.max_body_bytes) {
        return refuse(413, kInvalidRequest, "Payload Too Large: at most " +
                                                std::to_string(options_.max_body_bytes) + " bytes");
    }
    json body = json::parse(exchange.body, nullptr, false);
    if (body.is_discarded()) return refuse(400, kParseError, "Parse error: the body is not JSON");

    if (body.is_object() && body.value("method", json()) == "initialize") {
        return initialize(body, sse);
    }
    const std::string id = header(exchange, "mcp-session-id");
    if (id.empty()) {
        return refuse(400, kInvalidRequest, "Bad Request: no Mcp-Session-Id header (initialize first)");
    }
    auto session = sessions_.touch(id);
    if (!session) {
        return refuse(404, kInvalidRequest,
                      "Session not found (expired or ended): initialize a new session");
    }
    const std::string version = header(exchange, "mcp-protocol-version");
    if (!version.empty() && (!supported(version) || version != session->protocol_version)) {
        return refuse(400, kInvalidRequest,
                      "Bad Request: unsupported MCP-Protocol-Version '" + version +
                          "' (this session speaks " + session->protocol_version + ")");
    }

    std::vector<json> replies;
    if (body.is_array()) {
        if (session->protocol_version != kBatchVersion) {
            return refuse(400, kInvalidRequest, "Invalid Request: protocol " +
                                                    session->protocol_version +
                                                    " has no JSON-RPC batches");
        }
        if (body.empty() || body.size() > options_.max_batch) {
            return refuse(400, kInvalidRequest, "Invalid Request: a batch holds 1 to " +
                                                    std::to_string(options_.max_batch) + " messages");
        }
        for (const auto& item : body) {
            if (auto reply = dispatch(item)) replies.push_back(std::move(*reply));
        }
    } else {
        Classified c = classify(body);
        if (!c.message) return json_answer(400, c.error_response);
        if (auto reply = dispatch(body)) replies.push_back(std::move(*reply));
    }
    if (replies.empty()) {
        // Only notifications or responses: 202 Accepted, no body.
        HttpAnswer answer;
        answer.status = 202;
        return answer;
    }
    if (sse) return sse_answer(replies);
    return json_answer(200, body.is_array() ? json(replies) : replies.front());
}

HttpAnswer Server::initialize(const json& body, bool sse) {
    Classified c = classify(body);
    if (!c.message) return json_answer(400, c.error_response);
    if (c.message->kind != Message::Kind::kRequest) {
        return refuse(400, kInvalidRequest, "Invalid Request: initialize is a request (it needs an id)");
    }
    const json& params = c.message->params;
    auto requested = params.find("protocolVersion");
    if (requested == params.end() || !requested->is_string()) {
        return json_answer(200, make_error(c.message->id, kInvalidParams,
                                           "initialize needs params.protocolVersion"));
    }
    // MCP "Lifecycle", version negotiation: the client's version if supported, else our latest.
    std::string version = requested->get<std::string>();
    if (!supported(version)) version = std::string(kLatestVersion);
    std::string client;
    if (auto info = params.find("clientInfo"); info != params.end() && info->is_object()) {
        if (auto name = info->find("name"); name != info->end() && name->is_string()) {
            client = name->get<std::string>();
        }
    }
    auto id = sessions_.open(version, client);
    if (!id) {
        return refuse(503, kInternalError, "Service Unavailable: too many MCP sessions",
                      c.message->id);
    }
    json result = {
        {"protocolVersion", version},
        {"capabilities", {{"tools", {{"listChanged", false}}},
                          {"resources", {{"subscribe", false}, {"listChanged", false}}}}},
        {"serverInfo", {{"name", "glassbox"}, {"title", "glassbox explainable RAG"},
                        {"version", options_.server_version.empty() ? std::string(GLASSBOX_VERSION)
                                                                    : options_.server_version}}},
        {"instructions",
         "Ask with resolve_intent; every answer carries a trace_id. explain_trace shows how the "
         "answer was made, step by step, with its PROV-O triples; search_graph retrieves without "
         "answering; list_traces and the urn:glassbox:… resources reach stored traces."}};
    json reply = make_result(c.message->id, std::move(result));
    HttpAnswer answer = sse ? sse_answer({reply}) : json_answer(200, reply);
    answer.headers[kSessionHeader] = *id;
    return answer;
}

std::optional<json> Server::dispatch(const json& value) {
    Classified c = classify(value);
    if (!c.message) return c.error_response;
    if (c.message->kind != Message::Kind::kRequest) return std::nullopt;  // nothing to answer
    try {
        return request(*c.message);
    } catch (const std::exception& e) {
        // A bug or an unexpected shape from the bus: this request fails, the server goes on.
        return make_error(c.message->id, kInternalError, std::string("internal error: ") + e.what());
    }
}

json Server::request(const Message& m) {
    auto answer = [&](std::variant<json, RpcError> outcome) {
        if (auto* error = std::get_if<RpcError>(&outcome)) {
            return make_error(m.id, error->code, error->message, error->data);
        }
        return make_result(m.id, std::move(std::get<json>(outcome)));
    };
    if (m.method == "ping") return make_result(m.id, json::object());
    if (m.method == "tools/list") return make_result(m.id, tools_.list());
    if (m.method == "tools/call") return answer(tools_.call(m.params));
    if (m.method == "resources/list") return answer(resources_.list(m.params));
    if (m.method == "resources/templates/list") return make_result(m.id, TraceResources::templates());
    if (m.method == "resources/read") return answer(resources_.read(m.params));
    if (m.method == "initialize") {
        return make_error(m.id, kInvalidRequest, "initialize cannot be batched or repeated in a session");
    }
    return make_error(m.id, kMethodNotFound, "Method not found: " + m.method);
}

}  // namespace glassbox::gateway::mcp
