// An N-Triples or N-Quads line in its plainest form, split without serd: the loader's fast path
// for the common line (absolute IRIs, a literal without escapes, ASCII only, one statement).
#pragma once

#include <optional>
#include <string_view>

namespace glassbox::loader {

// The parts of a plain statement line, as views into the line: IRIs without their angle
// brackets, a literal's text without its quotes.
struct PlainStatement {
    std::string_view subject;
    std::string_view predicate;
    std::string_view object;
    bool object_is_literal = false;
    std::string_view datatype;  // an IRI; empty: none (the literal may have a language)
    std::string_view language;  // empty: none
    std::string_view graph;     // N-Quads' fourth term; empty: the default graph
};

// The line's statement when it has the plainest form, which serd (strict) reads as exactly this
// statement: optional spaces or tabs, then `<IRI> <IRI> object [<IRI>] .` and only spaces, tabs
// or a carriage return after the dot, where each IRI has a scheme ([A-Za-z][A-Za-z0-9+.-]*:) and
// printable ASCII other than <>"{}|^`\ and the object is an IRI or a literal of printable ASCII
// without `"` or `\`, with an optional @language ([A-Za-z]+(-[A-Za-z0-9]+)*) or ^^<IRI>. A graph
// term only when `quads`. Anything else (blank nodes, escapes, other bytes, comments, relative
// IRIs, errors): nullopt, and serd reads the line.
std::optional<PlainStatement> split_plain_statement(std::string_view line, bool quads) noexcept;

}  // namespace glassbox::loader
