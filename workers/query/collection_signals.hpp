// What the collection holds of a question, asked of the store in one round trip (two requests
// in flight together): which of the question's entity spans are labels in the graph, and how
// well its words match the documents (BM25). docs/query.md §2.
#pragma once

#include <chrono>
#include <string>

#include "workers/query/question_features.hpp"
#include "workers/runtime/request_context.hpp"

namespace glassbox::query {

// Fills features.graph_entities / document_keyword and sets signals_known. A store that fails
// or is slower than `timeout` leaves the signals unknown (routing goes on without them); the
// returned text says why, for the log and the RoutingDecision.
std::string ask_collection(runtime::RequestContext& context, const std::string& store_service,
                           const std::string& collection, std::chrono::milliseconds timeout,
                           QuestionFeatures& features);

}  // namespace glassbox::query
