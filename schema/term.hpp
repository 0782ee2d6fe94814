// RDF 1.2 terms (IRI, blank node, literal, quoted triple) and triples/quads as value types.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace glassbox::schema {

struct Triple;

struct Iri {
    std::string value;
    bool operator==(const Iri&) const = default;
};

struct BlankNode {
    std::string id;
    bool operator==(const BlankNode&) const = default;
};

// A literal in normal form: an empty datatype means xsd:string (a simple literal); a
// non-empty language means rdf:langString and the datatype stays empty. The helpers below
// and the JSON decoder produce this form, so == compares meaning, not spelling.
struct Literal {
    std::string value;
    std::string datatype;
    std::string language;
    bool operator==(const Literal&) const = default;
};

// A quoted triple (RDF 1.2 triple term). Held by shared_ptr<const Triple> because Triple
// contains Terms (the type is recursive); the pointee is immutable, so sharing it between
// copies keeps value semantics, and == compares the triples, not the pointers.
struct QuotedTriple {
    std::shared_ptr<const Triple> triple;
    bool operator==(const QuotedTriple& other) const;
};

class Term {
public:
    enum class Kind { kIri, kBlankNode, kLiteral, kTriple };

    Term() : value_(Iri{}) {}
    Term(Iri iri) : value_(std::move(iri)) {}                 // NOLINT(google-explicit-constructor)
    Term(BlankNode node) : value_(std::move(node)) {}         // NOLINT(google-explicit-constructor)
    Term(Literal literal) : value_(std::move(literal)) {}     // NOLINT(google-explicit-constructor)
    Term(QuotedTriple quoted) : value_(std::move(quoted)) {}  // NOLINT(google-explicit-constructor)

    Kind kind() const noexcept { return static_cast<Kind>(value_.index()); }
    bool is_iri() const noexcept { return kind() == Kind::kIri; }
    bool is_blank() const noexcept { return kind() == Kind::kBlankNode; }
    bool is_literal() const noexcept { return kind() == Kind::kLiteral; }
    bool is_triple() const noexcept { return kind() == Kind::kTriple; }

    // Accessors check the kind: asking an IRI for its literal is a programmer error (throws).
    const Iri& as_iri() const { return std::get<Iri>(value_); }
    const BlankNode& as_blank() const { return std::get<BlankNode>(value_); }
    const Literal& as_literal() const { return std::get<Literal>(value_); }
    const Triple& as_triple() const { return *std::get<QuotedTriple>(value_).triple; }

    bool operator==(const Term&) const = default;

private:
    std::variant<Iri, BlankNode, Literal, QuotedTriple> value_;
};

// A triple, or a quad when `graph` names a graph (an IRI; absent means the default graph).
struct Triple {
    Term s;
    Term p;
    Term o;
    std::optional<std::string> graph;
    bool operator==(const Triple&) const = default;
};

// Well-known datatypes used by the helpers.
inline constexpr std::string_view kXsdString = "http://www.w3.org/2001/XMLSchema#string";
inline constexpr std::string_view kXsdInteger = "http://www.w3.org/2001/XMLSchema#integer";
inline constexpr std::string_view kXsdDecimal = "http://www.w3.org/2001/XMLSchema#decimal";
inline constexpr std::string_view kXsdDouble = "http://www.w3.org/2001/XMLSchema#double";
inline constexpr std::string_view kXsdBoolean = "http://www.w3.org/2001/XMLSchema#boolean";
inline constexpr std::string_view kXsdDateTime = "http://www.w3.org/2001/XMLSchema#dateTime";
inline constexpr std::string_view kXsdDate = "http://www.w3.org/2001/XMLSchema#date";
inline constexpr std::string_view kRdfLangString =
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString";

Term iri(std::string_view value);
Term blank(std::string_view id);
Term literal(std::string_view value);
// xsd:string becomes the simple-literal form; rdf:langString without a language is kept.
Term typed_literal(std::string_view value, std::string_view datatype);
Term lang_literal(std::string_view value, std::string_view language);
Term quoted(Triple triple);

Term xsd_integer(std::int64_t value);
// xsd:decimal from its lexical form ("12.50"), written by the caller: doubles are not decimals.
Term xsd_decimal(std::string_view lexical);
// xsd:double in the shortest form that round-trips ("0.85", "1E-7", "INF", "NaN").
Term xsd_double(double value);
// That lexical form alone.
std::string xsd_double_lexical(double value);
Term xsd_boolean(bool value);
// xsd:dateTime from its lexical form; explain::datetime_literal formats a time point.
Term xsd_datetime(std::string_view lexical);

Triple make_triple(Term s, Term p, Term o, std::optional<std::string> graph = std::nullopt);

// N-Triples rendering (RDF 1.2 N-Triples for quoted triples: `<< s p o >>`). Strings are
// escaped as the grammar requires; blank node labels the grammar accepts are kept as they are,
// others are rewritten (into [A-Za-z0-9_-], other bytes as xHH).
std::string to_ntriples(const Term& term);
// `s p o .` — the graph, if any, is left out.
std::string to_ntriples(const Triple& triple);
// `s p o g .` when the triple has a graph, else as to_ntriples.
std::string to_nquads(const Triple& triple);
// The same, appended to `out` (bulk writers reuse one buffer): a whole N-Quads line ending in
// " .\n".
void append_nquads(std::string& out, const Triple& triple);
// One term as append_nquads writes it inside a statement (no end of line).
void append_nquads_term(std::string& out, const Term& term);

}  // namespace glassbox::schema
