// A term as written on the command line (`glassbox query triples -s`, `glassbox forget fact`).
#pragma once

#include <string>

#include "schema/term.hpp"

namespace glassbox::cli {

// An N-Triples term (<iri>, "literal", "x"@en, "5"^^<datatype>, _:b), or — for convenience — a
// bare absolute IRI (scheme:rest, no spaces); with `literal_fallback`, any other bare text is a
// plain literal. Checked by the same parser the store uses, so what is accepted here is exactly
// what the store can match. Anything else exits with InvalidRequest naming `option`.
schema::Term parse_term_arg(const std::string& text, const char* option, bool literal_fallback);

}  // namespace glassbox::cli
