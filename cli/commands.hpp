// The `glassbox` subcommands; each add_* registers one on the app and owns its options.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace glassbox::cli {

// A subcommand and the options it owns (the callback `add_command` sets holds them, so they live
// as long as the app): CLI11 writes the parsed flags into *options.
template <typename Options>
struct Command {
    CLI::App* command;
    Options* options;
};

// Adds the subcommand `name` to `parent`, run by `run` with its options when it is the one chosen.
template <typename Options>
Command<Options> add_command(CLI::App& parent, std::string name, std::string description,
                             void (*run)(const Options&)) {
    auto options = std::make_shared<Options>();
    CLI::App* command = parent.add_subcommand(std::move(name), std::move(description));
    command->callback([options, run] { run(*options); });
    return {command, options.get()};
}

// A subcommand ends by returning normally (exit 0) or by throwing CLI::RuntimeError(code)
// after printing its one-line typed error on stderr.
void add_broker_command(CLI::App& app);       // glassbox broker: run the broker
void add_worker_command(CLI::App& app);       // glassbox worker <name>: run one worker process
void add_up_command(CLI::App& app);           // glassbox up: broker + workers, supervised
void add_status_command(CLI::App& app);       // glassbox status: the broker's mmi.status
void add_call_command(CLI::App& app);         // glassbox call <service> '<json>'
void add_traces_command(CLI::App& app);       // glassbox traces list/show/tail/export/stats
void add_traces_compare(CLI::App& traces);    // glassbox traces diff|replay (on `traces`)
void add_load_command(CLI::App& app);         // glassbox load rdf|docs
void add_forget_command(CLI::App& app);       // glassbox forget source|fact|document
void add_query_command(CLI::App& app);        // glassbox query triples|chunks
void add_graph_command(CLI::App& app);        // glassbox graph stats
void add_collections_command(CLI::App& app);  // glassbox collections list|show|delete
void add_invoke_command(CLI::App& app);       // glassbox invoke graph-rag|document-rag
void add_sessions_command(CLI::App& app);     // glassbox sessions list|show|delete
void add_chat_command(CLI::App& app);         // glassbox chat
void add_gateway_command(CLI::App& app);  // glassbox gateway: the HTTP API (in glassbox-gateway)
// glassbox gateway in glassbox: execs glassbox-gateway with this command line (argc, argv)
void add_gateway_launcher(CLI::App& app, int argc, char** argv);
void add_keys_command(CLI::App& app);    // glassbox keys new|show|allow|init: CURVE keys
void add_config_command(CLI::App& app);  // glassbox config show|path
void add_store_command(CLI::App& app);   // glassbox store copy: a home's stores to PostgreSQL
void add_eval_command(CLI::App& app);    // glassbox eval: score answers to a question set
void add_sparql_command(CLI::App& app);  // glassbox sparql: a query to the SPARQL engine

}  // namespace glassbox::cli
