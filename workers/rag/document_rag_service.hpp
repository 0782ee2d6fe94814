// The `document-rag` service: answers a question from document chunks, explaining each step
// (Question → Grounding → Exploration → [Focus when re-ranked] → Synthesis; docs/rag.md).
#pragma once

#include <string_view>

#include "base/result.hpp"
#include "schema/messages.hpp"
#include "workers/rag/rag_config.hpp"
#include "workers/runtime/request_context.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::rag {

// A DocumentRagQuery with defaults applied and bounds checked: doc_limit 0 → 20; fetch_limit
// 0 → max(20, doc_limit); an explicit fetch_limit below doc_limit is InvalidRequest.
base::Result<schema::DocumentRagQuery> resolve_document_query(const schema::DocumentRagQuery& query,
                                                              const RagConfig& config);

// Request: schema::DocumentRagQuery. Replies as graph-rag's (graph_rag_service.hpp).
void handle_document_rag(runtime::RequestContext& context, const RagConfig& config);
runtime::Handler make_document_rag_handler(RagConfig config);

}  // namespace glassbox::rag
