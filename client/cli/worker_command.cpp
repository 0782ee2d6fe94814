// `glassbox worker <name>`: runs one worker process until SIGTERM/SIGINT, then stops gracefully.
#include <pthread.h>
#include <signal.h>

#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "client/cli/client_options.hpp"
#include "client/cli/commands.hpp"
#include "client/home.hpp"
#include "schema/log.hpp"
#include "workers/echo/echo_service.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::cli {
namespace {

// One entry per worker the executable can run: a new worker adds one line to kWorkers.
struct WorkerEntry {
    const char* name;  // the subcommand and the default service name
    const char* description;
    runtime::Handler (*make_handler)();
};

const std::vector<WorkerEntry> kWorkers = {
    {"echo", "Diagnostic echo service: answers with its request and a Question → Synthesis trace",
     &echo::make_echo_handler},
};

struct WorkerOptions {
    std::string broker;
    std::string home;
    std::string service;  // empty: the worker's own name
    std::string name;
    std::size_t threads = 1;
    int heartbeat_ms = 2500;
    int liveness = 3;
    int drain_timeout_ms = 30'000;
};

void run_worker(const WorkerEntry& entry, const WorkerOptions& options) {
    // Block the stop signals before any thread starts, so every thread inherits the mask and
    // only sigwait below sees them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    auto endpoint = client::resolve_broker_endpoint(options.broker, client::resolve_home(options.home));
    if (!endpoint) exit_with_error(endpoint.error());

    runtime::WorkerConfig config;
    config.endpoint = std::move(endpoint).value();
    config.service = options.service.empty() ? entry.name : options.service;
    config.threads = options.threads;
    config.heartbeat = std::chrono::milliseconds{options.heartbeat_ms};
    config.liveness = options.liveness;
    config.drain_timeout = std::chrono::milliseconds{options.drain_timeout_ms};
    config.worker_name = options.name;

    std::unique_ptr<runtime::Worker> worker;
    try {
        worker = std::make_unique<runtime::Worker>(config, entry.make_handler());
    } catch (const std::invalid_argument& e) {
        exit_with_error(schema::make_error(schema::ErrorType::kInvalidRequest, e.what()));
    }
    worker->start();
    schema::component_logger("worker")->info("event=started service={} threads={} endpoint={}", config.service,
                                              config.threads, config.endpoint);
    int signal = 0;
    while (sigwait(&stop_signals, &signal) != 0) {
    }
    schema::component_logger("worker")->info("event=signal signal={} action=graceful_stop", signal);
    worker->stop();
    worker->wait();
    schema::component_logger("worker")->info("event=stopped service={}", config.service);
}

}  // namespace

void add_worker_command(CLI::App& app) {
    auto* command = app.add_subcommand("worker", "Run one worker process (stops gracefully on SIGTERM/SIGINT)");
    command->require_subcommand(1);
    for (const auto& entry : kWorkers) {
        auto options = std::make_shared<WorkerOptions>();
        auto* sub = command->add_subcommand(entry.name, entry.description);
        sub->add_option("--broker", options->broker,
                        "Broker request endpoint (default: the home's config.json, else tcp://127.0.0.1:5555)")
            ->envname("GLASSBOX_BROKER");
        sub->add_option("--home", options->home, "Home folder (default $GLASSBOX_HOME, else ~/.glassbox)");
        sub->add_option("--service", options->service, "Register under this service name instead")
            ->default_str(entry.name);
        sub->add_option("--name", options->name, "Worker name in logs and explain messages");
        sub->add_option("--threads", options->threads, "Worker threads (independent workers) in this process")
            ->capture_default_str()
            ->check(CLI::Range(1, 1024));
        sub->add_option("--heartbeat-ms", options->heartbeat_ms, "Heartbeat interval; match the broker's")
            ->capture_default_str()
            ->check(CLI::Range(10, 600'000));
        sub->add_option("--liveness", options->liveness, "Missed heartbeats before the broker counts as gone")
            ->capture_default_str()
            ->check(CLI::Range(1, 100));
        sub->add_option("--drain-timeout-ms", options->drain_timeout_ms,
                        "On stop, how long a running request may finish before it is cancelled")
            ->capture_default_str()
            ->check(CLI::Range(0, 3'600'000));
        const WorkerEntry* chosen = &entry;
        sub->callback([chosen, options] { run_worker(*chosen, *options); });
    }
}

}  // namespace glassbox::cli
