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
#include "cli/settings.hpp"
#include "cli/sparql_settings.hpp"
#include "cli/stop_signals.hpp"
#include "gateway/gateway.hpp"
#include "gateway/listen_address.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;

struct GatewayOptions {
    ClientOptions client;
    std::string ready_file;
    gateway::GatewayConfig config;  // the MCP origins and SSE preference; the rest from [gateway]
};

// The gateway's part of the configuration (docs/configuration.md, [gateway]).
void apply_gateway_settings(gateway::GatewayConfig& config, const config::Resolved& s) {
    using std::chrono::milliseconds;
    const auto size = [&s](const char* key) { return static_cast<std::size_t>(s.integer(key)); };
    config.tokens_file = s.text("gateway.tokens");
    config.threads = size("gateway.threads");
    config.max_streams = size("gateway.max_streams");
    config.max_body_bytes = size("gateway.max_body_bytes");
    config.max_upload_bytes = size("gateway.max_upload_bytes");
    config.rate_limit = s.number("gateway.rate_limit");
    config.rate_burst = s.number("gateway.rate_burst");
    config.call_timeout = milliseconds{s.integer("gateway.call_timeout_ms")};
    config.query_timeout = milliseconds{s.integer("gateway.query_timeout_ms")};
    config.read_timeout = milliseconds{s.integer("gateway.read_timeout_ms")};
    config.write_timeout = milliseconds{s.integer("gateway.write_timeout_ms")};
    config.header_timeout = milliseconds{s.integer("gateway.header_timeout_ms")};
    config.body_timeout = milliseconds{s.integer("gateway.body_timeout_ms")};
    config.body_min_rate = size("gateway.body_min_rate");
    config.max_connections = size("gateway.max_connections");
    config.max_connections_per_client = size("gateway.max_connections_per_client");
    config.max_queued_requests = size("gateway.max_queued_requests");
    config.max_buffered_bytes = size("gateway.max_buffered_bytes");
    config.max_head_bytes = size("gateway.max_head_bytes");
    config.max_header_fields = size("gateway.max_header_fields");
    config.mcp.session_idle = milliseconds{s.integer("gateway.mcp_session_idle_ms")};
    config.mcp.max_sessions = size("gateway.mcp_max_sessions");
    config.mcp.max_sessions_per_client = size("gateway.mcp_max_sessions_per_client");
    // POST /api/v1/sparql's engine (docs/sparql.md); none when sparql.endpoint is empty.
    // It only reads: the Graph Store URL and its credentials stay with the mirrors.
    if (auto sparql = sparql_config_from(s)) {
        sparql->graph_store_url.clear();
        sparql->user.clear();
        sparql->password.clear();
        config.sparql = std::move(*sparql);
    }
}

void run_gateway(const GatewayOptions& options) {
    auto log = base::component_logger("gateway");
    gateway::GatewayConfig config = options.config;
    apply_gateway_settings(config, settings());
    const std::string& listen = settings().text("gateway.listen");
    auto address = gateway::parse_listen_address(listen);
    if (!address) exit_with_error(address.error());
    if (!address->loopback && config.tokens_file.empty())
        exit_with_error(
            make_error(ErrorType::kInvalidRequest,
                       "--listen " + listen +
                           ": only a loopback address may be served without --tokens FILE"));
    config.host = address->host;
    config.port = address->port;
    config.broker = options.client.broker_endpoint();
    config.curve = options.client.curve_keys(config.broker);
    config.private_paths.push_back(options.client.home_path());  // never named to a client

    // Signals are blocked before the server's threads start, so only the wait below sees them.
    const sigset_t stop_signals = block_stop_signals();
    gateway::Gateway server(config);
    auto port = server.bind();
    if (!port) exit_with_error(port.error());
    const std::string url = "http://" + address->url_host + ":" + std::to_string(*port);
    if (!options.ready_file.empty()) {
        const nlohmann::json ready{
            {"url", url}, {"port", *port}, {"pid", static_cast<long>(::getpid())}};
        if (auto written = base::write_owner_only_file(options.ready_file, ready.dump() + "\n");
            !written)
            exit_with_error(written.error());
    }
    log->info("event=serving url={} broker={} pid={}", url, config.broker,
              static_cast<long>(::getpid()));
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
    auto [command, options] = add_command<GatewayOptions>(
        app, "gateway", "Serve the HTTP API (REST + SSE) and the trace viewer over the bus",
        run_gateway);
    add_setting_option(*command, "gateway.listen", "--listen");
    command->add_option("--ready-file", options->ready_file,
                        "Write {url, port, pid} here once listening (for scripts and tests)");
    // The [gateway] settings (docs/configuration.md).
    for (const auto& [key, flag] : std::initializer_list<std::pair<const char*, const char*>>{
             {"gateway.threads", "--threads"},
             {"gateway.max_streams", "--max-streams"},
             {"gateway.max_body_bytes", "--max-body-bytes"},
             {"gateway.max_upload_bytes", "--max-upload-bytes"},
             {"gateway.tokens", "--tokens"},
             {"gateway.rate_limit", "--rate-limit"},
             {"gateway.rate_burst", "--rate-burst"},
             {"gateway.read_timeout_ms", "--read-timeout-ms"},
             {"gateway.write_timeout_ms", "--write-timeout-ms"},
             {"gateway.header_timeout_ms", "--header-timeout-ms"},
             {"gateway.body_timeout_ms", "--body-timeout-ms"},
             {"gateway.body_min_rate", "--body-min-rate"},
             {"gateway.max_connections", "--max-connections"},
             {"gateway.max_connections_per_client", "--max-connections-per-client"},
             {"gateway.query_timeout_ms", "--query-timeout-ms"},
             {"gateway.call_timeout_ms", "--timeout-ms"},
             {"gateway.mcp_session_idle_ms", "--mcp-session-idle-ms"},
             {"gateway.mcp_max_sessions", "--mcp-max-sessions"},
             {"gateway.mcp_max_sessions_per_client", "--mcp-max-sessions-per-client"},
         }) {
        add_setting_option(*command, key, flag);
    }
    command->add_option("--mcp-allow-origin", options->config.mcp.allowed_origins,
                        "A browser Origin allowed at /mcp besides loopback ones (repeatable)");
    command->add_flag("--mcp-sse", options->config.mcp.prefer_sse,
                      "Answer MCP POSTs as event streams when the client accepts both");
    add_client_options(*command, options->client, 30'000,
                       ClientOptionSet{.pub = false, .timeout = false});
}

}  // namespace glassbox::cli
