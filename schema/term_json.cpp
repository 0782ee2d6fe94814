// Compact JSON encoding of terms and triples, with depth-limited, non-throwing decoding.
#include "schema/term_json.hpp"

#include <string>

#include "schema/detail/json_reader.hpp"

namespace glassbox::schema {
namespace {

using detail::decode_error;
using detail::field_path;
using detail::json;
using detail::ObjectReader;

base::Result<Triple> decode_triple_at(const json& value, std::string_view path, int depth);

base::Result<Term> decode_term_at(const json& value, std::string_view path, int depth) {
    ObjectReader r(value, std::string(path));
    if (!r.ok()) return r.error();
    std::string kind;
    r.read("t", kind);
    if (!r.ok()) return r.error();
    if (kind.empty()) {
        // push_back, not `kind = "i"`: GCC 12 at -O3 warns (-Wrestrict, a false positive, GCC
        // bug 105329) on assigning a literal to a std::string that may be empty.
        if (r.find("i"))
            kind.push_back('i');
        else if (r.find("v"))
            kind.push_back('l');
        else if (r.find("d"))
            kind.push_back('b');
        else if (r.find("tr"))
            kind.push_back('t');
        else
            return decode_error(path, "not a term (no \"t\" and no term keys)");
    }
    if (kind == "i") {
        std::string value_iri;
        if (r.require("i")) r.read("i", value_iri);
        if (!r.ok()) return r.error();
        if (value_iri.empty()) return decode_error(field_path(path, "i"), "empty IRI");
        return Term(Iri{std::move(value_iri)});
    }
    if (kind == "b") {
        std::string id;
        if (r.require("d")) r.read("d", id);
        if (!r.ok()) return r.error();
        return Term(BlankNode{std::move(id)});
    }
    if (kind == "l") {
        Literal lit;
        if (r.require("v")) r.read("v", lit.value);
        r.read("dt", lit.datatype);
        r.read("ln", lit.language);
        if (!r.ok()) return r.error();
        if (lit.datatype == kXsdString) lit.datatype.clear();
        if (!lit.language.empty()) {
            if (lit.datatype == kRdfLangString) lit.datatype.clear();
            if (!lit.datatype.empty()) {
                return decode_error(path, "literal with both a datatype and a language");
            }
        }
        return Term(std::move(lit));
    }
    if (kind == "t") {
        if (depth >= kMaxQuotedTripleDepth) {
            return decode_error(
                path, "quoted triples nested deeper than " + std::to_string(kMaxQuotedTripleDepth));
        }
        const json* tr = r.require("tr");
        if (!tr) return r.error();
        auto inner = decode_triple_at(*tr, field_path(path, "tr"), depth + 1);
        if (!inner.ok()) return std::move(inner).error();
        return quoted(std::move(inner).value());
    }
    return decode_error(field_path(path, "t"), "unknown term type \"" + kind + "\"");
}

base::Result<Triple> decode_triple_at(const json& value, std::string_view path, int depth) {
    ObjectReader r(value, std::string(path));
    if (!r.ok()) return r.error();
    Triple triple;
    for (auto [key, slot] :
         {std::pair{"s", &triple.s}, std::pair{"p", &triple.p}, std::pair{"o", &triple.o}}) {
        const json* v = r.require(key);
        if (!v) return r.error();
        auto term = decode_term_at(*v, field_path(path, key), depth);
        if (!term.ok()) return std::move(term).error();
        *slot = std::move(term).value();
    }
    std::string graph;
    r.read("g", graph);
    if (!r.ok()) return r.error();
    if (!graph.empty()) triple.graph = std::move(graph);
    return triple;
}

// {"s","p","o"} of a triple. The objects here are filled member by member, each value moved in:
// an initializer list would copy every nested term (its elements are const), and requests carry
// hundreds of terms.
json encode_parts(const Triple& triple) {
    json j(json::value_t::object);
    j["s"] = encode(triple.s);
    j["p"] = encode(triple.p);
    j["o"] = encode(triple.o);
    return j;
}

}  // namespace

nlohmann::json encode(const Term& term) {
    json j(json::value_t::object);
    switch (term.kind()) {
        case Term::Kind::kIri:
            j["t"] = "i";
            j["i"] = term.as_iri().value;
            return j;
        case Term::Kind::kBlankNode:
            j["t"] = "b";
            j["d"] = term.as_blank().id;
            return j;
        case Term::Kind::kLiteral: {
            const auto& lit = term.as_literal();
            j["t"] = "l";
            j["v"] = lit.value;
            if (!lit.datatype.empty()) j["dt"] = lit.datatype;
            if (!lit.language.empty()) j["ln"] = lit.language;
            return j;
        }
        case Term::Kind::kTriple:
            j["t"] = "t";
            j["tr"] = encode_parts(term.as_triple());
            return j;
    }
    return nullptr;
}

nlohmann::json encode(const Triple& triple) {
    json j = encode_parts(triple);
    if (triple.graph) j["g"] = *triple.graph;
    return j;
}

base::Result<Term> decode_term(const nlohmann::json& value, std::string_view path) {
    try {
        return decode_term_at(value, path, 0);
    } catch (const std::exception& e) {
        return base::make_error(base::ErrorType::kDecodeError, std::string(path) + ": " + e.what());
    }
}

base::Result<Triple> decode_triple(const nlohmann::json& value, std::string_view path) {
    try {
        return decode_triple_at(value, path, 0);
    } catch (const std::exception& e) {
        return base::make_error(base::ErrorType::kDecodeError, std::string(path) + ": " + e.what());
    }
}

}  // namespace glassbox::schema
