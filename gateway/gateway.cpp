// The HTTP gateway: the server, its shared handlers (request ids, problems, static files,
// health) and its life cycle. The API's other routes are in query_routes.cpp and trace_routes.cpp.
#include "gateway/gateway.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <charconv>
#include <random>

#include "base/log.hpp"
#include "base/utf8.hpp"
#include "gateway/explain_view.hpp"
#include "gateway/gateway_server.hpp"
#include "gateway/gateway_state.hpp"
#include "gateway/listen_address.hpp"
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
        case 400: return {400, "InvalidRequest", "the request is malformed"};
        case 404: return {404, "NotFound", "no such resource"};
        case 405: return {405, "MethodNotAllowed", "the method is not allowed here"};
        case 408: return {408, "RequestTimeout", "the request did not arrive in time"};
        case 413: return {413, "PayloadTooLarge", "the request body is larger than the gateway accepts"};
        case 414: return {414, "InvalidRequest", "the request target is too long"};
        case 416: return {416, "InvalidRequest", "the range is not satisfiable"};
        default: return {status, status >= 500 ? "Internal" : "InvalidRequest", std::string(reason_phrase(status))};
    }
}

json health(Gateway::State& state) {
    auto status = state.bus.call(schema::protocol::kMmiStatus, json::object(), state.config.call_timeout);
    if (!status) {
        return json{{"status", "down"},
                    {"broker", json{{"endpoint", state.config.broker}, {"reachable", false},
                                    {"error", std::string(base::to_string(status.error().type)) + ": " +
                                                  status.error().message}}},
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
    return json{{"status", all_live ? "ok" : "degraded"}, {"broker", broker}, {"services", services}};
}

// The checks before a request is routed (and before its body is read): the rate limit, the
// token and its scope, the body's declared size. A refused request gets its problem here.
bool refuse_at_admission(Gateway::State& state, const httplib::Request& req, httplib::Response& res) {
    const Scope scope = scope_for(req.method, req.path);
    // The API, /metrics and /mcp count, whatever scope they need (a preflight needs none).
    const bool api = req.path.starts_with("/api/") || req.path == "/metrics" || req.path == "/mcp" ||
                     req.path.starts_with("/mcp/");
    if (api && state.config.rate_limit > 0) {
        const auto wait = state.limiter.admit(req.remote_addr);
        if (wait.count() > 0) {
            res.set_header("Retry-After", std::to_string((wait.count() + 999) / 1000));
            send_problem(res, Problem{429, "RateLimited",
                                      "more than " + std::to_string(static_cast<long long>(state.config.rate_limit)) +
                                          " requests a second from " + req.remote_addr + "; retry later"});
            return true;
        }
    }
    if (state.tokens && scope != Scope::kNone) {
        const std::string authorization = req.get_header_value("Authorization");
        constexpr std::string_view kBearer = "Bearer ";
        std::optional<TokenGrant> grant;
        if (authorization.size() > kBearer.size() && std::string_view(authorization).substr(0, kBearer.size()) == kBearer)
            grant = state.tokens->find(std::string_view(authorization).substr(kBearer.size()));
        if (!grant) {
            res.set_header("WWW-Authenticate", "Bearer realm=\"glassbox\"");
            send_problem(res, Problem{401, "Unauthorized", "a valid bearer token is required (Authorization: Bearer <token>)"});
            return true;
        }
        if (!grant->allows(scope)) {
            send_problem(res, Problem{403, "Forbidden", "the token \"" + grant->name + "\" lacks the scope \"" +
                                                            std::string(to_string(scope)) + "\""});
            return true;
        }
    }
    if (req.has_header("Content-Length")) {
        const std::size_t limit =
            scope == Scope::kLoad ? state.config.max_upload_bytes : state.config.max_body_bytes;
        const std::string declared = req.get_header_value("Content-Length");
        std::size_t length = 0;
        const auto [end, ec] = std::from_chars(declared.data(), declared.data() + declared.size(), length);
        if (ec != std::errc() || end != declared.data() + declared.size()) {
            send_problem(res, Problem{400, "InvalidRequest", "Content-Length is not a number"});
            return true;
        }
        if (length > limit) {
            send_problem(res, Problem{413, "PayloadTooLarge", "the body (" + declared + " bytes) is larger than the " +
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
        res.set_content(asset->bytes.data(), asset->bytes.size(), std::string(content_type_for(name)));
    };
    state.server.Get("/", [serve](const httplib::Request&, httplib::Response& res) { serve("index.html", res); });
    state.server.Get(R"(/([A-Za-z0-9][A-Za-z0-9._-]{0,127}))",
                     [serve](const httplib::Request& req, httplib::Response& res) { serve(req.matches[1], res); });
}

}  // namespace

void add_metrics_route(Gateway::State& state) {
    state.server.Get("/metrics", [&state](const httplib::Request&, httplib::Response& res) {
        auto broker = state.bus.call(schema::protocol::kMmiStatus, json::object(), state.config.call_timeout);
        json traces = nullptr;
        if (broker && broker->contains("services") && (*broker)["services"].dump().find("\"name\":\"trace\"") != std::string::npos) {
            auto stats = state.bus.call(schema::services::kTrace, json{{"op", "stats"}}, state.config.call_timeout);
            if (stats) traces = std::move(*stats);
        }
        res.set_content(state.metrics.render(broker ? *broker : json(nullptr), traces, state.streams.load()),
                        "text/plain; version=0.0.4; charset=utf-8");
    });
}

namespace {

void add_openapi_route(Gateway::State& state) {
    state.server.Get("/api/v1/openapi.json", [](const httplib::Request&, httplib::Response& res) {
        for (const auto& document : api_documents()) {
            if (document.name != "openapi.json") continue;
            res.set_content(document.bytes.data(), document.bytes.size(), "application/json");
            return;
        }
        send_problem(res, Problem{404, "NotFound", "no OpenAPI document was built in"});
    });
}

void add_health_route(Gateway::State& state) {
    state.server.Get("/api/v1/health", [&state](const httplib::Request&, httplib::Response& res) {
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

std::string request_id_of(const httplib::Response& res) { return res.get_header_value(kRequestIdHeader); }

void send_json(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(compact_json(body), "application/json");
}

void send_problem(httplib::Response& res, const Problem& problem) {
    res.status = problem.status;
    res.set_content(compact_json(problem_json(problem, request_id_of(res))), std::string(kProblemContentType));
}

void send_error(httplib::Response& res, const base::Error& error) { send_problem(res, problem_from(error)); }

base::Result<json> json_body(const Gateway::State& state, const httplib::Request& req) {
    if (req.body.size() > state.config.max_body_bytes)
        return make_error(ErrorType::kMessageTooLarge, "the body is larger than " +
                                                           std::to_string(state.config.max_body_bytes) + " bytes");
    if (base::find_invalid_utf8(req.body))
        return make_error(ErrorType::kInvalidJson, "the body is not valid UTF-8");
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded()) return make_error(ErrorType::kInvalidJson, "the body is not valid JSON");
    if (!body.is_object()) return make_error(ErrorType::kInvalidRequest, "the body must be a JSON object");
    return body;
}

bool accepts(const httplib::Request& req, std::string_view type) {
    // A simple reading of Accept: the type is named (any q but 0) and application/json is not
    // named before it. Enough for the gateway's few representations.
    const std::string accept = req.get_header_value("Accept");
    const auto at = accept.find(type);
    if (at == std::string::npos) return false;
    const auto end = accept.find(',', at);
    const std::string params = accept.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (params.find("q=0") != std::string::npos && params.find("q=0.") == std::string::npos) return false;
    const auto json_at = accept.find("application/json");
    return json_at == std::string::npos || json_at > at;
}

// ---- the gateway --------------------------------------------------------------------------

Gateway::State::State(GatewayConfig c)
    : config(std::move(c)), bus([this] {
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
    auto& server = state.server;
    const std::size_t threads = std::max<std::size_t>(state.config.threads, 2);
    server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    // The admission check bounds each route by its declared length; this bounds any body.
    server.set_payload_max_length(std::max(state.config.max_body_bytes, state.config.max_upload_bytes));
    // TCP_NODELAY on the listening socket, which Linux hands on to every accepted one: httplib
    // writes a response's headers and body apart, and Nagle's algorithm held the body back for
    // the client's delayed ACK (40 ms per request on loopback).
    server.set_socket_options([](socket_t sock) {
        const int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    });
    server.set_read_timeout(state.config.read_timeout);
    server.set_write_timeout(state.config.write_timeout);
    server.set_keep_alive_timeout(state.config.keep_alive_timeout.count());
    server.set_request_deadlines(
        RequestDeadlines{state.config.header_timeout, state.config.body_timeout, state.config.body_min_rate});

    state.bus.on_call = [&state](std::string_view service, std::chrono::duration<double> took, bool failed) {
        state.metrics.bus_call(std::string(service), took, failed);
    };
    server.set_logger([&state](const httplib::Request& req, const httplib::Response& res) {
        state.metrics.request(route_label(req.method, req.path), res.status, std::chrono::steady_clock::now() - request_started());
        if (res.get_header_value("Content-Type") == kProblemContentType) {
            const json problem = json::parse(res.body, nullptr, false);
            state.metrics.error(problem.is_object() ? problem.value("error", "Internal") : "Internal");
        }
    });
    server.set_pre_routing_handler([&state](const httplib::Request& req, httplib::Response& res) {
        std::string id = req.get_header_value(kRequestIdHeader);
        res.set_header(kRequestIdHeader, usable_request_id(id) ? id : new_request_id());
        if (!refuse_at_admission(state, req, res)) return httplib::Server::HandlerResponse::Unhandled;
        // A refusal of /mcp (401, 403, 429) is readable by an allowed browser client, as the MCP
        // server's own answers are: else the browser reports a CORS failure, not the status.
        const std::string origin = req.get_header_value("Origin");
        if ((req.path == "/mcp" || req.path.starts_with("/mcp/")) && !origin.empty() &&
            mcp::origin_allowed(state.config.mcp, origin)) {
            res.set_header("Access-Control-Allow-Origin", origin);
            res.set_header("Vary", "Origin");
        }
        return httplib::Server::HandlerResponse::Handled;
    });
    server.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
        if (!res.has_header(kRequestIdHeader)) res.set_header(kRequestIdHeader, new_request_id());
        Problem problem = problem_for_status(res.status);
        if (auto timeout = request_read_timeout()) {
            // Too slow to be read (httplib saw a failed read): 408, as nginx answers a header or
            // body timeout (RFC 9110 §15.5.9), and the connection ends.
            problem = Problem{408, "RequestTimeout", std::move(timeout->detail)};
            base::component_logger("gateway")->warn("event=request_timeout remote={} request_id={} detail=\"{}\"",
                                                    timeout->remote, request_id_of(res), problem.detail);
        }
        // A request httplib could not read (malformed, too slow, too large) ends its connection:
        // a client that sends such things does not keep a thread waiting on keep-alive.
        if (problem.status == 400 || problem.status == 408 || problem.status == 413 || problem.status == 414 ||
            problem.status == 431) {
            res.set_header("Connection", "close");
            close_connection_after_response();
        }
        send_problem(res, problem);
        return httplib::Server::HandlerResponse::Handled;
    }));
    server.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
            if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        base::component_logger("gateway")->error("event=handler_failed path={} error={}", req.path, what);
        send_problem(res, Problem{500, "Internal", "the gateway failed on this request"});
    });

    add_health_route(state);
    add_openapi_route(state);
    add_query_routes(state);
    add_trace_tail_route(state);
    add_metrics_route(state);
    add_trace_routes(state);
    add_knowledge_routes(state);
    add_mcp_routes(state);
    add_load_routes(state);
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
        return make_error(ErrorType::kInvalidRequest, "only a loopback address may be served without --tokens FILE, not " +
                                                          state.config.host);
    }
    if (state.config.port == 0) {
        const int port = state.server.bind_to_any_port(state.config.host);
        if (port <= 0)
            return make_error(ErrorType::kInvalidRequest, "cannot listen on " + state.config.host);
        state.port = port;
    } else {
        if (!state.server.bind_to_port(state.config.host, state.config.port))
            return make_error(ErrorType::kInvalidRequest, "cannot listen on " + state.config.host + ":" +
                                                              std::to_string(state.config.port));
        state.port = state.config.port;
    }
    return state.port;
}

bool Gateway::run() { return state_->server.listen_after_bind(); }

void Gateway::stop() {
    if (state_ && state_->server.is_running()) state_->server.stop();
}

}  // namespace glassbox::gateway
