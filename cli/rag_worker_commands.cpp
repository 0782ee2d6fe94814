// `glassbox worker graph-rag` and `glassbox worker document-rag`: the two RAG services.
#include <chrono>
#include <memory>
#include <string>

#include "cli/worker_support.hpp"
#include "schema/services.hpp"
#include "workers/rag/document_rag_service.hpp"
#include "workers/rag/graph_rag_service.hpp"
#include "workers/rag/rag_config.hpp"

namespace glassbox::cli {
namespace {

struct RagOptions {
    WorkerOptions worker;
    rag::RagConfig config;
    int call_timeout_ms = 0;
};

void add_rag_options(CLI::App& sub, RagOptions& options) {
    sub.add_option("--llm-service", options.config.llm_service, "Service answering the prompt templates")
        ->capture_default_str();
    sub.add_option("--store-service", options.config.store_service, "The knowledge store service")
        ->capture_default_str();
    sub.add_option("--embeddings-service", options.config.embeddings_service, "Service turning texts into vectors")
        ->capture_default_str();
    sub.add_option("--call-timeout-ms", options.call_timeout_ms,
                   "Deadline of each call to another service (0: the request's remaining time)")
        ->capture_default_str()
        ->check(CLI::Range(0, 3'600'000));
}

void run_rag(const std::string& service, const RagOptions& options, bool graph) {
    const sigset_t stop_signals = block_stop_signals();
    rag::RagConfig config = options.config;
    config.call_timeout = std::chrono::milliseconds{options.call_timeout_ms};
    config.explain = !rag::explain_disabled_by_env();
    run_worker(service, options.worker,
               graph ? rag::make_graph_rag_handler(config) : rag::make_document_rag_handler(config), stop_signals);
}

void add_rag_command(CLI::App& worker_command, std::string_view service, const std::string& description, bool graph) {
    auto options = std::make_shared<RagOptions>();
    options->worker.threads = 2;
    auto* sub = worker_command.add_subcommand(std::string(service), description);
    add_worker_options(*sub, options->worker, std::string(service));
    add_rag_options(*sub, *options);
    sub->callback([options, service = std::string(service), graph] { run_rag(service, *options, graph); });
}

}  // namespace

void add_graph_rag_worker_command(CLI::App& worker_command) {
    add_rag_command(worker_command, schema::services::kGraphRag,
                    "Serve `graph-rag`: answers from the knowledge graph, with an explain trace (docs/rag.md)", true);
}

void add_document_rag_worker_command(CLI::App& worker_command) {
    add_rag_command(worker_command, schema::services::kDocumentRag,
                    "Serve `document-rag`: answers from document chunks, with an explain trace (docs/rag.md)", false);
}

}  // namespace glassbox::cli
