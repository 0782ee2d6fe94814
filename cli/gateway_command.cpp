// `glassbox gateway`: the HTTP gateway (REST + SSE, docs/http.md) as a process of its own,
// serving until SIGINT/SIGTERM.
#include <unistd.h>

#include <csignal>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "base/owner_only.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/worker_support.hpp"
#include "gateway/gateway.hpp"
#include "gateway/listen_address.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;

struct GatewayOptions {
    ClientOptions client;
    std::string listen = "127.0.0.1:8080";
    std::string ready_file;
    gateway::GatewayConfig config;
    int query_timeout_ms = 120'000;
    int read_timeout_ms = 10'000;
    int write_timeout_ms = 10'000;
    long long mcp_session_idle_ms = 1'800'000;
};

void run_gateway(GatewayOptions& options) {
    auto log = base::component_logger("gateway");
    auto address = gateway::parse_listen_address(options.listen);
    if (!address) exit_with_error(address.error());
    if (!address->loopback && options.config.tokens_file.empty())
        exit_with_error(make_error(ErrorType::kInvalidRequest,
                                   "--listen " + options.listen +
                                       ": only a loopback address may be served without --tokens FILE"));
    gateway::GatewayConfig config = options.config;
    config.host = address->host;
    config.port = address->port;
    config.broker = options.client.broker_endpoint();
    config.curve = options.client.curve_keys(config.broker);
    config.call_timeout = options.client.timeout();
    config.query_timeout = std::chrono::milliseconds{options.query_timeout_ms};
    config.read_timeout = std::chrono::milliseconds{options.read_timeout_ms};
    config.write_timeout = std::chrono::milliseconds{options.write_timeout_ms};
    config.mcp.session_idle = std::chrono::milliseconds{options.mcp_session_idle_ms};

    // Signals are blocked before the server's threads start, so only the wait below sees them.
    const sigset_t stop_signals = block_stop_signals();
    gateway::Gateway server(config);
    auto port = server.bind();
    if (!port) exit_with_error(port.error());
    const std::string url = "http://" + address->url_host + ":" + std::to_string(*port);
    if (!options.ready_file.empty()) {
        const nlohmann::json ready{{"url", url}, {"port", *port}, {"pid", static_cast<long>(::getpid())}};
        if (auto written = base::write_owner_only_file(options.ready_file, ready.dump() + "\n"); !written)
            exit_with_error(written.error());
    }
    log->info("event=serving url={} broker={} pid={}", url, config.broker, static_cast<long>(::getpid()));
    bool served = true;
    std::thread serving([&server, &served] { served = server.run(); });
    std::thread stopper([&server, &stop_signals] {
        wait_for_stop_signal(stop_signals);
        server.stop();
    });
    serving.join();
    if (!served) {
        ::kill(::getpid(), SIGTERM);  // wakes the stopper, which then finds the server stopped
        stopper.join();
        exit_with_error(make_error(ErrorType::kInternal, "the HTTP server stopped unexpectedly"));
    }
    stopper.join();
    log->info("event=exit reason=signal");
}

}  // namespace

void add_gateway_command(CLI::App& app) {
    auto options = std::make_shared<GatewayOptions>();
    auto* command = app.add_subcommand("gateway", "Serve the HTTP API (REST + SSE) and the trace viewer over the bus");
    command->add_option("--listen", options->listen, "HOST:PORT to serve (loopback only without --tokens)")
        ->capture_default_str();
    command->add_option("--ready-file", options->ready_file,
                        "Write {url, port, pid} here once listening (for scripts and tests)");
    command->add_option("--threads", options->config.threads, "HTTP worker threads")->capture_default_str();
    command->add_option("--max-streams", options->config.max_streams, "SSE streams open at once (one more: 503)")
        ->capture_default_str();
    command->add_option("--max-body-bytes", options->config.max_body_bytes, "Largest request body (more: 413)")
        ->capture_default_str();
    command->add_option("--max-upload-bytes", options->config.max_upload_bytes,
                        "Largest upload to /api/v1/load/* (more: 413)")
        ->capture_default_str();
    command->add_option("--tokens", options->config.tokens_file,
                        "Bearer tokens file (owner-only): lines `<token> <scope>[,<scope>] [name]`, scopes read, ask, "
                        "load; required for a non-loopback --listen");
    command->add_option("--rate-limit", options->config.rate_limit,
                        "Requests a second per client address, on average (0: no limit)")
        ->capture_default_str();
    command->add_option("--rate-burst", options->config.rate_burst, "Requests per client address at once")
        ->capture_default_str();
    command->add_option("--read-timeout-ms", options->read_timeout_ms,
                        "A client that sends nothing for this long is disconnected")
        ->capture_default_str()
        ->check(CLI::Range(10, 600'000));
    command->add_option("--write-timeout-ms", options->write_timeout_ms,
                        "A client that reads nothing for this long is disconnected")
        ->capture_default_str()
        ->check(CLI::Range(10, 600'000));
    command->add_option("--query-timeout-ms", options->query_timeout_ms, "Deadline of one question on the bus")
        ->capture_default_str();
    command->add_option("--mcp-session-idle-ms", options->mcp_session_idle_ms,
                        "An MCP session unused this long expires (its next request: 404)")
        ->check(CLI::Range(1LL, 7LL * 24 * 3600 * 1000))
        ->capture_default_str();
    command->add_option("--mcp-max-sessions", options->config.mcp.max_sessions,
                        "Live MCP sessions at most (one more initialize: 503)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
        ->capture_default_str();
    command->add_option("--mcp-allow-origin", options->config.mcp.allowed_origins,
                        "A browser Origin allowed at /mcp besides loopback ones (repeatable)");
    command->add_flag("--mcp-sse", options->config.mcp.prefer_sse,
                      "Answer MCP POSTs as event streams when the client accepts both");
    add_client_options(*command, options->client, 30'000);
    command->callback([options] { run_gateway(*options); });
}

}  // namespace glassbox::cli
