// A DOM-free scan of an explain message body: checks that it is an explain message in the
// encoding schema::encode writes and slices each triple's JSON out of it, so ingest stores the
// triples as received without building a JSON tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/json_cursor.hpp"
#include "schema/messages.hpp"

namespace glassbox::trace {

// A JSON string as received: `raw` is the text between the quotes, escapes not yet applied.
using JsonText = schema::JsonText;

enum class ScannedKind : char { kIri = 'i', kBlankNode = 'b', kLiteral = 'l', kTriple = 't' };

struct ScannedTerm {
    ScannedKind kind = ScannedKind::kIri;
    JsonText value;  // the IRI, blank node id or literal value; empty for a quoted triple
};

struct ScannedTriple {
    // A plain body's triple: its JSON object exactly as received, '{' to '}'. Empty for a
    // dictionary body's (its terms are ScannedExplain::terms[s_at], ...).
    std::string_view text;
    bool has_graph = false;
    ScannedTerm s;
    ScannedTerm p;
    ScannedTerm o;
    // The object's term object as received, '{' to '}'.
    std::string_view object_text;
    // A plain body's literal object: its "v" token, quotes included: where `text` holds it
    // (offset from the start of `text`) and how long it is.
    std::size_t object_value_at = 0;
    std::size_t object_value_size = 0;
    // A dictionary body's triple: the indexes of its terms and of its graph when it names one
    // (without one, has_graph says whether it is in the message's explain graph).
    std::uint32_t s_at = 0;
    std::uint32_t p_at = 0;
    std::uint32_t o_at = 0;
    std::optional<std::uint32_t> g_at;
};

// One entry of a dictionary body's explain_terms: the term, its object as received ('{' to
// '}') and a literal's "v" token (a view into `text`, quotes included).
struct DictionaryTerm {
    ScannedTerm term;
    std::string_view text;
    std::string_view value_token;
};

// The fields of schema::ExplainMessage, strings decoded, triples as slices of the body.
struct ScannedExplain {
    std::string session;
    std::uint64_t seq = 0;
    std::string service;
    std::string worker;
    std::optional<std::string> parent_uri;
    std::string explain_id;
    // The explain graph's JSON string token, quotes included: a slice of the body, or of a
    // constant holding the default graph when the body has none. `"\"\""` means no graph.
    std::string_view explain_graph_token;
    std::vector<ScannedTriple> triples;
    // A body in the dictionary form (docs/protocol.md §8.1): its explain_terms, which its
    // triples index (each one checked: in range, a graph an IRI). Empty for a plain body.
    bool dictionary = false;
    std::vector<DictionaryTerm> terms;
    bool end_of_trace = false;
    schema::TraceStatus trace_status = schema::TraceStatus::kNone;
    std::optional<base::Error> error;
};

// True when `body` is one JSON object that decode<schema::ExplainMessage> accepts and whose
// triples are each in the canonical encoding (the keys and values schema::encode writes for
// the decoded triple; any key order and whitespace): then `out` holds what that decode would
// give, its views pointing into `body`. False for anything else, including valid messages in
// another form (unknown or null fields, escaped keys, non-canonical triples): the caller then
// decodes the body with the JSON DOM, which gives the message or the reason it is malformed.
// A body holding an IRI that decoder rewrites (explain::iri_problem finds fault with it) is
// one of those: the scan keeps only IRIs that are valid as they stand.
// The scan never accepts a body the DOM decoder would refuse.
// A body in the dictionary form gives the triples that body decodes to as indexes into its terms
// (`out.dictionary`), each with its terms: nothing is written out.
bool scan_explain(std::string_view body, ScannedExplain& out);

// One triple's JSON object alone (a stored triple record: the store keeps each triple in the
// canonical encoding) scanned as scan_explain scans each of a body's triples, `out` viewing
// `text`; false for anything else (the caller then decodes it with the JSON DOM).
bool scan_triple_text(std::string_view text, ScannedTriple& out);

}  // namespace glassbox::trace
