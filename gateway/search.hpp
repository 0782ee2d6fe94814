// Retrieval without an answer: document chunks and graph edges for a query, with scores and
// sources (the work behind MCP's search_graph, ready for POST /api/v1/search).
#pragma once

#include <chrono>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "gateway/bus_pool.hpp"

namespace glassbox::gateway {

struct SearchLimits {
    std::chrono::milliseconds call_timeout{30'000};  // each bus call
};

// `body` {query, kind?: chunks|edges|both, collection?, limit?: 1..50 (10)} →
// `{chunks: [{chunk, document, title, text, score, tier}], edges: [{s, p, o, text, score,
// sources: [{source, kind, document, tier}]}]}`. Chunks: the store's hybrid ranking (BM25 fused
// with the query's embedding); edges: the triples around the entities nearest the query's
// embedding, scored by their entity. InvalidRequest for a body outside those bounds.
base::Result<nlohmann::json> search_knowledge(BusPool& bus, const nlohmann::json& body,
                                              const SearchLimits& limits);

}  // namespace glassbox::gateway
