// What every `glassbox worker <name>` process shares: bus options, stop signals, the run loop.
#pragma once

#include <signal.h>

#include <cstddef>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/bus_security.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::cli {

// How every worker process reaches the broker; the same flags on each `worker` subcommand.
struct BusOptions {
    std::string broker;
    std::string home;
    int heartbeat_ms = 2500;
    int liveness = 3;
    SecurityOptions security;  // CURVE or plain (cli/bus_security.hpp)
};

// The CURVE keys of a worker process (key `key_name` in the home unless --curve-key) for its
// broker endpoint; nullopt: plain. Exits with the typed error when they cannot be used.
std::optional<bus::CurveClientKeys> worker_curve_keys(const BusOptions& options, std::string_view key_name,
                                                      std::string_view endpoint);

void add_bus_options(CLI::App& sub, BusOptions& options, const std::string& home_help);

struct WorkerOptions {
    BusOptions bus;
    std::string service;  // empty: the worker's own name
    std::string name;
    std::size_t threads = 1;
    int drain_timeout_ms = 30'000;
};

// --service, --name, --threads, --drain-timeout-ms (bus options too).
void add_worker_options(CLI::App& sub, WorkerOptions& options, const std::string& default_service);

// Blocks SIGTERM/SIGINT before any thread starts, so every thread inherits the mask and only
// wait_for_stop_signal sees them.
sigset_t block_stop_signals();
int wait_for_stop_signal(const sigset_t& stop_signals);

// Runs one worker (service `default_service` unless --service) until SIGTERM/SIGINT, then stops
// it gracefully. Call block_stop_signals() first when building the handler starts threads.
void run_worker(const std::string& default_service, const WorkerOptions& options, runtime::Handler handler,
                const sigset_t& stop_signals);

// Registered by their own files.
void add_embeddings_worker_command(CLI::App& worker_command);
void add_store_worker_command(CLI::App& worker_command);
void add_llm_worker_command(CLI::App& worker_command);
void add_graph_rag_worker_command(CLI::App& worker_command);
void add_agent_worker_command(CLI::App& worker_command);
void add_document_rag_worker_command(CLI::App& worker_command);
void add_query_worker_command(CLI::App& worker_command);

}  // namespace glassbox::cli
