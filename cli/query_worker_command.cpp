// `glassbox worker query`: the front door that routes each question to an engine (docs/query.md).
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/settings.hpp"
#include "cli/worker_support.hpp"
#include "schema/services.hpp"
#include "workers/query/query_config.hpp"
#include "workers/query/query_service.hpp"

namespace glassbox::cli {
namespace {

struct QueryOptions {
    WorkerOptions worker;
    query::QueryConfig config;
    std::string rules_file;
    bool no_signals = false;
};

// The benchmarks' switch, as the RAG workers read it (GLASSBOX_BENCH_NO_EXPLAIN=1).
bool explain_disabled() {
    const char* value = std::getenv("GLASSBOX_BENCH_NO_EXPLAIN");
    return value != nullptr && std::strcmp(value, "1") == 0;
}

[[noreturn]] void bad_rules(const std::string& message) {
    std::cerr << "glassbox worker query: --rules: " << message << '\n';
    throw CLI::RuntimeError(2);
}

void run_query_worker(const QueryOptions& options) {
    query::QueryConfig config = options.config;
    if (!options.rules_file.empty()) {
        std::ifstream in(options.rules_file);
        if (!in) bad_rules("cannot read " + options.rules_file);
        std::stringstream text;
        text << in.rdbuf();
        auto rules = query::parse_rules(text.str());
        if (!rules) bad_rules(options.rules_file + ": " + rules.error().message);
        config.rules = std::move(*rules);
    }
    const auto& s = settings();
    config.call_timeout = std::chrono::milliseconds{s.integer("query.call_timeout_ms")};
    config.reflection_timeout = std::chrono::milliseconds{s.integer("query.reflection_timeout_ms")};
    config.reflection = s.text("query.reflection");
    config.relevance_threshold = s.number("query.relevance_threshold");
    config.confidence_threshold = s.number("query.confidence_threshold");
    config.min_confidence = s.number("query.min_confidence");
    config.max_escalations = static_cast<std::size_t>(s.integer("query.max_escalations"));
    config.collection_signals = !options.no_signals;
    config.explain = !explain_disabled();
    const sigset_t stop_signals = block_stop_signals();
    // The router's requests run on their slot's I/O thread (runtime::WorkerConfig::run_inline),
    // as graph-rag's do: its handler is calls to the engines with short stretches between them
    // (the routing, reading an engine's evidence, the Conclusion: a few milliseconds), and each
    // wait on a call lets the slot heartbeat and read a CANCEL; the hop to a handler thread and
    // back, with a wake-up per burst of relayed explain messages, was a quarter of its CPU
    // (issue 35).
    run_worker(std::string(schema::services::kQuery), options.worker,
               query::make_query_handler(config), stop_signals, {}, inline_when_small());
}

}  // namespace

void add_query_worker_command(CLI::App& worker_command) {
    auto [sub, options] = add_worker_subcommand<QueryOptions>(
        worker_command, schema::services::kQuery,
        "Serve `query`: routes each question to graph-rag, document-rag or the agent, escalates "
        "weak answers, and gives the answer's provenance (docs/query.md)",
        run_query_worker);
    sub->add_option("--rules", options->rules_file,
                    "Routing rule file (JSON, docs/query.md); default: the built-in rules");
    add_setting_option(*sub, "query.relevance_threshold", "--relevance-threshold");
    add_setting_option(*sub, "query.confidence_threshold", "--confidence-threshold");
    add_setting_option(*sub, "query.min_confidence", "--min-confidence");
    // model-free (evidence coverage) or llm (the llm service's relevance-judge, falling back to
    // model-free; escalations then ask rephrase-query for the next engine's question).
    add_setting_option(*sub, "query.reflection", "--reflection");
    sub->add_option("--llm-service", options->config.llm_service,
                    "The service asked to judge and rephrase")
        ->capture_default_str();
    add_setting_option(*sub, "query.reflection_timeout_ms", "--reflection-timeout-ms");
    add_setting_option(*sub, "query.max_escalations", "--max-escalations");
    sub->add_flag("--no-collection-signals", options->no_signals,
                  "Route without asking the store what the collection holds");
    sub->add_option("--graph-rag-service", options->config.graph_rag_service,
                    "The graph RAG service")
        ->capture_default_str();
    sub->add_option("--document-rag-service", options->config.document_rag_service,
                    "The document RAG service")
        ->capture_default_str();
    sub->add_option("--agent-service", options->config.agent_service, "The agent service")
        ->capture_default_str();
    sub->add_option("--store-service", options->config.store_service, "The knowledge store service")
        ->capture_default_str();
    add_setting_option(*sub, "query.call_timeout_ms", "--call-timeout-ms");
}

}  // namespace glassbox::cli
