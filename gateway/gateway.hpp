// The HTTP gateway (issue 19): REST + SSE over the bus, one more client process of the broker.
#pragma once

#include <memory>

#include "base/result.hpp"
#include "gateway/gateway_config.hpp"

namespace glassbox::gateway {

class Gateway {
public:
    explicit Gateway(GatewayConfig config);
    ~Gateway();
    Gateway(const Gateway&) = delete;
    Gateway& operator=(const Gateway&) = delete;

    // Binds the listen address and returns the port (any free one for port 0). InvalidRequest
    // when the address cannot be bound.
    base::Result<int> bind();
    // Serves until stop() (from any thread); false when the server failed.
    bool run();
    void stop();

    const GatewayConfig& config() const noexcept;

    struct State;  // the server, the bus pool, the counters (gateway.cpp)

private:
    std::unique_ptr<State> state_;
};

}  // namespace glassbox::gateway
