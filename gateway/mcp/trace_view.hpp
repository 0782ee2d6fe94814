// explain_trace's view of a stored trace: a readable step list and its triples, bounded.
#pragma once

#include <cstddef>

#include <nlohmann/json_fwd.hpp>

namespace glassbox::gateway::mcp {

struct TraceViewLimits {
    std::size_t max_triples = 500;      // triples listed (all steps are always listed)
    std::size_t max_steps = 2000;       // steps listed, sub-traces included
    std::size_t max_value_chars = 300;  // a literal shown in a step's properties
};

// From the trace service's `show` reply (docs/traces.md §2): `{trace, summary, steps: [{trace,
// depth, seq, step, type, service, state, received, properties}], subtraces, triples: [{s, p, o,
// g?}], triples_total, truncated, text}`. Terms are written as Turtle would (prefixed names for
// gb:, prov:, rdf:, rdfs:, xsd:, owl:, skos:; literals quoted), `text` is the step list as lines.
nlohmann::json trace_view(const nlohmann::json& show_reply, const TraceViewLimits& limits);

// A compact-encoded term (docs/vocabulary.md) as Turtle would write it.
std::string term_text(const nlohmann::json& term);

}  // namespace glassbox::gateway::mcp
