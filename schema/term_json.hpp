// The compact JSON wire encoding of terms and triples (DESIGN §3, docs/vocabulary.md).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "schema/term.hpp"

namespace glassbox::schema {

// Quoted triples nested deeper than this are refused (a bound on decoder recursion).
inline constexpr int kMaxQuotedTripleDepth = 32;

// {"t":"i","i":IRI} | {"t":"b","d":id} | {"t":"l","v":value,"dt"?:IRI,"ln"?:tag} |
// {"t":"t","tr":{"s","p","o"}}; "dt" and "ln" are left out when empty.
nlohmann::json encode(const Term& term);
// {"s","p","o","g"?}; "g" (the graph IRI, a string) is left out for the default graph.
nlohmann::json encode(const Triple& triple);

// Decoders never throw. `path` names the value in error messages
// ("explain_triples[3].o.tr.s: expected object, got string"). A term without "t" is
// recognised by its keys ("i", "d", "v", "tr"). Unknown keys are ignored; an empty "g"
// means the default graph.
base::Result<Term> decode_term(const nlohmann::json& value, std::string_view path = {});
base::Result<Triple> decode_triple(const nlohmann::json& value, std::string_view path = {});

}  // namespace glassbox::schema
