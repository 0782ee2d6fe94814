// Codecs of the question-answering messages: graph RAG, document RAG, agent and query requests
// and their streamed responses (DESIGN §3), one field list per struct.
#include "schema/messages.hpp"

#include <algorithm>
#include <tuple>

#include "schema/detail/message_codecs.hpp"
#include "schema/explain_terms.hpp"

namespace glassbox::schema {
namespace detail {

template <>
struct FieldList<GraphRagQuery> {
    using T = GraphRagQuery;
    static constexpr auto value = std::tuple{
        field("query", &T::query),
        field("collection", &T::collection),
        field("entity_limit", &T::entity_limit),
        field("triple_limit", &T::triple_limit),
        field("max_subgraph_size", &T::max_subgraph_size),
        field("max_path_length", &T::max_path_length),
        field("edge_score_limit", &T::edge_score_limit),
        field("edge_limit", &T::edge_limit),
        field("streaming", &T::streaming),
        iri_field("parent_uri", &T::parent_uri),
        field("session_id", &T::session_id),
        field("exclude", &T::exclude),
        field("min_confidence", &T::min_confidence),
        iri_field("revision_of", &T::revision_of),
    };
};

template <>
struct FieldList<DocumentRagQuery> {
    using T = DocumentRagQuery;
    static constexpr auto value = std::tuple{
        field("query", &T::query),
        field("collection", &T::collection),
        field("doc_limit", &T::doc_limit),
        field("fetch_limit", &T::fetch_limit),
        field("streaming", &T::streaming),
        iri_field("parent_uri", &T::parent_uri),
        field("session_id", &T::session_id),
        field("min_confidence", &T::min_confidence),
        iri_field("revision_of", &T::revision_of),
    };
};

template <>
struct FieldList<AgentHistoryStep> {
    using T = AgentHistoryStep;
    static constexpr auto value = std::tuple{
        field("thought", &T::thought),
        field("action", &T::action),
        field("arguments", &T::arguments),
        field("observation", &T::observation),
    };
};

template <>
struct FieldList<AgentRequest> {
    using T = AgentRequest;
    static constexpr auto value = std::tuple{
        field("question", &T::question),
        field("collection", &T::collection),
        field("history", &T::history),
        field("session_id", &T::session_id),
        field("max_iterations", &T::max_iterations),
        field("streaming", &T::streaming),
        iri_field("parent_uri", &T::parent_uri),
        field("tools", &T::tools),
        field("min_confidence", &T::min_confidence),
        iri_field("revision_of", &T::revision_of),
    };
};

template <>
struct FieldList<QueryRequest> {
    using T = QueryRequest;
    static constexpr auto value = std::tuple{
        field("query", &T::query),
        field("mode", &T::mode),
        field("collection", &T::collection),
        field("streaming", &T::streaming),
        field("session_id", &T::session_id),
        field("request_id", &T::request_id),
        iri_field("revision_of", &T::revision_of),
        field("min_confidence", &T::min_confidence),
    };
};

template <>
struct FieldList<AnswerSpan> {
    using T = AnswerSpan;
    static constexpr auto value = std::tuple{field("start", &T::start), field("end", &T::end)};
};

template <>
struct FieldList<RagCitation> {
    using T = RagCitation;
    static constexpr auto value = std::tuple{
        field("n", &T::n),
        field("id", &T::id),
        field("selection", &T::selection),
        field("kind", &T::kind),
        field("document", &T::document),
        field("title", &T::title),
        field("chunk", &T::chunk),
        field("char_offset", &T::char_offset),
        field("char_end", &T::char_end),
        field("tier", &T::tier),
        field("text", &T::text),
        field("spans", &T::spans),
        field("loaded_at", &T::loaded_at),
        field("date", &T::date),
        field("max_age", &T::max_age),
        field("stale", &T::stale),
        field("subject", &T::subject),
        field("predicate", &T::predicate),
        field("object", &T::object),
    };
};

template <>
struct FieldList<RagResponse> {
    using T = RagResponse;
    static constexpr auto value = std::tuple{
        field("message_type", &T::message_type),
        field("response", &T::response),
        field("explain_id", &T::explain_id),
        field("explain_graph", &T::explain_graph),
        field("explain_triples", &T::explain_triples),
        field("end_of_stream", &T::end_of_stream),
        field("end_of_session", &T::end_of_session),
        field("in_token", &T::in_token),
        field("out_token", &T::out_token),
        field("model", &T::model),
        field("sources", &T::sources),
        field("error", &T::error),
        field("answer", &T::answer),
        field("answer_selections", &T::answer_selections),
        field("citations", &T::citations),
    };
};

template <>
struct FieldList<AgentResponse> {
    using T = AgentResponse;
    static constexpr auto value = std::tuple{
        field("message_type", &T::message_type),
        field("content", &T::content),
        field("end_of_message", &T::end_of_message),
        field("end_of_dialog", &T::end_of_dialog),
        field("message_id", &T::message_id),
        field("explain_id", &T::explain_id),
        field("explain_graph", &T::explain_graph),
        field("explain_triples", &T::explain_triples),
        field("error", &T::error),
    };
};

}  // namespace detail

GLASSBOX_FIELD_LIST_CODEC(GraphRagQuery)
GLASSBOX_FIELD_LIST_CODEC(DocumentRagQuery)
GLASSBOX_FIELD_LIST_CODEC(AgentHistoryStep)
GLASSBOX_FIELD_LIST_CODEC(AgentRequest)
GLASSBOX_FIELD_LIST_CODEC(QueryRequest)
namespace {

// A reply that carries explain triples: an explain message read as one (a sub-run's step a router
// forwards as PARTIAL data) may hold them in the dictionary form (docs/protocol.md §8.1).
template <typename T>
base::Result<T> decode_with_explain_triples(const nlohmann::json& value) {
    return detail::guarded<T>([&]() -> base::Result<T> {
        if (!has_term_dictionary(value)) return detail::decode_fields<T>(value, "");
        nlohmann::json rest = value;
        rest.erase("explain_terms");
        rest.erase("explain_triples");
        auto m = detail::decode_fields<T>(rest, "");
        if (!m) return m;
        auto triples = decode_explain_triples(value, m->explain_graph);
        if (!triples) return std::move(triples).error();
        m->explain_triples = std::move(triples).value();
        return m;
    });
}

}  // namespace

nlohmann::json encode(const RagResponse& m) { return detail::encode_fields(m); }
template <>
base::Result<RagResponse> decode<RagResponse>(const nlohmann::json& value) {
    return decode_with_explain_triples<RagResponse>(value);
}
nlohmann::json encode(const AgentResponse& m) { return detail::encode_fields(m); }
template <>
base::Result<AgentResponse> decode<AgentResponse>(const nlohmann::json& value) {
    return decode_with_explain_triples<AgentResponse>(value);
}

bool has_words(std::string_view question) noexcept {
    return std::any_of(question.begin(), question.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u >= 0x80 || (u >= '0' && u <= '9') || (u >= 'A' && u <= 'Z') ||
               (u >= 'a' && u <= 'z');
    });
}

bool usable_request_id(std::string_view id) noexcept {
    if (id.empty() || id.size() > kMaxRequestIdBytes) return false;
    for (const char c : id)
        if (c < 0x21 || c > 0x7e) return false;
    return true;
}

}  // namespace glassbox::schema
