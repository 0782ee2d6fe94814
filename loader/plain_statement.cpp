// Splitting a plain N-Triples or N-Quads line without serd (loader/plain_statement.hpp).
#include "loader/plain_statement.hpp"

#include <array>
#include <cstddef>

namespace glassbox::loader {
namespace {

constexpr bool is_alpha(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// Bytes an IRI of the fast path may hold: printable ASCII but <>"{}|^`\ (serd refuses those
// unescaped; `\` starts an escape, left to serd).
constexpr std::array<bool, 256> make_iri_bytes() {
    std::array<bool, 256> ok{};
    for (int c = 0x21; c < 0x7F; ++c) ok[static_cast<std::size_t>(c)] = true;
    for (const char c : std::string_view("<>\"{}|^`\\")) ok[static_cast<unsigned char>(c)] = false;
    return ok;
}
constexpr auto kIriBytes = make_iri_bytes();

// Bytes a literal of the fast path may hold: printable ASCII but `"` and `\`.
constexpr std::array<bool, 256> make_literal_bytes() {
    std::array<bool, 256> ok{};
    for (int c = 0x20; c < 0x7F; ++c) ok[static_cast<std::size_t>(c)] = true;
    ok[static_cast<unsigned char>('"')] = false;
    ok[static_cast<unsigned char>('\\')] = false;
    return ok;
}
constexpr auto kLiteralBytes = make_literal_bytes();

class LineCursor {
public:
    explicit LineCursor(std::string_view line) : line_(line) {}

    bool at_end() const noexcept { return at_ == line_.size(); }
    char peek() const noexcept { return at_ < line_.size() ? line_[at_] : '\0'; }

    // Spaces and tabs; whether there was at least one.
    bool blanks() noexcept {
        const std::size_t start = at_;
        while (at_ < line_.size() && (line_[at_] == ' ' || line_[at_] == '\t')) ++at_;
        return at_ > start;
    }

    bool take(char c) noexcept {
        if (peek() != c) return false;
        ++at_;
        return true;
    }

    // `<scheme:rest>`: the IRI between the brackets.
    std::optional<std::string_view> iri() noexcept {
        if (!take('<') || !is_alpha(peek())) return std::nullopt;
        const std::size_t start = at_;
        while (at_ < line_.size() && (is_alpha(line_[at_]) || is_digit(line_[at_]) ||
                                      line_[at_] == '+' || line_[at_] == '.' || line_[at_] == '-'))
            ++at_;
        if (!take(':')) return std::nullopt;
        while (at_ < line_.size() && kIriBytes[static_cast<unsigned char>(line_[at_])]) ++at_;
        const std::size_t end = at_;
        if (!take('>')) return std::nullopt;
        return line_.substr(start, end - start);
    }

    // `"text"`: the text between the quotes.
    std::optional<std::string_view> literal() noexcept {
        if (!take('"')) return std::nullopt;
        const std::size_t start = at_;
        while (at_ < line_.size() && kLiteralBytes[static_cast<unsigned char>(line_[at_])]) ++at_;
        const std::size_t end = at_;
        if (!take('"')) return std::nullopt;
        return line_.substr(start, end - start);
    }

    // [A-Za-z]+ (-[A-Za-z0-9]+)*, ending where a space, tab or the dot follows.
    std::optional<std::string_view> language() noexcept {
        const std::size_t start = at_;
        while (is_alpha(peek())) ++at_;
        if (at_ == start) return std::nullopt;
        while (take('-')) {
            const std::size_t part = at_;
            while (is_alpha(peek()) || is_digit(peek())) ++at_;
            if (at_ == part) return std::nullopt;
        }
        const char next = peek();
        if (next != ' ' && next != '\t' && next != '.') return std::nullopt;
        return line_.substr(start, at_ - start);
    }

    // The rest is spaces, tabs and carriage returns only.
    bool only_blanks_left() const noexcept {
        for (std::size_t i = at_; i < line_.size(); ++i) {
            if (line_[i] != ' ' && line_[i] != '\t' && line_[i] != '\r') return false;
        }
        return true;
    }

private:
    std::string_view line_;
    std::size_t at_ = 0;
};

// The object: an IRI, or a literal with its optional language or datatype.
bool read_object(LineCursor& cursor, PlainStatement& out) noexcept {
    if (cursor.peek() == '<') {
        const auto iri = cursor.iri();
        if (!iri) return false;
        out.object = *iri;
        return true;
    }
    const auto text = cursor.literal();
    if (!text) return false;
    out.object = *text;
    out.object_is_literal = true;
    if (cursor.take('@')) {
        const auto language = cursor.language();
        if (!language) return false;
        out.language = *language;
    } else if (cursor.take('^')) {
        const auto datatype = cursor.take('^') ? cursor.iri() : std::nullopt;
        if (!datatype) return false;
        out.datatype = *datatype;
    }
    return true;
}

}  // namespace

std::optional<PlainStatement> split_plain_statement(std::string_view line, bool quads) noexcept {
    LineCursor cursor(line);
    PlainStatement out;
    cursor.blanks();
    const auto subject = cursor.iri();
    if (!subject || !cursor.blanks()) return std::nullopt;
    const auto predicate = cursor.iri();
    if (!predicate || !cursor.blanks()) return std::nullopt;
    out.subject = *subject;
    out.predicate = *predicate;
    if (!read_object(cursor, out)) return std::nullopt;
    cursor.blanks();
    if (cursor.peek() == '<') {
        const auto graph = quads ? cursor.iri() : std::nullopt;
        if (!graph) return std::nullopt;
        out.graph = *graph;
        cursor.blanks();
    }
    if (!cursor.take('.') || !cursor.only_blanks_left()) return std::nullopt;
    return out;
}

}  // namespace glassbox::loader
