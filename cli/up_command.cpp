// `glassbox up`: the whole pipeline on one machine — broker and workers, supervised.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/process_supervisor.hpp"
#include "cli/home.hpp"
#include "base/log.hpp"
#include "base/owner_only.hpp"
#include "cli/bus_security.hpp"
#include "cli/client_options.hpp"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct UpOptions {
    std::string home;
    std::string bind = "tcp://127.0.0.1:5555";
    std::string pub = "tcp://127.0.0.1:5556";
    int heartbeat_ms = 2500;
    int threads = 2;
    std::string ready_file;
    int start_timeout_ms = 15'000;
    std::string gateway_listen = "127.0.0.1:8080";
    bool no_gateway = false;
    bool insecure = false;  // plain TCP, no keys (said at start-up and by `glassbox status`)
};

// How long `up` waits for the gateway's ready file before it reports itself up without the
// viewer's URL (a taken port: the gateway fails, and is restarted with backoff meanwhile).
constexpr std::chrono::milliseconds kGatewayStartWait{3'000};

// The URL in the gateway's ready file, once it is written.
std::optional<std::string> read_gateway_url(const fs::path& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    const auto json = nlohmann::json::parse(text.str(), nullptr, false);
    if (!json.is_object() || !json.contains("url") || !json["url"].is_string()) return std::nullopt;
    return json["url"].get<std::string>();
}

// The workers `up` runs, in start order: the services others call come before their callers
// (a caller started first would only queue its first requests until they register).
const std::vector<std::string> kUpWorkers = {"echo",  "trace-collector", "embeddings", "store",
                                           "llm",   "graph-rag",       "document-rag", "agent",
                                           "query"};

struct BrokerEndpoints {
    std::string endpoint;
    std::string pub_endpoint;
};

std::optional<BrokerEndpoints> read_ready_file(const fs::path& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    const auto json = nlohmann::json::parse(text.str(), nullptr, false);
    if (!json.is_object() || !json.contains("endpoint") || !json["endpoint"].is_string() ||
        !json.contains("pub_endpoint") || !json["pub_endpoint"].is_string()) {
        return std::nullopt;
    }
    return BrokerEndpoints{json["endpoint"].get<std::string>(), json["pub_endpoint"].get<std::string>()};
}

[[noreturn]] void fail_up(const std::string& message, int exit_code = 1) {
    std::cerr << "glassbox up: " << message << '\n';
    throw CLI::RuntimeError(exit_code);
}

// A refused home or file is the user's input (exit 2); a failing disk is not (exit 1).
[[noreturn]] void fail_up(const base::Error& error) {
    fail_up(error.describe(), exit_code_for(error.type));
}

void run_up(const UpOptions& options) {
    const sigset_t stop_signals = block_supervisor_signals();
    const fs::path home = cli::resolve_home(options.home);
    // Created owner-only; an existing home is used as it is, or refused when others can write
    // it (`--home /tmp`), never chmodded.
    if (auto made = base::ensure_home_folder(home); !made) fail_up(made.error());
    for (const auto* sub : {"logs", "run"}) {
        if (auto made = base::ensure_owner_only_folder(home / sub); !made) fail_up(made.error());
    }
    // Secure by default: the keys every process of this pipeline uses live in the owner-only
    // home, and the broker admits only them (docs/security.md).
    if (!options.insecure) {
        if (auto keys = ensure_local_keys(home); !keys) fail_up(keys.error());
    }
    // Every child reads its keys from the home (--home), or runs plain with --insecure.
    const auto with_security = [&](std::vector<std::string> argv) {
        if (options.insecure) argv.emplace_back("--insecure");
        return argv;
    };
    std::error_code ec;

    const std::string self = fs::read_symlink("/proc/self/exe").string();
    const fs::path broker_ready = home / "run" / "broker.ready";
    fs::remove(broker_ready, ec);

    ProcessSupervisor supervisor{SupervisorConfig{}};
    const std::string heartbeat = std::to_string(options.heartbeat_ms);
    auto broker_argv = [&](const std::string& bind, const std::string& pub) {
        return with_security({self, "broker", "--bind", bind, "--pub", pub, "--home", home.string(),
                              "--heartbeat-ms", heartbeat, "--ready-file", broker_ready.string()});
    };
    if (auto started = supervisor.start(ChildSpec{"broker", broker_argv(options.bind, options.pub),
                                                  home / "logs" / "broker.log"});
        !started) {
        supervisor.stop_all();
        fail_up(started.error());
    }

    // Wait for the broker to bind; it reports the real endpoints (ports chosen with `*`).
    std::optional<BrokerEndpoints> endpoints;
    const auto give_up = Clock::now() + std::chrono::milliseconds{options.start_timeout_ms};
    while (!(endpoints = read_ready_file(broker_ready))) {
        if (Clock::now() > give_up) {
            supervisor.stop_all();
            fail_up("the broker did not start within " + std::to_string(options.start_timeout_ms) +
                 " ms; see " + (home / "logs" / "broker.log").string());
        }
        if (supervisor.supervise_once(std::chrono::milliseconds{50}, stop_signals)) {
            supervisor.stop_all();
            return;
        }
    }
    // A restarted broker must come back on the same endpoints the workers and clients know.
    supervisor.set_argv("broker", broker_argv(endpoints->endpoint, endpoints->pub_endpoint));
    cli::write_home_config(home, cli::HomeConfig{endpoints->endpoint, endpoints->pub_endpoint});

    for (const auto& worker : kUpWorkers) {
        auto started = supervisor.start(
            ChildSpec{worker,
                      with_security({self, "worker", worker, "--broker", endpoints->endpoint, "--threads",
                                     std::to_string(options.threads), "--heartbeat-ms", heartbeat,
                                     "--home", home.string()}),
                      home / "logs" / (worker + ".log")});
        if (!started) {
            supervisor.stop_all();
            fail_up(started.error());
        }
    }

    // The HTTP gateway (docs/http.md), after the workers it serves; its ready file tells
    // `glassbox status` and this command where it listens.
    std::optional<std::string> gateway_url;
    if (!options.no_gateway) {
        const fs::path gateway_ready = home / "run" / "gateway.ready";
        fs::remove(gateway_ready, ec);
        auto started = supervisor.start(ChildSpec{"gateway",
                                                  with_security({self, "gateway", "--listen", options.gateway_listen,
                                                                 "--broker", endpoints->endpoint, "--home", home.string(),
                                                                 "--ready-file", gateway_ready.string()}),
                                                  home / "logs" / "gateway.log"});
        if (!started) {
            supervisor.stop_all();
            fail_up(started.error());
        }
        const auto wait_until = Clock::now() + kGatewayStartWait;
        while (!(gateway_url = read_gateway_url(gateway_ready)) && Clock::now() < wait_until) {
            if (supervisor.supervise_once(std::chrono::milliseconds{50}, stop_signals)) {
                supervisor.stop_all();
                return;
            }
        }
    }

    nlohmann::json ready = {{"endpoint", endpoints->endpoint},
                            {"pub_endpoint", endpoints->pub_endpoint},
                            {"home", home.string()},
                            {"pid", static_cast<long>(getpid())}};
    if (gateway_url) ready["gateway"] = *gateway_url;
    if (!options.ready_file.empty()) {
        if (auto written = base::write_owner_only_file(options.ready_file, ready.dump() + "\n");
            !written) {
            supervisor.stop_all();
            fail_up(written.error());
        }
    }
    std::cout << "glassbox is up: broker " << endpoints->endpoint << ", explain topic "
              << endpoints->pub_endpoint << ", home " << home.string() << ", logs in "
              << (home / "logs").string() << " (Ctrl-C stops)" << std::endl;
    if (options.insecure) {
        std::cout << "INSECURE: plain TCP without keys (--insecure): any process that reaches "
                  << endpoints->endpoint << " is trusted" << std::endl;
    } else {
        std::cout << "security: CURVE; only the keys in " << allowed_folder(home).string()
                  << " may connect (glassbox keys, docs/security.md)" << std::endl;
    }
    if (gateway_url) {
        std::cout << "viewer and HTTP API: " << *gateway_url << "/" << std::endl;
    } else if (!options.no_gateway) {
        std::cout << "the gateway did not start on " << options.gateway_listen << "; see "
                  << (home / "logs" / "gateway.log").string() << std::endl;
    }

    while (!supervisor.supervise_once(std::chrono::milliseconds{500}, stop_signals)) {
    }
    base::component_logger("up")->info("event=stopping");
    supervisor.stop_all();
    std::cout << "glassbox stopped" << std::endl;
}

}  // namespace

void add_up_command(CLI::App& app) {
    auto options = std::make_shared<UpOptions>();
    auto* cmd = app.add_subcommand("up", "Start the broker and every worker on this machine, supervised");
    cmd->add_option("--home", options->home, "Home folder (default $GLASSBOX_HOME, else ~/.glassbox)");
    cmd->add_option("--bind", options->bind, "Request endpoint of the broker")->capture_default_str();
    cmd->add_option("--pub", options->pub, "Explain topic endpoint (XPUB)")->capture_default_str();
    cmd->add_option("--heartbeat-ms", options->heartbeat_ms, "Heartbeat interval for broker and workers")
        ->capture_default_str()
        ->check(CLI::Range(10, 600'000));
    cmd->add_option("--threads", options->threads, "Worker threads per worker process")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    cmd->add_option("--ready-file", options->ready_file,
                    "Write {endpoint, pub_endpoint, home, pid, gateway} here once everything is started");
    cmd->add_option("--gateway-listen", options->gateway_listen,
                    "HOST:PORT of the HTTP gateway and viewer (loopback; port 0: any free port)")
        ->capture_default_str();
    cmd->add_flag("--no-gateway", options->no_gateway, "Do not start the HTTP gateway");
    cmd->add_flag("--insecure", options->insecure,
                  "Plain TCP without CURVE keys: any process that reaches the broker is trusted");
    cmd->add_option("--start-timeout-ms", options->start_timeout_ms, "How long the broker may take to bind")
        ->capture_default_str();
    cmd->callback([options] { run_up(*options); });
}

}  // namespace glassbox::cli
