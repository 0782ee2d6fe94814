// N-Quads 1.1 reading, part of the contract: the loader sends the store batches of N-Quads
// lines (schema::append_nquads writes them), and the store parses them here, without serd.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/term.hpp"

namespace glassbox::schema {

// A blank node used as a graph name becomes this IRI + its label (a graph is an IRI here).
inline constexpr std::string_view kBlankGraphPrefix = "urn:glassbox:bnode:";

// One line of N-Quads, without its end of line: a statement (`s p o [g] .`, then optionally a
// comment), or nothing for a blank or comment-only line. Terms come out in schema's normal form:
// escapes (\t \b \n \r \f \" \' \\, \uXXXX, \UXXXXXXXX) decoded, xsd:string dropped (a simple
// literal), a language tag as written; blank-node labels kept as written (no scoping). IRIs
// must be absolute (a scheme, then ':'). Quoted triples (`<< s p o >>`) are not N-Quads 1.1 and
// are refused. `line_number` is used in errors only.
//
// Errors: kInvalidRequest "N-Quads LINE:COLUMN: message" (COLUMN 1-based, in bytes). The line
// must be well-formed UTF-8 without NUL (parse_nquads checks the whole text first).
base::Result<std::optional<Triple>> parse_nquads_line(std::string_view line,
                                                      std::uint64_t line_number);

// One term alone on a line, as it stands in a statement's object position: an IRI, a blank node
// or a literal (the dictionary-encoded load batch's terms, schema/indexed_quads.hpp). Errors as
// parse_nquads_line's, for anything but exactly one term (spaces around it allowed).
base::Result<Term> parse_nquads_term(std::string_view line, std::uint64_t line_number);

// Every statement of `text` (lines end in LF, CR or CRLF; the last one may lack its end).
// The first problem is the error: a NUL byte ("N-Quads: NUL byte at offset N"), invalid UTF-8
// ("N-Quads LINE:COLUMN: invalid UTF-8") or a bad line (as parse_nquads_line). Empty text, or
// only comments, gives no triple.
base::Result<std::vector<Triple>> parse_nquads(std::string_view text);

// parse_nquads' check of the whole text before any line: its first NUL byte or invalid UTF-8 as
// that error, or nullopt (shared with the loader's serd-based reader, which gives the same errors).
std::optional<base::Error> nquads_text_problem(std::string_view text);

}  // namespace glassbox::schema
