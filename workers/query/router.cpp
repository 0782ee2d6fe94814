// Rules → classifier → default.
#include "workers/query/router.hpp"

namespace glassbox::query {

Router::Router(RuleSet rules) : rules_(std::move(rules)), classifier_(rules_.examples) {}

RouteDecision Router::route(const QuestionFeatures& features) const {
    RouteDecision decision;
    decision.fired = fire_rules(rules_, features);
    const auto add_signals = [&] {
        if (!features.signals_known) return;
        decision.scores.emplace_back("graph-entities", features.graph_entities);
        decision.scores.emplace_back("document-keyword", features.document_keyword);
    };
    if (!decision.fired.empty()) {
        const FiredRule* best = &decision.fired.front();
        for (const auto& rule : decision.fired) {
            if (rule.confidence > best->confidence) best = &rule;
        }
        decision.engine = best->engine;
        decision.method = "rules";
        decision.question_type = best->question_type;
        decision.confidence = best->confidence;
        add_signals();
        return decision;
    }
    const auto classified = classifier_.classify(features.question);
    decision.scores = classified.scores;
    add_signals();
    if (!classified.engine.empty() && classified.confidence >= rules_.classifier_min_confidence) {
        decision.engine = classified.engine;
        decision.method = "classifier";
        decision.confidence = classified.confidence;
        return decision;
    }
    decision.engine = rules_.default_engine;
    decision.method = "default";
    decision.confidence = 0.0;
    return decision;
}

bool Router::signals_can_decide(const QuestionFeatures& features) const {
    QuestionFeatures text_only = features;
    text_only.signals_known = false;
    const auto fired = fire_rules(rules_, text_only);
    if (fired.empty()) return true;
    const FiredRule* best = &fired.front();
    for (const auto& rule : fired) {
        if (rule.confidence > best->confidence) best = &rule;
    }
    bool before_best = true;  // in the file, before the best rule that fired
    for (const auto& rule : rules_.rules) {
        if (rule.name == best->name) before_best = false;
        if (!needs_signals(rule.when)) continue;
        if (rule.confidence > best->confidence ||
            (before_best && rule.confidence == best->confidence))
            return true;
    }
    return false;
}

}  // namespace glassbox::query
