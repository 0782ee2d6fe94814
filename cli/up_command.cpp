// `glassbox up`: the whole pipeline on one machine — broker and workers, supervised.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
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
#include "cli/client_options.hpp"
#include "cli/settings.hpp"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The rest comes from the settings (broker.endpoint, broker.pub_endpoint, broker.heartbeat_ms,
// up.threads, up.start_timeout_ms, up.gateway, gateway.listen).
struct UpOptions {
    std::string home;
    std::string ready_file;
};

// The command line of a child: `self`, the log settings given to `up` as flags (the child reads
// the same file and environment by itself), the subcommand and its arguments.
std::vector<std::string> child_argv(const std::string& self, std::vector<std::string> command) {
    std::vector<std::string> argv{self};
    for (const auto& [key, flag] : {std::pair{"log.level", "--log-level"}, std::pair{"log.format", "--log-format"}}) {
        if (settings().origin(key).source == config::Source::kFlag) {
            argv.emplace_back(flag);
            argv.push_back(settings().text(key));
        }
    }
    argv.insert(argv.end(), std::make_move_iterator(command.begin()), std::make_move_iterator(command.end()));
    return argv;
}

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
    const auto& s = settings();
    const int start_timeout_ms = static_cast<int>(s.integer("up.start_timeout_ms"));
    const std::string threads = std::to_string(s.integer("up.threads"));
    const bool with_gateway = s.boolean("up.gateway");
    const std::string& gateway_listen = s.text("gateway.listen");
    const sigset_t stop_signals = block_supervisor_signals();
    const fs::path home = cli::resolve_home(options.home);
    // Created owner-only; an existing home is used as it is, or refused when others can write
    // it (`--home /tmp`), never chmodded.
    if (auto made = base::ensure_home_folder(home); !made) fail_up(made.error());
    for (const auto* sub : {"logs", "run"}) {
        if (auto made = base::ensure_owner_only_folder(home / sub); !made) fail_up(made.error());
    }
    std::error_code ec;

    const std::string self = fs::read_symlink("/proc/self/exe").string();
    const fs::path broker_ready = home / "run" / "broker.ready";
    fs::remove(broker_ready, ec);

    ProcessSupervisor supervisor{SupervisorConfig{}};
    const std::string heartbeat = std::to_string(s.integer("broker.heartbeat_ms"));
    auto broker_argv = [&](const std::string& bind, const std::string& pub) {
        return child_argv(self, {"broker", "--bind", bind, "--pub", pub, "--home", home.string(), "--heartbeat-ms",
                                 heartbeat, "--ready-file", broker_ready.string()});
    };
    if (auto started = supervisor.start(ChildSpec{"broker", broker_argv(s.text("broker.endpoint"),
                                                                        s.text("broker.pub_endpoint")),
                                                  home / "logs" / "broker.log"});
        !started) {
        supervisor.stop_all();
        fail_up(started.error());
    }

    // Wait for the broker to bind; it reports the real endpoints (ports chosen with `*`).
    std::optional<BrokerEndpoints> endpoints;
    const auto give_up = Clock::now() + std::chrono::milliseconds{start_timeout_ms};
    while (!(endpoints = read_ready_file(broker_ready))) {
        if (Clock::now() > give_up) {
            supervisor.stop_all();
            fail_up("the broker did not start within " + std::to_string(start_timeout_ms) +
                 " ms; see " + (home / "logs" / "broker.log").string());
        }
        if (supervisor.supervise_once(std::chrono::milliseconds{50}, stop_signals)) {
            supervisor.stop_all();
            return;
        }
    }
    // A restarted broker must come back on the same endpoints the workers and clients know.
    supervisor.set_argv("broker", broker_argv(endpoints->endpoint, endpoints->pub_endpoint));
    // Runtime state, not configuration: clients on this machine find the broker through it
    // unless <home>/config.toml, the environment or a flag names another (docs/configuration.md).
    cli::write_endpoints_state(home, cli::BoundEndpoints{endpoints->endpoint, endpoints->pub_endpoint});

    for (const auto& worker : kUpWorkers) {
        auto started = supervisor.start(
            ChildSpec{worker,
                      child_argv(self, {"worker", worker, "--broker", endpoints->endpoint, "--threads", threads,
                                        "--heartbeat-ms", heartbeat, "--home", home.string()}),
                      home / "logs" / (worker + ".log")});
        if (!started) {
            supervisor.stop_all();
            fail_up(started.error());
        }
    }

    // The HTTP gateway (docs/http.md), after the workers it serves; its ready file tells
    // `glassbox status` and this command where it listens.
    std::optional<std::string> gateway_url;
    if (with_gateway) {
        const fs::path gateway_ready = home / "run" / "gateway.ready";
        fs::remove(gateway_ready, ec);
        auto started = supervisor.start(
            ChildSpec{"gateway",
                      child_argv(self, {"gateway", "--listen", gateway_listen, "--broker", endpoints->endpoint,
                                        "--home", home.string(), "--ready-file", gateway_ready.string()}),
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
    if (gateway_url) {
        std::cout << "viewer and HTTP API: " << *gateway_url << "/" << std::endl;
    } else if (with_gateway) {
        std::cout << "the gateway did not start on " << gateway_listen << "; see "
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
    add_setting_option(*cmd, "broker.endpoint", "--bind");
    add_setting_option(*cmd, "broker.pub_endpoint", "--pub");
    add_setting_option(*cmd, "broker.heartbeat_ms", "--heartbeat-ms");
    add_setting_option(*cmd, "up.threads", "--threads");
    cmd->add_option("--ready-file", options->ready_file,
                    "Write {endpoint, pub_endpoint, home, pid, gateway} here once everything is started");
    add_setting_option(*cmd, "gateway.listen", "--gateway-listen");
    add_setting_flag(*cmd, "up.gateway", "--no-gateway", false, "Do not start the HTTP gateway");
    add_setting_option(*cmd, "up.start_timeout_ms", "--start-timeout-ms");
    cmd->callback([options] { run_up(*options); });
}

}  // namespace glassbox::cli
