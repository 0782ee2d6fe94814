// What every route handler of the gateway shares: the config, the bus pool, the stream slots.
// Internal to gateway/ (the routes' files include it; nothing else does).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include <httplib.h>
#include <nlohmann/json_fwd.hpp>

#include "gateway/access.hpp"
#include "gateway/bus_pool.hpp"
#include "gateway/connection_loop.hpp"
#include "gateway/content_negotiation.hpp"
#include "gateway/gateway.hpp"
#include "gateway/gateway_server.hpp"
#include "gateway/metrics.hpp"
#include "gateway/path_redaction.hpp"
#include "gateway/problem.hpp"
#include "gateway/request_checks.hpp"

namespace glassbox::gateway {

struct Gateway::State {
    explicit State(GatewayConfig c);

    GatewayConfig config;
    BusPool bus;
    GatewayServer server;
    std::unique_ptr<ConnectionLoop> loop;  // made by bind()
    std::atomic<std::size_t> streams{0};
    int port = 0;
    std::optional<AccessTokens> tokens;  // loaded by bind() from config.tokens_file
    RateLimiter limiter;
    Metrics metrics;
};

// One of max_streams SSE slots, held for a stream's life.
class StreamSlot {
public:
    explicit StreamSlot(std::atomic<std::size_t>& streams) : streams_(&streams) {}
    StreamSlot(StreamSlot&& other) noexcept : streams_(other.streams_) { other.streams_ = nullptr; }
    StreamSlot& operator=(StreamSlot&&) = delete;
    ~StreamSlot() {
        if (streams_ != nullptr) streams_->fetch_sub(1);
    }

private:
    std::atomic<std::size_t>* streams_;
};

// A slot, or nothing when max_streams are open.
std::optional<StreamSlot> take_stream_slot(Gateway::State& state);

// The request id of a request (set by the pre-routing handler on the response).
std::string request_id_of(const httplib::Response& res);

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
void send_problem(httplib::Response& res, const Problem& problem);
void send_error(httplib::Response& res, const base::Error& error);

// The request's JSON body as an object: MessageTooLarge above config.max_body_bytes (a chunked
// body has no Content-Length for the admission check), InvalidJson for a body that does not
// parse (or is not UTF-8), InvalidRequest for one that is not an object.
base::Result<nlohmann::json> json_body(const Gateway::State& state, const httplib::Request& req);

// What a route takes in its query string, and the media types it can answer with in its order
// of preference (each "type/subtype" with the parameters its answers carry).
struct RouteShape {
    std::span<const std::string_view> parameters;
    std::span<const std::string_view> media_types;
};

inline constexpr std::string_view kJsonMediaType = "application/json";
inline constexpr std::string_view kEventStreamMediaType = "text/event-stream";
inline constexpr std::string_view kJsonOnly[] = {kJsonMediaType};
// What /metrics answers with: Prometheus's text format.
inline constexpr std::string_view kMetricsMediaType = "text/plain; version=0.0.4; charset=utf-8";

// Every query-string parameter one of `accepted`, given once: else InvalidRequest naming it and
// listing `accepted` (request_checks.hpp).
base::Result<void> only_known_params(const httplib::Request& req,
                                     std::span<const std::string_view> accepted);

// The index in `offered` of the media type the request's Accept header prefers
// (content_negotiation.hpp); nullopt when it admits none of them.
std::optional<std::size_t> negotiate(const httplib::Request& req,
                                     std::span<const std::string_view> offered);

// 406 NotAcceptable, listing `offered` in its detail and as the member `media_types`.
Problem not_acceptable(std::span<const std::string_view> offered);

// The checks each API route makes first, before its body is looked at: every query-string
// parameter one the route takes, given once (else 400 InvalidRequest, only_known_params), and
// an Accept that admits one of its media types (else 406, not_acceptable). The index of the
// media type to answer with; nullopt once the problem is answered.
std::optional<std::size_t> admit(const httplib::Request& req, httplib::Response& res,
                                 const RouteShape& shape);

// A query-string integer from `min` to `max`; InvalidRequest naming `name` otherwise
// (trace_routes.cpp).
base::Result<long long> integer_param(const std::string& name, const std::string& text,
                                      long long min, long long max);

// The route registrations, one file each.
void add_query_routes(Gateway::State& state);
void add_trace_routes(Gateway::State& state);
void add_knowledge_routes(Gateway::State& state);
void add_collection_routes(Gateway::State& state);  // /api/v1/collections (collection_routes.cpp)
void add_load_routes(Gateway::State& state);
void add_trace_tail_route(Gateway::State& state);
void add_metrics_route(Gateway::State& state);
void add_mcp_routes(Gateway::State& state);     // /mcp (mcp_routes.cpp, docs/mcp.md)
void add_sparql_routes(Gateway::State& state);  // POST /api/v1/sparql (docs/sparql.md)
void add_eval_routes(Gateway::State& state);    // /api/v1/evals (eval_routes.cpp)

// What a caller inside the gateway hears of a question while it runs, and how it stops it.
struct QueryWatch {
    // Each explain message of the run (the router's own, and its engines' it forwards), in order.
    std::function<void(const nlohmann::json& explain)> on_step;
    // Polled at least every config.client_check while the run waits on the bus. Once true, the
    // request is abandoned on the bus (the broker cancels the worker and ends the trace with
    // status error, Cancelled) and the answer is a Cancelled error.
    std::function<bool()> cancelled;
};

// A POST /api/v1/query body answered as its JSON reply (the router's FINAL with trace_id and
// usage), for callers inside the gateway (MCP's resolve_intent).
base::Result<nlohmann::json> ask_query(Gateway::State& state, const nlohmann::json& body,
                                       const QueryWatch& watch = {});
// A POST /api/v1/search body answered as its JSON reply (knowledge_routes.cpp), for MCP's
// search_graph.
base::Result<nlohmann::json> search_knowledge(Gateway::State& state, const nlohmann::json& body);

}  // namespace glassbox::gateway
