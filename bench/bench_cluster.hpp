// A broker and workers as `glassbox` processes for a benchmark, and waiting for a service of
// theirs over the bus. Needs GLASSBOX_BINARY (the executable, a compile definition).
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/bus_client.hpp"
#include "tests/support/process.hpp"

namespace glassbox::bench {

// Every process it starts runs in `dir` and is terminated (the last started first, each given
// `grace`) when the cluster goes.
struct BenchCluster {
    std::filesystem::path dir;
    std::chrono::milliseconds grace{5000};
    std::vector<std::unique_ptr<integration::ChildProcess>> children;
    std::string endpoint;

    BenchCluster() = default;
    BenchCluster(const BenchCluster&) = delete;
    BenchCluster& operator=(const BenchCluster&) = delete;
    ~BenchCluster() {
        for (auto it = children.rbegin(); it != children.rend(); ++it) (*it)->terminate(grace);
    }

    integration::ChildProcess& start(const std::string& name, std::vector<std::string> argv) {
        children.push_back(std::make_unique<integration::ChildProcess>(name, std::move(argv), dir));
        return *children.back();
    }

    // Starts `glassbox broker` on loopback ports (heartbeat 500 ms) and learns its endpoint;
    // what went wrong when it writes no ready file within 10 s.
    std::optional<std::string> start_broker() {
        const auto ready = dir / "broker.ready.json";
        std::filesystem::remove(ready);
        auto& broker =
            start("broker", {GLASSBOX_BINARY, "broker", "--bind", "tcp://127.0.0.1:*", "--pub",
                             "tcp://127.0.0.1:*", "--home", (dir / "broker-home").string(),
                             "--heartbeat-ms", "500", "--ready-file", ready.string()});
        auto info =
            integration::wait_for_ready_file(ready, broker, std::chrono::milliseconds{10'000});
        if (!info) return "broker did not start: " + broker.stderr_text();
        endpoint = info->value("endpoint", "");
        return std::nullopt;
    }
};

// Polls mmi.service until `service` has a worker (true) or 15 s pass (false).
inline bool wait_for_service(bus::BusClient& client, const std::string& service) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds{15'000};
    while (std::chrono::steady_clock::now() < until) {
        auto r =
            client.call("mmi.service", nlohmann::json(service), std::chrono::milliseconds{2000});
        if (r && r->back().body == nlohmann::json(200)) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    return false;
}

}  // namespace glassbox::bench
