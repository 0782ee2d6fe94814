// The request body that asks one question of a target (cli/question_request.hpp).
#include "cli/question_request.hpp"

#include <utility>

#include "schema/services.hpp"

namespace glassbox::cli {
namespace {

using nlohmann::json;

// `target` with the fields every target shares, encoded.
template <typename Target>
json encode_target(Target target, const QuestionRequest& request) {
    target.collection = request.collection;
    target.streaming = request.streaming;
    target.session_id = request.session;
    if constexpr (requires { target.parent_uri; }) target.parent_uri = request.parent_uri;
    target.revision_of = request.revision_of;
    return schema::encode(target);
}

}  // namespace

json question_body(const QuestionRequest& request, const TargetParameters& targets) {
    if (request.service == schema::services::kQuery) {
        schema::QueryRequest query;
        query.query = request.question;
        query.mode =
            schema::query_mode_from_string(targets.mode).value_or(schema::QueryMode::kAuto);
        query.min_confidence = targets.query_min_confidence;
        return encode_target(std::move(query), request);
    }
    if (request.service == schema::services::kAgent) {
        schema::AgentRequest agent = targets.agent;
        agent.question = request.question;
        return encode_target(std::move(agent), request);
    }
    if (request.service == schema::services::kGraphRag) {
        schema::GraphRagQuery query = targets.graph_rag;
        query.query = request.question;
        return encode_target(std::move(query), request);
    }
    schema::DocumentRagQuery query = targets.document_rag;
    query.query = request.question;
    return encode_target(std::move(query), request);
}

}  // namespace glassbox::cli
