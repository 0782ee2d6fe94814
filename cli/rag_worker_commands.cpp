// `glassbox worker graph-rag` and `glassbox worker document-rag`: the two RAG services.
#include <chrono>
#include <memory>
#include <string>

#include "cli/settings.hpp"
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
};

void add_rag_options(CLI::App& sub, RagOptions& options) {
    sub.add_option("--llm-service", options.config.llm_service,
                   "Service answering the prompt templates")
        ->capture_default_str();
    sub.add_option("--store-service", options.config.store_service, "The knowledge store service")
        ->capture_default_str();
    sub.add_option("--embeddings-service", options.config.embeddings_service,
                   "Service turning texts into vectors")
        ->capture_default_str();
    add_setting_option(sub, "rag.call_timeout_ms", "--call-timeout-ms");
    add_setting_option(sub, "rag.min_confidence", "--min-confidence");
}

// The retrieval defaults of [graph_rag] and [document_rag] (docs/configuration.md).
void apply_retrieval_defaults(rag::RagConfig& config, const config::Resolved& s) {
    const auto limit = [&s](const char* key) { return static_cast<std::uint32_t>(s.integer(key)); };
    config.entity_limit = limit("graph_rag.entity_limit");
    config.triple_limit = limit("graph_rag.triple_limit");
    config.subgraph_size = limit("graph_rag.max_subgraph_size");
    config.path_length = limit("graph_rag.max_path_length");
    config.edge_score_limit = limit("graph_rag.edge_score_limit");
    config.edge_limit = limit("graph_rag.edge_limit");
    config.doc_limit = limit("document_rag.doc_limit");
    config.fetch_limit = limit("document_rag.fetch_limit");
    config.explored_edges_recorded = limit("graph_rag.explored_edges_recorded");
    config.min_confidence = s.number("rag.min_confidence");
}

void run_rag(std::string_view service, const RagOptions& options, bool graph) {
    const sigset_t stop_signals = block_stop_signals();
    rag::RagConfig config = options.config;
    config.call_timeout = std::chrono::milliseconds{settings().integer("rag.call_timeout_ms")};
    apply_retrieval_defaults(config, settings());
    config.explain = !rag::explain_disabled_by_env();
    // graph-rag's requests run on their slot's I/O thread (runtime::WorkerConfig::run_inline):
    // its handler is calls with short stretches between them, and each wait on a call lets the
    // slot heartbeat and read a CANCEL; the hop to a handler thread and back, with a wake-up per
    // burst of explain messages, cost more CPU than the rest of the runtime (issue 33).
    run_worker(std::string(service), options.worker,
               graph ? rag::make_graph_rag_handler(config) : rag::make_document_rag_handler(config),
               stop_signals, {}, graph ? inline_when_small() : InlineHook{});
}

void run_graph_rag(const RagOptions& options) {
    run_rag(schema::services::kGraphRag, options, true);
}

void run_document_rag(const RagOptions& options) {
    run_rag(schema::services::kDocumentRag, options, false);
}

void add_rag_command(CLI::App& worker_command, std::string_view service, std::string description,
                     void (*run)(const RagOptions&)) {
    auto [sub, options] =
        add_worker_subcommand<RagOptions>(worker_command, service, std::move(description), run);
    add_rag_options(*sub, *options);
}

}  // namespace

void add_graph_rag_worker_command(CLI::App& worker_command) {
    add_rag_command(
        worker_command, schema::services::kGraphRag,
        "Serve `graph-rag`: answers from the knowledge graph, with an explain trace (docs/rag.md)",
        run_graph_rag);
}

void add_document_rag_worker_command(CLI::App& worker_command) {
    add_rag_command(
        worker_command, schema::services::kDocumentRag,
        "Serve `document-rag`: answers from document chunks, with an explain trace (docs/rag.md)",
        run_document_rag);
}

}  // namespace glassbox::cli
