// The RDF renderings of a stored trace (the `trace` service's `show` reply): its triples,
// distinct, in first-seen order, as Turtle, N-Triples, N-Quads and JSON-LD. Shared by the CLI
// (`glassbox traces show --format`) and the HTTP gateway (GET /api/v1/traces/{id} by Accept).
//
// Graphs: every explain triple lives in urn:graph:retrieval (docs/vocabulary.md §1). Turtle and
// N-Triples have no graphs, so their output holds the triples of every graph merged (for a
// trace: exactly the triples of urn:graph:retrieval); N-Quads and JSON-LD keep the graph.
// Every RDF rendering carries each distinct stored triple once: a triple stored by two events
// is one RDF triple, so a parser finds exactly as many triples as distinct_triples() returns.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/messages_trace.hpp"
#include "schema/term.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::schema::rdf {

struct Prefix {
    std::string_view name;
    std::string_view ns;
};
// The prefixes Turtle output declares (and the tree shows names in).
inline constexpr std::array<Prefix, 6> kPrefixes{{{"rdf", vocab::kRdfNs},
                                                  {"rdfs", vocab::kRdfsNs},
                                                  {"xsd", vocab::kXsdNs},
                                                  {"owl", vocab::kOwlNs},
                                                  {"prov", vocab::kProvNs},
                                                  {"gb", vocab::kGbNs}}};
// "gb:Question" for an IRI in a known namespace with a simple local name.
std::optional<std::string> prefixed_name(std::string_view iri);

// Keys that identify a triple (graph dropped), a quad and a term.
std::string spo_key(const Triple& triple);
std::string quad_key(const Triple& triple);
std::string term_key(const Term& term);

// Every triple of the trace and its sub-traces (depth first, events in seq order), each
// distinct quad once, in first-seen order.
std::vector<Triple> trace_triples(const TraceDetail& trace);

// The graph the invalidations of a run are shown in (docs/traces.md, "Affected answers").
inline constexpr std::string_view kInvalidationGraph = "urn:graph:invalidation";
// The invalidations of `trace` (its `affected`) as PROV in kInvalidationGraph: each knowledge
// change an activity, the run's answer (its last step) and the removed sources
// prov:wasInvalidatedBy it, each removed fact a statement invalidated by it.
std::vector<Triple> invalidation_triples(const TraceDetail& trace);
// What `traces show --format nquads` and the SPARQL mirror give of a trace: trace_triples, then
// invalidation_triples.
std::vector<Triple> shown_triples(const TraceDetail& trace);

// The distinct (subject, predicate, object) triples, graphs dropped, first-seen order.
std::vector<Triple> distinct_triples(const std::vector<Triple>& triples);

// Turtle: prefixes rdf, rdfs, xsd, prov, gb, owl; one block per subject (`;` between
// predicates, `,` between objects); IRIs that cannot be prefixed in full; literals escaped.
std::string render_turtle(const std::vector<Triple>& triples);
// One `s p o .` line per distinct triple.
std::string render_ntriples(const std::vector<Triple>& triples);
// One `s p o g .` line per distinct quad (no graph: the default graph).
std::string render_nquads(const std::vector<Triple>& triples);
// Expanded JSON-LD: an array holding the default graph's node objects and one
// {"@id": <graph>, "@graph": [...]} object per named graph. A node object has "@id", "@type"
// and property arrays of {"@id"} or {"@value", "@type"|"@language"}. Lexical forms are kept
// (numbers are typed strings, never JSON numbers).
nlohmann::json render_jsonld(const std::vector<Triple>& triples);

}  // namespace glassbox::schema::rdf
