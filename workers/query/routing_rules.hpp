// The routing rule file: rules (patterns and features → question type → engine), the
// classifier's example questions per route, and the default engine (docs/query.md §2).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "workers/query/question_features.hpp"

namespace glassbox::query {

// What a rule asks of the question; every condition given must hold (absent: not checked).
struct RuleConditions {
    std::optional<std::string> pattern;  // ECMAScript regex, case-insensitive, searched
    std::optional<std::regex> compiled;  // `pattern`, compiled once when the file is read
    std::optional<std::size_t> min_words;
    std::optional<std::size_t> max_words;
    std::optional<std::size_t> relation_chain_min;
    std::optional<double> graph_entities_min;
    std::optional<double> graph_entities_max;
    std::optional<double> document_keyword_min;
    std::optional<double> document_keyword_max;
};

struct RoutingRule {
    std::string name;
    std::string question_type;
    std::string engine;  // "graph-rag", "document-rag" or "agent"
    double confidence = 0.5;
    RuleConditions when;
};

struct RuleSet {
    std::vector<RoutingRule> rules;
    std::string default_engine = "document-rag";
    // The classifier decides only when its confidence reaches this; else the default does.
    double classifier_min_confidence = 0.05;
    std::map<std::string, std::vector<std::string>> examples;  // route → example questions
};

// A rule that fired, for the RoutingDecision.
struct FiredRule {
    std::string name;
    std::string question_type;
    std::string engine;
    double confidence = 0.0;
};

// Reads a rule file (JSON, docs/query.md §2). Unknown keys are refused (a misspelt condition
// must not silently match everything): InvalidRequest naming the rule and the key; a bad regex,
// an unknown engine or a confidence outside [0, 1] likewise.
base::Result<RuleSet> parse_rules(std::string_view json_text);
// The built-in rule file, parsed.
RuleSet default_rules();

// Every rule whose conditions hold, in file order. A condition on a collection signal does not
// hold while the signals are unknown.
std::vector<FiredRule> fire_rules(const RuleSet& rules, const QuestionFeatures& features);

bool is_engine(std::string_view name) noexcept;

// True when `c` holds a condition on a collection signal (graph-entities, document-keyword).
bool needs_signals(const RuleConditions& c) noexcept;

}  // namespace glassbox::query
