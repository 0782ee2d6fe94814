// Prometheus text for GET /metrics.
#include "gateway/metrics.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/ascii.hpp"
#include "gateway/explain_view.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::gateway {

using nlohmann::json;

namespace {

// A label value escaped as the exposition format asks (\\, \", \n).
std::string label(const std::string& value) {
    std::string out;
    for (const char c : value) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

std::string number(double value) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.9g", value);
    return buffer;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// A counter family with one label: its header, then one series a label value.
void counter_family(std::string& out, const char* name, const char* help, const char* label_name,
                    const std::map<std::string, std::uint64_t>& counts) {
    header(out, name, "counter", help);
    for (const auto& [value, n] : counts)
        out += std::string(name) + "{" + label_name + "=\"" + label(value) + "\"} " +
               std::to_string(n) + "\n";
}

// A histogram family with one label: its header, then one histogram a label value.
void histogram_family(std::string& out, const char* name, const char* help, const char* label_name,
                      const std::map<std::string, LatencyHistogram>& histograms) {
    header(out, name, "histogram", help);
    for (const auto& [value, histogram] : histograms)
        render_histogram(out, name, std::string(label_name) + "=\"" + label(value) + "\"",
                         histogram);
}

double number_in(const json& object, const char* key) {
    if (!object.is_object()) return 0;
    const auto it = object.find(key);
    return it != object.end() && it->is_number() ? it->get<double>() : 0;
}

// A counter name from a broker counter's key: lower case, [a-z0-9_] only.
std::string metric_name(const std::string& key) {
    std::string out;
    for (const char c : key) {
        const char lower = base::ascii_lower(c);
        out += (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') ? lower : '_';
    }
    return out;
}

void broker_metrics(std::string& out, const json& broker) {
    header(out, "glassbox_broker_up", "gauge", "1 when the broker answered mmi.status");
    out += "glassbox_broker_up " + std::string(broker.is_object() ? "1" : "0") + "\n";
    if (!broker.is_object()) return;
    const json services = broker.value("services", json::array());
    struct Gauge {
        const char* name;
        const char* key;
        const char* help;
    };
    static constexpr Gauge kServiceGauges[] = {
        {"glassbox_service_workers", "workers", "live workers of a service"},
        {"glassbox_service_idle_workers", "idle", "workers holding no request"},
        {"glassbox_service_in_flight", "in_flight", "requests its workers hold"},
        {"glassbox_service_queue_depth", "queued", "requests waiting in the service's queue"},
        {"glassbox_service_max_queue", "max_queue", "the queue's bound"},
    };
    for (const auto& g : kServiceGauges) {
        header(out, g.name, "gauge", g.help);
        for (const auto& s : services)
            out += std::string(g.name) + "{service=\"" + label(string_of(s, "name")) + "\"} " +
                   number(number_in(s, g.key)) + "\n";
    }
    const json spool = broker.value("spool", json::object());
    header(out, "glassbox_spool_messages", "gauge",
           "explain messages in the broker's spool (not yet acknowledged)");
    out += "glassbox_spool_messages " + number(number_in(spool, "messages")) + "\n";
    header(out, "glassbox_spool_bytes", "gauge", "bytes of the spool");
    out += "glassbox_spool_bytes " + number(number_in(spool, "bytes")) + "\n";
    header(out, "glassbox_spool_dropped_total", "counter",
           "explain messages not spooled (spool full)");
    out += "glassbox_spool_dropped_total " + number(number_in(spool, "dropped")) + "\n";
    const json counters = broker.value("counters", json::object());
    if (counters.is_object()) {
        for (const auto& [key, value] : counters.items()) {
            if (!value.is_number()) continue;
            const std::string name = "glassbox_broker_" + metric_name(key) + "_total";
            header(out, name.c_str(), "counter", "the broker's own counter (mmi.status counters)");
            out += name + " " + number(value.get<double>()) + "\n";
        }
    }
}

void trace_metrics(std::string& out, const json& traces) {
    if (!traces.is_object()) return;
    header(out, "glassbox_traces_stored", "gauge",
           "traces (sessions) in the trace store, by status");
    const json by_status = traces.value("by_status", json::object());
    if (by_status.is_object()) {
        for (const auto& [status, n] : by_status.items())
            if (n.is_number())
                out += "glassbox_traces_stored{status=\"" + label(status) + "\"} " +
                       number(n.get<double>()) + "\n";
    }
    header(out, "glassbox_trace_events_stored", "gauge", "explain events in the trace store");
    out += "glassbox_trace_events_stored " + number(number_in(traces, "events")) + "\n";
    header(out, "glassbox_trace_triples_stored", "gauge", "explain triples in the trace store");
    out += "glassbox_trace_triples_stored " + number(number_in(traces, "triples")) + "\n";
    header(out, "glassbox_traces_quarantined", "gauge", "malformed explain messages kept aside");
    out += "glassbox_traces_quarantined " + number(number_in(traces, "quarantined")) + "\n";
    // Retention (docs/traces.md, "Retention"): since the trace collector started.
    const json retention = traces.value("retention", json());
    if (!retention.is_object()) return;
    for (const auto& [key, name, help] :
         {std::tuple{"traces", "glassbox_traces_pruned_total", "top-level traces pruned"},
          std::tuple{"sessions", "glassbox_trace_runs_pruned_total",
                     "runs pruned (sub-runs included)"},
          std::tuple{"events", "glassbox_trace_events_pruned_total", "explain events pruned"},
          std::tuple{"bytes", "glassbox_trace_bytes_pruned_total",
                     "trace store bytes freed by pruning"},
          std::tuple{"failures", "glassbox_trace_prune_failures_total",
                     "background prunes that failed"}}) {
        header(out, name, "counter", help);
        out += std::string(name) + " " + number(number_in(retention, key)) + "\n";
    }
}

// The OpenTelemetry exporter (docs/operations.md, "OpenTelemetry"): since the trace collector
// started, and its queue now; nothing when no endpoint is configured.
void otel_metrics(std::string& out, const json& traces) {
    const json otel = traces.is_object() ? traces.value("otel", json()) : json();
    if (!otel.is_object() || !otel.value("configured", false)) return;
    header(out, "glassbox_otel_exported_runs_total", "counter",
           "runs sent to the OpenTelemetry receiver");
    out += "glassbox_otel_exported_runs_total " + number(number_in(otel, "exported_runs")) + "\n";
    header(out, "glassbox_otel_exported_spans_total", "counter",
           "spans the OpenTelemetry receiver took");
    out += "glassbox_otel_exported_spans_total " + number(number_in(otel, "exported_spans")) + "\n";
    const json dropped = otel.value("dropped", json::object());
    header(out, "glassbox_otel_dropped_runs_total", "counter",
           "runs not exported: queue_full (beyond otel.max_queue), rejected (refused by the "
           "receiver)");
    for (const char* reason : {"queue_full", "rejected"})
        out += std::string("glassbox_otel_dropped_runs_total{reason=\"") + reason + "\"} " +
               number(number_in(dropped, reason)) + "\n";
    header(out, "glassbox_otel_rejected_spans_total", "counter",
           "spans a partial-success answer of the receiver rejected");
    out +=
        "glassbox_otel_rejected_spans_total " + number(number_in(dropped, "rejected_spans")) + "\n";
    header(out, "glassbox_otel_queue_runs", "gauge", "runs waiting to be exported");
    out += "glassbox_otel_queue_runs " + number(number_in(otel, "pending")) + "\n";
    header(out, "glassbox_otel_failures_total", "counter",
           "export requests that failed (retried, or refused)");
    out += "glassbox_otel_failures_total " + number(number_in(otel, "failures")) + "\n";
}

// Sampling (docs/traces.md, "Sampling"): the top-level runs each decision took since the store
// was created (kept whole by why, or summarised), and those waiting for one.
void sampling_metrics(std::string& out, const json& traces) {
    const json sampling = traces.is_object() ? traces.value("sampling", json()) : json();
    if (!sampling.is_object()) return;
    const json whole = sampling.value("whole", json::object());
    header(out, "glassbox_trace_sampling_total", "counter",
           "top-level runs sampling decided: kept whole (error, escalation, evaluated, pinned, "
           "sampled) or summarised");
    for (const char* decision : {"error", "escalation", "evaluated", "pinned", "sampled"})
        out += std::string("glassbox_trace_sampling_total{decision=\"") + decision + "\"} " +
               number(number_in(whole, decision)) + "\n";
    out += "glassbox_trace_sampling_total{decision=\"summarised\"} " +
           number(number_in(sampling, "summarised")) + "\n";
    header(out, "glassbox_trace_sampling_waiting", "gauge",
           "ended top-level runs waiting for the sampling decision");
    out += "glassbox_trace_sampling_waiting " + number(number_in(sampling, "waiting")) + "\n";
}

// Cost (docs/traces.md, "Cost"): the stored runs' model calls by model, from the trace store
// (pruning lowers them: a scraper sees a counter reset). A model without a price has tokens and
// no cost series.
void cost_metrics(std::string& out, const json& traces) {
    const json costs = traces.is_object() ? traces.value("costs", json()) : json();
    if (!costs.is_object()) return;
    const json by_model = costs.value("by_model", json::array());
    if (!by_model.is_array()) return;
    const std::string currency = label(costs.value("currency", std::string()));
    header(out, "glassbox_cost_total", "counter",
           "what the stored runs' model calls cost, by model (costs.prices)");
    for (const auto& m : by_model) {
        if (!m.is_object() || !m.value("model", json()).is_string()) continue;
        if (!m.value("cost", json()).is_number()) continue;
        out += "glassbox_cost_total{model=\"" + label(m["model"].get<std::string>()) +
               "\",currency=\"" + currency + "\"} " + number(m["cost"].get<double>()) + "\n";
    }
    header(out, "glassbox_tokens_total", "counter",
           "model tokens of the stored runs' model calls, by model and direction");
    for (const auto& m : by_model) {
        if (!m.is_object() || !m.value("model", json()).is_string()) continue;
        const std::string model = label(m["model"].get<std::string>());
        for (const auto& [direction, key] :
             {std::pair{"input", "input_tokens"}, std::pair{"output", "output_tokens"}})
            out += "glassbox_tokens_total{model=\"" + model + "\",direction=\"" + direction +
                   "\"} " + number(number_in(m, key)) + "\n";
    }
}

}  // namespace

std::string route_label(const std::string& method, const std::string& path) {
    // Labels come from a fixed set, so a client sending made-up paths cannot grow the metrics
    // (each label is a time series kept for the gateway's lifetime).
    static constexpr std::array<std::string_view, 12> kRoutes = {
        "/api/v1/query",     "/api/v1/search",
        "/api/v1/traces",    "/api/v1/load/rdf",
        "/api/v1/load/docs", "/api/v1/graph/stats",
        "/api/v1/health",    "/api/v1/openapi.json",
        "/metrics",          "/mcp",
        "/api/v1/sparql",    "/api/v1/evals"};
    static constexpr std::array<std::string_view, 9> kMethods = {
        "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"};
    std::string route;
    constexpr std::string_view kTraces = "/api/v1/traces/";
    if (std::find(kRoutes.begin(), kRoutes.end(), path) != kRoutes.end() ||
        path == "/api/v1/traces/compare")
        route = path;
    else if (path.starts_with(kTraces))
        route = path.ends_with("/events") ? "/api/v1/traces/{id}/events" : "/api/v1/traces/{id}";
    else if (path.starts_with("/api/v1/evals/"))
        route = path.ends_with(".svg") ? "/api/v1/evals/{name}/{chart}" : "/api/v1/evals/{name}";
    else if (path.starts_with("/api/") || path.starts_with("/mcp"))
        route = "unmatched";
    else
        route = "static";
    const bool known_method = std::find(kMethods.begin(), kMethods.end(), method) != kMethods.end();
    return (known_method ? method : std::string("OTHER")) + " " + route;
}

void LatencyHistogram::observe(double seconds) {
    // The first bucket that holds it; above the last one only +Inf (the count) does.
    const auto at = std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), seconds);
    if (at != kLatencyBuckets.end())
        ++buckets[static_cast<std::size_t>(at - kLatencyBuckets.begin())];
    sum += seconds;
    ++count;
}

void render_histogram(std::string& out, const std::string& name, const std::string& labels,
                      const LatencyHistogram& histogram) {
    const std::string before_le = "{" + labels + (labels.empty() ? "" : ",") + "le=\"";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i) {
        cumulative += histogram.buckets[i];
        out.append(name)
            .append("_bucket")
            .append(before_le)
            .append(number(kLatencyBuckets[i]))
            .append("\"} ")
            .append(std::to_string(cumulative))
            .append("\n");
    }
    out += name + "_bucket" + before_le + "+Inf\"} " + std::to_string(histogram.count) + "\n";
    const std::string braces = labels.empty() ? "" : "{" + labels + "}";
    out += name + "_sum" + braces + " " + number(histogram.sum) + "\n";
    out += name + "_count" + braces + " " + std::to_string(histogram.count) + "\n";
}

void Metrics::request(const std::string& route, int status, std::chrono::duration<double> took) {
    std::lock_guard lock(mutex_);
    ++requests_[{route, status}];
    request_seconds_[route].observe(took.count());
}

void Metrics::error(const std::string& error) {
    std::lock_guard lock(mutex_);
    ++errors_[error];
}

void Metrics::bus_call(const std::string& service, std::chrono::duration<double> took,
                       bool failed) {
    std::lock_guard lock(mutex_);
    bus_seconds_[service].observe(took.count());
    if (failed) ++bus_failures_[service];
}

void Metrics::step(const std::string& service, const std::string& type, double duration_ms) {
    std::lock_guard lock(mutex_);
    step_seconds_[{service, type}].observe(duration_ms / 1000.0);
}

void Metrics::question(const std::string& engine, std::chrono::duration<double> took) {
    // The engine comes from a worker's answer: a name of the usual shape, and few of them, or
    // "other", so an odd worker cannot grow the metrics.
    constexpr std::size_t kMaxEngines = 16;
    const bool plain = !engine.empty() && engine.size() <= 32 &&
                       std::all_of(engine.begin(), engine.end(),
                                   [](char c) { return (c >= 'a' && c <= 'z') || c == '-'; });
    std::lock_guard lock(mutex_);
    const bool known = question_seconds_.count(engine) > 0;
    const std::string label =
        plain && (known || question_seconds_.size() < kMaxEngines) ? engine : "other";
    question_seconds_[label].observe(took.count());
}

void Metrics::steps_of(const json& explain) {
    const std::string id = string_of(explain, "explain_id");
    const auto ms = explain_value(explain, id, schema::vocab::kDurationMs);
    if (!ms) return;
    char* end = nullptr;
    const double value = std::strtod(ms->c_str(), &end);
    if (end == nullptr || *end != '\0') return;
    step(string_of(explain, "service"), explain_step_type(explain), value);
}

std::string Metrics::render(const json& broker, const json& traces,
                            std::size_t open_streams) const {
    std::string out;
    {
        std::lock_guard lock(mutex_);
        header(out, "glassbox_gateway_requests_total", "counter",
               "HTTP requests answered, by route and status");
        for (const auto& [key, n] : requests_)
            out += "glassbox_gateway_requests_total{route=\"" + label(key.first) + "\",status=\"" +
                   std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
        histogram_family(out, "glassbox_gateway_request_seconds",
                         "HTTP request durations (streams: their whole life), by route", "route",
                         request_seconds_);
        histogram_family(out, "glassbox_question_seconds",
                         "questions from their arrival to their answer (JSON or SSE, and MCP's "
                         "resolve_intent), by the engine that answered",
                         "engine", question_seconds_);
        counter_family(out, "glassbox_gateway_errors_total", "problem answers, by typed error",
                       "error", errors_);
        histogram_family(out, "glassbox_service_call_seconds",
                         "the gateway's bus calls, by service (queueing and work)", "service",
                         bus_seconds_);
        counter_family(out, "glassbox_service_call_failures_total",
                       "the gateway's bus calls that ended with an error", "service",
                       bus_failures_);
        header(out, "glassbox_step_seconds", "histogram",
               "steps' durations (gb:durationMs) in the explain messages of the questions asked "
               "here, by service and step");
        for (const auto& [key, histogram] : step_seconds_)
            render_histogram(
                out, "glassbox_step_seconds",
                "service=\"" + label(key.first) + "\",step=\"" + label(key.second) + "\"",
                histogram);
    }
    header(out, "glassbox_gateway_open_streams", "gauge", "SSE streams open now");
    out += "glassbox_gateway_open_streams " + std::to_string(open_streams) + "\n";
    broker_metrics(out, broker);
    trace_metrics(out, traces);
    otel_metrics(out, traces);
    sampling_metrics(out, traces);
    cost_metrics(out, traces);
    return out;
}

}  // namespace glassbox::gateway
