// `glassbox up`: broker and workers, supervised — the whole pipeline on one machine, or one
// host's part of it (--role broker|workers, --services; docs/deployment.md).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "base/owner_only.hpp"
#include "cli/bus_security.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/home.hpp"
#include "cli/process_supervisor.hpp"
#include "cli/program.hpp"
#include "cli/settings.hpp"
#include "cli/up_plan.hpp"
#include "cli/virtuoso_up.hpp"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The rest comes from the settings (broker.endpoint, broker.pub_endpoint, broker.heartbeat_ms,
// up.threads, up.engine_threads, up.start_timeout_ms, up.gateway, gateway.listen, security.*).
struct UpOptions {
    std::string home;
    std::string role = "all";
    std::string services;  // --services as given; read only when the option was given
    bool services_given = false;
    std::string ready_file;
};

// The command line of a child: `self`, the log settings given to `up` as flags (the child reads
// the same file and environment by itself), the subcommand and its arguments.
std::vector<std::string> child_argv(const std::string& self, std::vector<std::string> command) {
    std::vector<std::string> argv{self};
    for (const auto& [key, flag] :
         {std::pair{"log.level", "--log-level"}, std::pair{"log.format", "--log-format"}}) {
        if (settings().origin(key).source == config::Source::kFlag) {
            argv.emplace_back(flag);
            argv.push_back(settings().text(key));
        }
    }
    argv.insert(argv.end(), std::make_move_iterator(command.begin()),
                std::make_move_iterator(command.end()));
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
    return BrokerEndpoints{json["endpoint"].get<std::string>(),
                           json["pub_endpoint"].get<std::string>()};
}

[[noreturn]] void fail_up(const std::string& message, int exit_code = 1) {
    std::cerr << "glassbox up: " << message << '\n';
    throw CLI::RuntimeError(exit_code);
}

// A refused home or file is the user's input (exit 2); a failing disk is not (exit 1).
[[noreturn]] void fail_up(const base::Error& error) {
    fail_up(error.describe(), exit_code_for(error.type));
}

// Every child reads its keys from the home (--home), or runs plain with --insecure; the workers
// and the gateway take the pair and broker key `up` was given, if any.
// (A setting given to `up` by flag; in config.toml or the environment the children see it too.)
std::vector<std::string> with_security(std::vector<std::string> argv, bool broker = false) {
    const auto& s = settings();
    const auto given = [&s](const char* key) {
        return s.origin(key).source == config::Source::kFlag;
    };
    if (given("security.insecure") && s.boolean("security.insecure"))
        argv.emplace_back("--insecure");
    if (broker) return argv;
    if (given("security.curve_key"))
        argv.insert(argv.end(), {"--curve-key", s.text("security.curve_key")});
    if (given("security.curve_server_key")) {
        argv.insert(argv.end(), {"--curve-server-key", s.text("security.curve_server_key")});
    }
    return argv;
}

// Secure by default (docs/security.md): a host that runs the broker makes the keys of its own
// processes in the owner-only home (kept when they exist); a workers host needs the keys it
// was given there — its own pair and the broker's public key — and says which are missing.
void ensure_keys(const UpPlan& plan, const fs::path& home) {
    const SecurityOptions security = security_settings();
    if (security.insecure) return;
    if (plan.broker) {
        if (auto keys = ensure_local_keys(home); !keys) fail_up(keys.error());
        return;
    }
    std::vector<std::string> missing;
    const auto need = [&](const fs::path& path) {
        std::error_code ec;
        if (!fs::exists(path, ec)) missing.push_back(path.string());
    };
    if (security.server_key.empty())
        need(bus::public_certificate_path(keys_folder(home), kBrokerKey));
    for (const auto& worker : plan.workers) {
        need(security.key.empty()
                 ? bus::secret_certificate_path(
                       keys_folder(home),
                       worker.service == "trace-collector" ? kCollectorKey : kWorkerKey)
                 : fs::path{security.key});
    }
    if (missing.empty()) return;
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    std::string list;
    for (const auto& path : missing) list += (list.empty() ? "" : ", ") + path;
    fail_up("--role workers needs its keys: " + list +
                " (this host's pair from `glassbox keys new NAME --role 'worker:*' --role client`, "
                "given with --curve-key and allowed on the broker's host, and the broker's "
                "keys/broker.key "
                "in " +
                keys_folder(home).string() +
                " or given with --curve-server-key: docs/deployment.md), "
                "or --insecure",
            2);
}

// Starts a child; a child that cannot start stops the others and fails `up`.
void start_or_fail(ProcessSupervisor& supervisor, ChildSpec spec) {
    if (auto started = supervisor.start(std::move(spec)); !started) {
        supervisor.stop_all();
        fail_up(started.error());
    }
}

// The broker's endpoints once it is bound; nullopt when a stop signal came first (the caller
// returns). Fails `up` when it does not bind in time.
std::optional<BrokerEndpoints> start_broker(ProcessSupervisor& supervisor, const fs::path& home,
                                            const std::string& self, const sigset_t& stop_signals) {
    std::error_code ec;
    const fs::path broker_ready = home / "run" / "broker.ready";
    fs::remove(broker_ready, ec);
    const auto& s = settings();
    const std::string heartbeat = std::to_string(s.integer("broker.heartbeat_ms"));
    const int start_timeout_ms = static_cast<int>(s.integer("up.start_timeout_ms"));
    auto broker_argv = [&](const std::string& bind, const std::string& pub) {
        return child_argv(self, with_security({"broker", "--bind", bind, "--pub", pub, "--home",
                                               home.string(), "--heartbeat-ms", heartbeat,
                                               "--ready-file", broker_ready.string()},
                                              true));
    };
    start_or_fail(
        supervisor,
        ChildSpec{"broker", broker_argv(s.text("broker.endpoint"), s.text("broker.pub_endpoint")),
                  home / "logs" / "broker.log"});

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
            return std::nullopt;
        }
    }
    // A restarted broker must come back on the same endpoints the workers and clients know.
    supervisor.set_argv("broker", broker_argv(endpoints->endpoint, endpoints->pub_endpoint));
    return endpoints;
}

// The engines spend most of a question waiting on the services they call, so they get more
// slots than the services (whose work is the CPU): up.engine_threads against up.threads.
const char* threads_setting(const std::string& service) {
    for (const char* engine : {"graph-rag", "document-rag", "agent", "query"}) {
        if (service == engine) return "up.engine_threads";
    }
    return "up.threads";
}

// The command line of one worker process of the plan, connected to `endpoint`.
std::vector<std::string> worker_argv(const UpWorkerProcess& worker, const fs::path& home,
                                     const std::string& self, const std::string& endpoint) {
    // clang-format off
    return child_argv(self, with_security({"worker", worker.service, "--broker", endpoint,
                                           "--threads", std::to_string(settings().integer(threads_setting(worker.service))),
                                           "--heartbeat-ms", std::to_string(settings().integer("broker.heartbeat_ms")),
                                           "--home", home.string()}));
    // clang-format on
}

// The home, made owner-only with its logs and run folders, and the keys the plan needs.
fs::path prepare_home(const UpOptions& options, const UpPlan& plan) {
    fs::path home = cli::resolve_home(options.home);
    // Created owner-only; an existing home is used as it is, or refused when others can write
    // it (`--home /tmp`), never chmodded.
    if (auto made = base::ensure_home_folder(home); !made) fail_up(made.error());
    for (const auto* sub : {"logs", "run"}) {
        if (auto made = base::ensure_owner_only_folder(home / sub); !made) fail_up(made.error());
    }
    ensure_keys(plan, home);
    return home;
}

// The broker this host's workers and clients use: started here, or (role workers) one on
// another host, which need not be up yet: the workers keep reconnecting until it answers.
// Written to the home's runtime state; nullopt when a stop signal came first.
std::optional<BrokerEndpoints> broker_of(const UpPlan& plan, ProcessSupervisor& supervisor,
                                         const fs::path& home, const std::string& self,
                                         const sigset_t& stop_signals,
                                         const std::optional<http::SparqlConfig>& sparql) {
    StateSettings more;
    if (sparql) {
        more = {{"sparql.endpoint", sparql->query_url},
                {"sparql.graph_store", sparql->graph_store_url},
                {"sparql.user", sparql->user},
                {"sparql.password", sparql->password}};
    }
    BrokerEndpoints endpoints;
    if (plan.broker) {
        auto started = start_broker(supervisor, home, self, stop_signals);
        if (!started) return std::nullopt;
        endpoints = std::move(*started);
        // Runtime state, not configuration: clients on this machine find the broker through it
        // unless <home>/config.toml, the environment or a flag names another
        // (docs/configuration.md).
        cli::write_endpoints_state(
            home, cli::BoundEndpoints{endpoints.endpoint, endpoints.pub_endpoint}, more);
    } else {
        endpoints.endpoint = settings().text("broker.endpoint");
        cli::write_endpoints_state(
            home, cli::BoundEndpoints{endpoints.endpoint, settings().text("broker.pub_endpoint")},
            more);
    }
    return endpoints;
}

// The HTTP gateway (docs/http.md), after the workers it serves; its ready file tells
// `glassbox status` and this command where it listens. The URL in `url` once it is written
// (within kGatewayStartWait); false when a stop signal came first.
bool start_gateway(ProcessSupervisor& supervisor, const fs::path& home, const std::string& self,
                   const std::string& endpoint, const sigset_t& stop_signals,
                   std::optional<std::string>& url) {
    std::error_code ec;
    const fs::path gateway_ready = home / "run" / "gateway.ready";
    fs::remove(gateway_ready, ec);
    start_or_fail(
        supervisor,
        ChildSpec{"gateway",
                  child_argv(
                      self, with_security({"gateway", "--listen", settings().text("gateway.listen"),
                                           "--broker", endpoint, "--home", home.string(),
                                           "--ready-file", gateway_ready.string()})),
                  home / "logs" / "gateway.log"});
    const auto wait_until = Clock::now() + kGatewayStartWait;
    while (!(url = read_gateway_url(gateway_ready)) && Clock::now() < wait_until) {
        if (supervisor.supervise_once(std::chrono::milliseconds{50}, stop_signals)) {
            supervisor.stop_all();
            return false;
        }
    }
    return true;
}

// --ready-file: what is up, where, for scripts and tests.
void write_up_ready_file(const UpOptions& options, const UpPlan& plan,
                         const BrokerEndpoints& endpoints, const fs::path& home,
                         const std::optional<std::string>& gateway_url,
                         const std::optional<http::SparqlConfig>& sparql,
                         ProcessSupervisor& supervisor) {
    nlohmann::json services = nlohmann::json::array();
    for (const auto& worker : plan.workers) services.push_back(worker.name);
    nlohmann::json ready = {{"role", std::string(to_string(plan.role))},
                            {"endpoint", endpoints.endpoint},
                            {"services", std::move(services)},
                            {"home", home.string()},
                            {"pid", static_cast<long>(getpid())}};
    if (plan.broker) ready["pub_endpoint"] = endpoints.pub_endpoint;
    if (gateway_url) ready["gateway"] = *gateway_url;
    if (sparql) ready["sparql"] = sparql->query_url;
    if (!options.ready_file.empty()) {
        if (auto written = base::write_owner_only_file(options.ready_file, ready.dump() + "\n");
            !written) {
            supervisor.stop_all();
            fail_up(written.error());
        }
    }
}

// What is up, its security and where the viewer is, for the user.
void print_up(const UpPlan& plan, const BrokerEndpoints& endpoints, const fs::path& home,
              const std::optional<std::string>& gateway_url,
              const std::optional<http::SparqlConfig>& sparql) {
    if (plan.broker) {
        std::cout << "glassbox is up: broker " << endpoints.endpoint << ", explain topic "
                  << endpoints.pub_endpoint;
    } else {
        std::cout << "glassbox is up (workers): broker " << endpoints.endpoint
                  << " (the workers register when it answers)";
    }
    std::cout << ", " << describe_workers(plan) << ", home " << home.string() << ", logs in "
              << (home / "logs").string() << " (Ctrl-C stops)" << std::endl;
    if (security_settings().insecure) {
        std::cout << "INSECURE: plain TCP without keys (--insecure): any process that reaches "
                  << endpoints.endpoint << " is trusted" << std::endl;
    } else if (plan.broker) {
        std::cout << "security: CURVE; only the keys in " << allowed_folder(home).string()
                  << " may connect (glassbox keys, docs/security.md)" << std::endl;
    } else {
        std::cout << "security: CURVE, with the keys in " << keys_folder(home).string()
                  << std::endl;
    }
    if (sparql) {
        std::cout << "SPARQL: " << sparql->query_url << " (Virtuoso in "
                  << (home / "virtuoso").string() << ", docs/sparql.md)" << std::endl;
    }
    if (gateway_url) {
        std::cout << "viewer and HTTP API: " << *gateway_url << "/" << std::endl;
    } else if (plan.gateway) {
        std::cout << "the gateway did not start on " << settings().text("gateway.listen")
                  << "; see " << (home / "logs" / "gateway.log").string() << std::endl;
    }
}

void run_up(const UpOptions& options, const UpPlan& plan) {
    const sigset_t stop_signals = block_supervisor_signals();
    const fs::path home = prepare_home(options, plan);
    const auto own = own_executable();
    if (!own) fail_up(own.error());
    const std::string self = own->string();
    ProcessSupervisor supervisor{SupervisorConfig{}};

    // The SPARQL engine first: the collector and the store find it in the runtime state.
    std::optional<http::SparqlConfig> sparql;
    if (plan.broker && settings().text("sparql.engine") == "virtuoso") {
        auto started = start_virtuoso(supervisor, home, stop_signals);
        if (!started) {
            supervisor.stop_all();
            fail_up(started.error());
        }
        if (!*started) {
            supervisor.stop_all();
            return;
        }
        sparql = std::move(**started);
    }
    const auto endpoints = broker_of(plan, supervisor, home, self, stop_signals, sparql);
    if (!endpoints) return;
    for (const auto& worker : plan.workers) {
        start_or_fail(supervisor,
                      ChildSpec{worker.name, worker_argv(worker, home, self, endpoints->endpoint),
                                home / "logs" / (worker.name + ".log")});
    }
    std::optional<std::string> gateway_url;
    if (plan.gateway &&
        !start_gateway(supervisor, home, self, endpoints->endpoint, stop_signals, gateway_url))
        return;
    write_up_ready_file(options, plan, *endpoints, home, gateway_url, sparql, supervisor);
    print_up(plan, *endpoints, home, gateway_url, sparql);

    while (!supervisor.supervise_once(std::chrono::milliseconds{500}, stop_signals)) {
    }
    base::component_logger("up")->info("event=stopping");
    supervisor.stop_all();
    std::cout << "glassbox stopped" << std::endl;
}

// The plan of this invocation; a role, a service list or an option that does not fit the role
// is the user's input (exit 2).
UpPlan plan_or_fail(const UpOptions& options, const CLI::App& cmd) {
    const auto role = up_role_from_string(options.role);
    if (!role) fail_up("--role " + options.role + ": must be broker, workers or all", 2);
    const auto given = [&cmd](const char* name) { return cmd.count(name) > 0; };
    if (*role == UpRole::kWorkers) {
        for (const char* broker_only :
             {"--bind", "--pub", "--gateway-listen", "--start-timeout-ms"}) {
            if (given(broker_only)) {
                fail_up(std::string(broker_only) +
                            " sets up this host's broker; --role workers runs none (name the "
                            "broker with --broker)",
                        2);
            }
        }
    } else if (given("--broker")) {
        fail_up("--broker names another host's broker for --role workers; --role " + options.role +
                    " runs its own (where it listens: --bind)",
                2);
    }
    auto plan = plan_up(
        *role, options.services_given ? std::optional<std::string>(options.services) : std::nullopt,
        !settings().boolean("up.gateway"));
    if (!plan) fail_up(plan.error());
    return std::move(plan).value();
}

}  // namespace

void add_up_command(CLI::App& app) {
    auto options = std::make_shared<UpOptions>();
    auto* cmd = app.add_subcommand(
        "up",
        "Start the broker and the workers, supervised: all on this machine, or one host's role");
    cmd->add_option("--home", options->home,
                    "Home folder (default $GLASSBOX_HOME, else ~/.glassbox)");
    cmd->add_option(
           "--role", options->role,
           "broker (the broker, the trace collector, the gateway), workers (worker processes "
           "connected to --broker) or all")
        ->capture_default_str()
        ->check(CLI::IsMember({"all", "broker", "workers"}));
    cmd->add_option(
        "--services", options->services,
        "Worker services this host runs, comma-separated, NAME=N for N processes (e.g. "
        "graph-rag=3,store); none: no workers. Default: every one (all), trace-collector "
        "(broker), all but trace-collector and store (workers)");
    // --role workers: the broker to join (broker.endpoint, like --bind on the broker's host).
    add_setting_option(*cmd, "broker.endpoint", "--broker");
    add_setting_option(*cmd, "broker.endpoint", "--bind");
    add_setting_option(*cmd, "broker.pub_endpoint", "--pub");
    add_setting_option(*cmd, "broker.heartbeat_ms", "--heartbeat-ms");
    add_setting_option(*cmd, "up.threads", "--threads");
    add_setting_option(*cmd, "up.engine_threads", "--engine-threads");
    cmd->add_option("--ready-file", options->ready_file,
                    "Write {role, endpoint, pub_endpoint, services, home, pid, gateway} here once "
                    "everything is started");
    add_setting_option(*cmd, "gateway.listen", "--gateway-listen");
    add_setting_flag(*cmd, "up.gateway", "--no-gateway", false, "Do not start the HTTP gateway");
    add_setting_option(*cmd, "up.start_timeout_ms", "--start-timeout-ms");
    // --insecure (plain TCP without keys), --curve-key and --curve-server-key (a workers host's
    // pair and the broker's public key, passed to its workers and gateway).
    add_client_security_options(*cmd);
    cmd->callback([options, cmd] {
        options->services_given = cmd->count("--services") > 0;
        run_up(*options, plan_or_fail(*options, *cmd));
    });
}

}  // namespace glassbox::cli
