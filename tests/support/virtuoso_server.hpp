// A Virtuoso Open Source server of a test's own: the same instance `glassbox up` runs
// (http/virtuoso_instance.hpp) in a scratch folder on two free loopback ports, secured (a random
// dba password), shut down with the fixture. Tests that need one skip, with skip_reason(), only
// when /usr/bin/virtuoso-t is not installed (ops/install-deps installs virtuoso-opensource).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "http/sparql_client.hpp"
#include "http/virtuoso_instance.hpp"
#include "tests/support/process.hpp"

namespace glassbox::integration {

class VirtuosoServer {
public:
    // Why no server can be started here (its binaries are missing), or nullopt.
    static std::optional<std::string> skip_reason();

    // Starts a server in `dir` (created; its database, ini and log there) and waits until it
    // answers and is secured; nullopt when skip_reason() says why not. Throws std::runtime_error
    // with the server's log when it does not come up.
    static std::optional<VirtuosoServer> start(const std::filesystem::path& dir);

    VirtuosoServer(VirtuosoServer&&) noexcept = default;
    VirtuosoServer& operator=(VirtuosoServer&&) noexcept = default;
    VirtuosoServer(const VirtuosoServer&) = delete;
    VirtuosoServer& operator=(const VirtuosoServer&) = delete;
    ~VirtuosoServer();  // stop()

    // The query URL, Graph Store URL, user dba and its password, a 30 s query timeout.
    const http::SparqlConfig& config() const noexcept { return config_; }
    std::uint16_t http_port() const noexcept { return instance_.http_port; }
    const http::virtuoso::Instance& instance() const noexcept { return instance_; }

    bool running();
    // SIGTERM (Virtuoso's clean shutdown), SIGKILL after 20 s; waits until it has exited.
    void stop();
    // The server's output so far (for a failing test's message).
    std::string log() const;

private:
    VirtuosoServer() = default;

    http::virtuoso::Instance instance_;
    http::SparqlConfig config_;
    std::unique_ptr<ChildProcess> server_;
};

}  // namespace glassbox::integration
