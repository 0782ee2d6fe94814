// What every `glassbox worker <name>` process shares: bus options, stop signals, the run loop.
#pragma once

#include <signal.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include "cli/bus_security.hpp"
#include "cli/commands.hpp"
#include "cli/stop_signals.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::cli {

// How every worker process reaches the broker; the same flags on each `worker` subcommand:
// --home, and --broker, --heartbeat-ms, --liveness for the settings broker.endpoint,
// broker.heartbeat_ms and broker.liveness (cli/settings.hpp).
struct BusOptions {
    std::string home;
};

// The CURVE keys of a worker process (key `key_name` in the home unless --curve-key) for its
// broker endpoint; nullopt: plain. Exits with the typed error when they cannot be used.
std::optional<bus::CurveClientKeys> worker_curve_keys(const BusOptions& options,
                                                      std::string_view key_name,
                                                      std::string_view endpoint);

void add_bus_options(CLI::App& sub, BusOptions& options, const std::string& home_help);

struct WorkerOptions {
    BusOptions bus;
    std::string service;  // empty: the worker's own name
    std::string name;
    std::size_t threads = 1;
};

// --service, --name, --threads, --drain-timeout-ms (worker.drain_timeout_ms); bus options too.
void add_worker_options(CLI::App& sub, WorkerOptions& options, const std::string& default_service);

// `glassbox worker <service>` for a service with options of its own (`Options::worker` holds
// the shared ones, registered here, two threads unless --threads): see add_command.
template <typename Options>
Command<Options> add_worker_subcommand(CLI::App& worker_command, std::string_view service,
                                       std::string description, void (*run)(const Options&)) {
    auto added =
        add_command<Options>(worker_command, std::string(service), std::move(description), run);
    added.options->worker.threads = 2;
    add_worker_options(*added.command, added.options->worker, std::string(service));
    return added;
}

// The settings object of the llm or embeddings service (`table` "llm" or "embeddings"): the JSON
// file named by <table>.config (an older way, docs/llm.md), then every other <table>.* setting
// not at its default on top of it (the defaults are the service's own). `api_key_env`
// "-" becomes "" (no key); `provider` "auto" leaves the provider to the service. A file that
// cannot be read or is not a JSON object exits with the typed error.
nlohmann::json service_settings_json(std::string_view table);

// runtime::WorkerConfig::run_inline's signature: (meta, body) -> run on the slot's I/O thread.
using InlineHook = std::function<bool(std::string_view meta, std::string_view body)>;

// Bodies above this size go to the handler thread even for a service whose every request is
// quick (inline_when_small): reading and answering them is work of its own.
inline constexpr std::size_t kInlineBodyMax = std::size_t{256} * 1024;

// A run_inline for a service whose every request is quick (the built-in embedder, the extractive
// llm provider without a delay): every body up to kInlineBodyMax bytes.
InlineHook inline_when_small();

// Runs one worker (service `default_service` unless --service) until SIGTERM/SIGINT, then stops
// it gracefully. Call block_stop_signals() first when building the handler starts threads.
// `text_body`, `run_inline`: runtime::WorkerConfig::text_body and run_inline.
void run_worker(const std::string& default_service, const WorkerOptions& options,
                runtime::Handler handler, const sigset_t& stop_signals,
                std::function<bool(std::string_view)> text_body = {}, InlineHook run_inline = {});

// Registered by their own files.
void add_embeddings_worker_command(CLI::App& worker_command);
void add_store_worker_command(CLI::App& worker_command);
void add_llm_worker_command(CLI::App& worker_command);
void add_graph_rag_worker_command(CLI::App& worker_command);
void add_agent_worker_command(CLI::App& worker_command);
void add_document_rag_worker_command(CLI::App& worker_command);
void add_query_worker_command(CLI::App& worker_command);

}  // namespace glassbox::cli
