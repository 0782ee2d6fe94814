// Term constructors, equality and N-Triples / N-Quads rendering.
#include "schema/term.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/json_string.hpp"
#include "base/utf8.hpp"
#include "schema/detail/ntriples_grammar.hpp"

namespace glassbox::schema {
namespace {

void append_uchar(std::string& out, unsigned char c) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    out += "\\u00";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
}

// IRIREF excludes controls, space and <>"{}|^`\ ; UCHAR escapes keep the IRI's meaning. Runs of
// plain characters are appended whole (this is the loader's hot path).
void append_iri(std::string& out, std::string_view iri) {
    out += '<';
    std::size_t run = 0;
    for (std::size_t i = 0; i < iri.size(); ++i) {
        const auto c = static_cast<unsigned char>(iri[i]);
        const bool escape = c <= 0x20 || c == '<' || c == '>' || c == '"' || c == '{' || c == '}' ||
                            c == '|' || c == '^' || c == '`' || c == '\\';
        if (!escape) continue;
        out.append(iri.data() + run, i - run);
        append_uchar(out, c);
        run = i + 1;
    }
    out.append(iri.data() + run, iri.size() - run);
    out += '>';
}

// UTF-8 passes through (N-Triples is UTF-8); quotes, backslashes and controls are escaped.
void append_string(std::string& out, std::string_view value) {
    out += '"';
    std::size_t run = 0;
    for (std::size_t i = 0; i < value.size(); ++i) {
        const auto c = static_cast<unsigned char>(value[i]);
        if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7F) continue;
        out.append(value.data() + run, i - run);
        if (const std::string_view e = base::short_escape(c); !e.empty()) {
            out += e;
        } else {
            append_uchar(out, c);
        }
        run = i + 1;
    }
    out.append(value.data() + run, value.size() - run);
    out += '"';
}

// N-Triples PN_CHARS_U / PN_CHARS, and code points of well-formed UTF-8: the N-Quads reader's.
using detail::next_code_point;
using detail::pn_chars;
using detail::pn_chars_u;

// BLANK_NODE_LABEL ::= '_:' (PN_CHARS_U | [0-9]) ((PN_CHARS | '.')* PN_CHARS)?  (':' left out:
// N-Triples readers differ on it.)
bool is_ntriples_label(std::string_view id) {
    if (id.empty() || base::find_invalid_utf8(id)) return false;
    std::size_t i = 0;
    const char32_t first = next_code_point(id, i);
    if ((!pn_chars_u(first) || first == ':') && !(first >= '0' && first <= '9')) return false;
    char32_t last = first;
    while (i < id.size()) {
        last = next_code_point(id, i);
        if (last == ':' || (!pn_chars(last) && last != '.')) return false;
    }
    return last != '.';
}

bool is_label_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

// A label the grammar accepts is written as it is (so reading it back gives the same node);
// any other is rewritten into [A-Za-z0-9_-] with xHH for each other byte.
void append_blank(std::string& out, std::string_view id) {
    out += "_:";
    if (is_ntriples_label(id)) {
        out += id;
        return;
    }
    if (id.empty() || id.front() == '-') out += 'b';
    for (char ch : id) {
        if (is_label_char(ch)) {
            out += ch;
        } else {
            static constexpr char kHex[] = "0123456789ABCDEF";
            const auto c = static_cast<unsigned char>(ch);
            out += 'x';
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
        }
    }
}

void append_terms(std::string& out, const Triple& triple);

void append_term(std::string& out, const Term& term) {
    switch (term.kind()) {
        case Term::Kind::kIri:
            append_iri(out, term.as_iri().value);
            break;
        case Term::Kind::kBlankNode:
            append_blank(out, term.as_blank().id);
            break;
        case Term::Kind::kLiteral: {
            const auto& lit = term.as_literal();
            append_string(out, lit.value);
            if (!lit.language.empty()) {
                out += '@';
                out += lit.language;
            } else if (!lit.datatype.empty() && lit.datatype != kXsdString) {
                out += "^^";
                append_iri(out, lit.datatype);
            }
            break;
        }
        case Term::Kind::kTriple:
            out += "<< ";
            append_terms(out, term.as_triple());
            out += " >>";
            break;
    }
}

// "s p o", each term in N-Triples form.
void append_terms(std::string& out, const Triple& triple) {
    append_term(out, triple.s);
    out += ' ';
    append_term(out, triple.p);
    out += ' ';
    append_term(out, triple.o);
}

}  // namespace

bool QuotedTriple::operator==(const QuotedTriple& other) const {
    if (triple == other.triple) return true;
    if (!triple || !other.triple) return false;
    return *triple == *other.triple;
}

Term iri(std::string_view value) { return Iri{std::string(value)}; }

Term blank(std::string_view id) { return BlankNode{std::string(id)}; }

Term literal(std::string_view value) { return Literal{std::string(value), {}, {}}; }

Term typed_literal(std::string_view value, std::string_view datatype) {
    if (datatype == kXsdString) return literal(value);
    return Literal{std::string(value), std::string(datatype), {}};
}

Term lang_literal(std::string_view value, std::string_view language) {
    return Literal{std::string(value), {}, std::string(language)};
}

Term quoted(Triple triple) {
    return QuotedTriple{std::make_shared<const Triple>(std::move(triple))};
}

Term xsd_integer(std::int64_t value) { return typed_literal(std::to_string(value), kXsdInteger); }

Term xsd_decimal(std::string_view lexical) { return typed_literal(lexical, kXsdDecimal); }

std::string xsd_double_lexical(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "INF" : "-INF";
    std::array<char, 32> buf{};
    const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
    return std::string(buf.data(), ec == std::errc{} ? end : buf.data());
}

Term xsd_double(double value) { return typed_literal(xsd_double_lexical(value), kXsdDouble); }

Term xsd_boolean(bool value) { return typed_literal(value ? "true" : "false", kXsdBoolean); }

Term xsd_datetime(std::string_view lexical) { return typed_literal(lexical, kXsdDateTime); }

Triple make_triple(Term s, Term p, Term o, std::optional<std::string> graph) {
    return Triple{std::move(s), std::move(p), std::move(o), std::move(graph)};
}

void append_nquads(std::string& out, const Triple& triple) {
    append_term(out, triple.s);
    out += ' ';
    append_term(out, triple.p);
    out += ' ';
    append_term(out, triple.o);
    if (triple.graph) {
        out += ' ';
        append_iri(out, *triple.graph);
    }
    out += " .\n";
}

void append_nquads_term(std::string& out, const Term& term) { append_term(out, term); }

std::string to_ntriples(const Term& term) {
    std::string out;
    append_term(out, term);
    return out;
}

std::string to_ntriples(const Triple& triple) {
    std::string out;
    append_terms(out, triple);
    out += " .";
    return out;
}

std::string to_nquads(const Triple& triple) {
    if (!triple.graph) return to_ntriples(triple);
    std::string out;
    append_terms(out, triple);
    out += ' ';
    append_iri(out, *triple.graph);
    out += " .";
    return out;
}

}  // namespace glassbox::schema
