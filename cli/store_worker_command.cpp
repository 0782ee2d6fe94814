// `glassbox worker store`: serves the home's knowledge store (every collection under
// <home>/knowledge/) as the `store` service.
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/owner_only.hpp"
#include "cli/client_options.hpp"
#include "cli/home.hpp"
#include "cli/settings.hpp"
#include "cli/sparql_settings.hpp"
#include "cli/storage_choice.hpp"
#include "cli/worker_support.hpp"
#include "http/sparql_client.hpp"
#include "schema/services.hpp"
#include "schema/sparql_graphs.hpp"
#include "schema/vocabulary.hpp"
#include "workers/store/inline_reads.hpp"
#include "workers/store/sparql_mirror.hpp"
#include "workers/store/store_service.hpp"

namespace glassbox::cli {
namespace {

// The store's SPARQL mirror writes through the Graph Store Protocol of the configured engine.
class SparqlMirrorEngine final : public store::MirrorEngine {
public:
    explicit SparqlMirrorEngine(http::SparqlConfig config) : client_(std::move(config)) {}

    base::Result<void> put_graph(std::string_view graph, std::string_view ntriples) override {
        return client_.put_graph(graph, ntriples);
    }
    base::Result<void> post_graph(std::string_view graph, std::string_view ntriples) override {
        return client_.post_graph(graph, ntriples);
    }
    base::Result<void> delete_graph(std::string_view graph) override {
        return client_.delete_graph(graph);
    }
    // Every collection graph states gb:collection of its sources; an empty one is no graph.
    base::Result<std::vector<std::string>> collection_graphs() override {
        std::string query = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s <";
        query.append(schema::vocab::kCollection)
            .append("> ?n } FILTER(STRSTARTS(STR(?g), \"")
            .append(schema::kCollectionGraphPrefix)
            .append("\")) }");
        auto rows = client_.select(query);
        if (!rows) return rows.error();
        std::vector<std::string> graphs;
        const auto results = rows->value("results", nlohmann::json::object());
        const auto bindings = results.is_object()
                                  ? results.value("bindings", nlohmann::json::array())
                                  : nlohmann::json::array();
        if (!bindings.is_array()) return graphs;
        for (const auto& row : bindings) {
            if (row.contains("g") && row["g"].contains("value") && row["g"]["value"].is_string())
                graphs.push_back(row["g"]["value"].get<std::string>());
        }
        return graphs;
    }

private:
    http::SparqlClient client_;
};

struct StoreOptions {
    WorkerOptions worker;
    std::string embeddings_service{schema::services::kEmbeddings};
    std::size_t embed_batch = 256;
};

void run_store(const StoreOptions& options) {
    const sigset_t stop_signals = block_stop_signals();
    const auto home = cli::resolve_home(options.worker.bus.home);
    // The home and its knowledge/ owner-only (0700) when missing; an existing home others can
    // write, or a knowledge/ that is a symbolic link, is refused (exit 2), never chmodded.
    if (auto made = base::ensure_home_folder(home); !made) exit_with_error(made.error());
    if (auto made = base::ensure_owner_only_folder(home / "knowledge"); !made)
        exit_with_error(made.error());
    store::StoreServiceConfig config;
    config.home = home;
    // storage.backend = "postgres": the collections live in that database, shared with the store
    // workers of other hosts (docs/deployment.md §6); the home keeps this worker's index caches.
    if (const auto storage = cli::required_storage_choice();
        storage.backend == cli::StorageBackend::kPostgres) {
        config.postgres_dsn = storage.dsn;
    }
    config.embeddings_service = options.embeddings_service;
    config.embed_batch = options.embed_batch;
    const auto sparql = sparql_config_from_settings();
    if (sparql) config.sparql_mirror = std::make_shared<store::SparqlMirrorStatus>();
    auto service = std::make_shared<store::StoreService>(config);
    // A database that cannot be reached at start is a clear error naming its host and port
    // (never the password), not a worker that fails every request.
    if (!config.postgres_dsn.empty()) {
        if (auto listed = service->bases().list(); !listed) exit_with_error(listed.error());
    }
    // Each collection mirrored into the SPARQL engine as one named graph (docs/knowledge.md),
    // stopped before the service it reads goes.
    std::unique_ptr<store::SparqlMirror> mirror;
    if (sparql) {
        store::SparqlMirrorConfig mirror_config;
        mirror_config.interval =
            std::chrono::milliseconds{settings().integer("sparql.mirror_interval_ms")};
        mirror = std::make_unique<store::SparqlMirror>(
            service->bases(), std::make_unique<SparqlMirrorEngine>(*sparql), mirror_config,
            config.sparql_mirror);
        mirror->start();
    }
    // Its quick reads (graph-rag's lookups) run on the slots' I/O threads; loads, counts and
    // anything long on the handler threads (store::runs_inline).
    run_worker(std::string(schema::services::kStore), options.worker,
               store::make_store_handler(service), stop_signals, store::reads_body_as_text,
               store::runs_inline);
    if (mirror) mirror->stop();
}

}  // namespace

void add_store_worker_command(CLI::App& worker_command) {
    auto [sub, options] =
        add_worker_subcommand<StoreOptions>(worker_command, schema::services::kStore,
                                            "Serve `store`: the knowledge graph, documents and "
                                            "vectors of <home>/knowledge/ (docs/knowledge.md)",
                                            run_store);
    sub->add_option("--embeddings-service", options->embeddings_service,
                    "Service that embeds entity labels and chunks while indexing")
        ->capture_default_str();
    sub->add_option("--embed-batch", options->embed_batch,
                    "Texts per call to the embeddings service")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
}

}  // namespace glassbox::cli
