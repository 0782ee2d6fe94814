// The `store` bus service: the knowledge store of a home — pattern queries, entity and chunk
// retrieval, chunk fetch, provenance, labels, stats, loading, and listing and deleting collections
// — one SQLite file per collection.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "schema/services.hpp"
#include "workers/runtime/request_context.hpp"
#include "workers/runtime/worker.hpp"
#include "workers/store/knowledge_base.hpp"
#include "workers/store/sparql_mirror.hpp"
#include "workers/store/store_bounds.hpp"

namespace glassbox::store {

// Operations (the body's "op"; docs/knowledge.md has each body and reply):
inline constexpr std::string_view kOpTriples = "triples";  // TriplesQuery -> TriplesResponse
inline constexpr std::string_view kOpTriplesBatch =
    "triples-batch";  // TriplesQueryBatch -> TriplesBatchResponse
inline constexpr std::string_view kOpEntities =
    "entities";  // GraphEmbeddingsQuery -> GraphEmbeddingsResponse
inline constexpr std::string_view kOpEntitiesBatch =
    "entities-batch";  // GraphEmbeddingsQuery -> GraphEmbeddingsBatchResponse
inline constexpr std::string_view kOpChunksVector =
    "chunks-vector";  // DocumentEmbeddingsQuery -> ChunkMatchResponse
inline constexpr std::string_view kOpChunksKeyword =
    "chunks-keyword";  // ChunkKeywordQuery -> ChunkMatchResponse
inline constexpr std::string_view kOpChunksHybrid =
    "chunks-hybrid";  // HybridChunkQuery -> ChunkMatchResponse
inline constexpr std::string_view kOpChunksFetch =
    "chunks-fetch";  // ChunkFetchRequest -> ChunkFetchResponse
inline constexpr std::string_view kOpFactSources =
    "fact-sources";  // FactSourcesRequest -> FactSourcesResponse
inline constexpr std::string_view kOpLabels = "labels";  // LabelsRequest -> LabelsResponse
inline constexpr std::string_view kOpStats = "stats";    // StoreStatsRequest -> StoreStats
inline constexpr std::string_view kOpLoadTriples =
    "load-triples";  // LoadTriplesRequest -> LoadTriplesResponse
inline constexpr std::string_view kOpLoadDocuments =
    "load-documents";  // LoadDocumentsRequest -> LoadDocumentsResponse
inline constexpr std::string_view kOpIndex = "index";              // IndexRequest -> IndexResponse
inline constexpr std::string_view kOpCollections = "collections";  // {} -> CollectionList
inline constexpr std::string_view kOpCollectionDelete =
    "collection-delete";  // CollectionDeleteRequest -> CollectionDeleted
inline constexpr std::string_view kOpCollectionSet =
    "collection-set";  // CollectionSetRequest -> CollectionSummary
// A staged load: load-triples with "load": NAME stages its batch (nothing visible yet); then
// load-commit {collection, load} -> LoadTriplesResponse over the whole load, or load-abort.
inline constexpr std::string_view kOpLoadCommit = "load-commit";
inline constexpr std::string_view kOpLoadAbort = "load-abort";

struct StoreServiceConfig {
    std::filesystem::path home;
    // Empty: the collections are SQLite files in <home>/knowledge/; else this PostgreSQL
    // database holds them (storage.backend = "postgres"), shared with every other store worker.
    std::string postgres_dsn;
    std::string embeddings_service{schema::services::kEmbeddings};
    // Texts per call to the embeddings service while indexing.
    std::size_t embed_batch = 256;
    // A `triples` answer above this many triples is streamed: PARTIAL {"triples": [...]} batches,
    // then the FINAL with the rest.
    std::size_t stream_batch = 1'000;
    // Deadline of each call to the embeddings service (cut to the request's remaining time).
    std::chrono::milliseconds embed_timeout{60'000};
    // Per-request bounds of every op (items, items × limit, reply bytes).
    StoreBounds bounds;
    // `collections` lists at most this many (by name; the reply says it was cut).
    std::size_t max_collections = 1'000;
    // A staged load that staged a batch within this long is in progress: `collection-delete`
    // refuses its collection. Older staging was abandoned (the loader sends batches back to back).
    std::chrono::seconds staged_load_idle{600};
    // The SPARQL mirror of this process (null: sparql.endpoint not set): `stats` shows it, and
    // every write op wakes it.
    std::shared_ptr<SparqlMirrorStatus> sparql_mirror;
    // The clock staleness is judged by (docs/knowledge.md §3); tests set their own.
    std::function<std::chrono::system_clock::time_point()> clock = [] {
        return std::chrono::system_clock::now();
    };
};

// Shared by every worker slot of the process (collections are opened once, on first use, and
// each is used under its own lock: SQLite connections are not shared between threads).
class StoreService {
public:
    explicit StoreService(StoreServiceConfig config);
    void handle(runtime::RequestContext& ctx);
    KnowledgeBases& bases() noexcept { return bases_; }

private:
    StoreServiceConfig config_;
    KnowledgeBases bases_;
};

runtime::Handler make_store_handler(std::shared_ptr<StoreService> service);

// The store's runtime::WorkerConfig::text_body: a load-triples body as `glassbox load` writes it
// (its "op" first), read from its text without a tree of its megabytes of N-Quads, and graph
// RAG's reads (entities, entities-batch, triples-batch, fact-sources, labels), read without a
// tree of their vectors and terms. Any body it takes that the readers do not is parsed by the
// handler as the runtime would.
bool reads_body_as_text(std::string_view body) noexcept;

}  // namespace glassbox::store
