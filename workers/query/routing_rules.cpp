// Reading and firing the routing rules; the built-in rule file.
#include "workers/query/routing_rules.hpp"

#include <set>
#include <stdexcept>

#include "schema/messages.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::query {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

// The built-in rule file (docs/query.md §2 explains each rule). The example questions are the
// project's own, written for the classifier; they name no entity of any data set.
constexpr std::string_view kDefaultRules = R"json({
  "default_engine": "document-rag",
  "rules": [
    {"name": "relation-chain", "question_type": "multi-hop", "engine": "agent", "confidence": 0.85,
     "when": {"relation_chain_min": 2, "max_words": 24}},
    {"name": "event-or-reason", "question_type": "descriptive", "engine": "document-rag", "confidence": 0.82,
     "when": {"pattern": "^\\W*(what happened|why\\b|how (did|does|do|was|were)\\b|describe\\b|explain\\b)",
              "document_keyword_min": 1.0}},
    {"name": "graph-entity", "question_type": "entity-lookup", "engine": "graph-rag", "confidence": 0.8,
     "when": {"graph_entities_min": 0.8}},
    {"name": "graph-entity-short", "question_type": "entity-lookup", "engine": "graph-rag", "confidence": 0.6,
     "when": {"graph_entities_min": 0.4, "max_words": 12}},
    {"name": "document-words", "question_type": "descriptive", "engine": "document-rag", "confidence": 0.7,
     "when": {"graph_entities_max": 0.3, "document_keyword_min": 1.0}},
    {"name": "underscore-entity", "question_type": "entity-lookup", "engine": "graph-rag", "confidence": 0.55,
     "when": {"pattern": "[a-z0-9]_[a-z0-9]"}}
  ],
  "classifier": {
    "min_confidence": 0.05,
    "examples": {
      "graph-rag": [
        "which country is the club based in ?",
        "who plays goalkeeper for the team ?",
        "what position does the striker play ?",
        "which club does the midfielder play for ?",
        "who is the spouse of the king ?",
        "what is the nationality of the composer ?",
        "where was the painter born ?",
        "which language is spoken in the country ?"
      ],
      "document-rag": [
        "What was the name of the novel that the director adapted into a film in the early nineties?",
        "Which of the two bands was formed first, the one from Manchester or the one from Leeds?",
        "Are both of these magazines published monthly in the United States?",
        "In what year did the company that built the bridge across the river go bankrupt?",
        "The actress who starred in the musical was born in which city?",
        "What award did the author of the essay collection receive after the war?",
        "How many seats does the stadium where the final was played hold?",
        "Why did the expedition return before reaching the summit?"
      ],
      "agent": [
        "what is the nationality of the father of the wife of the emperor ?",
        "the gender of the child of the mother of the queen ?",
        "who is the spouse of the son 's mother ?",
        "what is the birthplace of the author 's brother 's teacher ?",
        "the profession of the husband of the daughter of the duke ?",
        "the religion of the heir 's father 's wife ?"
      ]
    }
  }
})json";

const std::set<std::string, std::less<>> kConditionKeys = {"pattern",
                                                           "min_words",
                                                           "max_words",
                                                           "relation_chain_min",
                                                           "graph_entities_min",
                                                           "graph_entities_max",
                                                           "document_keyword_min",
                                                           "document_keyword_max"};

base::Error rule_error(std::size_t index, std::string_view name, const std::string& what) {
    return make_error(ErrorType::kInvalidRequest,
                      "rules[" + std::to_string(index) + "]" +
                          (name.empty() ? "" : " (" + std::string(name) + ")") + ": " + what);
}

base::Result<RuleConditions> parse_conditions(const json& when, std::size_t index,
                                              std::string_view name) {
    RuleConditions c;
    if (!when.is_object()) return rule_error(index, name, "\"when\" must be an object");
    for (const auto& [key, value] : when.items()) {
        if (!kConditionKeys.contains(key))
            return rule_error(index, name, "unknown condition \"" + key + "\"");
        if (key == "pattern") {
            if (!value.is_string()) return rule_error(index, name, "\"pattern\" must be a string");
            c.pattern = value.get<std::string>();
            try {
                c.compiled.emplace(
                    *c.pattern, std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
            } catch (const std::regex_error& e) {
                return rule_error(
                    index, name,
                    "\"pattern\" is not a valid regular expression: " + std::string(e.what()));
            }
            continue;
        }
        if (!value.is_number() || value.get<double>() < 0)
            return rule_error(index, name, "\"" + key + "\" must be a non-negative number");
        const double number = value.get<double>();
        const auto count = static_cast<std::size_t>(number);
        if (key == "min_words")
            c.min_words = count;
        else if (key == "max_words")
            c.max_words = count;
        else if (key == "relation_chain_min")
            c.relation_chain_min = count;
        else if (key == "graph_entities_min")
            c.graph_entities_min = number;
        else if (key == "graph_entities_max")
            c.graph_entities_max = number;
        else if (key == "document_keyword_min")
            c.document_keyword_min = number;
        else
            c.document_keyword_max = number;
    }
    return c;
}

base::Result<void> parse_classifier(const json& classifier, RuleSet& set) {
    if (!classifier.is_object())
        return make_error(ErrorType::kInvalidRequest, "\"classifier\" must be an object");
    for (const auto& [key, value] : classifier.items()) {
        if (key == "min_confidence") {
            if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > 1)
                return make_error(ErrorType::kInvalidRequest,
                                  "classifier.min_confidence must be from 0 to 1");
            set.classifier_min_confidence = value.get<double>();
        } else if (key == "examples") {
            if (!value.is_object())
                return make_error(ErrorType::kInvalidRequest,
                                  "classifier.examples must be an object");
            for (const auto& [route, list] : value.items()) {
                if (!is_engine(route))
                    return make_error(ErrorType::kInvalidRequest,
                                      "classifier.examples: unknown engine \"" + route + "\"");
                if (!list.is_array())
                    return make_error(ErrorType::kInvalidRequest,
                                      "classifier.examples." + route + " must be an array");
                for (const auto& example : list) {
                    if (!example.is_string())
                        return make_error(ErrorType::kInvalidRequest,
                                          "classifier.examples." + route + " must hold strings");
                    set.examples[route].push_back(example.get<std::string>());
                }
            }
        } else {
            return make_error(ErrorType::kInvalidRequest,
                              "classifier: unknown key \"" + key + "\"");
        }
    }
    return {};
}

bool holds(const RuleConditions& c, const QuestionFeatures& f) {
    if (c.min_words && f.words < *c.min_words) return false;
    if (c.max_words && f.words > *c.max_words) return false;
    if (c.relation_chain_min && f.relation_chain < *c.relation_chain_min) return false;
    if (needs_signals(c) && !f.signals_known) return false;
    if (c.graph_entities_min && f.graph_entities < *c.graph_entities_min) return false;
    if (c.graph_entities_max && f.graph_entities > *c.graph_entities_max) return false;
    if (c.document_keyword_min && f.document_keyword < *c.document_keyword_min) return false;
    if (c.document_keyword_max && f.document_keyword > *c.document_keyword_max) return false;
    if (c.compiled && !std::regex_search(f.question, *c.compiled)) return false;
    return true;
}

}  // namespace

bool needs_signals(const RuleConditions& c) noexcept {
    return c.graph_entities_min || c.graph_entities_max || c.document_keyword_min ||
           c.document_keyword_max;
}

bool is_engine(std::string_view name) noexcept {
    return name == "graph-rag" || name == "document-rag" || name == "agent";
}

base::Result<RuleSet> parse_rules(std::string_view json_text) {
    auto parsed = schema::parse_untrusted_json(json_text);
    if (!parsed) return std::move(parsed).error();
    const json& root = *parsed;
    if (!root.is_object())
        return make_error(ErrorType::kInvalidRequest, "a rule file is a JSON object");
    RuleSet set;
    for (const auto& [key, value] : root.items()) {
        if (key == "default_engine") {
            if (!value.is_string() || !is_engine(value.get<std::string>()))
                return make_error(
                    ErrorType::kInvalidRequest,
                    "default_engine must be \"graph-rag\", \"document-rag\" or \"agent\"");
            set.default_engine = value.get<std::string>();
        } else if (key == "classifier") {
            if (auto ok = parse_classifier(value, set); !ok) return ok.error();
        } else if (key != "rules") {
            return make_error(ErrorType::kInvalidRequest,
                              "unknown key \"" + key + "\" in the rule file");
        }
    }
    const auto rules = root.find("rules");
    if (rules == root.end()) return set;
    if (!rules->is_array())
        return make_error(ErrorType::kInvalidRequest, "\"rules\" must be an array");
    for (std::size_t i = 0; i < rules->size(); ++i) {
        const json& r = (*rules)[i];
        if (!r.is_object()) return rule_error(i, "", "a rule is an object");
        RoutingRule rule;
        if (const auto name = r.find("name"); name != r.end() && name->is_string())
            rule.name = *name;
        if (rule.name.empty())
            return rule_error(i, "", "\"name\" is required (a non-empty string)");
        for (const auto& [key, value] : r.items()) {
            if (key == "name" || key == "when") continue;
            if (key == "question_type" && value.is_string()) {
                rule.question_type = value.get<std::string>();
            } else if (key == "engine" && value.is_string() &&
                       is_engine(value.get<std::string>())) {
                rule.engine = value.get<std::string>();
            } else if (key == "confidence" && value.is_number() && value.get<double>() >= 0 &&
                       value.get<double>() <= 1) {
                rule.confidence = value.get<double>();
            } else {
                return rule_error(i, rule.name, "bad or unknown key \"" + key + "\"");
            }
        }
        if (rule.engine.empty()) return rule_error(i, rule.name, "\"engine\" is required");
        if (r.contains("when")) {
            auto when = parse_conditions(r["when"], i, rule.name);
            if (!when) return when.error();
            rule.when = std::move(*when);
        }
        set.rules.push_back(std::move(rule));
    }
    return set;
}

RuleSet default_rules() {
    auto parsed = parse_rules(kDefaultRules);
    // The built-in file is part of the program: failing to read it is a programmer error.
    if (!parsed) throw std::logic_error("the built-in routing rules: " + parsed.error().message);
    return std::move(*parsed);
}

std::vector<FiredRule> fire_rules(const RuleSet& rules, const QuestionFeatures& features) {
    std::vector<FiredRule> fired;
    for (const auto& rule : rules.rules) {
        if (holds(rule.when, features))
            fired.push_back(FiredRule{rule.name, rule.question_type, rule.engine, rule.confidence});
    }
    return fired;
}

}  // namespace glassbox::query
