// Terms and triples read from JSON text, by the rules of their tree decoders (schema/term_json).
#include "schema/term_text.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "schema/term_json.hpp"

namespace glassbox::schema {
namespace {

// A term object's keys as read, its strings as they stand in the text (views of it): only the
// ones its kind takes are copied out.
struct TermTextParts {
    enum : unsigned { kT = 1, kI = 2, kD = 4, kV = 8, kDt = 16, kLn = 32, kTr = 64 };
    JsonKeys keys;
    JsonText kind;
    JsonText value;  // "i", "d" or "v": the kind's one value key
    JsonText datatype;
    JsonText language;
    std::optional<Triple> inner;
};

// A literal by decode_term's rules: xsd:string is no datatype, rdf:langString beside a language
// neither; a datatype beside a language is the tree's error to give.
bool literal_from_parts(const TermTextParts& parts, Term& out) {
    std::string datatype = parts.datatype.str();
    std::string language = parts.language.str();
    if (datatype == kXsdString) datatype.clear();
    if (!language.empty()) {
        if (datatype == kRdfLangString) datatype.clear();
        if (!datatype.empty()) return false;
    }
    out = Term(Literal{parts.value.str(), std::move(datatype), std::move(language)});
    return true;
}

// The term its parts spell, or false for what decode_term reads differently or refuses. Each kind
// takes exactly its own value key: the tree ignores another kind's, but here they share `value`.
bool term_from_parts(TermTextParts& parts, Term& out) {
    using P = TermTextParts;
    std::string scratch;
    const std::string_view kind = parts.kind.value(scratch);
    const unsigned values = parts.keys.seen() & (P::kI | P::kD | P::kV | P::kTr);
    if (kind == "i") {
        if (values != P::kI || parts.value.raw.empty()) return false;  // an empty IRI: its error
        out = Term(Iri{parts.value.str()});
        return true;
    }
    if (kind == "b") {
        if (values != P::kD) return false;
        out = Term(BlankNode{parts.value.str()});
        return true;
    }
    if (kind == "l") return values == P::kV && literal_from_parts(parts, out);
    if (kind == "t") {
        if (values != P::kTr) return false;
        out = quoted(std::move(*parts.inner));
        return true;
    }
    return false;
}

}  // namespace

bool read_json_term(JsonCursor& r, Term& out, int depth) {
    using P = TermTextParts;
    TermTextParts parts;
    const bool read = r.object([&](std::string_view key) {
        if (key == "t") return parts.keys.first(P::kT) && r.raw_string(parts.kind);
        if (key == "i") return parts.keys.first(P::kI) && r.raw_string(parts.value);
        if (key == "v") return parts.keys.first(P::kV) && r.raw_string(parts.value);
        if (key == "d") return parts.keys.first(P::kD) && r.raw_string(parts.value);
        if (key == "dt") return parts.keys.first(P::kDt) && r.raw_string(parts.datatype);
        if (key == "ln") return parts.keys.first(P::kLn) && r.raw_string(parts.language);
        if (key == "tr") {
            // decode_term refuses a quoted triple at this depth or deeper.
            if (depth >= kMaxQuotedTripleDepth || !parts.keys.first(P::kTr)) return false;
            return read_json_triple(r, parts.inner.emplace(), depth + 1);
        }
        return r.skip();
    });
    return read && (parts.keys.seen() & P::kT) != 0 && term_from_parts(parts, out);
}

bool read_json_triple(JsonCursor& r, Triple& out, int depth) {
    enum : unsigned { kS = 1, kP = 2, kO = 4, kG = 8 };
    JsonKeys keys;
    JsonText graph;
    const bool read = r.object([&](std::string_view key) {
        if (key == "s") return keys.first(kS) && read_json_term(r, out.s, depth);
        if (key == "p") return keys.first(kP) && read_json_term(r, out.p, depth);
        if (key == "o") return keys.first(kO) && read_json_term(r, out.o, depth);
        if (key == "g") return keys.first(kG) && r.raw_string(graph);
        return r.skip();
    });
    if (!read || (keys.seen() & (kS | kP | kO)) != (kS | kP | kO)) return false;
    if (graph.raw.empty()) {
        out.graph.reset();
    } else {
        out.graph = graph.str();
    }
    return true;
}

}  // namespace glassbox::schema
