// The store's graph-query operations (docs/knowledge.md "Aggregates and filters"): `aggregate`, a
// small conjunctive pattern query with value filters, grouping, one aggregate, order and limit,
// shaped so that it translates one to one to a SPARQL SELECT; and `predicates`, the predicates a
// collection uses with their labels (what a question's relation words are mapped onto).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "schema/term.hpp"

namespace glassbox::schema {

// Bounds of an aggregate query's text.
inline constexpr std::size_t kMaxAggregatePatterns = 3;  // triple patterns in `match`
inline constexpr std::size_t kMaxAggregateFilters = 4;
inline constexpr std::size_t kMaxAggregateAlternatives = 16;  // terms of one position
inline constexpr std::uint32_t kDefaultAggregateLimit = 100;
inline constexpr std::uint32_t kMaxAggregateLimit = 1'000;

// One position of a triple pattern: a variable ("?ship", SPARQL's ?ship), or one term, or
// several alternative terms (SPARQL's VALUES), or a variable restricted to listed terms
// ({"var": "?x", "values": [...]}: VALUES ?x { … }).
struct PatternSlot {
    std::string var;  // with its "?"; empty when the slot holds terms only
    std::vector<Term> terms;
    bool is_var() const noexcept { return !var.empty(); }
    bool operator==(const PatternSlot&) const = default;
};

struct AggregatePattern {
    PatternSlot s, p, o;
    bool operator==(const AggregatePattern&) const = default;
};

// FILTER(?var cmp value): numbers, xsd:gYear / xsd:date literals (and names that read as
// them) are compared as values; otherwise = and != compare the term or its label.
struct AggregateFilter {
    std::string var;
    std::string cmp;  // < <= > >= = !=
    nlohmann::json value;
    bool operator==(const AggregateFilter&) const = default;
};

struct AggregateQuery {
    std::string collection;
    std::vector<AggregatePattern> match;  // 1..kMaxAggregatePatterns, joined on shared variables
    std::vector<AggregateFilter> filter;
    std::vector<std::string> group_by;  // variables; with an aggregate, one row per group
    std::string aggregate;              // "" | count | min | max | sum | avg
    std::string aggregate_var;          // the variable aggregated (count: distinct values)
    std::string order_by;               // a variable, "value" (the aggregate), or ""
    bool descending = false;
    std::uint32_t limit = kDefaultAggregateLimit;
    bool operator==(const AggregateQuery&) const = default;
};

// The query from its JSON text:
//   {"collection", "match": [{"s","p","o"}], "filter": [{"var","cmp","value"}],
//    "group_by": [var], "aggregate": {"fn","var"}, "order_by": {"var","dir"}, "limit"}
// where a slot is "?name", "<IRI>", a term ({"t":"i","i":…}, {"t":"l","v":…,"dt"?}) or a list
// of terms. InvalidRequest naming the field for anything malformed: no pattern or more than
// three, an unknown comparison or aggregate, a variable the patterns do not bind, a limit out
// of 1..kMaxAggregateLimit.
base::Result<AggregateQuery> decode_aggregate_query(const nlohmann::json& body);
nlohmann::json encode(const AggregateQuery& query);

// The query as SPARQL 1.1 text (for the explain step and a SPARQL backend), over the named graph
// `graph` when one is given (FROM <graph>). It means what the store's evaluation means: a variable
// that is filtered, ordered or aggregated (min, max, sum, avg) is read as a value by
// aggregate_text_value of its text (a literal's lexical form; an IRI's rdfs:label, else its local
// name) through BINDs of ?gb_<var>_text and ?gb_<var>_num; = and != fall back to comparing that
// text (ASCII case folded) or the IRI; order puts values first, then texts. Checked on Virtuoso
// 7.2 (docs/agent.md §2).
std::string to_sparql(const AggregateQuery& query, std::string_view graph = {});

// The solutions behind a query's rows, for citing them: every variable of the patterns and the
// variables standing for a slot's alternatives (aggregate_slot_var), SELECT DISTINCT, under the
// same patterns and filters, restricted by `restrict` (SPARQL text placed first in the WHERE
// group, e.g. a VALUES block of the rows' keys), at most `limit`; with min or max also
// ?gb_<var>_num of the aggregated variable.
std::string to_sparql_solutions(const AggregateQuery& query, std::string_view graph,
                                std::string_view restrict, std::uint32_t limit);

// The variable a SPARQL form gives to pattern `pattern`'s slot `position` ('s', 'p' or 'o') when
// that slot lists alternatives.
std::string aggregate_slot_var(std::size_t pattern, char position);

// A term as SPARQL text: <IRI>, "text", "text"@lang, "text"^^<datatype>.
std::string sparql_term(const Term& term);

// A text's value for comparisons (the store's and the SPARQL form's): a number ("41.5", " 23 ",
// "+1e3"), else a date read as its year and fraction ("1871" 1871, "1871-05" 1871 + 4/12,
// "1871-05-03…" + 2/372); nullopt for anything else.
std::optional<double> aggregate_text_value(std::string_view text);
// The date reading alone (xsd:gYear, xsd:date, xsd:dateTime literals).
std::optional<double> aggregate_date_value(std::string_view text);

}  // namespace glassbox::schema
