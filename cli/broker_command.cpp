// `glassbox broker`: parse the broker's options, bind, write the ready file, serve until SIGINT/SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "broker/broker.hpp"
#include "broker/broker_config.hpp"
#include "cli/commands.hpp"
#include "cli/home.hpp"
#include "base/log.hpp"
#include "base/owner_only.hpp"
#include "cli/bus_security.hpp"
#include "cli/client_options.hpp"

namespace glassbox::cli {
namespace {

// The running broker, for the signal handler: Broker::stop() is one lock-free atomic store.
std::atomic<broker::Broker*> g_running_broker{nullptr};

extern "C" void stop_on_signal(int /*signal*/) {
    if (broker::Broker* running = g_running_broker.load()) running->stop();
}

// Installs the SIGINT/SIGTERM handlers for its lifetime and restores the previous ones.
class StopSignals {
public:
    explicit StopSignals(broker::Broker& running) {
        g_running_broker.store(&running);
        struct sigaction action {};
        action.sa_handler = stop_on_signal;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, &previous_int_);
        sigaction(SIGTERM, &action, &previous_term_);
    }
    ~StopSignals() {
        sigaction(SIGINT, &previous_int_, nullptr);
        sigaction(SIGTERM, &previous_term_, nullptr);
        g_running_broker.store(nullptr);
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

private:
    struct sigaction previous_int_ {};
    struct sigaction previous_term_ {};
};

struct BrokerOptions {
    broker::BrokerConfig config;
    std::string home;
    std::string spool;
    std::string ready_file;
    long long heartbeat_ms = 0;
    long long default_deadline_ms = 0;
    long long delivery_interval_ms = 0;
    long long max_deadline_ms = 0;
    long long unknown_service_wait_ms = 0;
    long long restart_grace_ms = 0;
    std::string overflow;
    std::string spool_policy;
    SecurityOptions security;  // CURVE or plain (cli/bus_security.hpp)
};

[[noreturn]] void fail_broker(const std::string& message) {
    std::cerr << "glassbox broker: " << message << "\n";
    throw CLI::RuntimeError(1);
}

// Creates the home folder owner-only (0700) if it does not exist yet; an existing one is used
// as it is, or refused (exit 2) when other users can write it. Never chmodded.
void ensure_home(const std::filesystem::path& home) {
    if (auto made = base::ensure_home_folder(home); !made) {
        std::cerr << "glassbox broker: " << made.error().describe() << "\n";
        throw CLI::RuntimeError(exit_code_for(made.error().type));
    }
}

// Written once bound, owner-only (0600), through a temporary file and rename, so a reader never
// sees half of it.
void write_ready_file(const std::string& path, const broker::BoundEndpoints& bound) {
    const nlohmann::json ready{{"endpoint", bound.endpoint},
                               {"pub_endpoint", bound.pub_endpoint},
                               {"pid", static_cast<long>(::getpid())}};
    if (auto written = base::write_owner_only_file(path, ready.dump() + "\n"); !written)
        fail_broker("cannot write ready file: " + written.error().message);
}

void run_broker(BrokerOptions& options) {
    auto log = base::component_logger("broker");
    broker::BrokerConfig config = options.config;
    config.heartbeat = std::chrono::milliseconds{options.heartbeat_ms};
    config.default_deadline = std::chrono::milliseconds{options.default_deadline_ms};
    config.delivery_interval = std::chrono::milliseconds{options.delivery_interval_ms};
    config.max_deadline = std::chrono::milliseconds{options.max_deadline_ms};
    config.unknown_service_wait = std::chrono::milliseconds{options.unknown_service_wait_ms};
    config.restart_grace = std::chrono::milliseconds{options.restart_grace_ms};
    if (auto policy = broker::overflow_policy_from_string(options.overflow)) {
        config.overflow = *policy;
    }
    if (auto policy = broker::spool_policy_from_string(options.spool_policy)) {
        config.spool_policy = *policy;
    }
    const auto home = cli::resolve_home(options.home);
    auto keys = resolve_broker_keys(options.security, home);
    if (!keys) {
        std::cerr << "glassbox broker: " << keys.error().describe() << "\n";
        throw CLI::RuntimeError(exit_code_for(keys.error().type));
    }
    if (keys.value()) {
        config.curve_public_key = keys.value()->certificate.public_key;
        config.curve_secret_key = keys.value()->certificate.secret_key;
        config.allow_folder = keys.value()->allow_folder.string();
    }
    config.insecure = options.security.insecure;
    if (options.spool.empty()) {
        ensure_home(home);
        config.spool_path = (home / "spool").string();
    } else {
        config.spool_path = options.spool;
    }

    zmq::context_t context;
    broker::Broker running{context, config};
    auto bound = running.bind();
    if (!bound) {
        // A refused configuration (plain TCP on a reachable address) is the user's to fix: 2.
        std::cerr << "glassbox broker: " << bound.error().describe() << "\n";
        throw CLI::RuntimeError(exit_code_for(bound.error().type));
    }
    if (!options.ready_file.empty()) write_ready_file(options.ready_file, bound.value());
    log->info("event=serving endpoint={} pub_endpoint={} spool={} pid={}", bound.value().endpoint,
              bound.value().pub_endpoint, config.spool_path, static_cast<long>(::getpid()));
    {
        StopSignals signals{running};
        running.run();
    }
    log->info("event=exit reason=signal");
}

}  // namespace

void add_broker_command(CLI::App& app) {
    auto options = std::make_shared<BrokerOptions>();
    const broker::BrokerConfig defaults;
    options->heartbeat_ms = defaults.heartbeat.count();
    options->default_deadline_ms = defaults.default_deadline.count();
    options->delivery_interval_ms = defaults.delivery_interval.count();
    options->max_deadline_ms = defaults.max_deadline.count();
    options->unknown_service_wait_ms = defaults.unknown_service_wait.count();
    options->restart_grace_ms = defaults.restart_grace.count();
    options->overflow = std::string{broker::to_string(defaults.overflow)};
    options->spool_policy = std::string{broker::to_string(defaults.spool_policy)};

    CLI::App* command = app.add_subcommand("broker", "Run the message broker");
    broker::BrokerConfig& config = options->config;
    command->add_option("--bind", config.endpoint, "Request endpoint (clients, workers, collectors)")
        ->capture_default_str();
    command->add_option("--pub", config.pub_endpoint, "Explain topic endpoint (XPUB)")
        ->capture_default_str();
    command->add_option("--home", options->home,
                        "Home folder (default $GLASSBOX_HOME, else ~/.glassbox)");
    add_broker_security_options(*command, options->security);
    command->add_option("--spool", options->spool,
                        "Explain spool directory (default <home>/spool)");
    command->add_option("--heartbeat-ms", options->heartbeat_ms, "Heartbeat interval")
        ->capture_default_str()
        ->check(CLI::Range(10LL, 3'600'000LL));
    command->add_option("--liveness", config.liveness, "Silent intervals before a peer is dead")
        ->capture_default_str()
        ->check(CLI::Range(1, 100));
    command->add_option("--max-retries", config.max_retries,
                        "Re-dispatches of a request whose worker died before replying")
        ->capture_default_str()
        ->check(CLI::Range(0, 100));
    command->add_option("--max-queue", config.max_queue, "Bound of each service queue")
        ->capture_default_str();
    command->add_option("--overflow", options->overflow, "Full service queue: reject or drop-oldest")
        ->capture_default_str()
        ->check(CLI::IsMember({"reject", "drop-oldest"}));
    command->add_option("--max-message-bytes", config.max_message_bytes,
                        "Largest accepted message, all frames")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 31));
    command->add_option("--max-subscription-bytes", config.max_subscription_bytes,
                        "Largest explain topic subscription frame; a longer one closes its connection")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{256}, std::size_t{1} << 20));
    command->add_option("--max-subscriptions-per-subscriber", config.max_subscriptions_per_subscriber,
                        "Explain topic subscriptions one subscriber may hold; more close its connection")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
    command->add_option("--max-subscribed-bytes-per-subscriber",
                        config.max_subscribed_bytes_per_subscriber,
                        "Explain topic prefix bytes one subscriber may hold")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{256}, std::size_t{1} << 30));
    command->add_option("--max-subscriptions", config.max_subscriptions,
                        "Explain topic subscriptions of all subscribers together")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
    command->add_option("--max-subscribed-bytes", config.max_subscribed_bytes,
                        "Explain topic prefix bytes of all subscribers together")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{256}, std::size_t{1} << 30));
    command->add_option("--max-subscriber-inbound-bytes", config.max_subscriber_inbound_bytes,
                        "Bytes one explain topic subscriber may send (+1 KiB per second connected)")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{4096}, std::size_t{1} << 30));
    command->add_option("--spool-max-messages", config.spool_max_messages,
                        "Explain spool bound (messages)")
        ->capture_default_str();
    command->add_option("--spool-max-bytes", config.spool_max_bytes, "Explain spool bound (bytes)")
        ->capture_default_str();
    command->add_option("--spool-policy", options->spool_policy,
                        "Full spool: fail-request or drop-newest")
        ->capture_default_str()
        ->check(CLI::IsMember({"fail-request", "drop-newest"}));
    command->add_option("--delivery-interval-ms", options->delivery_interval_ms,
                        "Explain messages go to trace collectors in batches at most this often (0: at once)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1000));
    command->add_option("--default-deadline-ms", options->default_deadline_ms,
                        "Deadline of MDPC01 requests and of GBC01 requests with deadline 0")
        ->capture_default_str()
        ->check(CLI::Range(1LL, 86'400'000LL));
    command->add_option("--max-deadline-ms", options->max_deadline_ms,
                        "Longer GBC01 deadlines are clamped to this")
        ->capture_default_str()
        ->check(CLI::Range(1LL, 86'400'000LL));
    command->add_option("--unknown-service-wait-ms", options->unknown_service_wait_ms,
                        "How long a request for a never-registered service waits for a worker")
        ->capture_default_str()
        ->check(CLI::Range(0LL, 3'600'000LL));
    command->add_option("--restart-grace-ms", options->restart_grace_ms,
                        "After a start, how long a request for a service registered before the "
                        "restart waits for its workers")
        ->capture_default_str()
        ->check(CLI::Range(0LL, 3'600'000LL));
    command->add_option("--ready-file", options->ready_file,
                        "Once bound, write {\"endpoint\", \"pub_endpoint\", \"pid\"} here");
    command->callback([options] { run_broker(*options); });
}

}  // namespace glassbox::cli
