// Term constructors, equality and N-Triples / N-Quads rendering.
#include "schema/term.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace glassbox::schema {
namespace {

void append_uchar(std::string& out, unsigned char c) {
    std::array<char, 8> buf{};
    std::snprintf(buf.data(), buf.size(), "\\u%04X", static_cast<unsigned>(c));
    out += buf.data();
}

// IRIREF excludes controls, space and <>"{}|^`\ ; UCHAR escapes keep the IRI's meaning.
void append_iri(std::string& out, std::string_view iri) {
    out += '<';
    for (char ch : iri) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '<': case '>': case '"': case '{': case '}': case '|': case '^': case '`':
            case '\\':
                append_uchar(out, c);
                break;
            default:
                if (c <= 0x20) {
                    append_uchar(out, c);
                } else {
                    out += ch;
                }
        }
    }
    out += '>';
}

void append_string(std::string& out, std::string_view value) {
    out += '"';
    for (char ch : value) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20 || c == 0x7F) {
                    append_uchar(out, c);
                } else {
                    out += ch;  // UTF-8 passes through: N-Triples is UTF-8
                }
        }
    }
    out += '"';
}

bool is_label_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

void append_blank(std::string& out, std::string_view id) {
    out += "_:";
    if (id.empty() || id.front() == '-') out += 'b';
    for (char ch : id) {
        if (is_label_char(ch)) {
            out += ch;
        } else {
            std::array<char, 4> buf{};
            std::snprintf(buf.data(), buf.size(), "%02X",
                          static_cast<unsigned>(static_cast<unsigned char>(ch)));
            out += 'x';
            out += buf.data();
        }
    }
}

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
        case Term::Kind::kTriple: {
            const auto& t = term.as_triple();
            out += "<< ";
            append_term(out, t.s);
            out += ' ';
            append_term(out, t.p);
            out += ' ';
            append_term(out, t.o);
            out += " >>";
            break;
        }
    }
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

Term xsd_integer(std::int64_t value) {
    return typed_literal(std::to_string(value), kXsdInteger);
}

Term xsd_decimal(std::string_view lexical) { return typed_literal(lexical, kXsdDecimal); }

Term xsd_double(double value) {
    if (std::isnan(value)) return typed_literal("NaN", kXsdDouble);
    if (std::isinf(value)) return typed_literal(value > 0 ? "INF" : "-INF", kXsdDouble);
    std::array<char, 32> buf{};
    const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
    std::string text(buf.data(), ec == std::errc{} ? end : buf.data());
    return typed_literal(text, kXsdDouble);
}

Term xsd_boolean(bool value) { return typed_literal(value ? "true" : "false", kXsdBoolean); }

Term xsd_datetime(std::string_view lexical) { return typed_literal(lexical, kXsdDateTime); }

Triple make_triple(Term s, Term p, Term o, std::optional<std::string> graph) {
    return Triple{std::move(s), std::move(p), std::move(o), std::move(graph)};
}

std::string to_ntriples(const Term& term) {
    std::string out;
    append_term(out, term);
    return out;
}

std::string to_ntriples(const Triple& triple) {
    std::string out;
    append_term(out, triple.s);
    out += ' ';
    append_term(out, triple.p);
    out += ' ';
    append_term(out, triple.o);
    out += " .";
    return out;
}

std::string to_nquads(const Triple& triple) {
    if (!triple.graph) return to_ntriples(triple);
    std::string out;
    append_term(out, triple.s);
    out += ' ';
    append_term(out, triple.p);
    out += ' ';
    append_term(out, triple.o);
    out += ' ';
    append_iri(out, *triple.graph);
    out += " .";
    return out;
}

}  // namespace glassbox::schema
