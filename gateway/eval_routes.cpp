// GET /api/v1/evals, /api/v1/evals/{name} and its two charts: the evaluation runs `glassbox eval`
// recorded in the trace store (the trace service's eval_list, eval_show and eval_chart;
// docs/evaluation.md "Evaluation runs"), over HTTP.
#include <httplib.h>

#include "gateway/gateway_state.hpp"
#include "schema/services.hpp"

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {

constexpr std::string_view kSvgMediaType = "image/svg+xml";
constexpr std::string_view kSvgOnly[] = {kSvgMediaType};
constexpr std::string_view kEvalListParameters[] = {"limit", "offset"};
// The trace service's bounds (workers/trace_collector/eval_runs.hpp): checked here too, so a bad
// page is a 400 without a bus round trip.
constexpr long long kMaxLimit = 500;
constexpr long long kDefaultLimit = 50;
constexpr long long kMaxOffset = 2'147'483'647;
// A chart is a document we generate, but the store takes it over the bus: a browser opening it
// on its own runs nothing of it (no script, no plug-in, no form; a sandbox, an origin of none)
// and never sniffs it as anything but SVG.
constexpr const char* kChartPolicy =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox";

// The path of run `name` (its segment percent-encoded: a name may hold any character but '/').
std::string run_path(const std::string& name) {
    return "/api/v1/evals/" + httplib::detail::encode_query_param(name);
}

void list_route(Gateway::State& state, const httplib::Request& req, httplib::Response& res) {
    if (!admit(req, res, RouteShape{kEvalListParameters, kJsonOnly})) return;
    json request{{"op", "eval_list"}};
    long long limit = kDefaultLimit;
    long long offset = 0;
    for (const auto& [name, bounds] :
         {std::pair{std::string("limit"), std::pair{1LL, kMaxLimit}},
          std::pair{std::string("offset"), std::pair{0LL, kMaxOffset}}}) {
        if (!req.has_param(name)) continue;
        auto value = integer_param(name, req.get_param_value(name), bounds.first, bounds.second);
        if (!value) return send_error(res, value.error());
        (name == "limit" ? limit : offset) = *value;
    }
    request["limit"] = limit;
    request["offset"] = offset;
    auto reply = state.bus.call(schema::services::kTrace, request, state.config.call_timeout);
    if (!reply) return send_error(res, reply.error());
    if (reply->contains("runs") && (*reply)["runs"].is_array()) {
        for (auto& run : (*reply)["runs"])
            if (run.is_object() && run.contains("name") && run["name"].is_string())
                run["href"] = run_path(run["name"].get<std::string>());
        const auto shown = static_cast<long long>((*reply)["runs"].size());
        const long long total = reply->value("total", 0LL);
        (*reply)["limit"] = limit;
        (*reply)["offset"] = offset;
        (*reply)["next_offset"] = offset + shown < total ? json(offset + shown) : json(nullptr);
    }
    // The set's path is the evaluating host's; it may name a file of this server too.
    ServerPaths::instance().redact_json(*reply);
    send_json(res, 200, *reply);
}

void show_route(Gateway::State& state, const httplib::Request& req, httplib::Response& res) {
    if (!admit(req, res, RouteShape{{}, kJsonOnly})) return;
    const std::string name = req.matches[1];
    auto reply = state.bus.call(schema::services::kTrace, json{{"op", "eval_show"}, {"name", name}},
                                state.config.call_timeout);
    if (!reply) return send_error(res, reply.error());
    if (reply->contains("run") && (*reply)["run"].is_object()) {
        json& run = (*reply)["run"];
        run["href"] = run_path(name);
        run["charts"] = {{"reliability", run_path(name) + "/reliability.svg"},
                         {"risk_coverage", run_path(name) + "/risk-coverage.svg"}};
    }
    ServerPaths::instance().redact_json(*reply);
    send_json(res, 200, *reply);
}

void chart_route(Gateway::State& state, const httplib::Request& req, httplib::Response& res) {
    if (!admit(req, res, RouteShape{{}, kSvgOnly})) return;
    const std::string name = req.matches[1];
    const std::string chart = req.matches[2] == "reliability" ? "reliability" : "risk_coverage";
    auto reply = state.bus.call(schema::services::kTrace,
                                json{{"op", "eval_chart"}, {"name", name}, {"chart", chart}},
                                state.config.call_timeout);
    if (!reply) return send_error(res, reply.error());
    if (!reply->contains("svg") || !(*reply)["svg"].is_string())
        return send_error(res, make_error(ErrorType::kDecodeError,
                                          "the trace service answered no \"svg\" for the chart"));
    res.status = 200;
    res.set_header("Content-Security-Policy", kChartPolicy);
    res.set_header("X-Content-Type-Options", "nosniff");
    // Recording the run again under its name replaces its charts.
    res.set_header("Cache-Control", "no-cache");
    res.set_content((*reply)["svg"].get<std::string>(), std::string(kSvgMediaType));
}

}  // namespace

void add_eval_routes(Gateway::State& state) {
    state.server.Get("/api/v1/evals",
                     [&state](const httplib::Request& req, httplib::Response& res) {
                         list_route(state, req, res);
                     });
    // The name as recorded: any characters but '/', percent-encoded (httplib decodes the path).
    state.server.Get(R"(/api/v1/evals/([^/]{1,256})/(reliability|risk-coverage)\.svg)",
                     [&state](const httplib::Request& req, httplib::Response& res) {
                         chart_route(state, req, res);
                     });
    state.server.Get(R"(/api/v1/evals/([^/]{1,256}))",
                     [&state](const httplib::Request& req, httplib::Response& res) {
                         show_route(state, req, res);
                     });
}

}  // namespace glassbox::gateway
