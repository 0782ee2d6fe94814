// The agent planner's questions about many facts at once (internal to reasoner/): counts
// ("how many ships did X build"), filters on values ("which lighthouses were built before
// 1860"), superlatives ("which is the oldest lighthouse") and comparisons ("which was built
// first, X or Y"), each planned as graph-query attempts (docs/agent.md §2).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reasoner/reasoner.hpp"

namespace glassbox::reasoner::detail {

enum class AggregateKind { kCount, kFilter, kSuperlative, kComparison };

// A value a superlative, a comparative or a comparison word orders by: the words naming it
// ("age", "year", "height", "population") and whether the largest value wins.
struct ValueDimension {
    std::string words;
    bool descending = false;
};

struct AggregateShape {
    AggregateKind kind = AggregateKind::kCount;
    std::string noun;               // the things asked about, as written ("ships"); may be empty
    std::string class_name;         // its singular ("ship"), tried as a class
    std::string entity;             // the entity the things relate to, as written; may be empty
    std::string relation;           // the relation words to the entity ("built", "play for club")
    bool relation_is_noun = false;  // "how many children does X have": X children ?x
    std::vector<ValueDimension> dimensions;  // filters, superlatives, comparisons
    std::string cmp;                         // a filter's comparison (< <= > >=)
    std::string value;                       // and its value ("1860")
    std::vector<std::string> compared;       // a comparison's entities
};

// The question's shape, or nullopt when it is none of the four.
std::optional<AggregateShape> aggregate_shape(std::string_view question);

// The graph-query arguments to try, in order (refinements after the first: the other direction,
// without the class, the next value dimension, every predicate the words match).
std::vector<nlohmann::json> aggregate_attempts(const AggregateShape& shape);

// The next step for a question of that shape given the steps so far: the next attempt (at most
// `max_attempts`), or the final answer from the last attempt's rows. nullopt: the attempts are
// used up without rows (the caller falls back to another tool).
std::optional<PlannerStep> plan_aggregate_step(const AggregateShape& shape,
                                               const nlohmann::json& steps,
                                               std::size_t max_attempts = 3);

// "ships" → "ship", "lighthouses" → "lighthouse", "people" → "person".
std::string singular(std::string_view noun);

}  // namespace glassbox::reasoner::detail
