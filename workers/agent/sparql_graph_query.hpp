// The graph-query tool's SPARQL path (docs/agent.md §2): an aggregate query the store resolved,
// run on a SPARQL 1.1 engine over the collection's mirrored graph, its results made into the reply
// the store's own `aggregate` op gives (rows with labels, the value, a count's values and the
// facts behind each row), so that the observation, the planner and the answer do not change.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "schema/messages_aggregate.hpp"

namespace glassbox::agent {

// A SPARQL engine as the tool uses it (the agent worker wraps http::SparqlClient in one; tests
// give their own). Thread-safe: the tool calls of one iteration may share it.
class SparqlEngine {
public:
    virtual ~SparqlEngine() = default;
    // A SELECT's SPARQL 1.1 JSON results ({"head", "results": {"bindings"}}). Errors as
    // http::SparqlClient's: kServiceUnavailable, kTimeout, kInvalidRequest (refused), others.
    virtual base::Result<nlohmann::json> select(std::string_view query) = 0;
    // How explain steps name the engine ("virtuoso at http://127.0.0.1:8890/sparql").
    virtual std::string name() const = 0;
};

// What one SPARQL run reads besides the query's own rows.
struct SparqlAggregateBounds {
    std::size_t facts_per_row = 12;       // as the store's AggregateBounds
    std::size_t values_per_row = 50;      // a count row's distinct values named
    std::uint32_t max_solutions = 2'000;  // solutions read back to cite the rows
    std::size_t labels_per_query = 400;   // IRIs per label query
};

// Runs `query` over `graph` on the engine: the query as schema::to_sparql writes it, the
// solutions behind its rows (to_sparql_solutions, restricted to the rows' keys), the rows' count
// when they fill the limit, and the rdfs:labels of the IRIs shown. The reply has the store's
// shape: {"rows": [{"bindings": {var: {"term", "label"}}, "value"?, "values"?, "facts":
// [{"triple", "text"}]}], "total_rows", "solutions", "truncated": false, "sparql"}; labels are
// picked as the store picks them (English first, then the smallest; else the IRI's local name).
base::Result<nlohmann::json> run_sparql_aggregate(SparqlEngine& engine,
                                                  const schema::AggregateQuery& query,
                                                  std::string_view graph,
                                                  const SparqlAggregateBounds& bounds = {});

}  // namespace glassbox::agent
