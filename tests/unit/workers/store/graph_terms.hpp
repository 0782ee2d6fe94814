// The schema names the graph store tests spell their terms and triples with, and ex(): an IRI
// under http://example.org/.
#pragma once

#include <string>

#include "schema/messages.hpp"
#include "schema/term.hpp"

namespace glassbox::store::graph_terms {

using schema::iri;
using schema::lang_literal;
using schema::literal;
using schema::make_triple;
using schema::Term;
using schema::Triple;
using schema::TriplePattern;

inline Term ex(const std::string& local) { return iri("http://example.org/" + local); }

}  // namespace glassbox::store::graph_terms
