// The `query` service: the front door. Routes a question to graph RAG, document RAG or the
// agent, reflects on the relevance of the answer, escalates when it is weak, and gives the
// answer with its epistemic provenance, every decision traced (docs/query.md).
#pragma once

#include "workers/query/query_config.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::query {

// Request: schema::QueryRequest. Replies: PARTIAL data `{"message_type":"explain", …}` carrying
// each engine sub-run's explain messages as they arrive (forwarded, not re-spooled: the broker
// already keeps them), the query's own explain messages (Question → RoutingDecision →
// [Escalation]… → Conclusion), then one FINAL: the winning engine's RagResponse fields plus
// `session`, `route`, `relevance`, `escalations`, `runs` and `provenance`. Typed errors after
// the trace ended with status error. Stateless: safe on many threads at once.
runtime::Handler make_query_handler(QueryConfig config);

}  // namespace glassbox::query
