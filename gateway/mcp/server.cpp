// Streamable HTTP for MCP: headers, sessions, JSON-RPC dispatch, JSON or SSE answers.
#include "gateway/mcp/server.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <exception>
#include <memory>
#include <utility>

#include "base/ascii.hpp"
#include "schema/untrusted_json.hpp"

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

// Whether a POST's Accept (lower case) takes a JSON answer, and an SSE one.
std::pair<bool, bool> accepted_answers(const std::string& accept) {
    const bool takes_json = accept.empty() ||
                            accept.find("application/json") != std::string::npos ||
                            accept.find("*/*") != std::string::npos ||
                            accept.find("application/*") != std::string::npos;
    return {takes_json, accept.find("text/event-stream") != std::string::npos};
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

// A refusal of initialize by a session bound: the client may retry once a session in the way
// expires (or it ends one of its own with DELETE).
HttpAnswer refuse_session(const OpenRefused& refused, std::size_t bound) {
    HttpAnswer answer =
        refused.client_at_cap
            ? refusal(429, "Too Many Requests: this client has " + std::to_string(bound) +
                               " live MCP sessions, the most one client may have; end one "
                               "with DELETE")
            : refusal(503, "Service Unavailable: " + std::to_string(bound) +
                               " live MCP sessions, the most this server keeps");
    answer.headers["Retry-After"] = std::to_string(refused.retry_after.count());
    return answer;
}

// One JSON-RPC message as an SSE event. No event id: this server offers no resumption, so a
// client must not try to resume a stream that ends without a response (a cancelled call).
std::string event_text(const json& message) {
    return "event: message\ndata: " + dump(message) + "\n\n";
}

HttpAnswer sse_answer(const std::vector<json>& messages) {
    HttpAnswer answer;
    answer.status = 200;
    answer.sse = true;
    answer.headers["Content-Type"] = "text/event-stream";
    answer.headers["Cache-Control"] = "no-cache";
    for (const auto& m : messages) answer.body += event_text(m);
    return answer;
}

// 202 Accepted, no body: nothing to answer (notifications only, or a cancelled request).
HttpAnswer accepted() {
    HttpAnswer answer;
    answer.status = 202;
    return answer;
}

// params._meta.progressToken (a string or an integer, MCP "Progress"), or null.
json progress_token(const json& params) {
    auto meta = params.find("_meta");
    if (meta == params.end() || !meta->is_object()) return nullptr;
    auto token = meta->find("progressToken");
    if (token == meta->end() || !(token->is_string() || token->is_number_integer())) return nullptr;
    return *token;
}

// The RunControl of one tools/call: its ticket's cancellation and, when it is answered as a
// stream, the stream's client, its keep-alives and its progress notifications.
class CallRun final : public RunControl {
public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;

    CallRun(const CallTicket& ticket, StreamSink* sink, json token,
            std::chrono::milliseconds keep_alive, Clock clock)
        : ticket_(ticket),
          sink_(sink),
          token_(std::move(token)),
          keep_alive_(keep_alive),
          clock_(std::move(clock)),
          last_write_(clock_()) {}

    bool cancelled() override {
        if (ticket_.cancelled() || gone_) return true;
        if (sink_ == nullptr) return false;
        // MCP "Streamable HTTP" lets a client disconnect without cancelling, to resume the
        // stream later; this server offers no resumption, so a client gone can never get the
        // answer and its run is stopped (as the later protocol revisions require).
        if (!sink_->connected()) gone_ = true;
        if (!gone_ && clock_() - last_write_ >= keep_alive_) write(": keep-alive\n\n");
        return gone_;
    }

    void progress(const std::string& message) override {
        if (sink_ == nullptr || token_.is_null() || gone_ || ticket_.cancelled()) return;
        // MCP "Progress": progress increases with each notification; the total is unknown.
        ++count_;
        write(event_text(
            {{"jsonrpc", "2.0"},
             {"method", "notifications/progress"},
             {"params", {{"progressToken", token_}, {"progress", count_}, {"message", message}}}}));
    }

    bool write(const std::string& text) {
        if (gone_) return false;
        if (!sink_->write(text)) {
            gone_ = true;
            return false;
        }
        last_write_ = clock_();
        return true;
    }

    bool client_gone() const noexcept { return gone_; }

private:
    const CallTicket& ticket_;
    StreamSink* sink_;
    json token_;
    std::chrono::milliseconds keep_alive_;
    Clock clock_;
    std::chrono::steady_clock::time_point last_write_;
    std::int64_t count_ = 0;
    bool gone_ = false;
};

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

HttpAnswer refusal(int status, std::string message) {
    return refuse(status, status == 500 ? kInternalError : kInvalidRequest, std::move(message));
}

const std::vector<std::string>& supported_protocol_versions() {
    static const std::vector<std::string> versions{std::string(kLatestVersion), "2025-06-18",
                                                   std::string(kAssumedVersion)};
    return versions;
}

Server::Server(Backend& backend, Options options)
    : options_(std::move(options)),
      sessions_(options_.session_idle, options_.max_sessions, options_.max_sessions_per_client,
                options_.clock),
      tools_(backend),
      resources_(backend) {
    if (!options_.clock) options_.clock = [] { return std::chrono::steady_clock::now(); };
}

bool origin_allowed(const Options& options, const std::string& origin) {
    if (origin.empty()) return true;  // not a browser: DNS rebinding needs one
    const std::string o = base::ascii_lower(origin);
    if (is_loopback_origin(o)) return true;
    return std::any_of(options.allowed_origins.begin(), options.allowed_origins.end(),
                       [&](const std::string& allowed) { return base::ascii_lower(allowed) == o; });
}

bool Server::origin_allowed(const std::string& origin) const {
    return mcp::origin_allowed(options_, origin);
}

HttpAnswer Server::handle(const HttpExchange& exchange) {
    const std::string origin = header(exchange, "origin");
    // MCP "Streamable HTTP", security: validate Origin on every request (DNS rebinding).
    if (!origin_allowed(origin))
        return refuse(403, kInvalidRequest, "Forbidden: origin not allowed");
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
                "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, "
                "Last-Event-ID";
            answer.headers["Access-Control-Max-Age"] = "600";
            return answer;
        }
        // This server opens no stream of its own (no server-initiated messages): GET is 405,
        // which the spec allows and clients expect.
        HttpAnswer answer = refusal(405, "Method Not Allowed: use POST or DELETE");
        answer.headers["Allow"] = kAllowedMethods;
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
    const auto [takes_json, takes_sse] =
        accepted_answers(base::ascii_lower(header(exchange, "accept")));
    if (!takes_json && !takes_sse) {
        return refuse(406, kInvalidRequest,
                      "Not Acceptable: accept application/json or text/event-stream");
    }
    bool sse = takes_sse && (!takes_json || options_.prefer_sse);
    if (base::ascii_lower(header(exchange, "content-type")).rfind("application/json", 0) != 0) {
        return refuse(415, kInvalidRequest, "Unsupported Media Type: send application/json");
    }
    if (exchange.body.size() > options_.max_body_bytes) {
        return refuse(
            413, kInvalidRequest,
            "Payload Too Large: at most " + std::to_string(options_.max_body_bytes) + " bytes");
    }
    auto parsed = schema::parse_untrusted_json(exchange.body);
    if (!parsed) return refuse(400, kParseError, "Parse error: " + parsed.error().message);
    json body = std::move(parsed).value();

    const std::string id = header(exchange, "mcp-session-id");
    if (body.is_object() && body.value("method", json()) == "initialize") {
        // MCP "Lifecycle": initialize opens a session; sent within one (known or not) it opens
        // none, as a client that lost its session sends a fresh initialize without the header.
        if (!id.empty()) {
            return refuse(400, kInvalidRequest,
                          "Invalid Request: initialize opens a session: send it without "
                          "Mcp-Session-Id");
        }
        return initialize(body, sse, exchange.client);
    }
    if (id.empty()) {
        return refuse(400, kInvalidRequest,
                      "Bad Request: no Mcp-Session-Id header (initialize first)");
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
            return refuse(400, kInvalidRequest,
                          "Invalid Request: protocol " + session->protocol_version +
                              " has no JSON-RPC batches");
        }
        if (body.empty() || body.size() > options_.max_batch) {
            return refuse(400, kInvalidRequest,
                          "Invalid Request: a batch holds 1 to " +
                              std::to_string(options_.max_batch) + " messages");
        }
        for (const auto& item : body) {
            if (auto reply = dispatch(item, id)) replies.push_back(std::move(*reply));
        }
    } else {
        Classified c = classify(body);
        if (!c.message) return json_answer(400, c.error_response);
        if (c.message->kind == Message::Kind::kRequest && c.message->method == "tools/call") {
            // Progress needs a stream: asking for it is asking for one.
            if (takes_sse && !progress_token(c.message->params).is_null()) sse = true;
            return call_tool(id, *c.message, sse);
        }
        if (auto reply = dispatch(body, id)) replies.push_back(std::move(*reply));
    }
    // Only notifications or responses (or cancelled calls): 202 Accepted, no body.
    if (replies.empty()) return accepted();
    if (sse) return sse_answer(replies);
    return json_answer(200, body.is_array() ? json(replies) : replies.front());
}

HttpAnswer Server::initialize(const json& body, bool sse, const std::string& client) {
    Classified c = classify(body);
    if (!c.message) return json_answer(400, c.error_response);
    if (c.message->kind != Message::Kind::kRequest) {
        return refuse(400, kInvalidRequest,
                      "Invalid Request: initialize is a request (it needs an id)");
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
    std::string_view client_name;
    if (auto info = params.find("clientInfo"); info != params.end() && info->is_object()) {
        if (auto name = info->find("name"); name != info->end() && name->is_string()) {
            client_name = name->get_ref<const std::string&>();
        }
    }
    auto opened = sessions_.open(client, version, client_name);
    if (const auto* refused = std::get_if<OpenRefused>(&opened)) {
        return refuse_session(*refused, refused->client_at_cap ? options_.max_sessions_per_client
                                                               : options_.max_sessions);
    }
    const auto& id = std::get<std::string>(opened);
    json result = {
        {"protocolVersion", version},
        {"capabilities",
         {{"tools", {{"listChanged", false}}},
          {"resources", {{"subscribe", false}, {"listChanged", false}}}}},
        {"serverInfo",
         {{"name", "glassbox"},
          {"title", "glassbox explainable RAG"},
          {"version", options_.server_version.empty() ? std::string(GLASSBOX_VERSION)
                                                      : options_.server_version}}},
        {"instructions",
         "Ask with resolve_intent; every answer carries a trace_id. explain_trace shows how the "
         "answer was made, step by step, with its PROV-O triples; search_graph retrieves without "
         "answering; list_traces and the urn:glassbox:… resources reach stored traces."}};
    json reply = make_result(c.message->id, std::move(result));
    HttpAnswer answer = sse ? sse_answer({reply}) : json_answer(200, reply);
    answer.headers[kSessionHeader] = id;
    return answer;
}

HttpAnswer Server::call_tool(const std::string& session, const Message& m, bool sse) {
    auto begun = sessions_.begin_call(session, m.id);
    if (!begun) {
        if (begun.error().type == base::ErrorType::kNotFound) {
            return refuse(404, kInvalidRequest,
                          "Session not found (expired or ended): initialize a new session");
        }
        json reply = make_error(m.id, kInvalidRequest, "Invalid Request: " + begun.error().message);
        return sse ? sse_answer({reply}) : json_answer(200, reply);
    }
    // shared_ptr: the stream function below is copied by the HTTP layer, and the ticket must
    // end exactly once, when the last copy (the one that ran, or none did) is gone.
    std::shared_ptr<const CallTicket> ticket = std::move(*begun);
    if (!sse) {
        // MCP "Cancellation": no response for a cancelled request; the POST gets none either.
        auto reply = call_in_one_piece(*ticket, m);
        return reply ? json_answer(200, *reply) : accepted();
    }
    HttpAnswer answer = sse_answer({});
    answer.stream = [this, ticket, m](StreamSink& sink) {
        CallRun run(*ticket, &sink, progress_token(m.params), options_.keep_alive, options_.clock);
        json reply = tool_reply(m, run);
        // Cancelled: the stream ends without a response (MCP "Cancellation"); the client's SDK
        // has dropped the request already.
        if (run.cancelled()) return !run.client_gone();
        return run.write(event_text(reply));
    };
    return answer;
}

std::optional<json> Server::dispatch(const json& value, const std::string& session) {
    Classified c = classify(value);
    if (!c.message) return c.error_response;
    if (c.message->kind == Message::Kind::kNotification) {
        notify(*c.message, session);
        return std::nullopt;
    }
    if (c.message->kind != Message::Kind::kRequest) return std::nullopt;  // nothing to answer
    if (c.message->method == "tools/call") {
        // In a batch (2025-03-26): run here, cancellable by a notification on another POST.
        auto begun = sessions_.begin_call(session, c.message->id);
        if (!begun)
            return make_error(c.message->id, kInvalidRequest,
                              "Invalid Request: " + begun.error().message);
        return call_in_one_piece(**begun, *c.message);
    }
    try {
        return request(*c.message);
    } catch (const std::exception& e) {
        // A bug or an unexpected shape from the bus: this request fails, the server goes on.
        return make_error(c.message->id, kInternalError,
                          std::string("internal error: ") + e.what());
    }
}

void Server::notify(const Message& m, const std::string& session) {
    if (m.method != "notifications/cancelled") return;  // initialized, progress, …: nothing to do
    // MCP "Cancellation": a request that is unknown or finished is ignored, as is a notification
    // without a usable requestId; the reason is only for logs, which the gateway keeps.
    auto id = m.params.find("requestId");
    if (id == m.params.end() || !(id->is_string() || id->is_number_integer())) return;
    sessions_.cancel_call(session, *id);
}

std::optional<json> Server::call_in_one_piece(const CallTicket& ticket, const Message& m) {
    CallRun run(ticket, nullptr, nullptr, options_.keep_alive, options_.clock);
    json reply = tool_reply(m, run);
    if (ticket.cancelled()) return std::nullopt;
    return reply;
}

json Server::tool_reply(const Message& m, RunControl& control) {
    try {
        auto outcome = tools_.call(m.params, control);
        if (auto* error = std::get_if<RpcError>(&outcome)) {
            return make_error(m.id, error->code, error->message, error->data);
        }
        return make_result(m.id, std::move(std::get<json>(outcome)));
    } catch (const std::exception& e) {
        return make_error(m.id, kInternalError, std::string("internal error: ") + e.what());
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
    if (m.method == "resources/list") return answer(resources_.list(m.params));
    if (m.method == "resources/templates/list")
        return make_result(m.id, TraceResources::templates());
    if (m.method == "resources/read") return answer(resources_.read(m.params));
    if (m.method == "initialize") {
        return make_error(m.id, kInvalidRequest,
                          "initialize cannot be batched or repeated in a session");
    }
    return make_error(m.id, kMethodNotFound, "Method not found: " + m.method);
}

}  // namespace glassbox::gateway::mcp
