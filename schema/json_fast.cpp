// Tree-free writers and single-pass readers for the triple-carrying messages; see the header
// for how they are tied to the tree-based codecs.
#include "schema/json_fast.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/json_string.hpp"
#include "schema/json_cursor.hpp"
#include "schema/term_text.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::schema {
namespace {

// ---- writing ------------------------------------------------------------------------------

void append_uint(std::string& out, std::uint64_t value) {
    char buffer[24];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, end);
}

// A double as dump() writes it: nlohmann's own shortest round-trip digits, null when not finite.
void append_double(std::string& out, double value) {
    if (!std::isfinite(value)) {
        out += "null";
        return;
    }
    char buffer[64];
    char* end = nlohmann::detail::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, static_cast<std::size_t>(end - buffer));
}

// `[item, item, ...]`, each written by `write(out, item)`.
template <typename Items, typename Write>
void append_array(std::string& out, const Items& items, Write&& write) {
    out += '[';
    bool first = true;
    for (const auto& item : items) {
        if (!first) out += ',';
        first = false;
        write(out, item);
    }
    out += ']';
}

// `"o":O,"p":P,"s":S`: a triple's terms, keys in dump()'s sorted order.
void append_json_terms(std::string& out, const Triple& triple) {
    out += "\"o\":";
    append_json(out, triple.o);
    out += ",\"p\":";
    append_json(out, triple.p);
    out += ",\"s\":";
    append_json(out, triple.s);
}

// Writes one JSON object field by field. Callers give the keys in sorted order (dump()'s order,
// as nlohmann's objects are std::maps); keys are this file's own ASCII constants, so they are
// written unescaped.
class ObjectWriter {
public:
    explicit ObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
    ~ObjectWriter() { out_ += '}'; }
    ObjectWriter(const ObjectWriter&) = delete;
    ObjectWriter& operator=(const ObjectWriter&) = delete;

    // Starts a field; the value is appended to the returned string.
    std::string& key(std::string_view key) {
        if (!first_) out_ += ',';
        first_ = false;
        out_ += '"';
        out_ += key;
        out_ += "\":";
        return out_;
    }
    void string(std::string_view key, std::string_view value);
    void boolean(std::string_view name, bool value) { key(name) += value ? "true" : "false"; }
    void uint(std::string_view name, std::uint64_t value) { append_uint(key(name), value); }
    void error(std::string_view name, const base::Error& e) {
        ObjectWriter nested(key(name));
        nested.string("message", e.message);
        nested.string("type", to_string(e.type));
    }

private:
    std::string& out_;
    bool first_ = true;
};

// ---- reading ------------------------------------------------------------------------------

// The fast path's recursion (read_json_term) is bounded by kMaxQuotedTripleDepth and skipped values
// by kMaxJsonSkipDepth, never by the text; nothing it accepts is refused by the slow path for its
// depth: a batch reply's triple quoting triples to the bound stays well within.
static_assert(static_cast<std::size_t>(2 * kMaxQuotedTripleDepth) + 5 <= kMaxJsonDepth);

// Builds the value at the cursor into a tree (parse_json_tree); false for anything it leaves to
// the parser. Recursion is bounded by kMaxJsonSkipDepth levels, never by the text.
class TreeBuilder {
public:
    explicit TreeBuilder(std::string_view text) : cursor_(text), end_(text.data() + text.size()) {}

    bool whole(nlohmann::json& out) { return value(out, 0) && cursor_.at_end(); }

private:
    bool value(nlohmann::json& out, int depth) {
        cursor_.ws();
        if (cursor_.position() == end_ || depth > kMaxJsonSkipDepth) return false;
        switch (*cursor_.position()) {
            case '"':
                return string(out);
            case '{':
                return object(out, depth);
            case '[':
                return array(out, depth);
            case 't':
            case 'f': {
                bool b = false;
                if (!cursor_.boolean(b)) return false;
                out = b;
                return true;
            }
            case 'n':
                out = nullptr;
                return cursor_.skip();  // at an 'n', only the literal null
            default:
                return number(out);
        }
    }

    // The parser's number types: a non-negative integer that fits is number_unsigned; one with
    // a fraction or exponent is number_float (both round correctly; a value beyond double's
    // range is refused by real() and by the parser alike). A sign, or an integer too long, is
    // left to the parser.
    bool number(nlohmann::json& out) {
        const char* p = cursor_.position();
        if (*p < '0' || *p > '9') return false;
        while (p != end_ && *p >= '0' && *p <= '9') ++p;
        if (p != end_ && (*p == '.' || *p == 'e' || *p == 'E')) {
            double d = 0.0;
            if (!cursor_.real(d)) return false;
            out = d;
            return true;
        }
        std::uint64_t n = 0;
        if (!cursor_.uint(n)) return false;
        out = n;
        return true;
    }

    bool string(nlohmann::json& out) {
        JsonText text;
        if (!cursor_.raw_string(text)) return false;
        if (text.escaped) {
            std::string value;
            append_unescaped(value, text.raw);
            out = std::move(value);
        } else {
            out = std::string(text.raw);
        }
        return true;
    }

    bool object(nlohmann::json& out, int depth) {
        out = nlohmann::json::object();
        auto& members = out.get_ref<nlohmann::json::object_t&>();
        return cursor_.object([&](std::string_view key) {
            // A repeated key: the parser keeps the last value; it decides.
            const auto [it, added] = members.try_emplace(std::string(key));
            return added && value(it->second, depth + 1);
        });
    }

    bool array(nlohmann::json& out, int depth) {
        out = nlohmann::json::array();
        auto& items = out.get_ref<nlohmann::json::array_t&>();
        return cursor_.array([&] { return value(items.emplace_back(), depth + 1); });
    }

    JsonCursor cursor_;
    const char* end_;
};

// Every reader below returns false for "not the expected well-formed shape", after which the
// caller gives the whole text to the tree-based decoder.

// Terms and triples: read_json_term / read_json_triple (schema/term_text.hpp).

bool read_triples(JsonCursor& r, std::vector<Triple>& out) {
    out.clear();
    return r.array([&] { return read_json_triple(r, out.emplace_back()); });
}

bool read_strings(JsonCursor& r, std::vector<std::string>& out) {
    out.clear();
    return r.array([&] { return r.string(out.emplace_back()); });
}

bool read_vectors(JsonCursor& r, std::vector<std::vector<double>>& out) {
    out.clear();
    return r.array([&] {
        auto& vector = out.emplace_back();
        return r.array([&] { return r.real(vector.emplace_back()); });
    });
}

// decode_text<T>: one top-level object read into a T with `field(r, key, m)` per key (false:
// leave it to the slow path), then the end of the text; anything else is decode_body<T>'s.
template <typename T, typename Field>
base::Result<T> decode_fast(std::string_view text, Field&& field) {
    T m{};
    JsonCursor r(text);
    if (r.object([&](std::string_view key) { return field(r, key, m); }) && r.at_end()) return m;
    return decode_body<T>(text);
}
}  // namespace

// ---- public writers -----------------------------------------------------------------------

void ObjectWriter::string(std::string_view name, std::string_view value) {
    append_json_string(key(name), value);
}

// The shared writer (base/json_string); ill-formed UTF-8 (rare) is written as the tree writer
// writes it, replaced, for identical bytes.
void append_json_string(std::string& out, std::string_view value) {
    if (base::append_json_string(out, value)) return;
    out += nlohmann::json(std::string(value))
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_json_number(std::string& out, double value) { append_double(out, value); }

// Keys in the sorted order of nlohmann's std::map objects, so the bytes match dump().
void append_json(std::string& out, const Term& term) {
    switch (term.kind()) {
        case Term::Kind::kIri:
            append_json_iri(out, term.as_iri().value);
            return;
        case Term::Kind::kBlankNode:
            out += "{\"d\":";
            append_json_string(out, term.as_blank().id);
            out += ",\"t\":\"b\"}";
            return;
        case Term::Kind::kLiteral: {
            const auto& lit = term.as_literal();
            append_json_literal(out, lit.value, lit.datatype, lit.language);
            return;
        }
        case Term::Kind::kTriple:
            out += "{\"t\":\"t\",\"tr\":{";
            append_json_terms(out, term.as_triple());
            out += "}}";
            return;
    }
}

void append_json(std::string& out, const Triple& triple) {
    out += '{';
    if (triple.graph) {
        out += "\"g\":";
        append_json_string(out, *triple.graph);
        out += ',';
    }
    append_json_terms(out, triple);
    out += '}';
}

void append_json(std::string& out, std::span<const Triple> triples) {
    append_array(out, triples, [](std::string& o, const Triple& t) { append_json(o, t); });
}

std::string encode_text(const TriplesResponse& m) {
    std::string out;
    out.reserve(64 + m.triples.size() * 160);
    append_json(ObjectWriter(out).key("triples"), m.triples);
    return out;
}

std::string encode_text(const TriplesBatchResponse& m) {
    std::size_t count = 0;
    for (const auto& r : m.results) count += r.size();
    std::string out;
    out.reserve(64 + count * 160);
    {
        ObjectWriter object(out);
        if (m.counts) {
            append_array(object.key("counts"), *m.counts,
                         [](std::string& o, std::uint32_t n) { append_uint(o, n); });
        }
        if (m.labels) {
            append_array(object.key("labels"), *m.labels, [](std::string& o, const auto& names) {
                append_array(o, names, [](std::string& o2, const std::string& n) {
                    append_json_string(o2, n);
                });
            });
        }
        append_array(object.key("results"), m.results,
                     [](std::string& o, const auto& r) { append_json(o, r); });
    }
    return out;
}

std::string encode_text(const EmbeddingsResponse& m) {
    std::size_t values = 0;
    for (const auto& v : m.vectors) values += v.size();
    std::string out;
    out.reserve(64 + m.model.size() + values * 24);
    {
        ObjectWriter object(out);
        object.uint("dim", m.dim);
        object.string("model", m.model);
        append_array(object.key("vectors"), m.vectors,
                     [](std::string& o, const std::vector<double>& vector) {
                         append_array(o, vector, [](std::string& o2, double value) {
                             append_double(o2, value);
                         });
                     });
    }
    return out;
}

namespace {

// {"entity":TERM,"score":S}, a match as the field list writes it.
void append_match(std::string& out, const EntityMatch& match) {
    ObjectWriter object(out);
    append_json(object.key("entity"), match.entity);
    append_double(object.key("score"), match.score);
}

void append_matches(std::string& out, std::span<const EntityMatch> matches) {
    append_array(out, matches, [](std::string& o, const EntityMatch& m) { append_match(o, m); });
}

// Bytes of the text a match list is likely to take (a reserve, not a bound).
std::size_t match_bytes(std::span<const EntityMatch> matches) { return matches.size() * 96; }

}  // namespace

std::string encode_text(const GraphEmbeddingsResponse& m) {
    std::string out;
    out.reserve(32 + match_bytes(m.entities));
    append_matches(ObjectWriter(out).key("entities"), m.entities);
    return out;
}

std::string encode_text(const GraphEmbeddingsBatchResponse& m) {
    std::size_t reserve = 32;
    for (const auto& list : m.results) reserve += 4 + match_bytes(list);
    std::string out;
    out.reserve(reserve);
    append_array(
        ObjectWriter(out).key("results"), m.results,
        [](std::string& o, const std::vector<EntityMatch>& list) { append_matches(o, list); });
    return out;
}

std::string encode_text(const FactSourcesResponse& m) {
    std::size_t reserve = 32;
    for (const auto& list : m.sources) reserve += 4 + list.size() * 192;
    std::string out;
    out.reserve(reserve);
    append_array(ObjectWriter(out).key("sources"), m.sources,
                 [](std::string& o, const std::vector<FactSource>& list) {
                     append_array(o, list, [](std::string& o2, const FactSource& source) {
                         // Keys in the tree encoder's (sorted) order; no document, no key.
                         ObjectWriter object(o2);
                         if (source.date) object.string("date", *source.date);
                         if (source.document) object.string("document", *source.document);
                         object.string("kind", source.kind);
                         object.string("loaded_at", source.loaded_at);
                         if (source.max_age) object.string("max_age", *source.max_age);
                         object.string("source", source.source);
                         if (source.stale) object.boolean("stale", *source.stale);
                         object.uint("tier", source.tier);
                     });
                 });
    return out;
}

std::string encode_text(const LabelsResponse& m) {
    std::size_t reserve = 32;
    for (const auto& label : m.labels) reserve += 4 + label.size();
    std::string out;
    out.reserve(reserve);
    append_array(ObjectWriter(out).key("labels"), m.labels,
                 [](std::string& o, const std::string& label) { append_json_string(o, label); });
    return out;
}

std::string encode_text(const ExplainMessage& m) { return encode_text(m, m.explain_triples); }

namespace {

// The body with its triples fields written by write_triples(object): "explain_triples" alone,
// or "explain_terms" then "explain_triples" (the keys in sorted order either way).
template <typename WriteTriples>
std::string encode_explain(const ExplainMessage& m, WriteTriples&& write_triples,
                           std::size_t reserve) {
    std::string out;
    out.reserve(reserve);
    {
        ObjectWriter object(out);
        object.boolean("end_of_trace", m.end_of_trace);
        if (m.error) object.error("error", *m.error);
        object.string("explain_graph", m.explain_graph);
        object.string("explain_id", m.explain_id);
        write_triples(object);
        object.string("message_type", "explain");
        if (m.parent_uri) object.string("parent_uri", *m.parent_uri);
        object.uint("seq", m.seq);
        object.string("service", m.service);
        object.string("session", m.session);
        object.string("trace_status", to_string(m.trace_status));
        object.string("worker", m.worker);
    }
    return out;
}

// The dictionary form's two fields, the triples `build` writes to the sink.
template <typename Build>
void write_dictionary(ObjectWriter& object, const ExplainMessage& m, Build&& build) {
    DictionaryTripleJson sink(object.key("explain_terms"), m.explain_graph);
    build(sink);
    sink.close();
    object.key("explain_triples") += sink.triples();
}

}  // namespace

std::string encode_text(const ExplainMessage& m, std::span<const Triple> triples) {
    return encode_explain(
        m, [triples](ObjectWriter& object) { append_json(object.key("explain_triples"), triples); },
        256 + triples.size() * 256);
}

std::string encode_text(const ExplainMessage& m, std::span<const Triple> triples, TripleForm form) {
    if (form == TripleForm::kPlain) return encode_text(m, triples);
    return encode_explain(
        m,
        [&m, triples](ObjectWriter& object) {
            write_dictionary(object, m, [triples](DictionaryTripleJson& sink) {
                for (const auto& t : triples) sink.triple(t);
            });
        },
        256 + triples.size() * 64);
}

std::string encode_text(const ExplainMessage& m,
                        const std::function<void(std::string&)>& write_triples,
                        std::size_t reserve) {
    return encode_explain(
        m, [&write_triples](ObjectWriter& object) { write_triples(object.key("explain_triples")); },
        reserve);
}

std::string encode_text(const ExplainMessage& m, const std::function<void(TripleSink&)>& build,
                        TripleForm form, std::size_t reserve) {
    if (form == TripleForm::kPlain) {
        return encode_explain(
            m,
            [&m, &build](ObjectWriter& object) {
                TripleJson sink(object.key("explain_triples"), m.explain_graph);
                build(sink);
            },
            reserve);
    }
    return encode_explain(
        m,
        [&m, &build](ObjectWriter& object) {
            write_dictionary(object, m, [&build](DictionaryTripleJson& sink) { build(sink); });
        },
        reserve);
}

std::string encode_text(const RagResponse& m) {
    std::string out;
    out.reserve(256 + m.response.size() + m.explain_triples.size() * 200);
    {
        ObjectWriter object(out);
        // Keys in the tree encoder's (sorted) order.
        if (m.answer) object.string("answer", *m.answer);
        append_array(object.key("answer_selections"), m.answer_selections,
                     [](std::string& o, const std::string& uri) { append_json_string(o, uri); });
        append_array(object.key("citations"), m.citations,
                     [](std::string& o, const RagCitation& c) {
                         ObjectWriter cited(o);
                         if (c.char_end) cited.uint("char_end", *c.char_end);
                         if (c.char_offset) cited.uint("char_offset", *c.char_offset);
                         cited.string("chunk", c.chunk);
                         if (c.date) cited.string("date", *c.date);
                         cited.string("document", c.document);
                         cited.string("id", c.id);
                         cited.string("kind", c.kind);
                         if (c.loaded_at) cited.string("loaded_at", *c.loaded_at);
                         if (c.max_age) cited.string("max_age", *c.max_age);
                         cited.uint("n", c.n);
                         if (c.object) cited.string("object", *c.object);
                         if (c.predicate) cited.string("predicate", *c.predicate);
                         cited.string("selection", c.selection);
                         append_array(cited.key("spans"), c.spans,
                                      [](std::string& s, const AnswerSpan& span) {
                                          ObjectWriter written(s);
                                          written.uint("end", span.end);
                                          written.uint("start", span.start);
                                      });
                         if (c.stale) cited.boolean("stale", *c.stale);
                         if (c.subject) cited.string("subject", *c.subject);
                         cited.string("text", c.text);
                         cited.uint("tier", c.tier);
                         cited.string("title", c.title);
                     });
        object.boolean("end_of_session", m.end_of_session);
        object.boolean("end_of_stream", m.end_of_stream);
        if (m.error) object.error("error", *m.error);
        object.string("explain_graph", m.explain_graph);
        object.string("explain_id", m.explain_id);
        append_json(object.key("explain_triples"), m.explain_triples);
        object.uint("in_token", m.in_token);
        object.string("message_type", to_string(m.message_type));
        object.string("model", m.model);
        object.uint("out_token", m.out_token);
        object.string("response", m.response);
        append_array(
            object.key("sources"), m.sources,
            [](std::string& o, const std::string& source) { append_json_string(o, source); });
    }
    return out;
}

std::string encode_text(const LlmResponse& m) { return encode_text(m, false); }

std::string encode_text(const LlmResponse& m, bool text_is_json_dump) {
    std::string out;
    out.reserve(128 + 2 * m.text.size());
    {
        ObjectWriter object(out);
        // Keys in the tree encoder's (sorted) order; an unset optional is left out, as there.
        if (m.answer) object.string("answer", *m.answer);
        append_array(object.key("answer_ids"), m.answer_ids,
                     [](std::string& o, const std::string& id) { append_json_string(o, id); });
        object.boolean("end_of_stream", m.end_of_stream);
        object.uint("in_token", m.in_token);
        // A nested value is dumped as the whole tree's dump writes it. A strict dump (the text's,
        // when it is one) succeeded only on valid UTF-8, where `replace` changes nothing.
        if (m.json && text_is_json_dump)
            object.key("json") += m.text;
        else if (m.json)
            object.key("json") +=
                m.json->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        object.string("model", m.model);
        object.uint("out_token", m.out_token);
        object.string("text", m.text);
    }
    return out;
}

std::string encode_text(const LlmRequest& m) {
    std::size_t size = 64 + m.template_name.size();
    for (const auto& [name, value] : m.variables)
        size += 8 + name.size() + value.size() + value.size() / 4;  // room for escapes
    std::string out;
    out.reserve(size);
    {
        ObjectWriter object(out);
        object.boolean("streaming", m.streaming);
        object.string("template", m.template_name);
        // std::map's order is the tree's (nlohmann's objects are std::maps too). The names are
        // the caller's, so escaped like the values (ObjectWriter's keys are not).
        auto& variables = object.key("variables");
        variables += '{';
        bool first = true;
        for (const auto& [name, value] : m.variables) {
            if (!first) variables += ',';
            first = false;
            append_json_string(variables, name);
            variables += ':';
            append_json_string(variables, value);
        }
        variables += '}';
    }
    return out;
}

base::Result<nlohmann::json> parse_json_tree(std::string_view text) {
    try {
        nlohmann::json tree;
        if (TreeBuilder(text).whole(tree)) return tree;
    } catch (const std::bad_alloc&) {
        // As the parser's own failure to allocate: its error below.
    }
    return parse_untrusted_json(text);
}

// ---- public readers -----------------------------------------------------------------------

template <>
base::Result<TriplesResponse> decode_text<TriplesResponse>(std::string_view text) {
    JsonKeys seen;
    return decode_fast<TriplesResponse>(
        text, [&](JsonCursor& r, std::string_view key, TriplesResponse& m) {
            if (key != "triples") return r.skip();
            return seen.first(1) && read_triples(r, m.triples);
        });
}

template <>
base::Result<TriplesBatchResponse> decode_text<TriplesBatchResponse>(std::string_view text) {
    JsonKeys seen;
    return decode_fast<TriplesBatchResponse>(text, [&](JsonCursor& r, std::string_view key,
                                                       TriplesBatchResponse& m) {
        if (key == "labels") {
            auto& lists = m.labels.emplace();
            return seen.first(2) && r.array([&] { return read_strings(r, lists.emplace_back()); });
        }
        if (key == "counts") {
            auto& counts = m.counts.emplace();
            return seen.first(4) && r.array([&] {
                std::uint64_t n = 0;
                if (!r.uint(n) || n > 0xFFFF'FFFFu) return false;  // the tree's error
                counts.push_back(static_cast<std::uint32_t>(n));
                return true;
            });
        }
        if (key != "results") return r.skip();
        return seen.first(1) && r.array([&] { return read_triples(r, m.results.emplace_back()); });
    });
}

namespace {

// One field of a RAG reply; `seen` marks the fields read so far.
bool read_rag_field(JsonCursor& r, std::string_view key, RagResponse& m, JsonKeys& seen,
                    std::string& scratch) {
    if (key == "message_type") {
        if (!seen.first(1) || !r.string(scratch)) return false;
        if (scratch == "chunk")
            m.message_type = RagMessageType::kChunk;
        else if (scratch == "explain")
            m.message_type = RagMessageType::kExplain;
        else
            return false;  // "error" comes with an error object: the slow path's
        return true;
    }
    if (key == "response") return seen.first(2) && r.string(m.response);
    if (key == "explain_id") return seen.first(4) && r.string(m.explain_id);
    if (key == "explain_graph") return seen.first(8) && r.string(m.explain_graph);
    if (key == "explain_triples") return seen.first(16) && read_triples(r, m.explain_triples);
    if (key == "end_of_stream") return seen.first(32) && r.boolean(m.end_of_stream);
    if (key == "end_of_session") return seen.first(64) && r.boolean(m.end_of_session);
    if (key == "in_token") return seen.first(128) && r.uint(m.in_token);
    if (key == "out_token") return seen.first(256) && r.uint(m.out_token);
    if (key == "model") return seen.first(512) && r.string(m.model);
    if (key == "sources") return seen.first(1024) && read_strings(r, m.sources);
    if (key == "answer") {
        if (!seen.first(2048) || !r.string(scratch)) return false;
        m.answer = scratch;
        return true;
    }
    if (key == "answer_selections") return seen.first(4096) && read_strings(r, m.answer_selections);
    if (key == "citations") {
        // Only a FINAL has them, once per request: an empty list here, the rest the slow
        // path's.
        return seen.first(8192) && r.array([] { return false; });
    }
    if (key == "error") return false;
    return r.skip();
}

}  // namespace

template <>
base::Result<RagResponse> decode_text<RagResponse>(std::string_view text) {
    JsonKeys seen;
    std::string scratch;
    return decode_fast<RagResponse>(text, [&](JsonCursor& r, std::string_view key, RagResponse& m) {
        return read_rag_field(r, key, m, seen, scratch);
    });
}

template <>
base::Result<LlmResponse> decode_text<LlmResponse>(std::string_view text) {
    JsonKeys seen;
    std::string scratch;
    return decode_fast<LlmResponse>(text, [&](JsonCursor& r, std::string_view key, LlmResponse& m) {
        if (key == "text") return seen.first(1) && r.string(m.text);
        if (key == "model") return seen.first(2) && r.string(m.model);
        if (key == "in_token") return seen.first(4) && r.uint(m.in_token);
        if (key == "out_token") return seen.first(8) && r.uint(m.out_token);
        if (key == "end_of_stream") return seen.first(16) && r.boolean(m.end_of_stream);
        if (key == "answer") {
            if (!seen.first(32) || !r.string(scratch)) return false;
            m.answer = scratch;
            return true;
        }
        if (key == "answer_ids") return seen.first(64) && read_strings(r, m.answer_ids);
        if (key == "json") {
            // The answer is a tree for its reader: only its own text is parsed into one (null
            // and anything the parser refuses are the slow path's).
            if (!seen.first(128)) return false;
            r.ws();
            const char* start = r.position();
            if (!r.skip(1)) return false;
            auto parsed = parse_json_tree(
                std::string_view(start, static_cast<std::size_t>(r.position() - start)));
            if (!parsed || parsed->is_null()) return false;
            m.json = std::move(parsed).value();
            return true;
        }
        return r.skip();
    });
}

template <>
base::Result<EmbeddingsResponse> decode_text<EmbeddingsResponse>(std::string_view text) {
    JsonKeys seen;
    return decode_fast<EmbeddingsResponse>(
        text, [&](JsonCursor& r, std::string_view key, EmbeddingsResponse& m) {
            if (key == "vectors") return seen.first(1) && read_vectors(r, m.vectors);
            if (key == "model") return seen.first(2) && r.string(m.model);
            if (key == "dim") {
                std::uint64_t dim = 0;
                if (!seen.first(4) || !r.uint(dim) || dim > 0xFFFF'FFFFu) return false;
                m.dim = static_cast<std::uint32_t>(dim);
                return true;
            }
            return r.skip();
        });
}

namespace {

// {"entity":TERM,"score":S} in any key order; the entity is required, as by the slow decoder.
bool read_match(JsonCursor& r, EntityMatch& out) {
    enum : unsigned { kEntity = 1, kScore = 2 };
    JsonKeys keys;
    const bool ok = r.object([&](std::string_view key) {
        if (key == "entity") return keys.first(kEntity) && read_json_term(r, out.entity);
        if (key == "score") return keys.first(kScore) && r.real(out.score);
        return r.skip();
    });
    return ok && (keys.seen() & kEntity) != 0;
}

// One source of a fact in any key order; a null (or any other odd value) is the slow path's.
bool read_fact_source(JsonCursor& r, FactSource& out, std::string& scratch) {
    enum : unsigned {
        kSource = 1,
        kKind = 2,
        kDocument = 4,
        kTier = 8,
        kLoadedAt = 16,
        kDate = 32,
        kMaxAge = 64,
        kStale = 128
    };
    JsonKeys keys;
    const auto optional_string = [&](unsigned bit, std::optional<std::string>& field) {
        if (!keys.first(bit) || !r.string(scratch)) return false;
        field = scratch;
        return true;
    };
    return r.object([&](std::string_view key) {
        if (key == "source") return keys.first(kSource) && r.string(out.source);
        if (key == "kind") return keys.first(kKind) && r.string(out.kind);
        if (key == "loaded_at") return keys.first(kLoadedAt) && r.string(out.loaded_at);
        if (key == "document") return optional_string(kDocument, out.document);
        if (key == "date") return optional_string(kDate, out.date);
        if (key == "max_age") return optional_string(kMaxAge, out.max_age);
        if (key == "stale") {
            bool stale = false;
            if (!keys.first(kStale) || !r.boolean(stale)) return false;
            out.stale = stale;
            return true;
        }
        if (key == "tier") {
            std::uint64_t tier = 0;
            if (!keys.first(kTier) || !r.uint(tier) || tier > 0xFFFF'FFFFu) return false;
            out.tier = static_cast<std::uint32_t>(tier);
            return true;
        }
        return r.skip();
    });
}

}  // namespace

template <>
base::Result<GraphEmbeddingsBatchResponse> decode_text<GraphEmbeddingsBatchResponse>(
    std::string_view text) {
    JsonKeys seen;
    return decode_fast<GraphEmbeddingsBatchResponse>(
        text, [&](JsonCursor& r, std::string_view key, GraphEmbeddingsBatchResponse& m) {
            if (key != "results") return r.skip();
            return seen.first(1) && r.array([&] {
                auto& list = m.results.emplace_back();
                return r.array([&] { return read_match(r, list.emplace_back()); });
            });
        });
}

template <>
base::Result<FactSourcesResponse> decode_text<FactSourcesResponse>(std::string_view text) {
    JsonKeys seen;
    std::string scratch;
    return decode_fast<FactSourcesResponse>(
        text, [&](JsonCursor& r, std::string_view key, FactSourcesResponse& m) {
            if (key != "sources") return r.skip();
            return seen.first(1) && r.array([&] {
                auto& list = m.sources.emplace_back();
                return r.array([&] { return read_fact_source(r, list.emplace_back(), scratch); });
            });
        });
}

template <>
base::Result<LabelsResponse> decode_text<LabelsResponse>(std::string_view text) {
    JsonKeys seen;
    return decode_fast<LabelsResponse>(text,
                                       [&](JsonCursor& r, std::string_view key, LabelsResponse& m) {
                                           if (key != "labels") return r.skip();
                                           return seen.first(1) && read_strings(r, m.labels);
                                       });
}

}  // namespace glassbox::schema
