// `glassbox broker`: parse the broker's options, bind, write the ready file, serve until
// SIGINT/SIGTERM.
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

#include "base/log.hpp"
#include "base/owner_only.hpp"
#include "broker/broker.hpp"
#include "broker/broker_config.hpp"
#include "cli/bus_security.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/home.hpp"
#include "cli/settings.hpp"

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
    std::string home;
    std::string ready_file;
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

// The broker's part of the configuration (docs/configuration.md, [broker]).
broker::BrokerConfig broker_config(const config::Resolved& s) {
    using std::chrono::milliseconds;
    const auto size = [&s](const char* key) { return static_cast<std::size_t>(s.integer(key)); };
    broker::BrokerConfig config;
    config.endpoint = s.text("broker.endpoint");
    config.pub_endpoint = s.text("broker.pub_endpoint");
    config.heartbeat = milliseconds{s.integer("broker.heartbeat_ms")};
    config.liveness = static_cast<int>(s.integer("broker.liveness"));
    config.max_retries = static_cast<int>(s.integer("broker.max_retries"));
    config.default_deadline = milliseconds{s.integer("broker.default_deadline_ms")};
    config.max_deadline = milliseconds{s.integer("broker.max_deadline_ms")};
    config.unknown_service_wait = milliseconds{s.integer("broker.unknown_service_wait_ms")};
    config.restart_grace = milliseconds{s.integer("broker.restart_grace_ms")};
    config.max_queue = size("broker.max_queue");
    config.overflow = broker::overflow_policy_from_string(s.text("broker.overflow")).value();
    config.max_message_bytes = size("broker.max_message_bytes");
    config.max_subscription_bytes = size("broker.max_subscription_bytes");
    config.max_subscriptions_per_subscriber = size("broker.max_subscriptions_per_subscriber");
    config.max_subscribed_bytes_per_subscriber = size("broker.max_subscribed_bytes_per_subscriber");
    config.max_subscriptions = size("broker.max_subscriptions");
    config.max_subscribed_bytes = size("broker.max_subscribed_bytes");
    config.max_subscriber_inbound_bytes = size("broker.max_subscriber_inbound_bytes");
    config.spool_max_messages = static_cast<std::uint64_t>(s.integer("broker.spool_max_messages"));
    config.spool_max_bytes = static_cast<std::uint64_t>(s.integer("broker.spool_max_bytes"));
    config.spool_policy = broker::spool_policy_from_string(s.text("broker.spool_policy")).value();
    config.delivery_interval = milliseconds{s.integer("broker.delivery_interval_ms")};
    config.ended_sessions_kept = size("broker.ended_sessions_kept");
    return config;
}

void run_broker(const BrokerOptions& options) {
    auto log = base::component_logger("broker");
    broker::BrokerConfig config = broker_config(settings());
    const auto home = cli::resolve_home(options.home);
    auto keys = resolve_broker_keys(security_settings(), home);
    if (!keys) {
        std::cerr << "glassbox broker: " << keys.error().describe() << "\n";
        throw CLI::RuntimeError(exit_code_for(keys.error().type));
    }
    if (keys.value()) {
        config.curve_public_key = keys.value()->certificate.public_key;
        config.curve_secret_key = keys.value()->certificate.secret_key;
        config.allow_folder = keys.value()->allow_folder.string();
    }
    config.insecure = settings().boolean("security.insecure");
    if (const auto& spool = settings().text("broker.spool"); !spool.empty()) {
        config.spool_path = spool;
    } else {
        ensure_home(home);
        config.spool_path = (home / "spool").string();
    }

    zmq::context_t context{static_cast<int>(settings().integer("broker.io_threads"))};
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
    auto [command, options] =
        add_command<BrokerOptions>(app, "broker", "Run the message broker", run_broker);
    command->add_option("--home", options->home,
                        "Home folder (default $GLASSBOX_HOME, else ~/.glassbox)");
    // Every other option sets a setting of [broker] for this run (docs/configuration.md).
    const std::pair<const char*, const char*> flags[] = {
        {"broker.endpoint", "--bind"},
        {"broker.pub_endpoint", "--pub"},
        {"broker.spool", "--spool"},
        {"broker.heartbeat_ms", "--heartbeat-ms"},
        {"broker.liveness", "--liveness"},
        {"broker.max_retries", "--max-retries"},
        {"broker.max_queue", "--max-queue"},
        {"broker.overflow", "--overflow"},
        {"broker.max_message_bytes", "--max-message-bytes"},
        {"broker.max_subscription_bytes", "--max-subscription-bytes"},
        {"broker.max_subscriptions_per_subscriber", "--max-subscriptions-per-subscriber"},
        {"broker.max_subscribed_bytes_per_subscriber", "--max-subscribed-bytes-per-subscriber"},
        {"broker.max_subscriptions", "--max-subscriptions"},
        {"broker.max_subscribed_bytes", "--max-subscribed-bytes"},
        {"broker.max_subscriber_inbound_bytes", "--max-subscriber-inbound-bytes"},
        {"broker.spool_max_messages", "--spool-max-messages"},
        {"broker.spool_max_bytes", "--spool-max-bytes"},
        {"broker.spool_policy", "--spool-policy"},
        {"broker.delivery_interval_ms", "--delivery-interval-ms"},
        {"broker.default_deadline_ms", "--default-deadline-ms"},
        {"broker.max_deadline_ms", "--max-deadline-ms"},
        {"broker.unknown_service_wait_ms", "--unknown-service-wait-ms"},
        {"broker.restart_grace_ms", "--restart-grace-ms"},
        {"broker.ended_sessions_kept", "--ended-sessions-kept"},
        {"broker.io_threads", "--io-threads"},
    };
    for (const auto& [key, flag] : flags) add_setting_option(*command, key, flag);
    add_broker_security_options(*command);
    command->add_option("--ready-file", options->ready_file,
                        "Once bound, write {\"endpoint\", \"pub_endpoint\", \"pid\"} here");
}

}  // namespace glassbox::cli
