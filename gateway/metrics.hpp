// GET /metrics: Prometheus text (exposition format 0.0.4) — the gateway's own counters and
// latencies, the steps' durations it saw, and the broker's and trace store's state.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include <nlohmann/json_fwd.hpp>

namespace glassbox::gateway {

// The upper bounds of the latency histograms' buckets, in seconds: from a health check (a few
// milliseconds) to a question through a slow model (the default question deadline is 120 s).
inline constexpr std::array<double, 14> kLatencyBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};

// One latency histogram: a count per bucket (not cumulative here; the text is), their sum and
// count.
struct LatencyHistogram {
    std::array<std::uint64_t, kLatencyBuckets.size()> buckets{};
    double sum = 0;
    std::uint64_t count = 0;
    void observe(double seconds);
};

class Metrics {
public:
    // One HTTP request: its route pattern ("/api/v1/traces/{id}"), status and duration.
    void request(const std::string& route, int status, std::chrono::duration<double> took);
    // One problem answered, by its typed error name.
    void error(const std::string& error);
    // One bus call of the gateway, by service: its duration and whether it failed.
    void bus_call(const std::string& service, std::chrono::duration<double> took, bool failed);
    // A step's gb:durationMs, from an explain message a question brought back.
    void step(const std::string& service, const std::string& type, double duration_ms);
    // Every explain message's step duration (for a question's replies).
    void steps_of(const nlohmann::json& explain);
    // One question answered, from its arrival to its answer, by the engine whose answer won.
    void question(const std::string& engine, std::chrono::duration<double> took);

    // The text: these, then `broker` (mmi.status) and `traces` (the trace service's stats)
    // when given (null when they could not be asked).
    std::string render(const nlohmann::json& broker, const nlohmann::json& traces,
                       std::size_t open_streams) const;

private:
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, int>, std::uint64_t> requests_;
    std::map<std::string, LatencyHistogram> request_seconds_;
    std::map<std::string, std::uint64_t> errors_;
    std::map<std::string, LatencyHistogram> bus_seconds_;
    std::map<std::string, std::uint64_t> bus_failures_;
    std::map<std::pair<std::string, std::string>, LatencyHistogram> step_seconds_;
    std::map<std::string, LatencyHistogram> question_seconds_;
};

// The text of one histogram's series (`labels` without braces, e.g. `route="GET /metrics"`):
// cumulative `_bucket{…,le="…"}` lines ending with `le="+Inf"`, then `_sum` and `_count`.
void render_histogram(std::string& out, const std::string& name, const std::string& labels,
                      const LatencyHistogram& histogram);

// The route pattern of a path, for metric labels (bounded: no ids).
std::string route_label(const std::string& method, const std::string& path);

}  // namespace glassbox::gateway
