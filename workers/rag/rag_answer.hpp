// What both RAG chains share around the answer: request checks, the streamed synthesis with
// citation markers turned into citations, and the FINAL reply.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "schema/messages.hpp"
#include "workers/rag/citation_markers.hpp"
#include "workers/rag/rag_config.hpp"
#include "workers/rag/service_calls.hpp"
#include "workers/runtime/request_context.hpp"

namespace glassbox::rag {

// The question and parent URI every RAG request must have right: InvalidRequest otherwise.
base::Result<void> check_question(const std::string& question,
                                  const std::optional<std::string>& parent_uri,
                                  const RagConfig& config);
// A request's session_id: empty (no conversation) or at most schema::kMaxSessionIdBytes bytes
// with no control character; InvalidRequest naming "session_id" otherwise.
base::Result<void> check_session_id(const std::string& session_id);
// `value` (0 = `fallback`) within [1, max], else InvalidRequest naming `field`.
base::Result<std::uint32_t> bounded_parameter(std::string_view field, std::uint32_t value,
                                              std::uint32_t fallback, std::uint32_t max);
// Decodes a request body; a body of the wrong shape is InvalidRequest (the decoder's message).
template <typename T>
base::Result<T> decode_request(const nlohmann::json& body) {
    if (!body.is_object())
        return base::make_error(base::ErrorType::kInvalidRequest,
                                "the request body must be a JSON object");
    auto decoded = schema::decode<T>(body);
    if (!decoded)
        return base::make_error(base::ErrorType::kInvalidRequest, decoded.error().message);
    return decoded;
}
// The "query" string of a body when it has one (for the trace of a request that fails checks).
std::string query_of(const nlohmann::json& body);

struct SynthesisResult {
    schema::LlmResponse response;  // the LLM's reply (text with markers, model, tokens)
    std::string answer;            // markers stripped
    std::vector<CitedSpan> citations;
    // The short answer (response.answer) and its known marker ids, in order.
    std::optional<std::string> short_answer;
    std::vector<std::string> short_answer_ids;
};

// Calls the synthesis template; when `streaming`, every piece of answer text (markers already
// stripped) goes out as a PARTIAL `chunk` RagResponse as it arrives. `known` says which marker
// ids exist; `id_prefix` is the chain's id prefix ("e" or "c").
base::Result<SynthesisResult> synthesise(runtime::RequestContext& context, ServiceCalls& calls,
                                         std::string_view template_name,
                                         std::map<std::string, std::string> variables,
                                         bool streaming,
                                         const std::function<bool(std::string_view)>& known,
                                         std::string_view id_prefix);

// encode(RagResponse) of the FINAL message plus "session". `final` carries what only the
// chain knows (response, tokens, model, sources, answer, answer_selections, explain_id).
nlohmann::json final_reply(schema::RagResponse final, const std::string& session);

// The marker id number: "e12" with prefix "e" → 12; nullopt otherwise.
std::optional<std::size_t> marker_number(std::string_view id, std::string_view prefix);

}  // namespace glassbox::rag
