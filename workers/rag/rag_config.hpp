// Settings of the graph-rag and document-rag workers, with their defaults.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "schema/explain_builder.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"

namespace glassbox::rag {

// The bench-only switch (contract): with GLASSBOX_BENCH_NO_EXPLAIN=1 in the worker's
// environment no explain message is built or sent; everything else is the same.
inline constexpr const char* kNoExplainEnv = "GLASSBOX_BENCH_NO_EXPLAIN";
bool explain_disabled_by_env();

struct RagConfig {
    // The services a RAG worker calls.
    std::string llm_service{schema::services::kLlm};
    std::string store_service{schema::services::kStore};
    std::string embeddings_service{schema::services::kEmbeddings};
    // Deadline of each call (cut to the request's remaining time); 0: the remaining time.
    std::chrono::milliseconds call_timeout{0};
    // Graph RAG: once the embeddings service answers with the built-in hashing model, the worker
    // computes that model's vectors itself for this long (the same vectors, one round trip less
    // a question), then asks again; 0: always asks.
    std::chrono::milliseconds builtin_embeddings_ttl{30'000};
    // A question longer than this (bytes of UTF-8) is refused with InvalidRequest.
    std::size_t max_question_bytes = std::size_t{16} * 1024;
    // The Question records at most this many characters of the question.
    std::size_t trace_question_chars = 1'000;
    // Send explain messages (false: the bench-only switch).
    bool explain = true;
    // An answer whose calibrated confidence is below this says it does not know, what it found
    // and why it is unsure (docs/confidence.md); a request's min_confidence overrides it.
    double min_confidence = 0.25;
    // What a request that leaves a limit out (or 0) gets; each within its bound below.
    std::uint32_t entity_limit = schema::kDefaultEntityLimit;
    std::uint32_t triple_limit = schema::kDefaultTripleLimit;
    std::uint32_t subgraph_size = schema::kDefaultMaxSubgraphSize;
    std::uint32_t path_length = schema::kDefaultMaxPathLength;
    std::uint32_t edge_score_limit = schema::kDefaultEdgeScoreLimit;
    std::uint32_t edge_limit = schema::kDefaultEdgeLimit;  // cut to the edges scored
    std::uint32_t doc_limit = schema::kDefaultDocLimit;
    std::uint32_t fetch_limit = schema::kDefaultFetchLimit;  // raised to the doc limit
    // Graph RAG: the explored edges its Exploration step records (the first, in traversal
    // order; at most schema::explain::kMaxExploredEdges). 0 records only their count. The
    // explored edges are most of a graph-RAG trace: this bounds its size.
    std::uint32_t explored_edges_recorded =
        static_cast<std::uint32_t>(schema::explain::kMaxExploredEdges);
    // Upper bounds of the request parameters (InvalidRequest above them).
    std::uint32_t max_entity_limit = 1'000;
    std::uint32_t max_triple_limit = 1'000;
    std::uint32_t max_subgraph_size = 10'000;
    std::uint32_t max_path_length = 5;
    std::uint32_t max_edge_score_limit = 1'000;
    std::uint32_t max_doc_limit = 1'000;
    // Rows (patterns × limit) asked of the store in one triples-batch request: a larger
    // exploration step is split into several requests, so it stays within the store's bounds
    // (docs/knowledge.md §8: 200,000 rows, an 8 MiB reply) with room to spare.
    std::uint64_t store_batch_rows = 20'000;
    // Document RAG: maximal marginal relevance trade-off (1 = relevance only).
    double mmr_lambda = 0.7;
};

}  // namespace glassbox::rag
