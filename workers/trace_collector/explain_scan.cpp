// The explain body scanner: the explain message's schema walked with the JSON text cursor. It
// builds no tree and decides only "this is the canonical form" or "ask the DOM decoder".
#include "workers/trace_collector/explain_scan.hpp"

#include <array>
#include <utility>

#include "schema/explain_uris.hpp"
#include "schema/term.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::trace {
namespace {

// The one JSON text reader (schema/json_cursor): grammar, UTF-8 and escapes checked as nlohmann
// checks them; every read returns false on anything it does not accept, and the scan gives up.
using schema::JsonCursor;
using schema::JsonKeys;

// Nesting allowed inside fields the decoder ignores; deeper values go to the DOM decoder.
constexpr int kMaxSkipDepth = 32;

bool scan_triple(JsonCursor& in, ScannedTriple& triple, int depth, bool quoted);

// True when `text` (an IRI-valued string) is one the decoder keeps as it is: empty, or an IRI
// explain::iri_problem accepts. Any other IRI the decoder rewrites, so the scan gives up.
bool writable(const JsonText& text) {
    if (text.raw.empty()) return true;
    std::string scratch;
    return schema::explain::is_writable_iri(text.value(scratch));
}

// One term in the canonical encoding (schema::encode of what decode_term gives): exactly
// {"t":"i","i":IRI≠""} | {"t":"b","d":id} | {"t":"l","v":value[,"dt":IRI≠"",≠xsd:string]
// [,"ln":tag≠""]} (not both) | {"t":"t","tr":{s,p,o}}. `value_token`, if given, receives a
// literal's "v" token.
bool scan_term(JsonCursor& in, ScannedTerm& term, int depth, std::string_view* value_token) {
    enum : unsigned { kT = 1, kI = 2, kD = 4, kV = 8, kDt = 16, kLn = 32, kTr = 64 };
    JsonText t, i, d, v, dt, ln;
    std::string_view v_token;
    JsonKeys keys;
    const bool ok = in.object([&](std::string_view k) -> bool {
        if (k == "t") return keys.first(kT) && in.raw_string(t);
        if (k == "i") return keys.first(kI) && in.raw_string(i);
        if (k == "v") return keys.first(kV) && in.string_token(v, v_token);
        if (k == "d") return keys.first(kD) && in.raw_string(d);
        if (k == "dt") return keys.first(kDt) && in.raw_string(dt);
        if (k == "ln") return keys.first(kLn) && in.raw_string(ln);
        if (k == "tr") {
            // The decoder's bound on quoted triples, counted the same way.
            if (!keys.first(kTr) || depth >= schema::kMaxQuotedTripleDepth) return false;
            ScannedTriple inner;
            return scan_triple(in, inner, depth + 1, true);
        }
        return false;
    });
    if (!ok || (keys.seen() & kT) == 0 || t.escaped || t.raw.size() != 1) return false;
    const unsigned seen = keys.seen();
    switch (t.raw[0]) {
        case 'i':
            if (seen != (kT | kI) || i.raw.empty() || !writable(i)) return false;
            term = ScannedTerm{ScannedKind::kIri, i};
            return true;
        case 'b':
            if (seen != (kT | kD)) return false;
            term = ScannedTerm{ScannedKind::kBlankNode, d};
            return true;
        case 'l': {
            if ((seen & ~(kDt | kLn)) != (kT | kV) || (seen & (kDt | kLn)) == (kDt | kLn))
                return false;
            if ((seen & kDt) != 0) {
                std::string scratch;
                if (dt.raw.empty() || dt.value(scratch) == schema::kXsdString || !writable(dt))
                    return false;
            }
            if ((seen & kLn) != 0 && ln.raw.empty()) return false;
            term = ScannedTerm{ScannedKind::kLiteral, v};
            if (value_token != nullptr) *value_token = v_token;
            return true;
        }
        case 't':
            if (seen != (kT | kTr)) return false;
            term = ScannedTerm{ScannedKind::kTriple, {}};
            return true;
        default:
            return false;
    }
}

// One triple in the canonical encoding: exactly "s", "p", "o" and, unless quoted, a non-empty
// "g" (schema::encode writes no graph inside a quoted triple and none for the default graph).
bool scan_triple(JsonCursor& in, ScannedTriple& triple, int depth, bool quoted) {
    enum : unsigned { kS = 1, kP = 2, kO = 4, kG = 8 };
    in.ws();
    const char* start = in.position();
    std::string_view value_token;
    JsonKeys keys;
    const bool ok = in.object([&](std::string_view key) -> bool {
        if (key.size() != 1) return false;
        switch (key[0]) {
            case 's':
                return keys.first(kS) && scan_term(in, triple.s, depth, nullptr);
            case 'p':
                return keys.first(kP) && scan_term(in, triple.p, depth, nullptr);
            case 'o': {
                if (!keys.first(kO)) return false;
                in.ws();
                const char* object = in.position();
                if (!scan_term(in, triple.o, depth, &value_token)) return false;
                triple.object_text =
                    std::string_view(object, static_cast<std::size_t>(in.position() - object));
                return true;
            }
            case 'g': {
                JsonText graph;
                return !quoted && keys.first(kG) && in.raw_string(graph) && !graph.raw.empty() &&
                       writable(graph);
            }
            default:
                return false;
        }
    });
    if (!ok || (keys.seen() & (kS | kP | kO)) != (kS | kP | kO)) return false;
    triple.has_graph = (keys.seen() & kG) != 0;
    triple.text = std::string_view(start, static_cast<std::size_t>(in.position() - start));
    if (triple.o.kind == ScannedKind::kLiteral) {
        triple.object_value_at = static_cast<std::size_t>(value_token.data() - start);
        triple.object_value_size = value_token.size();
    }
    return true;
}

// {"type": ErrorType name, "message": text}, other keys ignored (decode_error_at).
bool scan_error(JsonCursor& in, std::optional<base::Error>& out) {
    enum : unsigned { kType = 1, kMessage = 2 };
    base::Error error;
    JsonKeys keys;
    const bool ok = in.object([&](std::string_view key) -> bool {
        if (key == "type") {
            JsonText type;
            if (!keys.first(kType) || !in.raw_string(type) || type.escaped) return false;
            if (type.raw.empty()) return true;
            const auto parsed = base::error_type_from_string(type.raw);
            if (!parsed) return false;
            error.type = *parsed;
            return true;
        }
        if (key == "message") {
            JsonText message;
            if (!keys.first(kMessage) || !in.raw_string(message)) return false;
            error.message = message.str();
            return true;
        }
        return in.skip(2);
    });
    if (!ok) return false;
    out = std::move(error);
    return true;
}

// One entry of a dictionary body's explain_triples: [s, p, o] or [s, p, o, g].
struct IndexTriple {
    std::array<std::uint64_t, 4> at{};
    bool has_graph = false;
};

bool scan_dictionary_term(JsonCursor& in, std::vector<DictionaryTerm>& terms) {
    in.ws();
    const char* start = in.position();
    DictionaryTerm& t = terms.emplace_back();
    if (!scan_term(in, t.term, 0, &t.value_token)) return false;
    t.text = std::string_view(start, static_cast<std::size_t>(in.position() - start));
    return true;
}

// After the '[' of an index entry: 3 or 4 integers and the ']'.
bool scan_index_triple(JsonCursor& in, IndexTriple& triple) {
    for (std::size_t i = 0; i < 4; ++i) {
        if (i > 0 && !in.eat(',')) return i == 3 && in.eat(']');
        if (!in.uint(triple.at[i])) return false;
    }
    triple.has_graph = true;
    return in.eat(']');
}

// The dictionary body's triples from their entries: each with its terms, the explain graph's
// when it names no graph and the message has one (as the plain form's decoder puts it there);
// false for an index out of range or a graph that is not an IRI (the decoder refuses both).
bool resolve_dictionary(const std::vector<IndexTriple>& entries, ScannedExplain& out) {
    const bool graph_known = out.explain_graph_token.size() > 2;
    const auto& terms = out.terms;
    out.dictionary = true;
    out.triples.clear();
    out.triples.reserve(entries.size());
    for (const auto& e : entries) {
        const std::size_t used = e.has_graph ? 4 : 3;
        for (std::size_t i = 0; i < used; ++i) {
            if (e.at[i] >= terms.size()) return false;
        }
        ScannedTriple& t = out.triples.emplace_back();
        t.s_at = static_cast<std::uint32_t>(e.at[0]);
        t.p_at = static_cast<std::uint32_t>(e.at[1]);
        t.o_at = static_cast<std::uint32_t>(e.at[2]);
        if (e.has_graph) {
            if (terms[e.at[3]].term.kind != ScannedKind::kIri) return false;
            t.g_at = static_cast<std::uint32_t>(e.at[3]);
        }
        t.has_graph = e.has_graph || graph_known;
        t.s = terms[t.s_at].term;
        t.p = terms[t.p_at].term;
        t.o = terms[t.o_at].term;
        t.object_text = terms[t.o_at].text;
    }
    return true;
}

const std::string& default_graph_token() {
    // kRetrievalGraph holds nothing JSON escapes.
    static const std::string token = "\"" + std::string(schema::vocab::kRetrievalGraph) + "\"";
    return token;
}

// The body's fields, one bit each (JsonKeys: a field given twice is refused).
enum ScanField : unsigned {
    kMessageType = 1 << 0,
    kSession = 1 << 1,
    kSeq = 1 << 2,
    kService = 1 << 3,
    kWorker = 1 << 4,
    kParent = 1 << 5,
    kExplainId = 1 << 6,
    kGraph = 1 << 7,
    kTriples = 1 << 8,
    kEnd = 1 << 9,
    kStatus = 1 << 10,
    kError = 1 << 11,
    kTerms = 1 << 12,
};

// `out` as a body without any field would leave it (the scan reuses its buffers).
void clear(ScannedExplain& out) {
    out.session.clear();
    out.seq = 0;
    out.service.clear();
    out.worker.clear();
    out.parent_uri.reset();
    out.explain_id.clear();
    out.explain_graph_token = default_graph_token();
    out.triples.clear();
    out.dictionary = false;
    out.terms.clear();
    out.end_of_trace = false;
    out.trace_status = schema::TraceStatus::kNone;
    out.error.reset();
}

}  // namespace

bool scan_triple_text(std::string_view text, ScannedTriple& out) {
    JsonCursor in(text, kMaxSkipDepth);
    out = ScannedTriple{};
    return scan_triple(in, out, 0, false) && in.at_end();
}

bool scan_explain(std::string_view body, ScannedExplain& out) {
    clear(out);
    // The dictionary form's entries (reused by the thread's next scan).
    static thread_local std::vector<IndexTriple> entries;
    entries.clear();
    bool object_entries = false;
    JsonCursor in(body, kMaxSkipDepth);
    JsonKeys keys;
    const auto text_field = [&](unsigned bit, std::string& field) {
        JsonText value;
        if (!keys.first(bit) || !in.raw_string(value)) return false;
        field = value.str();
        return true;
    };
    const auto iri_field = [&](unsigned bit, std::string& field) {
        return text_field(bit, field) && (field.empty() || schema::explain::is_writable_iri(field));
    };
    const bool ok = in.object([&](std::string_view k) -> bool {
        // (An escaped key may spell a field name: the cursor leaves it to the decoder.)
        if (k == "explain_triples") {
            if (!keys.first(kTriples)) return false;
            return in.array([&] {
                if (in.eat('[')) return scan_index_triple(in, entries.emplace_back());
                object_entries = true;
                return scan_triple(in, out.triples.emplace_back(), 0, false);
            });
        }
        if (k == "explain_terms") {
            return keys.first(kTerms) &&
                   in.array([&] { return scan_dictionary_term(in, out.terms); });
        }
        if (k == "session") return iri_field(kSession, out.session);
        if (k == "seq") return keys.first(kSeq) && in.uint(out.seq);
        if (k == "service") return text_field(kService, out.service);
        if (k == "worker") return text_field(kWorker, out.worker);
        if (k == "explain_id") return iri_field(kExplainId, out.explain_id);
        if (k == "explain_graph") {
            JsonText graph;
            return keys.first(kGraph) && in.string_token(graph, out.explain_graph_token) &&
                   writable(graph);
        }
        if (k == "parent_uri") {
            std::string parent;
            if (!iri_field(kParent, parent)) return false;
            out.parent_uri = std::move(parent);
            return true;
        }
        if (k == "message_type") {
            JsonText type;
            return keys.first(kMessageType) && in.raw_string(type) && !type.escaped &&
                   type.raw == "explain";
        }
        if (k == "end_of_trace") return keys.first(kEnd) && in.boolean(out.end_of_trace);
        if (k == "trace_status") {
            JsonText status;
            if (!keys.first(kStatus) || !in.raw_string(status) || status.escaped) return false;
            const auto parsed = schema::trace_status_from_string(status.raw);
            if (!parsed) return false;
            out.trace_status = *parsed;
            return true;
        }
        if (k == "error") return keys.first(kError) && scan_error(in, out.error);
        return in.skip(1);  // a field the decoder does not read
    });
    if (!ok || !in.at_end()) return false;
    if ((keys.seen() & kTerms) == 0) return entries.empty();
    // The dictionary form: every entry indexes, each one in range.
    return !object_entries && resolve_dictionary(entries, out);
}

}  // namespace glassbox::trace
