// route_label: the metrics' route label comes from a fixed set, whatever the path or method;
// latencies as Prometheus histograms.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/metrics.hpp"

namespace glassbox::gateway {
namespace {

TEST(RouteLabel, NamesEachRouteByItsPattern) {
    EXPECT_EQ(route_label("POST", "/api/v1/query"), "POST /api/v1/query");
    EXPECT_EQ(route_label("GET", "/api/v1/health"), "GET /api/v1/health");
    EXPECT_EQ(route_label("GET", "/api/v1/traces/urn%3Aglassbox%3Aabc"), "GET /api/v1/traces/{id}");
    EXPECT_EQ(route_label("GET", "/api/v1/traces/x/events"), "GET /api/v1/traces/{id}/events");
    EXPECT_EQ(route_label("DELETE", "/mcp"), "DELETE /mcp");
    EXPECT_EQ(route_label("GET", "/viewer.js"), "GET static");
    EXPECT_EQ(route_label("GET", "/metrics"), "GET /metrics");
}

TEST(RouteLabel, MadeUpPathsAndMethodsShareOneLabel) {
    std::set<std::string> labels;
    for (int i = 0; i < 1000; ++i) {
        labels.insert(route_label("GET", "/api/v" + std::to_string(i) + "/nothing"));
        labels.insert(route_label("POST", "/mcp/" + std::to_string(i)));
        labels.insert(route_label("X" + std::to_string(i), "/api/v1/query"));
    }
    EXPECT_EQ(labels,
              (std::set<std::string>{"GET unmatched", "POST unmatched", "OTHER /api/v1/query"}));
}

// Prometheus's text format for a histogram: `_bucket` lines with `le` bounds in increasing order,
// cumulative counts that never fall, the last bucket `le="+Inf"` holding the count, then `_sum`
// and `_count`, all under a `# TYPE <name> histogram` line.
TEST(Metrics, LatenciesAreHistogramsWithCumulativeBuckets) {
    Metrics metrics;
    using std::chrono::duration;
    metrics.request("GET /api/v1/health", 200, duration<double>(0.003));
    metrics.request("GET /api/v1/health", 200, duration<double>(0.2));
    metrics.request("GET /api/v1/health", 200, duration<double>(500));  // beyond the last bound
    metrics.question("graph-rag", duration<double>(1.5));
    metrics.question("Not An Engine!", duration<double>(1.5));
    const std::string text = metrics.render(nullptr, nullptr, 0);

    EXPECT_NE(text.find("# TYPE glassbox_gateway_request_seconds histogram\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("# TYPE glassbox_question_seconds histogram\n"), std::string::npos) << text;
    EXPECT_EQ(text.find(" summary\n"), std::string::npos) << "no summaries left: " << text;
    const std::string series =
        "glassbox_gateway_request_seconds_bucket{route=\"GET /api/v1/health\",le=\"";
    std::vector<std::pair<std::string, std::uint64_t>> buckets;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind(series, 0) != 0) continue;
        const auto close = line.find("\"} ", series.size());
        buckets.emplace_back(line.substr(series.size(), close - series.size()),
                             std::stoull(line.substr(close + 3)));
    }
    ASSERT_EQ(buckets.size(), kLatencyBuckets.size() + 1) << text;
    for (std::size_t i = 0; i + 1 < buckets.size(); ++i) {
        EXPECT_DOUBLE_EQ(std::stod(buckets[i].first), kLatencyBuckets[i]);
        if (i > 0) {
            EXPECT_GE(buckets[i].second, buckets[i - 1].second) << "cumulative";
        }
    }
    EXPECT_EQ(buckets.front(), (std::pair<std::string, std::uint64_t>{"0.005", 1}));
    EXPECT_EQ(buckets[5], (std::pair<std::string, std::uint64_t>{"0.25", 2}));
    EXPECT_EQ(buckets[buckets.size() - 2].second, 2u) << "500 s is beyond 120";
    EXPECT_EQ(buckets.back(), (std::pair<std::string, std::uint64_t>{"+Inf", 3}));
    EXPECT_NE(
        text.find("glassbox_gateway_request_seconds_sum{route=\"GET /api/v1/health\"} 500.203\n"),
        std::string::npos)
        << text;
    EXPECT_NE(text.find("glassbox_gateway_request_seconds_count{route=\"GET /api/v1/health\"} 3\n"),
              std::string::npos);
    // Per engine; a name no engine has is counted as "other".
    EXPECT_NE(text.find("glassbox_question_seconds_bucket{engine=\"graph-rag\",le=\"2.5\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("glassbox_question_seconds_count{engine=\"other\"} 1\n"), std::string::npos)
        << text;
}

// The trace collector's retention counters (stats' `retention`) become counters, when it has them.
TEST(Metrics, RetentionCountersFromTraceStats) {
    Metrics metrics;
    const nlohmann::json traces{
        {"sessions", 4},
        {"events", 8},
        {"retention",
         {{"traces", 3}, {"sessions", 5}, {"events", 11}, {"bytes", 4096}, {"failures", 1}}}};
    const std::string text = metrics.render(nullptr, traces, 0);
    for (const char* line :
         {"# TYPE glassbox_traces_pruned_total counter\n", "glassbox_traces_pruned_total 3\n",
          "glassbox_trace_runs_pruned_total 5\n", "glassbox_trace_events_pruned_total 11\n",
          "glassbox_trace_bytes_pruned_total 4096\n", "glassbox_trace_prune_failures_total 1\n"})
        EXPECT_NE(text.find(line), std::string::npos) << line << text;
    const std::string without = metrics.render(nullptr, nlohmann::json{{"sessions", 4}}, 0);
    EXPECT_EQ(without.find("pruned"), std::string::npos) << "no collector, no retention counters";
}

// The OpenTelemetry exporter's counters (stats' `otel`, docs/operations.md "OpenTelemetry")
// become counters and a gauge, when an endpoint is configured.
TEST(Metrics, OtelExportCountersFromTraceStats) {
    Metrics metrics;
    const nlohmann::json traces{
        {"sessions", 4},
        {"otel",
         {{"configured", true},
          {"exported_runs", 3},
          {"exported_spans", 40},
          {"pending", 2},
          {"dropped", {{"queue_full", 5}, {"rejected", 1}, {"rejected_spans", 6}}},
          {"failures", 7}}}};
    const std::string text = metrics.render(nullptr, traces, 0);
    for (const char* line :
         {"# TYPE glassbox_otel_exported_runs_total counter\n",
          "glassbox_otel_exported_runs_total 3\n", "glassbox_otel_exported_spans_total 40\n",
          "glassbox_otel_dropped_runs_total{reason=\"queue_full\"} 5\n",
          "glassbox_otel_dropped_runs_total{reason=\"rejected\"} 1\n",
          "glassbox_otel_rejected_spans_total 6\n", "# TYPE glassbox_otel_queue_runs gauge\n",
          "glassbox_otel_queue_runs 2\n", "glassbox_otel_failures_total 7\n"})
        EXPECT_NE(text.find(line), std::string::npos) << line << text;
    const nlohmann::json off{{"sessions", 4}, {"otel", {{"configured", false}}}};
    EXPECT_EQ(metrics.render(nullptr, off, 0).find("glassbox_otel"), std::string::npos)
        << "no endpoint, no exporter metrics";
}

// Sampling's decisions (stats' `sampling`, docs/traces.md "Sampling") become one counter by
// decision and a gauge of the runs waiting.
TEST(Metrics, SamplingDecisionsFromTraceStats) {
    Metrics metrics;
    const nlohmann::json traces{
        {"sessions", 20},
        {"sampling",
         {{"fraction", 0.5},
          {"whole",
           {{"error", 2}, {"escalation", 1}, {"evaluated", 3}, {"pinned", 4}, {"sampled", 5}}},
          {"summarised", 6},
          {"waiting", 7}}}};
    const std::string text = metrics.render(nullptr, traces, 0);
    for (const char* line : {"# TYPE glassbox_trace_sampling_total counter\n",
                             "glassbox_trace_sampling_total{decision=\"error\"} 2\n",
                             "glassbox_trace_sampling_total{decision=\"escalation\"} 1\n",
                             "glassbox_trace_sampling_total{decision=\"evaluated\"} 3\n",
                             "glassbox_trace_sampling_total{decision=\"pinned\"} 4\n",
                             "glassbox_trace_sampling_total{decision=\"sampled\"} 5\n",
                             "glassbox_trace_sampling_total{decision=\"summarised\"} 6\n",
                             "glassbox_trace_sampling_waiting 7\n"})
        EXPECT_NE(text.find(line), std::string::npos) << line << text;
    const std::string without = metrics.render(nullptr, nlohmann::json{{"sessions", 4}}, 0);
    EXPECT_EQ(without.find("sampling"), std::string::npos) << "no sampling section, no series";
}

}  // namespace
}  // namespace glassbox::gateway
