// JSON codecs of every message type; decoders are total (no exception escapes).
#include "schema/messages.hpp"

#include <array>
#include <utility>

#include "schema/detail/json_reader.hpp"
#include "schema/json_fast.hpp"
#include "schema/term_json.hpp"

namespace glassbox::schema {
namespace {

using detail::decode_error;
using detail::field_path;
using detail::json;
using detail::ObjectReader;
using detail::type_error;

template <typename E>
struct EnumName {
    E value;
    std::string_view name;
};

constexpr std::array kQueryModes{
    EnumName<QueryMode>{QueryMode::kAuto, "auto"},
    EnumName<QueryMode>{QueryMode::kGraphRag, "graph-rag"},
    EnumName<QueryMode>{QueryMode::kDocumentRag, "document-rag"},
    EnumName<QueryMode>{QueryMode::kAgent, "agent"},
};
constexpr std::array kRagTypes{
    EnumName<RagMessageType>{RagMessageType::kChunk, "chunk"},
    EnumName<RagMessageType>{RagMessageType::kExplain, "explain"},
    EnumName<RagMessageType>{RagMessageType::kError, "error"},
};
constexpr std::array kAgentTypes{
    EnumName<AgentMessageType>{AgentMessageType::kThought, "thought"},
    EnumName<AgentMessageType>{AgentMessageType::kObservation, "observation"},
    EnumName<AgentMessageType>{AgentMessageType::kAnswer, "answer"},
    EnumName<AgentMessageType>{AgentMessageType::kExplain, "explain"},
    EnumName<AgentMessageType>{AgentMessageType::kError, "error"},
};
constexpr std::array kTraceStatuses{
    EnumName<TraceStatus>{TraceStatus::kNone, ""},
    EnumName<TraceStatus>{TraceStatus::kComplete, "complete"},
    EnumName<TraceStatus>{TraceStatus::kError, "error"},
    EnumName<TraceStatus>{TraceStatus::kIncomplete, "incomplete"},
};

template <typename E, std::size_t N>
std::string_view enum_name(const std::array<EnumName<E>, N>& table, E value) {
    for (const auto& e : table) {
        if (e.value == value) return e.name;
    }
    return table.front().name;
}

template <typename E, std::size_t N>
std::optional<E> enum_value(const std::array<EnumName<E>, N>& table, std::string_view name) {
    for (const auto& e : table) {
        if (e.name == name) return e.value;
    }
    return std::nullopt;
}

// Reads an enum spelled as a string; an unknown spelling is a decode error.
template <typename E, std::size_t N>
void read_enum(ObjectReader& r, std::string_view key, E& out,
               const std::array<EnumName<E>, N>& table) {
    const json* v = r.find(key);
    if (!v) return;
    const auto p = field_path(r.path(), key);
    if (!v->is_string()) {
        r.fail(type_error(p, "string", *v));
        return;
    }
    const auto& name = v->get_ref<const std::string&>();
    if (auto e = enum_value(table, name)) {
        out = *e;
    } else {
        std::string allowed;
        for (const auto& entry : table) {
            if (entry.name.empty()) continue;
            if (!allowed.empty()) allowed += "|";
            allowed += entry.name;
        }
        r.fail(decode_error(p, "unknown value \"" + name + "\" (expected " + allowed + ")"));
    }
}

void put_optional(json& j, std::string_view key, const std::optional<std::string>& value) {
    if (value) j[std::string(key)] = *value;
}

json encode_triples(const std::vector<Triple>& triples) {
    json a = json::array();
    for (const auto& t : triples) a.push_back(encode(t));
    return a;
}

json encode_entity_matches(const std::vector<EntityMatch>& matches) {
    json a = json::array();
    for (const auto& e : matches) a.push_back({{"entity", encode(e.entity)}, {"score", e.score}});
    return a;
}

json encode_vectors(const std::vector<std::vector<double>>& vectors) {
    json a = json::array();
    for (const auto& v : vectors) a.push_back(v);
    return a;
}

std::optional<Term> optional_term(ObjectReader& r, std::string_view key) {
    const json* v = r.find(key);
    if (!v) return std::nullopt;
    auto t = decode_term(*v, field_path(r.path(), key));
    if (!t.ok()) {
        r.fail(std::move(t).error());
        return std::nullopt;
    }
    return std::move(t).value();
}

void put_term(json& j, std::string_view key, const std::optional<Term>& t) {
    if (t) j[std::string(key)] = encode(*t);
}

// Decoders that carry a path, so that nested values name where they are.
// Result<Error> cannot exist (its two constructors would clash): an engaged optional instead.
base::Result<std::optional<base::Error>> decode_error_at(const json& v, const std::string& path) {
    ObjectReader r(v, path);
    std::string type;
    base::Error e;
    r.read("type", type);
    r.read("message", e.message);
    if (!r.ok()) return r.error();
    if (!type.empty()) {
        auto t = base::error_type_from_string(type);
        if (!t) return decode_error(field_path(path, "type"), "unknown error type \"" + type + "\"");
        e.type = *t;
    }
    return std::optional<base::Error>(std::move(e));
}

base::Result<Triple> triple_at(const json& v, const std::string& path) { return decode_triple(v, path); }

base::Result<std::vector<double>> vector_at(const json& v, const std::string& path) {
    if (!v.is_array()) return type_error(path, "array", v);
    std::vector<double> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_number()) return type_error(detail::index_path(path, i), "number", v[i]);
        out.push_back(v[i].get<double>());
    }
    return out;
}

base::Result<AgentHistoryStep> history_at(const json& v, const std::string& path) {
    ObjectReader r(v, path);
    AgentHistoryStep m;
    r.read("thought", m.thought);
    r.read("action", m.action);
    r.read("arguments", m.arguments);
    r.read("observation", m.observation);
    if (!r.ok()) return r.error();
    return m;
}

base::Result<TriplePattern> pattern_at(const json& v, const std::string& path) {
    ObjectReader r(v, path);
    TriplePattern m;
    m.s = optional_term(r, "s");
    m.p = optional_term(r, "p");
    m.o = optional_term(r, "o");
    r.read("g", m.g);
    if (!r.ok()) return r.error();
    return m;
}

// A JSON array as a list, each element read by element_at(value, its path).
template <typename T, typename ElementAt>
base::Result<std::vector<T>> list_at(const json& v, const std::string& path, ElementAt&& element_at) {
    if (!v.is_array()) return type_error(path, "array", v);
    std::vector<T> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        auto element = element_at(v[i], detail::index_path(path, i));
        if (!element.ok()) return std::move(element).error();
        out.push_back(std::move(element).value());
    }
    return out;
}

base::Result<std::vector<Triple>> triple_list_at(const json& v, const std::string& path) {
    return list_at<Triple>(v, path, [](const json& t, const std::string& at) { return decode_triple(t, at); });
}

base::Result<EntityMatch> entity_match_at(const json& v, const std::string& path) {
    ObjectReader r(v, path);
    EntityMatch m;
    if (const json* e = r.require("entity")) {
        auto t = decode_term(*e, field_path(path, "entity"));
        if (!t.ok()) return std::move(t).error();
        m.entity = std::move(t).value();
    }
    r.read("score", m.score);
    if (!r.ok()) return r.error();
    return m;
}

base::Result<std::vector<EntityMatch>> entity_list_at(const json& v, const std::string& path) {
    return list_at<EntityMatch>(v, path, entity_match_at);
}

base::Result<ChunkMatch> chunk_match_at(const json& v, const std::string& path) {
    ObjectReader r(v, path);
    ChunkMatch m;
    r.read("chunk_id", m.chunk_id);
    r.read("score", m.score);
    if (!r.ok()) return r.error();
    return m;
}

base::Result<Chunk> chunk_at(const json& v, const std::string& path) {
    ObjectReader r(v, path);
    Chunk m;
    r.read("chunk_id", m.chunk_id);
    r.read("document_id", m.document_id);
    r.read("text", m.text);
    r.read("char_offset", m.char_offset);
    r.read("char_length", m.char_length);
    r.read("ordinal", m.ordinal);
    r.read("document_title", m.document_title);
    r.read("tier", m.tier);
    if (!r.ok()) return r.error();
    return m;
}

base::Result<SourceInfo> source_info_at(const json& v, const std::string& path) {
    ObjectReader r(v, path);
    SourceInfo m;
    r.read("uri", m.uri);
    r.read("path", m.path);
    r.read("media_type", m.media_type);
    r.read("tier", m.tier);
    r.read("loaded_at", m.loaded_at);
    if (!r.ok()) return r.error();
    return m;
}

base::Result<ChunkLoad> chunk_load_at(const json& v, const std::string& path) {
    ObjectReader r(v, path);
    ChunkLoad m;
    r.read("ordinal", m.ordinal);
    r.read("char_offset", m.char_offset);
    r.read("char_length", m.char_length);
    r.read("text", m.text);
    if (!r.ok()) return r.error();
    return m;
}

base::Result<DocumentLoad> document_load_at(const json& v, const std::string& path) {
    ObjectReader r(v, path);
    DocumentLoad m;
    r.read("uri", m.uri);
    r.read("title", m.title);
    r.read_with("source", m.source, source_info_at);
    r.read("text", m.text);
    r.read_array("chunks", m.chunks, chunk_load_at);
    if (!r.ok()) return r.error();
    return m;
}

base::Result<FactSource> fact_source_at(const json& v, const std::string& path) {
    ObjectReader r(v, path);
    FactSource m;
    r.read("source", m.source);
    r.read("kind", m.kind);
    r.read("document", m.document);
    r.read("tier", m.tier);
    r.read("loaded_at", m.loaded_at);
    if (!r.ok()) return r.error();
    return m;
}

base::Result<std::vector<FactSource>> fact_source_list_at(const json& v, const std::string& path) {
    if (!v.is_array()) return type_error(path, "array", v);
    std::vector<FactSource> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        auto item = fact_source_at(v[i], detail::index_path(path, i));
        if (!item.ok()) return std::move(item).error();
        out.push_back(std::move(item).value());
    }
    return out;
}

base::Result<Term> term_at(const json& v, const std::string& path) { return decode_term(v, path); }

base::Result<std::map<std::string, std::uint64_t>> counts_at(const json& v, const std::string& path) {
    if (!v.is_object()) return type_error(path, "object", v);
    std::map<std::string, std::uint64_t> out;
    for (const auto& [key, value] : v.items()) {
        if (!value.is_number_unsigned()) return type_error(field_path(path, key), "non-negative integer", value);
        out[key] = value.get<std::uint64_t>();
    }
    return out;
}

template <typename T, typename F>
base::Result<T> guarded(F&& body) {
    try {
        return body();
    } catch (const std::exception& e) {
        // Only allocation failures can get here: every access above is checked first.
        return base::make_error(base::ErrorType::kDecodeError, std::string("$: ") + e.what());
    }
}

template <typename T>
base::Result<T> finish(ObjectReader& r, T&& value) {
    if (!r.ok()) return r.error();
    return std::forward<T>(value);
}

bool depth_within_limit(std::string_view text) {
    std::size_t depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxJsonDepth) return false;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return true;
}

}  // namespace

// ---- JSON text ----------------------------------------------------------------------------

base::Result<nlohmann::json> parse_json(std::string_view text) {
    if (!depth_within_limit(text)) {
        return base::make_error(base::ErrorType::kInvalidJson,
                          "JSON nested deeper than " + std::to_string(kMaxJsonDepth));
    }
    try {
        // No callback, no exceptions: an error (including ill-formed UTF-8) gives `discarded`.
        auto value = json::parse(text.begin(), text.end(), nullptr, false);
        if (value.is_discarded()) {
            return base::make_error(base::ErrorType::kInvalidJson, "not valid UTF-8 JSON");
        }
        return value;
    } catch (const std::exception& e) {
        return base::make_error(base::ErrorType::kInvalidJson, e.what());
    }
}

std::string dump(const nlohmann::json& value) {
    try {
        return value.dump(-1, ' ', false, json::error_handler_t::replace);
    } catch (const std::exception&) {
        return "null";
    }
}

// ---- enums --------------------------------------------------------------------------------

std::string_view to_string(QueryMode mode) noexcept { return enum_name(kQueryModes, mode); }
std::optional<QueryMode> query_mode_from_string(std::string_view name) noexcept {
    return enum_value(kQueryModes, name);
}
std::string_view to_string(RagMessageType type) noexcept { return enum_name(kRagTypes, type); }
std::string_view to_string(AgentMessageType type) noexcept { return enum_name(kAgentTypes, type); }
std::string_view to_string(TraceStatus status) noexcept { return enum_name(kTraceStatuses, status); }
std::optional<TraceStatus> trace_status_from_string(std::string_view name) noexcept {
    return enum_value(kTraceStatuses, name);
}

// ---- encoders -----------------------------------------------------------------------------

json encode(const base::Error& e) {
    return {{"type", std::string(to_string(e.type))}, {"message", e.message}};
}

json encode(const GraphRagQuery& m) {
    json j{{"query", m.query},
           {"collection", m.collection},
           {"entity_limit", m.entity_limit},
           {"triple_limit", m.triple_limit},
           {"max_subgraph_size", m.max_subgraph_size},
           {"max_path_length", m.max_path_length},
           {"edge_score_limit", m.edge_score_limit},
           {"edge_limit", m.edge_limit},
           {"streaming", m.streaming}};
    put_optional(j, "parent_uri", m.parent_uri);
    return j;
}

json encode(const DocumentRagQuery& m) {
    json j{{"query", m.query},         {"collection", m.collection},
           {"doc_limit", m.doc_limit}, {"fetch_limit", m.fetch_limit},
           {"streaming", m.streaming}};
    put_optional(j, "parent_uri", m.parent_uri);
    return j;
}

json encode(const AgentHistoryStep& m) {
    return {{"thought", m.thought},
            {"action", m.action},
            {"arguments", m.arguments},
            {"observation", m.observation}};
}

json encode(const AgentRequest& m) {
    json history = json::array();
    for (const auto& h : m.history) history.push_back(encode(h));
    json j{{"question", m.question},     {"collection", m.collection},
           {"history", history},         {"session_id", m.session_id},
           {"max_iterations", m.max_iterations}, {"streaming", m.streaming}};
    put_optional(j, "parent_uri", m.parent_uri);
    return j;
}

json encode(const QueryRequest& m) {
    return {{"text", m.text},
            {"mode", std::string(to_string(m.mode))},
            {"collection", m.collection},
            {"streaming", m.streaming}};
}

json encode(const RagResponse& m) {
    json j{{"message_type", std::string(to_string(m.message_type))},
           {"response", m.response},
           {"explain_id", m.explain_id},
           {"explain_graph", m.explain_graph},
           {"explain_triples", encode_triples(m.explain_triples)},
           {"end_of_stream", m.end_of_stream},
           {"end_of_session", m.end_of_session},
           {"in_token", m.in_token},
           {"out_token", m.out_token},
           {"model", m.model},
           {"sources", m.sources}};
    if (m.error) j["error"] = encode(*m.error);
    return j;
}

json encode(const AgentResponse& m) {
    json j{{"message_type", std::string(to_string(m.message_type))},
           {"content", m.content},
           {"end_of_message", m.end_of_message},
           {"end_of_dialog", m.end_of_dialog},
           {"message_id", m.message_id},
           {"explain_id", m.explain_id},
           {"explain_graph", m.explain_graph},
           {"explain_triples", encode_triples(m.explain_triples)}};
    if (m.error) j["error"] = encode(*m.error);
    return j;
}

json encode(const TriplePattern& m) {
    json j = json::object();
    put_term(j, "s", m.s);
    put_term(j, "p", m.p);
    put_term(j, "o", m.o);
    put_optional(j, "g", m.g);
    return j;
}

json encode(const TriplesQuery& m) {
    json j = json::object();
    put_term(j, "s", m.s);
    put_term(j, "p", m.p);
    put_term(j, "o", m.o);
    put_optional(j, "g", m.g);
    j["limit"] = m.limit;
    j["collection"] = m.collection;
    return j;
}

json encode(const TriplesQueryBatch& m) {
    json patterns = json::array();
    for (const auto& p : m.patterns) patterns.push_back(encode(p));
    return {{"patterns", patterns}, {"limit", m.limit}, {"collection", m.collection}};
}

json encode(const TriplesResponse& m) { return {{"triples", encode_triples(m.triples)}}; }

json encode(const TriplesBatchResponse& m) {
    json results = json::array();
    for (const auto& r : m.results) results.push_back(encode_triples(r));
    return {{"results", results}};
}

json encode(const EmbeddingsRequest& m) { return {{"texts", m.texts}}; }

json encode(const EmbeddingsResponse& m) {
    return {{"vectors", encode_vectors(m.vectors)}, {"model", m.model}, {"dim", m.dim}};
}

json encode(const GraphEmbeddingsQuery& m) {
    return {{"vectors", encode_vectors(m.vectors)}, {"limit", m.limit}, {"collection", m.collection}};
}

json encode(const GraphEmbeddingsResponse& m) { return {{"entities", encode_entity_matches(m.entities)}}; }

json encode(const GraphEmbeddingsBatchResponse& m) {
    json results = json::array();
    for (const auto& r : m.results) results.push_back(encode_entity_matches(r));
    return {{"results", results}};
}

json encode(const DocumentEmbeddingsQuery& m) {
    return {{"vectors", encode_vectors(m.vectors)}, {"limit", m.limit}, {"collection", m.collection}};
}

json encode(const ChunkKeywordQuery& m) {
    return {{"query", m.query}, {"limit", m.limit}, {"collection", m.collection}};
}

json encode(const ChunkMatchResponse& m) {
    json a = json::array();
    for (const auto& c : m.chunks) a.push_back({{"chunk_id", c.chunk_id}, {"score", c.score}});
    return {{"chunks", a}};
}

json encode(const ChunkFetchRequest& m) {
    return {{"chunk_ids", m.chunk_ids}, {"collection", m.collection}};
}

json encode(const ChunkFetchResponse& m) {
    json a = json::array();
    for (const auto& c : m.chunks) {
        a.push_back({{"chunk_id", c.chunk_id},
                     {"document_id", c.document_id},
                     {"text", c.text},
                     {"char_offset", c.char_offset},
                     {"char_length", c.char_length},
                     {"ordinal", c.ordinal},
                     {"document_title", c.document_title},
                     {"tier", c.tier}});
    }
    return {{"chunks", a}};
}

json encode(const SourceInfo& m) {
    return {{"uri", m.uri}, {"path", m.path}, {"media_type", m.media_type}, {"tier", m.tier},
            {"loaded_at", m.loaded_at}};
}

json encode(const LoadTriplesRequest& m) {
    return {{"collection", m.collection}, {"source", encode(m.source)}, {"nquads", m.nquads}};
}

json encode(const LoadTriplesResponse& m) {
    return {{"statements", m.statements}, {"added", m.added}, {"present", m.present}};
}

json encode(const ChunkLoad& m) {
    return {{"ordinal", m.ordinal}, {"char_offset", m.char_offset}, {"char_length", m.char_length},
            {"text", m.text}};
}

json encode(const DocumentLoad& m) {
    json chunks = json::array();
    for (const auto& c : m.chunks) chunks.push_back(encode(c));
    return {{"uri", m.uri}, {"title", m.title}, {"source", encode(m.source)}, {"text", m.text},
            {"chunks", chunks}};
}

json encode(const LoadDocumentsRequest& m) {
    json documents = json::array();
    for (const auto& d : m.documents) documents.push_back(encode(d));
    return {{"collection", m.collection}, {"documents", documents}, {"embed", m.embed}};
}

json encode(const LoadDocumentsResponse& m) {
    return {{"documents_added", m.documents_added},
            {"documents_replaced", m.documents_replaced},
            {"documents_unchanged", m.documents_unchanged},
            {"chunks_written", m.chunks_written},
            {"chunks_embedded", m.chunks_embedded}};
}

json encode(const IndexRequest& m) { return {{"collection", m.collection}}; }

json encode(const IndexResponse& m) {
    return {{"entities_indexed", m.entities_indexed}, {"chunks_indexed", m.chunks_indexed}, {"model", m.model},
            {"dim", m.dim}};
}

json encode(const FactSourcesRequest& m) {
    return {{"collection", m.collection}, {"triples", encode_triples(m.triples)}};
}

json encode(const FactSource& m) {
    json j{{"source", m.source}, {"kind", m.kind}, {"tier", m.tier}, {"loaded_at", m.loaded_at}};
    put_optional(j, "document", m.document);
    return j;
}

json encode(const FactSourcesResponse& m) {
    json all = json::array();
    for (const auto& list : m.sources) {
        json one = json::array();
        for (const auto& source : list) one.push_back(encode(source));
        all.push_back(std::move(one));
    }
    return {{"sources", all}};
}

json encode(const LabelsRequest& m) {
    json terms = json::array();
    for (const auto& t : m.terms) terms.push_back(encode(t));
    return {{"collection", m.collection}, {"terms", terms}};
}

json encode(const LabelsResponse& m) { return {{"labels", m.labels}}; }

json encode(const HybridChunkQuery& m) {
    return {{"query", m.query}, {"vectors", encode_vectors(m.vectors)}, {"limit", m.limit},
            {"collection", m.collection}};
}

json encode(const StoreStatsRequest& m) { return {{"collection", m.collection}}; }

json encode(const StoreStats& m) {
    return {{"collection", m.collection},
            {"quads", m.quads},
            {"subjects", m.subjects},
            {"predicates", m.predicates},
            {"objects", m.objects},
            {"terms", m.terms},
            {"graphs", m.graphs},
            {"sources", m.sources},
            {"facts_per_tier", m.facts_per_tier},
            {"documents", m.documents},
            {"chunks", m.chunks},
            {"entity_vectors", m.entity_vectors},
            {"chunk_vectors", m.chunk_vectors},
            {"model", m.model},
            {"dim", m.dim},
            {"bytes_on_disk", m.bytes_on_disk}};
}

json encode(const LlmRequest& m) {
    return {{"template", m.template_name}, {"variables", m.variables}, {"streaming", m.streaming}};
}

json encode(const LlmResponse& m) {
    json j{{"text", m.text},           {"model", m.model},
           {"in_token", m.in_token},   {"out_token", m.out_token},
           {"end_of_stream", m.end_of_stream}};
    if (m.json) j["json"] = *m.json;
    return j;
}

json encode(const EchoRequest& m) {
    json j = m.extra.is_object() ? m.extra : json::object();
    j["question"] = m.question;
    put_optional(j, "parent_uri", m.parent_uri);
    return j;
}

// The explain message's one encoder is encode_text (json_fast.cpp: the workers' hot path writes
// its bytes directly); the tree is that text parsed, so the two cannot differ.
json encode(const ExplainMessage& m) { return json::parse(encode_text(m), nullptr, false); }

// ---- decoders -----------------------------------------------------------------------------

template <>
base::Result<GraphRagQuery> decode<GraphRagQuery>(const json& v) {
    return guarded<GraphRagQuery>([&]() -> base::Result<GraphRagQuery> {
        ObjectReader r(v, "");
        GraphRagQuery m;
        r.read("query", m.query);
        r.read("collection", m.collection);
        r.read("entity_limit", m.entity_limit);
        r.read("triple_limit", m.triple_limit);
        r.read("max_subgraph_size", m.max_subgraph_size);
        r.read("max_path_length", m.max_path_length);
        r.read("edge_score_limit", m.edge_score_limit);
        r.read("edge_limit", m.edge_limit);
        r.read("streaming", m.streaming);
        r.read("parent_uri", m.parent_uri);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<DocumentRagQuery> decode<DocumentRagQuery>(const json& v) {
    return guarded<DocumentRagQuery>([&]() -> base::Result<DocumentRagQuery> {
        ObjectReader r(v, "");
        DocumentRagQuery m;
        r.read("query", m.query);
        r.read("collection", m.collection);
        r.read("doc_limit", m.doc_limit);
        r.read("fetch_limit", m.fetch_limit);
        r.read("streaming", m.streaming);
        r.read("parent_uri", m.parent_uri);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<AgentHistoryStep> decode<AgentHistoryStep>(const json& v) {
    return guarded<AgentHistoryStep>([&] { return history_at(v, ""); });
}

template <>
base::Result<AgentRequest> decode<AgentRequest>(const json& v) {
    return guarded<AgentRequest>([&]() -> base::Result<AgentRequest> {
        ObjectReader r(v, "");
        AgentRequest m;
        r.read("question", m.question);
        r.read("collection", m.collection);
        r.read_array("history", m.history, history_at);
        r.read("session_id", m.session_id);
        r.read("max_iterations", m.max_iterations);
        r.read("streaming", m.streaming);
        r.read("parent_uri", m.parent_uri);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<QueryRequest> decode<QueryRequest>(const json& v) {
    return guarded<QueryRequest>([&]() -> base::Result<QueryRequest> {
        ObjectReader r(v, "");
        QueryRequest m;
        r.read("text", m.text);
        read_enum(r, "mode", m.mode, kQueryModes);
        r.read("collection", m.collection);
        r.read("streaming", m.streaming);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<RagResponse> decode<RagResponse>(const json& v) {
    return guarded<RagResponse>([&]() -> base::Result<RagResponse> {
        ObjectReader r(v, "");
        RagResponse m;
        read_enum(r, "message_type", m.message_type, kRagTypes);
        r.read("response", m.response);
        r.read("explain_id", m.explain_id);
        r.read("explain_graph", m.explain_graph);
        r.read_array("explain_triples", m.explain_triples, triple_at);
        r.read("end_of_stream", m.end_of_stream);
        r.read("end_of_session", m.end_of_session);
        r.read("in_token", m.in_token);
        r.read("out_token", m.out_token);
        r.read("model", m.model);
        r.read("sources", m.sources);
        r.read_with("error", m.error, decode_error_at);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<AgentResponse> decode<AgentResponse>(const json& v) {
    return guarded<AgentResponse>([&]() -> base::Result<AgentResponse> {
        ObjectReader r(v, "");
        AgentResponse m;
        read_enum(r, "message_type", m.message_type, kAgentTypes);
        r.read("content", m.content);
        r.read("end_of_message", m.end_of_message);
        r.read("end_of_dialog", m.end_of_dialog);
        r.read("message_id", m.message_id);
        r.read("explain_id", m.explain_id);
        r.read("explain_graph", m.explain_graph);
        r.read_array("explain_triples", m.explain_triples, triple_at);
        r.read_with("error", m.error, decode_error_at);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<TriplePattern> decode<TriplePattern>(const json& v) {
    return guarded<TriplePattern>([&] { return pattern_at(v, ""); });
}

template <>
base::Result<TriplesQuery> decode<TriplesQuery>(const json& v) {
    return guarded<TriplesQuery>([&]() -> base::Result<TriplesQuery> {
        ObjectReader r(v, "");
        TriplesQuery m;
        m.s = optional_term(r, "s");
        m.p = optional_term(r, "p");
        m.o = optional_term(r, "o");
        r.read("g", m.g);
        r.read("limit", m.limit);
        r.read("collection", m.collection);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<TriplesQueryBatch> decode<TriplesQueryBatch>(const json& v) {
    return guarded<TriplesQueryBatch>([&]() -> base::Result<TriplesQueryBatch> {
        ObjectReader r(v, "");
        TriplesQueryBatch m;
        r.read_array("patterns", m.patterns, pattern_at);
        r.read("limit", m.limit);
        r.read("collection", m.collection);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<TriplesResponse> decode<TriplesResponse>(const json& v) {
    return guarded<TriplesResponse>([&]() -> base::Result<TriplesResponse> {
        ObjectReader r(v, "");
        TriplesResponse m;
        r.read_array("triples", m.triples, triple_at);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<TriplesBatchResponse> decode<TriplesBatchResponse>(const json& v) {
    return guarded<TriplesBatchResponse>([&]() -> base::Result<TriplesBatchResponse> {
        ObjectReader r(v, "");
        TriplesBatchResponse m;
        r.read_array("results", m.results, triple_list_at);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<EmbeddingsRequest> decode<EmbeddingsRequest>(const json& v) {
    return guarded<EmbeddingsRequest>([&]() -> base::Result<EmbeddingsRequest> {
        ObjectReader r(v, "");
        EmbeddingsRequest m;
        r.read("texts", m.texts);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<EmbeddingsResponse> decode<EmbeddingsResponse>(const json& v) {
    return guarded<EmbeddingsResponse>([&]() -> base::Result<EmbeddingsResponse> {
        ObjectReader r(v, "");
        EmbeddingsResponse m;
        r.read_array("vectors", m.vectors, vector_at);
        r.read("model", m.model);
        r.read("dim", m.dim);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<GraphEmbeddingsQuery> decode<GraphEmbeddingsQuery>(const json& v) {
    return guarded<GraphEmbeddingsQuery>([&]() -> base::Result<GraphEmbeddingsQuery> {
        ObjectReader r(v, "");
        GraphEmbeddingsQuery m;
        r.read_array("vectors", m.vectors, vector_at);
        r.read("limit", m.limit);
        r.read("collection", m.collection);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<GraphEmbeddingsResponse> decode<GraphEmbeddingsResponse>(const json& v) {
    return guarded<GraphEmbeddingsResponse>([&]() -> base::Result<GraphEmbeddingsResponse> {
        ObjectReader r(v, "");
        GraphEmbeddingsResponse m;
        r.read_array("entities", m.entities, entity_match_at);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<GraphEmbeddingsBatchResponse> decode<GraphEmbeddingsBatchResponse>(const json& v) {
    return guarded<GraphEmbeddingsBatchResponse>([&]() -> base::Result<GraphEmbeddingsBatchResponse> {
        ObjectReader r(v, "");
        GraphEmbeddingsBatchResponse m;
        r.read_array("results", m.results, entity_list_at);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<DocumentEmbeddingsQuery> decode<DocumentEmbeddingsQuery>(const json& v) {
    return guarded<DocumentEmbeddingsQuery>([&]() -> base::Result<DocumentEmbeddingsQuery> {
        ObjectReader r(v, "");
        DocumentEmbeddingsQuery m;
        r.read_array("vectors", m.vectors, vector_at);
        r.read("limit", m.limit);
        r.read("collection", m.collection);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<ChunkKeywordQuery> decode<ChunkKeywordQuery>(const json& v) {
    return guarded<ChunkKeywordQuery>([&]() -> base::Result<ChunkKeywordQuery> {
        ObjectReader r(v, "");
        ChunkKeywordQuery m;
        r.read("query", m.query);
        r.read("limit", m.limit);
        r.read("collection", m.collection);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<ChunkMatchResponse> decode<ChunkMatchResponse>(const json& v) {
    return guarded<ChunkMatchResponse>([&]() -> base::Result<ChunkMatchResponse> {
        ObjectReader r(v, "");
        ChunkMatchResponse m;
        r.read_array("chunks", m.chunks, chunk_match_at);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<ChunkFetchRequest> decode<ChunkFetchRequest>(const json& v) {
    return guarded<ChunkFetchRequest>([&]() -> base::Result<ChunkFetchRequest> {
        ObjectReader r(v, "");
        ChunkFetchRequest m;
        r.read("chunk_ids", m.chunk_ids);
        r.read("collection", m.collection);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<ChunkFetchResponse> decode<ChunkFetchResponse>(const json& v) {
    return guarded<ChunkFetchResponse>([&]() -> base::Result<ChunkFetchResponse> {
        ObjectReader r(v, "");
        ChunkFetchResponse m;
        r.read_array("chunks", m.chunks, chunk_at);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<LoadTriplesRequest> decode<LoadTriplesRequest>(const json& v) {
    return guarded<LoadTriplesRequest>([&]() -> base::Result<LoadTriplesRequest> {
        ObjectReader r(v, "");
        LoadTriplesRequest m;
        r.read("collection", m.collection);
        r.read_with("source", m.source, source_info_at);
        r.read("nquads", m.nquads);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<LoadTriplesResponse> decode<LoadTriplesResponse>(const json& v) {
    return guarded<LoadTriplesResponse>([&]() -> base::Result<LoadTriplesResponse> {
        ObjectReader r(v, "");
        LoadTriplesResponse m;
        r.read("statements", m.statements);
        r.read("added", m.added);
        r.read("present", m.present);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<LoadDocumentsRequest> decode<LoadDocumentsRequest>(const json& v) {
    return guarded<LoadDocumentsRequest>([&]() -> base::Result<LoadDocumentsRequest> {
        ObjectReader r(v, "");
        LoadDocumentsRequest m;
        r.read("collection", m.collection);
        r.read_array("documents", m.documents, document_load_at);
        r.read("embed", m.embed);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<LoadDocumentsResponse> decode<LoadDocumentsResponse>(const json& v) {
    return guarded<LoadDocumentsResponse>([&]() -> base::Result<LoadDocumentsResponse> {
        ObjectReader r(v, "");
        LoadDocumentsResponse m;
        r.read("documents_added", m.documents_added);
        r.read("documents_replaced", m.documents_replaced);
        r.read("documents_unchanged", m.documents_unchanged);
        r.read("chunks_written", m.chunks_written);
        r.read("chunks_embedded", m.chunks_embedded);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<IndexRequest> decode<IndexRequest>(const json& v) {
    return guarded<IndexRequest>([&]() -> base::Result<IndexRequest> {
        ObjectReader r(v, "");
        IndexRequest m;
        r.read("collection", m.collection);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<IndexResponse> decode<IndexResponse>(const json& v) {
    return guarded<IndexResponse>([&]() -> base::Result<IndexResponse> {
        ObjectReader r(v, "");
        IndexResponse m;
        r.read("entities_indexed", m.entities_indexed);
        r.read("chunks_indexed", m.chunks_indexed);
        r.read("model", m.model);
        r.read("dim", m.dim);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<FactSourcesRequest> decode<FactSourcesRequest>(const json& v) {
    return guarded<FactSourcesRequest>([&]() -> base::Result<FactSourcesRequest> {
        ObjectReader r(v, "");
        FactSourcesRequest m;
        r.read("collection", m.collection);
        r.read_array("triples", m.triples, triple_at);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<FactSourcesResponse> decode<FactSourcesResponse>(const json& v) {
    return guarded<FactSourcesResponse>([&]() -> base::Result<FactSourcesResponse> {
        ObjectReader r(v, "");
        FactSourcesResponse m;
        r.read_array("sources", m.sources, fact_source_list_at);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<LabelsRequest> decode<LabelsRequest>(const json& v) {
    return guarded<LabelsRequest>([&]() -> base::Result<LabelsRequest> {
        ObjectReader r(v, "");
        LabelsRequest m;
        r.read("collection", m.collection);
        r.read_array("terms", m.terms, term_at);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<LabelsResponse> decode<LabelsResponse>(const json& v) {
    return guarded<LabelsResponse>([&]() -> base::Result<LabelsResponse> {
        ObjectReader r(v, "");
        LabelsResponse m;
        r.read("labels", m.labels);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<HybridChunkQuery> decode<HybridChunkQuery>(const json& v) {
    return guarded<HybridChunkQuery>([&]() -> base::Result<HybridChunkQuery> {
        ObjectReader r(v, "");
        HybridChunkQuery m;
        r.read("query", m.query);
        r.read_array("vectors", m.vectors, vector_at);
        r.read("limit", m.limit);
        r.read("collection", m.collection);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<StoreStatsRequest> decode<StoreStatsRequest>(const json& v) {
    return guarded<StoreStatsRequest>([&]() -> base::Result<StoreStatsRequest> {
        ObjectReader r(v, "");
        StoreStatsRequest m;
        r.read("collection", m.collection);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<StoreStats> decode<StoreStats>(const json& v) {
    return guarded<StoreStats>([&]() -> base::Result<StoreStats> {
        ObjectReader r(v, "");
        StoreStats m;
        r.read("collection", m.collection);
        r.read("quads", m.quads);
        r.read("subjects", m.subjects);
        r.read("predicates", m.predicates);
        r.read("objects", m.objects);
        r.read("terms", m.terms);
        r.read("graphs", m.graphs);
        r.read("sources", m.sources);
        r.read_with("facts_per_tier", m.facts_per_tier, counts_at);
        r.read("documents", m.documents);
        r.read("chunks", m.chunks);
        r.read("entity_vectors", m.entity_vectors);
        r.read("chunk_vectors", m.chunk_vectors);
        r.read("model", m.model);
        r.read("dim", m.dim);
        r.read("bytes_on_disk", m.bytes_on_disk);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<LlmRequest> decode<LlmRequest>(const json& v) {
    return guarded<LlmRequest>([&]() -> base::Result<LlmRequest> {
        ObjectReader r(v, "");
        LlmRequest m;
        r.read("template", m.template_name);
        r.read("variables", m.variables);
        r.read("streaming", m.streaming);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<LlmResponse> decode<LlmResponse>(const json& v) {
    return guarded<LlmResponse>([&]() -> base::Result<LlmResponse> {
        ObjectReader r(v, "");
        LlmResponse m;
        r.read("text", m.text);
        if (const json* j = r.find("json")) m.json = *j;
        r.read("model", m.model);
        r.read("in_token", m.in_token);
        r.read("out_token", m.out_token);
        r.read("end_of_stream", m.end_of_stream);
        return finish(r, std::move(m));
    });
}

template <>
base::Result<EchoRequest> decode<EchoRequest>(const json& v) {
    return guarded<EchoRequest>([&]() -> base::Result<EchoRequest> {
        ObjectReader r(v, "");
        EchoRequest m;
        r.read("question", m.question);
        r.read("parent_uri", m.parent_uri);
        if (!r.ok()) return r.error();
        for (const auto& [key, value] : v.items()) {
            if (key != "question" && key != "parent_uri") m.extra[key] = value;
        }
        return m;
    });
}

template <>
base::Result<ExplainMessage> decode<ExplainMessage>(const json& v) {
    return guarded<ExplainMessage>([&]() -> base::Result<ExplainMessage> {
        ObjectReader r(v, "");
        ExplainMessage m;
        std::string message_type = "explain";
        r.read("message_type", message_type);
        if (r.ok() && message_type != "explain") {
            return decode_error("message_type", "expected \"explain\", got \"" + message_type + "\"");
        }
        r.read("session", m.session);
        r.read("seq", m.seq);
        r.read("service", m.service);
        r.read("worker", m.worker);
        r.read("parent_uri", m.parent_uri);
        r.read("explain_id", m.explain_id);
        r.read("explain_graph", m.explain_graph);
        r.read_array("explain_triples", m.explain_triples, triple_at);
        r.read("end_of_trace", m.end_of_trace);
        read_enum(r, "trace_status", m.trace_status, kTraceStatuses);
        r.read_with("error", m.error, decode_error_at);
        return finish(r, std::move(m));
    });
}

}  // namespace glassbox::schema
