// Reading facts out of one explain message (docs/protocol.md §8) without decoding it into
// schema types: the step's type and the literal or IRI values of its own triples.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace glassbox::gateway {

// The values (an IRI, or a literal's lexical form) of every triple `subject predicate ?o` in
// the message's explain_triples (either form, docs/protocol.md §8.1), in order. Malformed triples
// are skipped.
std::vector<std::string> explain_values(const nlohmann::json& explain, std::string_view subject,
                                        std::string_view predicate);

// The first such value, if any.
std::optional<std::string> explain_value(const nlohmann::json& explain, std::string_view subject,
                                         std::string_view predicate);

// For each of `subjects`, the first value of each of `predicates` (row i, column j: subject i's
// predicate j; nullopt when it has none), in one pass over the triples: what a step says of its
// many parts (an Exploration's hundreds of explored edges) without a pass per part.
std::vector<std::vector<std::optional<std::string>>> explain_table(
    const nlohmann::json& explain, const std::vector<std::string>& subjects,
    const std::vector<std::string_view>& predicates);

// The step type of the message's explain_id: the local names of its gb: classes joined by '+'
// ("Analysis+ToolUse"), else of its prov: class ("Activity"), else "".
std::string explain_step_type(const nlohmann::json& explain);

// One line saying what the message's step did, for a progress report: "<service> <step>[:
// <detail>]" with the step type in lower-case words and what it decided or counted —
// "query route decided: graph-rag", "graph-rag exploration: 42 edges", "graph-rag synthesis",
// "query escalation: graph-rag -> document-rag", "agent analysis, tool use: search". "" for a
// message without a step type (the broker's own end of a trace).
std::string step_line(const nlohmann::json& explain);

// One-line JSON; invalid UTF-8 in strings replaced (never throws).
std::string compact_json(const nlohmann::json& value);

// A string field of a JSON object, "" when absent or not a string.
std::string string_of(const nlohmann::json& object, std::string_view key);

}  // namespace glassbox::gateway
