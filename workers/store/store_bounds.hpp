// The store service's per-request bounds (docs/knowledge.md §8, "Bounds"): items a request may
// name, items × limit, and the bytes of a reply — checked before any work is done.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/result.hpp"
#include "schema/messages.hpp"

namespace glassbox::store {

// Retrieval limits of entities, entities-batch and the chunk searches: 0 means the default.
inline constexpr std::uint32_t kDefaultRetrievalLimit = 20;
inline constexpr std::uint32_t kMaxRetrievalLimit = 1'000;
std::uint32_t retrieval_limit(std::uint32_t requested) noexcept;
// The per-pattern limit triples and triples-batch apply (0 or above the graph's cap: the cap).
std::uint32_t match_limit(std::uint32_t requested) noexcept;

struct StoreBounds {
    // triples-batch: patterns per request, and patterns × per-pattern limit (the rows the store
    // may have to read). Graph RAG asks 2 patterns per frontier node (at most 2 × its
    // max_subgraph_size, 10,000) with its triple_limit (default 30).
    std::size_t max_patterns = 20'000;
    std::uint64_t max_rows = 200'000;
    // entities, entities-batch, chunks-vector, chunks-hybrid: query vectors per request (and
    // entities-batch: vectors × limit at most max_rows).
    std::size_t max_vectors = 1'024;
    std::size_t max_terms = 20'000;                        // labels
    std::size_t max_facts = 20'000;                        // fact-sources
    std::size_t max_chunk_ids = 10'000;                    // chunks-fetch
    std::size_t max_query_bytes = std::size_t{16} * 1024;  // chunks-keyword, chunks-hybrid
    std::size_t max_documents = 1'024;  // load-documents (the loader sends 64 or 4 MiB)
    // Every reply message (a FINAL or one PARTIAL): half the bus's default max_message_bytes
    // (16 MiB), so escapes the estimate misses cannot take it over.
    std::size_t max_reply_bytes = 8u << 20;
    // A `triples` answer in all, its PARTIALs and FINAL together.
    std::size_t max_stream_bytes = 64u << 20;
};

// Each check: nothing, or InvalidRequest naming the op, the bound, its value and the request's.
base::Result<void> check_request(const schema::TriplesQueryBatch& q, const StoreBounds& bounds);
base::Result<void> check_request(const schema::GraphEmbeddingsQuery& q, std::string_view op,
                                 bool per_vector, const StoreBounds& bounds);
// The same check from the query's counts (a query read from its text, without the struct).
base::Result<void> check_vector_query(std::string_view op, std::size_t vectors, std::uint32_t limit,
                                      bool per_vector, const StoreBounds& bounds);
base::Result<void> check_request(const schema::DocumentEmbeddingsQuery& q,
                                 const StoreBounds& bounds);
base::Result<void> check_request(const schema::ChunkKeywordQuery& q, const StoreBounds& bounds);
base::Result<void> check_request(const schema::HybridChunkQuery& q, const StoreBounds& bounds);
base::Result<void> check_request(const schema::ChunkFetchRequest& q, const StoreBounds& bounds);
base::Result<void> check_request(const schema::FactSourcesRequest& q, const StoreBounds& bounds);
base::Result<void> check_request(const schema::LabelsRequest& q, const StoreBounds& bounds);
base::Result<void> check_request(const schema::LoadDocumentsRequest& q, const StoreBounds& bounds);

// InvalidRequest: `op`'s reply would pass `bound` bytes (max_reply_bytes or max_stream_bytes);
// `done` says how far the store got ("after 12 of 300 patterns"), `hint` what to ask instead.
base::Error reply_too_large(std::string_view op, std::size_t bound, std::string_view bound_name,
                            std::string_view done, std::string_view hint);

}  // namespace glassbox::store
