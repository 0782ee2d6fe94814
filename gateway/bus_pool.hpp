// Bus connections shared by the gateway's HTTP threads: one BusClient per request at a time.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "bus/bus_client.hpp"

namespace glassbox::gateway {

class BusPool;

// A BusClient lent to one HTTP request; it goes back to the pool when the lease ends. A
// BusClient is not thread-safe, so a lease is used by one thread; handing it over through the
// pool's mutex is what lets another thread use the socket afterwards (libzmq allows a socket to
// move between threads with a full memory barrier in between).
class BusLease {
public:
    BusLease(BusPool& pool, std::unique_ptr<bus::BusClient> client)
        : pool_(&pool), client_(std::move(client)) {}
    BusLease(BusLease&&) noexcept = default;
    BusLease& operator=(BusLease&&) noexcept = default;
    ~BusLease();

    bus::BusClient& operator*() { return *client_; }
    bus::BusClient* operator->() { return client_.get(); }

private:
    BusPool* pool_;
    std::unique_ptr<bus::BusClient> client_;
};

class BusPool {
public:
    explicit BusPool(bus::BusClientConfig config);
    ~BusPool();
    BusPool(const BusPool&) = delete;
    BusPool& operator=(const BusPool&) = delete;

    // An idle client, or a new connection when none is idle.
    BusLease lease();

    // One request to `service`, waited for: its FINAL body (which must be JSON), or the typed
    // error of its ERROR (or of an {"error": {type, message}} FINAL body).
    base::Result<nlohmann::json> call(std::string_view service, const nlohmann::json& body,
                                      std::chrono::milliseconds deadline);

    const bus::BusClientConfig& config() const noexcept { return config_; }

    // Told of every call() (service, duration, failed): the gateway's metrics. Set before use.
    std::function<void(std::string_view, std::chrono::duration<double>, bool)> on_call;

private:
    friend class BusLease;
    void give_back(std::unique_ptr<bus::BusClient> client);

    // One context for every connection of the pool; declared first, so it ends after them.
    std::unique_ptr<zmq::context_t> context_;
    bus::BusClientConfig config_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<bus::BusClient>> idle_;
};

// A FINAL body's own typed error ({"error": {"type", "message"}}), if it carries one.
std::optional<base::Error> body_error(const nlohmann::json& body);

}  // namespace glassbox::gateway
