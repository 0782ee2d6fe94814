// The `graph-rag` service: answers a question from the knowledge graph, explaining each step
// (Question → Grounding → Exploration → Focus → Synthesis; docs/rag.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/messages.hpp"
#include "workers/rag/rag_config.hpp"
#include "workers/runtime/request_context.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::text {
class BuiltinEmbeddings;  // text/builtin_embeddings.hpp
}

namespace glassbox::rag {

using text::BuiltinEmbeddings;

// A GraphRagQuery with every 0 replaced by its default, checked against the bounds of
// `config` (InvalidRequest names the field). Also checks the question (non-empty, at most
// config.max_question_bytes) and the parent URI (non-empty when given).
base::Result<schema::GraphRagQuery> resolve_graph_query(const schema::GraphRagQuery& query,
                                                        const RagConfig& config);

// An edge as the LLM templates see it.
struct LabelledEdge {
    std::string id;  // "e1", "e2", ...
    std::string s;
    std::string p;
    std::string o;
};
// The JSON text of `[{"id","s","p","o"}...]`.
std::string edges_json(const std::vector<LabelledEdge>& edges);

// Request: schema::GraphRagQuery. Replies: PARTIAL `chunk` RagResponses while streaming,
// explain messages per step, FINAL RagResponse (+ "session"); typed errors after the trace
// ended with status error. Safe on many threads at once; `builtin_embeddings` (shared by them,
// service_calls.hpp) lets it compute the built-in model's vectors itself once the embeddings
// service named that model (none: it always asks). The handler has its own.
void handle_graph_rag(runtime::RequestContext& context, const RagConfig& config,
                      BuiltinEmbeddings* builtin_embeddings = nullptr);
runtime::Handler make_graph_rag_handler(RagConfig config);

}  // namespace glassbox::rag
