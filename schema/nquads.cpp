// A hand-written N-Quads 1.1 line parser (https://www.w3.org/TR/n-quads/, the grammar of §5):
// one pass over the line, escapes decoded as they are met.
#include "schema/nquads.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <utility>

#include "base/utf8.hpp"
#include "schema/detail/ntriples_grammar.hpp"

namespace glassbox::schema {

namespace {

using base::ErrorType;
using base::make_error;
using base::Result;

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool digit(char c) noexcept { return c >= '0' && c <= '9'; }

// IRIREF excludes controls, space and <>"{}|^`\ (a backslash only starts a UCHAR); a table,
// since every byte of every IRI of a load is looked up.
constexpr std::array<bool, 256> kIriForbidden = [] {
    std::array<bool, 256> table{};
    for (int c = 0; c <= 0x20; ++c) table[static_cast<std::size_t>(c)] = true;
    for (const char c : std::string_view("<>\"{}|^`\\"))
        table[static_cast<unsigned char>(c)] = true;
    return table;
}();

inline bool iri_forbidden(unsigned char c) noexcept { return kIriForbidden[c]; }

// scheme ":" …, the scheme being ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986 §3.1).
bool absolute_iri(std::string_view iri) noexcept {
    const auto colon = iri.find(':');
    if (colon == 0 || colon == std::string_view::npos || !alpha(iri[0])) return false;
    for (std::size_t i = 1; i < colon; ++i) {
        const char c = iri[i];
        if (!alpha(c) && !digit(c) && c != '+' && c != '-' && c != '.') return false;
    }
    return true;
}

class LineParser {
public:
    LineParser(std::string_view line, std::uint64_t line_number)
        : line_(line), line_number_(line_number) {}

    Result<std::optional<Triple>> parse() {
        skip_space();
        if (at_end() || peek() == '#') return std::optional<Triple>{};
        Triple t;
        if (!subject(t.s)) return failure();
        skip_space();
        if (!predicate(t.p)) return failure();
        skip_space();
        if (!object(t.o)) return failure();
        skip_space();
        if (!at_end() && peek() != '.') {
            std::string graph;
            if (!graph_label(graph)) return failure();
            t.graph = std::move(graph);
            skip_space();
        }
        if (at_end() || peek() != '.') {
            fail("expected '.' at the end of the statement");
            return failure();
        }
        ++pos_;
        skip_space();
        if (!at_end() && peek() != '#') {
            fail("expected the end of the line after '.'");
            return failure();
        }
        return std::optional<Triple>{std::move(t)};
    }

    // The line as one term in object position (an IRI, a blank node or a literal), nothing else.
    Result<Term> parse_term() {
        Term t;
        skip_space();
        if (!object(t)) return failure();
        skip_space();
        if (!at_end()) {
            fail("expected the end of the line after the term");
            return failure();
        }
        return t;
    }

private:
    bool at_end() const noexcept { return pos_ >= line_.size(); }
    char peek() const noexcept { return line_[pos_]; }
    bool starts_with(std::string_view s) const noexcept {
        return line_.substr(pos_).starts_with(s);
    }
    void skip_space() noexcept {
        while (!at_end() && (peek() == ' ' || peek() == '\t')) ++pos_;
    }

    bool fail(std::string message) {
        if (!error_) error_ = std::pair{pos_, std::move(message)};
        return false;
    }
    bool fail_at(std::size_t at, std::string message) {
        pos_ = at;
        return fail(std::move(message));
    }
    base::Error failure() const {
        const auto& [at, message] = *error_;
        // The message may quote the line (an IRI, an escape): escaped, so it stays valid UTF-8
        // even for a line parse_nquads did not check first.
        return base::Error{ErrorType::kInvalidRequest, "N-Quads " + std::to_string(line_number_) +
                                                           ":" + std::to_string(at + 1) + ": " +
                                                           base::printable_utf8(message)};
    }

    bool refuse_quoted() {
        return fail("quoted triples (<< s p o >>) are not N-Quads 1.1 and cannot be read here");
    }

    bool subject(Term& out) {
        if (at_end()) return fail("expected a subject (an IRI or a blank node)");
        if (starts_with("<<")) return refuse_quoted();
        if (peek() == '<') return iri_term(out);
        if (starts_with("_:")) return blank_term(out);
        return fail("expected a subject (an IRI or a blank node)");
    }

    bool predicate(Term& out) {
        if (at_end() || peek() != '<' || starts_with("<<"))
            return fail("expected a predicate (an IRI)");
        return iri_term(out);
    }

    bool object(Term& out) {
        if (at_end()) return fail("expected an object (an IRI, a blank node or a literal)");
        if (starts_with("<<")) return refuse_quoted();
        if (peek() == '<') return iri_term(out);
        if (starts_with("_:")) return blank_term(out);
        if (peek() == '"') return literal(out);
        return fail("expected an object (an IRI, a blank node or a literal)");
    }

    bool graph_label(std::string& out) {
        if (starts_with("<<")) return fail("expected a graph name (an IRI or a blank node) or '.'");
        if (peek() == '<') return iri(out);
        if (starts_with("_:")) {
            std::string label;
            if (!blank_label(label)) return false;
            out.assign(kBlankGraphPrefix);
            out += label;
            return true;
        }
        return fail("expected a graph name (an IRI or a blank node) or '.'");
    }

    bool iri_term(Term& out) {
        std::string value;
        if (!iri(value)) return false;
        out = Iri{std::move(value)};
        return true;
    }

    bool blank_term(Term& out) {
        std::string label;
        if (!blank_label(label)) return false;
        out = BlankNode{std::move(label)};
        return true;
    }

    // IRIREF ::= '<' ([^#x00-#x20<>"{}|^`\] | UCHAR)* '>'
    bool iri(std::string& out) {
        const std::size_t start = pos_;
        ++pos_;  // '<'
        while (!at_end()) {
            const char c = peek();
            if (c == '>') {
                ++pos_;
                if (!absolute_iri(out))
                    return fail_at(start, "<" + out + "> is not an absolute IRI");
                return true;
            }
            if (c == '\\') {
                if (!uchar(out)) return false;
                continue;
            }
            if (iri_forbidden(static_cast<unsigned char>(c))) {
                return fail("character not allowed in an IRI");
            }
            // The run of plain characters up to the next one to look at, appended at once.
            const std::size_t run = pos_;
            while (++pos_ < line_.size() && !iri_forbidden(static_cast<unsigned char>(peek()))) {
            }
            out.append(line_.substr(run, pos_ - run));
        }
        return fail_at(start, "IRI without its closing '>'");
    }

    // BLANK_NODE_LABEL ::= '_:' (PN_CHARS_U | [0-9]) ((PN_CHARS | '.')* PN_CHARS)?
    bool blank_label(std::string& out) {
        pos_ += 2;  // "_:"
        const std::size_t first = pos_;
        if (at_end()) return fail("blank node without a label");
        std::size_t i = pos_;
        const char32_t c0 = detail::next_code_point(line_, i);
        if (!detail::pn_chars_u(c0) && !(c0 >= '0' && c0 <= '9'))
            return fail("a blank node label cannot start here");
        std::size_t end = i;  // just past the last PN_CHARS
        while (i < line_.size()) {
            std::size_t next = i;
            const char32_t c = detail::next_code_point(line_, next);
            if (c == '.') {
                i = next;
                continue;
            }
            if (!detail::pn_chars(c)) break;
            i = next;
            end = i;
        }
        // Trailing dots are not part of the label (the last one ends the statement).
        out.assign(line_.substr(first, end - first));
        pos_ = end;
        return true;
    }

    // STRING_LITERAL_QUOTE ('^^' IRIREF | LANGTAG)?
    bool literal(Term& out) {
        const std::size_t start = pos_;
        ++pos_;  // '"'
        std::string value;
        for (;;) {
            if (at_end()) return fail_at(start, "string without its closing quote");
            const char c = peek();
            if (c == '"') break;
            if (c == '\\') {
                if (pos_ + 1 < line_.size() && line_[pos_ + 1] != 'u' && line_[pos_ + 1] != 'U') {
                    if (!echar(value)) return false;
                } else if (!uchar(value)) {
                    return false;
                }
                continue;
            }
            // The run up to the next quote or backslash, appended at once.
            const std::size_t run = pos_;
            while (++pos_ < line_.size() && peek() != '"' && peek() != '\\') {
            }
            value.append(line_.substr(run, pos_ - run));
        }
        ++pos_;  // the closing '"'
        std::string datatype;
        std::string language;
        if (starts_with("^^")) {
            pos_ += 2;
            if (at_end() || peek() != '<' || starts_with("<<"))
                return fail("expected a datatype IRI after '^^'");
            if (!iri(datatype)) return false;
            if (datatype == kXsdString) datatype.clear();
        } else if (!at_end() && peek() == '@') {
            if (!langtag(language)) return false;
        }
        out = Literal{std::move(value), std::move(datatype), std::move(language)};
        return true;
    }

    // LANGTAG ::= '@' [a-zA-Z]+ ('-' [a-zA-Z0-9]+)*
    bool langtag(std::string& out) {
        ++pos_;  // '@'
        const std::size_t first = pos_;
        while (!at_end() && alpha(peek())) ++pos_;
        if (pos_ == first) return fail("expected a language tag after '@'");
        while (!at_end() && peek() == '-') {
            const std::size_t subtag = ++pos_;
            while (!at_end() && (alpha(peek()) || digit(peek()))) ++pos_;
            if (pos_ == subtag) return fail("empty language subtag");
        }
        out.assign(line_.substr(first, pos_ - first));
        return true;
    }

    // ECHAR ::= '\' [tbnrf"'\]
    bool echar(std::string& out) {
        const char c = line_[pos_ + 1];
        char decoded = 0;
        switch (c) {
            case 't':
                decoded = '\t';
                break;
            case 'b':
                decoded = '\b';
                break;
            case 'n':
                decoded = '\n';
                break;
            case 'r':
                decoded = '\r';
                break;
            case 'f':
                decoded = '\f';
                break;
            case '"':
                decoded = '"';
                break;
            case '\'':
                decoded = '\'';
                break;
            case '\\':
                decoded = '\\';
                break;
            default:
                return fail("unknown escape '\\" + std::string(1, c) + "'");
        }
        out += decoded;
        pos_ += 2;
        return true;
    }

    // UCHAR ::= '\u' HEX HEX HEX HEX | '\U' HEX HEX HEX HEX HEX HEX HEX HEX
    bool uchar(std::string& out) {
        if (pos_ + 1 >= line_.size() || (line_[pos_ + 1] != 'u' && line_[pos_ + 1] != 'U')) {
            return fail("a backslash in an IRI must start \\u or \\U");
        }
        const std::size_t digits = line_[pos_ + 1] == 'u' ? 4 : 8;
        if (pos_ + 2 + digits > line_.size()) return fail("\\u or \\U escape cut short");
        std::uint32_t cp = 0;
        for (std::size_t k = 0; k < digits; ++k) {
            const int v = hex_value(line_[pos_ + 2 + k]);
            if (v < 0) return fail("\\u or \\U escape with a character that is not a hex digit");
            cp = (cp << 4) | static_cast<std::uint32_t>(v);
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0) {
            return fail(
                "\\u or \\U escape names no character (a surrogate, NUL or beyond U+10FFFF)");
        }
        base::append_utf8(out, cp);
        pos_ += 2 + digits;
        return true;
    }

    std::string_view line_;
    std::uint64_t line_number_;
    std::size_t pos_ = 0;
    std::optional<std::pair<std::size_t, std::string>> error_;
};

}  // namespace

Result<std::optional<Triple>> parse_nquads_line(std::string_view line, std::uint64_t line_number) {
    return LineParser(line, line_number).parse();
}

Result<Term> parse_nquads_term(std::string_view line, std::uint64_t line_number) {
    return LineParser(line, line_number).parse_term();
}

std::optional<base::Error> nquads_text_problem(std::string_view text) {
    if (const void* nul = std::memchr(text.data(), '\0', text.size()); nul != nullptr) {
        return make_error(ErrorType::kInvalidRequest,
                          "N-Quads: NUL byte at offset " +
                              std::to_string(static_cast<const char*>(nul) - text.data()));
    }
    if (const auto at = base::invalid_utf8_at(text); at != std::string_view::npos) {
        const std::string_view before = text.substr(0, at);
        const auto line = std::count(before.begin(), before.end(), '\n') + 1;
        const auto line_start = before.rfind('\n');
        const std::size_t column =
            at - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
        return make_error(
            ErrorType::kInvalidRequest,
            "N-Quads " + std::to_string(line) + ":" + std::to_string(column) + ": invalid UTF-8");
    }
    return std::nullopt;
}

namespace {

// Where the line starting at `from` ends: its first CR or LF, or the end of the text.
std::size_t line_end(std::string_view text, std::size_t from) noexcept {
    const char* const begin = text.data() + from;
    const std::size_t left = text.size() - from;
    const auto* lf = static_cast<const char*>(std::memchr(begin, '\n', left));
    const std::size_t before_lf = lf == nullptr ? left : static_cast<std::size_t>(lf - begin);
    const auto* cr = static_cast<const char*>(std::memchr(begin, '\r', before_lf));
    return from + (cr == nullptr ? before_lf : static_cast<std::size_t>(cr - begin));
}

}  // namespace

Result<std::vector<Triple>> parse_nquads(std::string_view text) {
    if (auto problem = nquads_text_problem(text)) return std::move(*problem);
    std::vector<Triple> triples;
    triples.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
    std::uint64_t line_number = 1;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = line_end(text, start);
        auto parsed = parse_nquads_line(text.substr(start, end - start), line_number);
        if (!parsed) return parsed.error();
        if (*parsed) triples.push_back(std::move(**parsed));
        // CRLF is one end of line; a lone CR or LF is one too.
        start = end;
        if (start < text.size() && text[start] == '\r') ++start;
        if (start < text.size() && text[start] == '\n') ++start;
        ++line_number;
    }
    return triples;
}

}  // namespace glassbox::schema
