// /mcp: the MCP server (gateway/mcp/, docs/mcp.md) on the gateway, its Backend over the
// gateway's own query, search, trace and evaluation-run calls.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "base/log.hpp"
#include "gateway/explain_view.hpp"
#include "gateway/gateway_state.hpp"
#include "gateway/mcp/http_mount.hpp"
#include "schema/otel_ids.hpp"
#include "schema/services.hpp"

namespace glassbox::gateway {

namespace {

using nlohmann::json;

class GatewayBackend : public mcp::Backend {
public:
    explicit GatewayBackend(Gateway::State& state) : state_(state) {}

    // The tool's arguments are a POST /api/v1/query body already ({query, mode, collection,
    // session_id}); the same checks apply. Each step of the run is a progress line; a cancelled
    // call abandons its request on the bus, as a REST stream whose client left does.
    base::Result<json> resolve_intent(const json& args, mcp::RunControl& control) override {
        std::string trace;
        QueryWatch watch;
        watch.on_step = [&](const json& explain) {
            if (trace.empty()) trace = string_of(explain, "session");
            if (auto line = step_line(explain); !line.empty()) control.progress(line);
        };
        watch.cancelled = [&] { return control.cancelled(); };
        auto answer = ask_query(state_, args, watch);
        if (!answer && answer.error().type == base::ErrorType::kCancelled) {
            base::component_logger("gateway")->info(
                "event=mcp_call_cancelled trace={} otel_trace_id={}", trace,
                schema::otel::trace_id_of(trace).value_or("-"));
        }
        return guarded(std::move(answer));
    }

    base::Result<json> search_graph(const json& args) override {
        return guarded(search_knowledge(state_, args));
    }

    base::Result<json> trace_show(const std::string& id) override {
        return guarded(
            state_.bus.call(schema::services::kTrace, json{{"op", "show"}, {"session", id}},
                            state_.config.call_timeout),
            true);
    }

    // list_traces' arguments (checked against its inputSchema) as the trace service's list.
    base::Result<json> trace_list(const json& filters) override {
        json request{{"op", "list"}};
        for (const auto& [key, value] : filters.items()) {
            request[key == "all" ? "include_subtraces" : key] = value;
        }
        return guarded(
            state_.bus.call(schema::services::kTrace, request, state_.config.call_timeout), true);
    }

    // As GET /api/v1/evals and /api/v1/evals/{name} ask the trace service (eval_routes.cpp); a
    // run's set path is the evaluating host's and may name a file of this server too.
    base::Result<json> eval_list(std::int64_t limit, std::int64_t offset) override {
        return guarded(
            state_.bus.call(schema::services::kTrace,
                            json{{"op", "eval_list"}, {"limit", limit}, {"offset", offset}},
                            state_.config.call_timeout),
            true);
    }

    base::Result<json> eval_show(const std::string& name) override {
        return guarded(
            state_.bus.call(schema::services::kTrace, json{{"op", "eval_show"}, {"name", name}},
                            state_.config.call_timeout),
            true);
    }

private:
    // What reaches the MCP client names no file of the server (path_redaction.hpp): an error's
    // message always (a tool error shows it), a trace's rows and texts with `whole`.
    static base::Result<json> guarded(base::Result<json> result, bool whole = false) {
        if (!result) {
            base::Error error = std::move(result).error();
            error.message = ServerPaths::instance().redact(error.message);
            if (error.place) error.place->file = ServerPaths::instance().redact(error.place->file);
            return error;
        }
        if (whole) ServerPaths::instance().redact_json(*result);
        return result;
    }

    Gateway::State& state_;
};

// The Backend and the server that calls it, alive as long as the route handlers.
struct McpEndpoint {
    McpEndpoint(Gateway::State& state, mcp::Options options)
        : backend(state), server(backend, std::move(options)) {}
    GatewayBackend backend;
    mcp::Server server;
};

// Who a request to /mcp comes from, for the sessions-per-client bound (docs/mcp.md §2): its
// token's name where the gateway checks tokens (admission let the request in, so its token is a
// valid one), else its address. The token itself is never kept.
std::string client_of(const Gateway::State& state, const httplib::Request& request) {
    if (state.tokens) {
        const std::string authorization = request.get_header_value("Authorization");
        if (auto grant = state.tokens->find(bearer_token(authorization)))
            return "token " + grant->name;
    }
    return mcp::client_address(request);
}

}  // namespace

void add_mcp_routes(Gateway::State& state) {
    // shared_ptr: httplib copies the handler into each route; the endpoint lives while any does.
    mcp::Options options = state.config.mcp;
    options.max_body_bytes = std::min(options.max_body_bytes, state.config.max_body_bytes);
    options.keep_alive = state.config.keep_alive;
    auto endpoint = std::make_shared<McpEndpoint>(state, std::move(options));
    mcp::mount(
        state.server,
        [endpoint](const mcp::HttpExchange& exchange) { return endpoint->server.handle(exchange); },
        "/mcp", [&state](const httplib::Request& request) { return client_of(state, request); });
}

}  // namespace glassbox::gateway
