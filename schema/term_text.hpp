// Terms and triples read from JSON text with the project's cursor (schema/json_cursor.hpp), as
// decode_term and decode_triple (schema/term_json.hpp) read them from a tree: the store's request
// readers (schema/store_requests_text.hpp) read the terms of graph RAG's queries with these.
#pragma once

#include "schema/json_cursor.hpp"
#include "schema/term.hpp"

namespace glassbox::schema {

// A term at the cursor, in any key order, unknown keys skipped. True only when decode_term of the
// value's tree gives the same term: a "t" of i/b/l/t with exactly its kind's value key, a literal
// normalised as that decoder does (xsd:string dropped; rdf:langString dropped beside a language).
// False, to leave the text to the tree, for anything else: a term without "t", an empty IRI, a
// literal with both a datatype and a language, a null or another type where a string belongs, a
// duplicate or escaped key, quoted triples nested deeper than kMaxQuotedTripleDepth - 1 (`depth`
// counts the quoting levels above this term, as the tree decoder's does).
bool read_json_term(JsonCursor& r, Term& out, int depth = 0);

// A triple ({"s","p","o","g"?}) at the cursor, as decode_triple reads it (an empty "g" is the
// default graph); false as read_json_term.
bool read_json_triple(JsonCursor& r, Triple& out, int depth = 0);

}  // namespace glassbox::schema
