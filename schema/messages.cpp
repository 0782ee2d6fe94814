// JSON text, the enums' spellings, and the codecs of the messages that are not plain field lists
// (the explain message, the echo request) or are few (the llm service's). The other families:
// messages_rag.cpp, messages_store.cpp, messages_trace.cpp.
#include "schema/messages.hpp"

#include <tuple>
#include <utility>

#include "schema/detail/message_codecs.hpp"
#include "schema/explain_terms.hpp"
#include "schema/explain_uris.hpp"
#include "schema/json_fast.hpp"

namespace glassbox::schema {
namespace detail {

base::Result<std::optional<base::Error>> ValueCodec<std::optional<base::Error>>::decode(
    const json& v, const std::string& path) {
    ObjectReader r(v, path);
    std::string type;
    base::Error e;
    r.read("type", type);
    r.read("message", e.message);
    if (!r.ok()) return r.error();
    if (!type.empty()) {
        auto t = base::error_type_from_string(type);
        if (!t)
            return decode_error(field_path(path, "type"), "unknown error type \"" + type + "\"");
        e.type = *t;
    }
    return std::optional<base::Error>(std::move(e));
}

json ValueCodec<std::optional<base::Error>>::encode(const std::optional<base::Error>& e) {
    return e ? schema::encode(*e) : json(nullptr);
}

template <>
struct FieldList<LlmRequest> {
    using T = LlmRequest;
    static constexpr auto value = std::tuple{
        field("template", &T::template_name),
        field("variables", &T::variables),
        field("streaming", &T::streaming),
    };
};

template <>
struct FieldList<LlmResponse> {
    using T = LlmResponse;
    static constexpr auto value = std::tuple{
        field("text", &T::text),           field("json", &T::json),
        field("model", &T::model),         field("in_token", &T::in_token),
        field("out_token", &T::out_token), field("end_of_stream", &T::end_of_stream),
        field("answer", &T::answer),       field("answer_ids", &T::answer_ids),
    };
};

// Decoded by field list after its message_type is checked; encoded by encode_text only.
template <>
struct FieldList<ExplainMessage> {
    using T = ExplainMessage;
    static constexpr auto value = std::tuple{
        field("session", &T::session),
        field("seq", &T::seq),
        field("service", &T::service),
        field("worker", &T::worker),
        field("parent_uri", &T::parent_uri),
        field("explain_id", &T::explain_id),
        field("explain_graph", &T::explain_graph),
        // explain_triples: in either form (docs/protocol.md §8.1), by decode_explain_triples.
        field("end_of_trace", &T::end_of_trace),
        field("trace_status", &T::trace_status),
        field("error", &T::error),
    };
};

}  // namespace detail

namespace {

using detail::json;
using detail::ObjectReader;

}  // namespace

// ---- JSON text ----------------------------------------------------------------------------

std::string dump(const nlohmann::json& value) {
    try {
        return value.dump(-1, ' ', false, json::error_handler_t::replace);
    } catch (const std::exception&) {
        return "null";
    }
}

// ---- enums --------------------------------------------------------------------------------

std::string_view to_string(QueryMode mode) noexcept {
    return detail::enum_name(detail::kQueryModes, mode);
}
std::optional<QueryMode> query_mode_from_string(std::string_view name) noexcept {
    return detail::enum_value(detail::kQueryModes, name);
}
std::string_view to_string(RagMessageType type) noexcept {
    return detail::enum_name(detail::kRagTypes, type);
}
std::string_view to_string(AgentMessageType type) noexcept {
    return detail::enum_name(detail::kAgentTypes, type);
}
std::string_view to_string(TraceStatus status) noexcept {
    return detail::enum_name(detail::kTraceStatuses, status);
}
std::optional<TraceStatus> trace_status_from_string(std::string_view name) noexcept {
    return detail::enum_value(detail::kTraceStatuses, name);
}

// ---- codecs -------------------------------------------------------------------------------

json encode(const base::Error& e) {
    return {{"type", std::string(to_string(e.type))}, {"message", e.message}};
}

GLASSBOX_FIELD_LIST_CODEC(LlmRequest)
GLASSBOX_FIELD_LIST_CODEC(LlmResponse)

// The request's own fields, and every other one kept in `extra` for the echo.
json encode(const EchoRequest& m) {
    json j = m.extra.is_object() ? m.extra : json::object();
    j["question"] = m.question;
    if (m.parent_uri) j["parent_uri"] = *m.parent_uri;
    return j;
}

template <>
base::Result<EchoRequest> decode<EchoRequest>(const json& v) {
    return detail::guarded<EchoRequest>([&]() -> base::Result<EchoRequest> {
        ObjectReader r(v, "");
        EchoRequest m;
        r.read("question", m.question);
        r.read("parent_uri", m.parent_uri);
        if (!r.ok()) return r.error();
        // It enters the echo's trace as an IRI (prov:used).
        if (m.parent_uri && !m.parent_uri->empty()) {
            if (auto why = explain::iri_problem(*m.parent_uri))
                return detail::decode_error("parent_uri", "not a valid IRI: " + *why);
        }
        for (const auto& [key, value] : v.items()) {
            if (key != "question" && key != "parent_uri") m.extra[key] = value;
        }
        return m;
    });
}

// The explain message's one encoder is encode_text (json_fast.cpp: the workers' hot path writes
// its bytes directly); the tree is that text parsed, so the two cannot differ.
json encode(const ExplainMessage& m) { return json::parse(encode_text(m), nullptr, false); }

namespace {

// The explain decoder's IRI rule: a valid IRI unchanged, another one made writable and counted.
// An empty one stays empty (where a field allows it, empty means "none").
void make_writable(std::string& iri, std::size_t& rewritten) {
    if (iri.empty() || explain::is_writable_iri(iri)) return;
    iri = explain::writable_iri(iri);
    ++rewritten;
}

std::optional<Triple> writable_triple(const Triple& triple, std::size_t& rewritten);

// `term` with its IRIs made writable, or nullopt when it has none to rewrite.
std::optional<Term> writable_term(const Term& term, std::size_t& rewritten) {
    const std::size_t before = rewritten;
    if (term.is_iri()) {
        Iri iri = term.as_iri();
        make_writable(iri.value, rewritten);
        if (rewritten != before) return Term(std::move(iri));
    } else if (term.is_literal()) {
        Literal literal = term.as_literal();
        make_writable(literal.datatype, rewritten);
        if (rewritten != before) return Term(std::move(literal));
    } else if (term.is_triple()) {
        if (auto inner = writable_triple(term.as_triple(), rewritten))
            return quoted(std::move(*inner));
    }
    return std::nullopt;
}

std::optional<Triple> writable_triple(const Triple& triple, std::size_t& rewritten) {
    const std::size_t before = rewritten;
    auto s = writable_term(triple.s, rewritten);
    auto p = writable_term(triple.p, rewritten);
    auto o = writable_term(triple.o, rewritten);
    std::optional<std::string> graph = triple.graph;
    if (graph) make_writable(*graph, rewritten);
    if (rewritten == before) return std::nullopt;
    return Triple{std::move(s).value_or(triple.s), std::move(p).value_or(triple.p),
                  std::move(o).value_or(triple.o), std::move(graph)};
}

}  // namespace

// The explain message's one decoder. (The collector's DOM-free scan only accelerates it, and is
// tested to agree: tests/unit/workers/trace_collector/explain_scan_test.cpp.)
base::Result<ExplainMessage> decode_explain(const json& v, std::size_t& iris_rewritten) {
    iris_rewritten = 0;
    return detail::guarded<ExplainMessage>([&]() -> base::Result<ExplainMessage> {
        ObjectReader r(v, "");
        std::string message_type = "explain";
        r.read("message_type", message_type);
        if (!r.ok()) return r.error();
        if (message_type != "explain") {
            return detail::decode_error("message_type",
                                        "expected \"explain\", got \"" + message_type + "\"");
        }
        auto m = detail::decode_fields<ExplainMessage>(v, "");
        if (!m) return m;
        auto triples = decode_explain_triples(v, m->explain_graph);
        if (!triples) return std::move(triples).error();
        m->explain_triples = std::move(triples).value();
        std::size_t rewritten = 0;
        make_writable(m->session, rewritten);
        make_writable(m->explain_id, rewritten);
        if (m->parent_uri) make_writable(*m->parent_uri, rewritten);
        make_writable(m->explain_graph, rewritten);
        for (auto& triple : m->explain_triples) {
            if (auto writable = writable_triple(triple, rewritten)) triple = std::move(*writable);
        }
        iris_rewritten = rewritten;
        return m;
    });
}

template <>
base::Result<ExplainMessage> decode<ExplainMessage>(const json& v) {
    std::size_t ignored = 0;
    return decode_explain(v, ignored);
}

}  // namespace glassbox::schema
