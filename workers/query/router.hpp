// The routing cascade: rules, then the classifier when no rule fires, then the default
// (docs/query.md §2). Pure and fast (no I/O): the collection's signals come in the features.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "workers/query/route_classifier.hpp"
#include "workers/query/routing_rules.hpp"

namespace glassbox::query {

struct RouteDecision {
    std::string engine;
    std::string method;  // "rules", "classifier", "default" or "explicit"
    std::string question_type;
    std::vector<FiredRule> fired;  // every rule that fired, in file order
    double confidence = 0.0;
    // The classifier's scores (when it ran), then the collection's signals.
    std::vector<std::pair<std::string, double>> scores;
};

class Router {
public:
    explicit Router(RuleSet rules);

    // Rules: of those that fired, the most confident wins (the first in file order on a tie).
    // No rule: the classifier, if its confidence reaches the rule file's minimum. Else the
    // rule file's default engine.
    RouteDecision route(const QuestionFeatures& features) const;

    // Whether the collection's signals can change the decision for `features` (read from the
    // text alone): no rule that needs none fires, or a rule that needs them could outrank the
    // best that fires (a higher confidence, or the same earlier in the file). When not, the
    // store need not be asked (a relation chain goes to the agent whatever the collection holds).
    bool signals_can_decide(const QuestionFeatures& features) const;

    const RuleSet& rules() const noexcept { return rules_; }

private:
    RuleSet rules_;
    RouteClassifier classifier_;
};

}  // namespace glassbox::query
