// The HTTP gateway: the server, its shared handlers (request ids, problems, static files,
// health) and its life cycle. The API's other routes are in query_routes.cpp and trace_routes.cpp.
#include "gateway/gateway.hpp"

#include <charconv>
#include <random>

#include "base/log.hpp"
#include "base/utf8.hpp"
#include "gateway/connection_loop.hpp"
#include "gateway/explain_view.hpp"
#include "gateway/gateway_server.hpp"
#include "gateway/gateway_state.hpp"
#include "gateway/listen_address.hpp"
#include "gateway/mcp/http_mount.hpp"
#include "gateway/mcp/server.hpp"
#include "gateway/web_assets.hpp"
#include "schema/messages.hpp"
#include "schema/protocol.hpp"
#include "schema/services.hpp"

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {

constexpr const char* kRequestIdHeader = "X-Request-ID";

// A client's X-Request-ID is kept when schema::usable_request_id() says so (1-128 printable
// ASCII characters); otherwise (or when absent) the gateway makes one.
using schema::usable_request_id;

std::string new_request_id() {
    thread_local std::mt19937_64 random{std::random_device{}()};
    static const char* const kHex = "0123456789abcdef";
    std::string id = "gw-";
    for (int i = 0; i < 2; ++i) {
        auto bits = random();
        for (int j = 0; j < 16; ++j, bits >>= 4) id += kHex[bits & 0xf];
    }
    return id;
}

// The problem an httplib status without a body of ours stands for (routing, limits, parsing).
Problem problem_for_status(int status) {
    switch (status) {
        case 400:
            return {400, "InvalidRequest", "the request is malformed"};
        case 404:
            return {404, "NotFound", "no such resource"};
        case 405:
            return {405, "MethodNotAllowed", "the method is not allowed here"};
        case 408:
            return {408, "RequestTimeout", "the request did not arrive in time"};
        case 413:
            return {413, "PayloadTooLarge", "the request body is larger than the gateway accepts"};
        case 414:
            return {414, "InvalidRequest", "the request target is too long"};
        case 416:
            return {416, "InvalidRequest", "the range is not satisfiable"};
        default:
            return {status, status >= 500 ? "Internal" : "InvalidRequest",
                    std::string(reason_phrase(status))};
    }
}

json health(Gateway::State& state) {
    auto status =
        state.bus.call(schema::protocol::kMmiStatus, json::object(), state.config.call_timeout);
    if (!status) {
        const auto& paths = ServerPaths::instance();
        const std::string error =
            std::string(base::to_string(status.error().type)) + ": " + status.error().message;
        return json{{"status", "down"},
                    {"broker", json{{"endpoint", paths.redact(state.config.broker)},
                                    {"reachable", false},
                                    {"error", paths.redact(error)}}},
                    {"services", json::array()}};
    }
    json services = json::array();
    bool all_live = true;
    if (status->contains("services") && (*status)["services"].is_array()) {
        for (const auto& s : (*status)["services"]) {
            if (!s.is_object()) continue;
            const int workers = s.value("workers", 0);
            if (workers == 0) all_live = false;
            services.push_back(json{{"name", s.value("name", "")},
                                    {"workers", workers},
                                    {"idle", s.value("idle", 0)},
                                    {"in_flight", s.value("in_flight", 0)},
                                    {"queued", s.value("queued", 0)}});
        }
    }
    json broker = status->value("broker", json::object());
    broker["reachable"] = true;
    // An ipc:// endpoint is a file of the server.
    ServerPaths::instance().redact_json(broker);
    return json{
        {"status", all_live ? "ok" : "degraded"}, {"broker", broker}, {"services", services}};
}

// Whether a request is for the MCP endpoint. A request line httplib could not parse leaves no
// path: its target says.
bool for_mcp(const httplib::Request& req) {
    const std::string_view path = req.path.empty()
                                      ? std::string_view(req.target).substr(0, req.target.find('?'))
                                      : std::string_view(req.path);
    return path == "/mcp" || path.starts_with("/mcp/");
}

// A refusal by the gateway itself: a problem, except on /mcp, which speaks JSON-RPC: there the
// same status and headers carry a JSON-RPC error without an id (docs/mcp.md §2). Its error type
// is counted as the logger counts every problem's.
void send_refusal(Gateway::State& state, const httplib::Request& req, httplib::Response& res,
                  const Problem& problem) {
    if (!for_mcp(req)) return send_problem(res, problem);
    state.metrics.error(problem.error);
    const std::string detail = ServerPaths::instance().redact(problem.detail);
    mcp::answer_into(mcp::refusal(problem.status, problem.error + ": " + detail), res);
}

// The checks before a request is routed (and before its body is read): the rate limit, the
// token and its scope, the body's declared size. A refused request gets its problem here.
bool refuse_at_admission(Gateway::State& state, const httplib::Request& req,
                         httplib::Response& res) {
    const Scope scope = scope_for(req.method, req.path);
    // The API, /metrics and /mcp count, whatever scope they need (a preflight needs none).
    const bool api = req.path.starts_with("/api/") || req.path == "/metrics" || for_mcp(req);
    if (api && state.config.rate_limit > 0) {
        const auto wait = state.limiter.admit(req.remote_addr);
        if (wait.count() > 0) {
            res.set_header("Retry-After", std::to_string((wait.count() + 999) / 1000));
            send_refusal(
                state, req, res,
                Problem{429, "RateLimited",
                        "more than " +
                            std::to_string(static_cast<long long>(state.config.rate_limit)) +
                            " requests a second from " + req.remote_addr + "; retry later"});
            return true;
        }
    }
    if (state.tokens && scope != Scope::kNone) {
        const std::optional<TokenGrant> grant =
            state.tokens->find(bearer_token(req.get_header_value("Authorization")));
        if (!grant) {
            res.set_header("WWW-Authenticate", "Bearer realm=\"glassbox\"");
            send_refusal(
                state, req, res,
                Problem{401, "Unauthorized",
                        "a valid bearer token is required (Authorization: Bearer <token>)"});
            return true;
        }
        if (!grant->allows(scope)) {
            send_refusal(state, req, res,
                         Problem{403, "Forbidden",
                                 "the token \"" + grant->name + "\" lacks the scope \"" +
                                     std::string(to_string(scope)) + "\""});
            return true;
        }
    }
    if (req.has_header("Content-Length")) {
        const std::size_t limit =
            scope == Scope::kLoad ? state.config.max_upload_bytes : state.config.max_body_bytes;
        const std::string declared = req.get_header_value("Content-Length");
        std::size_t length = 0;
        const auto [end, ec] =
            std::from_chars(declared.data(), declared.data() + declared.size(), length);
        if (ec != std::errc() || end != declared.data() + declared.size()) {
            send_refusal(state, req, res,
                         Problem{400, "InvalidRequest", "Content-Length is not a number"});
            return true;
        }
        if (length > limit) {
            send_refusal(state, req, res,
                         Problem{413, "PayloadTooLarge",
                                 "the body (" + declared + " bytes) is larger than the " +
                                     std::to_string(limit) + " bytes this route accepts"});
            return true;
        }
    }
    return false;
}

void add_static_routes(Gateway::State& state) {
    const auto serve = [](const std::string& name, httplib::Response& res) {
        const auto asset = find_web_asset(name);
        if (!asset) {
            send_problem(res, Problem{404, "NotFound", "no file " + name});
            return;
        }
        res.set_content(asset->bytes.data(), asset->bytes.size(),
                        std::string(content_type_for(name)));
    };
    state.server.Get("/", [serve](const httplib::Request&, httplib::Response& res) {
        serve("index.html", res);
    });
    state.server.Get(R"(/([A-Za-z0-9][A-Za-z0-9._-]{0,127}))",
                     [serve](const httplib::Request& req, httplib::Response& res) {
                         serve(req.matches[1], res);
                     });
}

}  // namespace

void add_metrics_route(Gateway::State& state) {
    state.server.Get("/metrics", [&state](const httplib::Request& req, httplib::Response& res) {
        static constexpr std::string_view kMetricsTypes[] = {kMetricsMediaType};
        if (!admit(req, res, RouteShape{{}, kMetricsTypes})) return;
        auto broker =
            state.bus.call(schema::protocol::kMmiStatus, json::object(), state.config.call_timeout);
        json traces = nullptr;
        if (broker && broker->contains("services") &&
            (*broker)["services"].dump().find("\"name\":\"trace\"") != std::string::npos) {
            auto stats = state.bus.call(schema::services::kTrace, json{{"op", "stats"}},
                                        state.config.call_timeout);
            if (stats) traces = std::move(*stats);
        }
        res.set_content(
            state.metrics.render(broker ? *broker : json(nullptr), traces, state.streams.load()),
            std::string(kMetricsMediaType));
    });
}

namespace {

void add_openapi_route(Gateway::State& state) {
    state.server.Get(
        "/api/v1/openapi.json", [](const httplib::Request& req, httplib::Response& res) {
            if (!admit(req, res, RouteShape{{}, kJsonOnly})) return;
            for (const auto& document : api_documents()) {
                if (document.name != "openapi.json") continue;
                res.set_content(document.bytes.data(), document.bytes.size(), "application/json");
                return;
            }
            send_problem(res, Problem{404, "NotFound", "no OpenAPI document was built in"});
        });
}

void add_health_route(Gateway::State& state) {
    state.server.Get("/api/v1/health",
                     [&state](const httplib::Request& req, httplib::Response& res) {
                         if (!admit(req, res, RouteShape{{}, kJsonOnly})) return;
                         const json body = health(state);
                         send_json(res, body["status"] == "down" ? 503 : 200, body);
                     });
}

}  // namespace

// ---- shared handler helpers ---------------------------------------------------------------

std::optional<StreamSlot> take_stream_slot(Gateway::State& state) {
    std::size_t open = state.streams.load();
    do {
        if (open >= state.config.max_streams) return std::nullopt;
    } while (!state.streams.compare_exchange_weak(open, open + 1));
    return StreamSlot(state.streams);
}

std::string request_id_of(const httplib::Response& res) {
    return res.get_header_value(kRequestIdHeader);
}

void send_json(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(compact_json(body), "application/json");
}

void send_problem(httplib::Response& res, const Problem& problem) {
    res.status = problem.status;
    // The last guard: an error a worker or a library wrote may name a file of the server.
    json body = problem_json(problem, request_id_of(res));
    ServerPaths::instance().redact_json(body);
    res.set_content(compact_json(body), std::string(kProblemContentType));
}

void send_error(httplib::Response& res, const base::Error& error) {
    send_problem(res, problem_from(error));
}

base::Result<json> json_body(const Gateway::State& state, const httplib::Request& req) {
    if (req.body.size() > state.config.max_body_bytes)
        return make_error(
            ErrorType::kMessageTooLarge,
            "the body is larger than " + std::to_string(state.config.max_body_bytes) + " bytes");
    if (base::find_invalid_utf8(req.body))
        return make_error(ErrorType::kInvalidJson, "the body is not valid UTF-8");
    auto body = schema::parse_untrusted_json(req.body);
    if (!body) return make_error(ErrorType::kInvalidJson, "the body: " + body.error().message);
    if (!body->is_object())
        return make_error(ErrorType::kInvalidRequest, "the body must be a JSON object");
    return body;
}

namespace {

// The names of the request's query-string parameters, in order.
std::vector<std::string> query_parameter_names(const httplib::Request& req) {
    // From the target only: httplib also files the names of a form-encoded body under params,
    // and curl -d labels any body so (a JSON question too).
    std::vector<std::string> names;
    const auto question = req.target.find('?');
    if (question == std::string::npos) return names;
    httplib::Params params;
    httplib::detail::parse_query_text(req.target.substr(question + 1), params);
    for (const auto& [name, value] : params) names.push_back(name);
    return names;
}

}  // namespace

std::optional<std::size_t> negotiate(const httplib::Request& req,
                                     std::span<const std::string_view> offered) {
    // Several Accept lines are one list (RFC 9110 §5.3).
    std::string accept;
    for (std::size_t i = 0, n = req.get_header_value_count("Accept"); i < n; ++i) {
        if (i > 0) accept += ", ";
        accept += req.get_header_value("Accept", i);
    }
    return preferred_media_type(accept, offered);
}

Problem not_acceptable(std::span<const std::string_view> offered) {
    std::string listed;
    json types = json::array();
    for (const auto type : offered) {
        listed += (listed.empty() ? "" : ", ") + std::string(type);
        types.push_back(std::string(type));
    }
    Problem problem{406, "NotAcceptable",
                    "Accept admits none of the media types this route answers with: " + listed};
    problem.members["media_types"] = std::move(types);
    return problem;
}

base::Result<void> only_known_params(const httplib::Request& req,
                                     std::span<const std::string_view> accepted) {
    return only_known("parameter", query_parameter_names(req), accepted);
}

std::optional<std::size_t> admit(const httplib::Request& req, httplib::Response& res,
                                 const RouteShape& shape) {
    if (auto known = only_known_params(req, shape.parameters); !known) {
        send_error(res, known.error());
        return std::nullopt;
    }
    const auto chosen = negotiate(req, shape.media_types);
    if (!chosen) send_problem(res, not_acceptable(shape.media_types));
    return chosen;
}

// ---- the connection loop's hooks --------------------------------------------------------------

namespace {

void set_request_id(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.get_header_value(kRequestIdHeader);
    res.set_header(kRequestIdHeader, usable_request_id(id) ? id : new_request_id());
}

// The answer httplib would write for `res`, as the loop writes it.
Refusal refusal_of(const httplib::Response& res) {
    Refusal refusal{res.status, {}, res.get_header_value("Content-Type"), res.body};
    for (const auto& [name, value] : res.headers)
        if (name != "Content-Type" && name != "Content-Length" && name != "Connection")
            refusal.headers.emplace_back(name, value);
    return refusal;
}

// The request's head as httplib's Request, for the admission check (no body, no parameters).
httplib::Request request_of(const RequestHead& head, const Peer& peer) {
    httplib::Request req;
    req.method = head.method;
    req.target = head.target;
    req.path = httplib::detail::decode_url(std::string(head.path()), false);
    req.version = head.version;
    for (const auto& field : head.fields) req.headers.emplace(field.name, field.value);
    req.remote_addr = peer.ip;
    req.remote_port = peer.port;
    return req;
}

// The typed error name of a status the loop refuses with.
std::string loop_error_name(int status) {
    switch (status) {
        case 408:
            return "RequestTimeout";
        case 413:
            return "PayloadTooLarge";
        case 431:
            return "HeaderTooLarge";
        case 501:
            return "NotImplemented";
        case 503:
            return "ServiceUnavailable";
        default:
            return "InvalidRequest";
    }
}

std::optional<Refusal> admission_refusal(Gateway::State& state, const RequestHead& head,
                                         const Peer& peer) {
    const httplib::Request req = request_of(head, peer);
    httplib::Response res;
    set_request_id(req, res);
    if (!refuse_at_admission(state, req, res)) return std::nullopt;
    // A refusal of /mcp (401, 403, 429) is readable by an allowed browser client, as the MCP
    // server's own answers are: else the browser reports a CORS failure, not the status.
    const std::string origin = req.get_header_value("Origin");
    if (for_mcp(req) && !origin.empty() && mcp::origin_allowed(state.config.mcp, origin)) {
        res.set_header("Access-Control-Allow-Origin", origin);
        res.set_header("Vary", "Origin");
    }
    state.metrics.request(route_label(req.method, req.path), res.status, std::chrono::seconds{0});
    if (!for_mcp(req))
        state.metrics.error(json::parse(res.body, nullptr, false).value("error", "Internal"));
    return refusal_of(res);
}

Refusal loop_refusal(Gateway::State& state, int status, std::string_view path,
                     const std::string& detail) {
    httplib::Request req;
    req.target = std::string(path);
    req.path = std::string(path);
    httplib::Response res;
    res.set_header(kRequestIdHeader, new_request_id());
    if (status == 503) res.set_header("Retry-After", "1");
    const Problem problem{status, loop_error_name(status), detail};
    send_refusal(state, req, res, problem);
    if (!for_mcp(req)) state.metrics.error(problem.error);
    state.metrics.request(path.empty() ? "other" : route_label("GET", req.path), status,
                          std::chrono::seconds{0});
    return refusal_of(res);
}

RequestLimits request_limits(const GatewayConfig& config) {
    RequestLimits limits;
    limits.max_head_bytes = config.max_head_bytes;
    limits.max_fields = config.max_header_fields;
    limits.max_body_bytes = std::max(config.max_body_bytes, config.max_upload_bytes);
    return limits;
}

ConnectionLimits connection_limits(const GatewayConfig& config) {
    ConnectionLimits limits;
    limits.max_connections = config.max_connections;
    limits.max_connections_per_client = config.max_connections_per_client;
    limits.max_queued_requests = config.max_queued_requests;
    limits.max_buffered_bytes = config.max_buffered_bytes;
    return limits;
}

ConnectionTimeouts connection_timeouts(const GatewayConfig& config) {
    return ConnectionTimeouts{config.header_timeout, config.body_timeout,
                              config.body_min_rate,  config.read_timeout,
                              config.write_timeout,  config.keep_alive_timeout};
}

ConnectionLoop::Hooks loop_hooks(Gateway::State& state) {
    ConnectionLoop::Hooks hooks;
    hooks.admit = [&state](const RequestHead& head, const Peer& peer) {
        return admission_refusal(state, head, peer);
    };
    hooks.refuse = [&state](int status, std::string_view path, const std::string& detail,
                            const Peer&) { return loop_refusal(state, status, path, detail); };
    hooks.answer = [&state](AnswerStream& stream, bool close_connection, bool& connection_closed) {
        return state.server.answer(stream, close_connection, connection_closed);
    };
    return hooks;
}

}  // namespace

// ---- the gateway --------------------------------------------------------------------------

Gateway::State::State(GatewayConfig c)
    : config(std::move(c)),
      bus([this] {
          bus::BusClientConfig bus_config;
          bus_config.endpoint = config.broker;
          bus_config.curve = config.curve;
          bus_config.connect_timeout = config.connect_timeout;
          bus_config.max_message_bytes = std::size_t{16} << 20;
          bus_config.request_id_prefix = "";
          return bus_config;
      }()),
      limiter(config.rate_limit, config.rate_burst) {}

Gateway::Gateway(GatewayConfig config) : state_(std::make_unique<State>(std::move(config))) {
    State& state = *state_;
    for (const auto& path : state.config.private_paths) ServerPaths::instance().add(path);
    auto& server = state.server;
    state.bus.on_call = [&state](std::string_view service, std::chrono::duration<double> took,
                                 bool failed) {
        state.metrics.bus_call(std::string(service), took, failed);
    };
    server.set_logger([&state](const httplib::Request& req, const httplib::Response& res) {
        state.metrics.request(route_label(req.method, req.path), res.status,
                              std::chrono::steady_clock::now() - request_started());
        if (res.get_header_value("Content-Type") == kProblemContentType) {
            const json problem = json::parse(res.body, nullptr, false);
            state.metrics.error(problem.is_object() ? problem.value("error", "Internal")
                                                    : "Internal");
        }
    });
    server.set_pre_routing_handler([&state](const httplib::Request& req, httplib::Response& res) {
        // Admission (rate, token, the route's bound) ran when the head was read (admit()).
        set_request_id(req, res);
        return httplib::Server::HandlerResponse::Unhandled;
    });
    server.set_error_handler(httplib::Server::HandlerWithResponse(
        [&state](const httplib::Request& req, httplib::Response& res) {
            if (!res.body.empty() || res.content_provider_)
                return httplib::Server::HandlerResponse::Unhandled;
            if (!res.has_header(kRequestIdHeader))
                res.set_header(kRequestIdHeader, new_request_id());
            Problem problem = problem_for_status(res.status);
            if (problem.status == 400 && for_mcp(req) &&
                (req.method == "CONNECT" || req.method == "TRACE")) {
                // A method httplib reads but routes nowhere; /mcp says which it takes (docs/mcp.md
                // §2).
                problem = Problem{405, "MethodNotAllowed",
                                  std::string("/mcp takes ") + mcp::kAllowedMethods};
                res.set_header("Allow", mcp::kAllowedMethods);
            }
            // A request httplib could not read (malformed, too slow, too large) ends its
            // connection: a client that sends such things does not keep a thread waiting on
            // keep-alive.
            if (problem.status == 400 || problem.status == 408 || problem.status == 413 ||
                problem.status == 414 || problem.status == 431) {
                res.set_header("Connection", "close");
                close_connection_after_answer();
            }
            send_refusal(state, req, res, problem);
            return httplib::Server::HandlerResponse::Handled;
        }));
    server.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, const std::exception_ptr& ep) {
            std::string what = "unknown exception";
            try {
                if (ep) std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            base::component_logger("gateway")->error("event=handler_failed path={} error={}",
                                                     req.path, what);
            send_problem(res, Problem{500, "Internal", "the gateway failed on this request"});
        });

    add_health_route(state);
    add_openapi_route(state);
    add_query_routes(state);
    add_trace_tail_route(state);
    add_metrics_route(state);
    add_trace_routes(state);
    add_eval_routes(state);
    add_knowledge_routes(state);
    add_collection_routes(state);
    add_mcp_routes(state);
    add_load_routes(state);
    add_sparql_routes(state);
    add_static_routes(state);
}

Gateway::~Gateway() { stop(); }

const GatewayConfig& Gateway::config() const noexcept { return state_->config; }

base::Result<int> Gateway::bind() {
    State& state = *state_;
    if (!state.config.tokens_file.empty()) {
        auto tokens = AccessTokens::load(state.config.tokens_file);
        if (!tokens) return make_error(tokens.error().type, "--tokens " + tokens.error().message);
        state.tokens = std::move(*tokens);
    } else if (!is_loopback_host(state.config.host)) {
        return make_error(ErrorType::kInvalidRequest,
                          "only a loopback address may be served without --tokens FILE, not " +
                              state.config.host);
    }
    state.loop = std::make_unique<ConnectionLoop>(
        request_limits(state.config), connection_limits(state.config),
        connection_timeouts(state.config), state.config.threads, loop_hooks(state));
    auto port = state.loop->bind(state.config.host, state.config.port);
    if (!port) return std::move(port).error();
    state.port = *port;
    return state.port;
}

bool Gateway::run() {
    if (!state_->loop) return false;
    state_->server.set_serving(true);
    const bool ran = state_->loop->run();
    state_->server.set_serving(false);
    return ran;
}

void Gateway::stop() {
    if (!state_ || !state_->loop) return;
    state_->server.set_serving(false);
    state_->loop->stop();
}

}  // namespace glassbox::gateway
