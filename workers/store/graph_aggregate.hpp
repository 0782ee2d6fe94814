// The store's graph-query operations over a collection's graph, on either backend: `aggregate`
// (1–3 joined triple patterns, value filters, grouping, one aggregate, order, limit; each row with
// the facts that support it) and `predicates` (the predicates in use, labelled). Both are built
// on GraphStore's pattern matches, so they read what the other queries read (docs/knowledge.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "schema/messages_aggregate.hpp"
#include "storage/sql.hpp"
#include "workers/store/graph_store.hpp"
#include "workers/store/knowledge_base.hpp"

namespace glassbox::store {

// The work one aggregate request may do: triples read by its pattern matches, partial solutions
// held, facts reported per row. Past max_scanned or max_solutions the query stops and the reply
// says `"truncated": true` (its rows are what was found so far).
struct AggregateBounds {
    std::size_t max_scanned = 50'000;
    std::size_t max_solutions = 20'000;
    std::size_t facts_per_row = 12;
    std::size_t values_per_row = 50;  // a count row's distinct values named
};

// {"rows": [{"bindings": {var: {"term", "label"}}, "value"?, "values"?, "facts": [{"triple",
// "text"}]}], "solutions", "scanned", "truncated", "sparql"}. `stop` (a cancelled request) is
// asked between matches and ends the query with kCancelled.
base::Result<nlohmann::json> run_aggregate(GraphStore& graph, const schema::AggregateQuery& query,
                                           const AggregateBounds& bounds,
                                           const std::function<bool()>& stop = {});

// {"predicates": [{"term", "label"}], "truncated"}: at most `limit` distinct predicates of the
// collection's facts (rdfs:label itself left out), in id order.
base::Result<nlohmann::json> list_predicates(storage::sql::Connection& db, GraphStore& graph,
                                             std::uint32_t limit);

// `aggregate` with "plan_only": the query as the store resolved it, not run (a SPARQL engine runs
// it): {"query": encode(query), "labels": [{"term", "label"}] of the terms its slots name,
// "sparql"}.
base::Result<nlohmann::json> plan_aggregate(GraphStore& graph, const schema::AggregateQuery& query);

inline constexpr std::string_view kOpAggregate = "aggregate";
inline constexpr std::string_view kOpPredicates = "predicates";
inline constexpr std::uint32_t kMaxPredicatesLimit = 2'000;

// The `aggregate` or `predicates` op (`op`) of a request body, answered from the collection's
// graph under its lock in one read snapshot; InvalidRequest for a malformed body, NotFound for a
// collection never loaded.
base::Result<nlohmann::json> graph_query_op(KnowledgeBases& bases, std::string_view op,
                                            const nlohmann::json& body,
                                            const std::function<bool()>& stop,
                                            const AggregateBounds& bounds = {});

// A term's value for comparisons: numbers (any xsd numeric type, or text that is one), years
// (xsd:gYear) and dates (xsd:date, xsd:dateTime: year + fraction) of a literal or of a name (an
// IRI's label, "1871"); nullopt for anything else.
std::optional<double> comparable_value(const schema::Term& term, std::string_view label);

}  // namespace glassbox::store
