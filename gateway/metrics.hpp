// GET /metrics: Prometheus text (exposition format 0.0.4) — the gateway's own counters and
// latencies, the steps' durations it saw, and the broker's and trace store's state.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

namespace glassbox::gateway {

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

    // The text: these, then `broker` (mmi.status) and `traces` (the trace service's stats)
    // when given (null when they could not be asked).
    std::string render(const nlohmann::json& broker, const nlohmann::json& traces, std::size_t open_streams) const;

private:
    struct Sum {
        double seconds = 0;
        std::uint64_t count = 0;
    };
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, int>, std::uint64_t> requests_;
    std::map<std::string, Sum> request_seconds_;
    std::map<std::string, std::uint64_t> errors_;
    std::map<std::string, Sum> bus_seconds_;
    std::map<std::string, std::uint64_t> bus_failures_;
    std::map<std::pair<std::string, std::string>, Sum> step_seconds_;
};

// The route pattern of a path, for metric labels (bounded: no ids).
std::string route_label(const std::string& method, const std::string& path);

}  // namespace glassbox::gateway
