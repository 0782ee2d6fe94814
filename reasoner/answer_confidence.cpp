// Calibrated confidence of an answer (reasoner/answer_confidence.hpp).
#include "reasoner/answer_confidence.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "reasoner/detail/answer_spans.hpp"
#include "reasoner/detail/calibration_data.hpp"
#include "reasoner/detail/question_intent.hpp"
#include "reasoner/detail/relation_cues.hpp"

namespace glassbox::reasoner {
namespace {

// A predicate states a question's relation when it expresses it at least as well as a shared
// relation cue does (relation_cues' scale: 1 the same stem, 0.8 a shared cue).
constexpr double kStatesPart = 0.8;

using base::ErrorType;
using base::make_error;
using nlohmann::json;

base::Result<std::vector<double>> numbers(const json& engine, const char* key, std::size_t n) {
    const auto it = engine.find(key);
    if (it == engine.end() || !it->is_array() || it->size() != n)
        return make_error(ErrorType::kInvalidRequest,
                          std::string("\"") + key + "\" must list one number per feature");
    std::vector<double> out;
    for (const auto& v : *it) {
        if (!v.is_number())
            return make_error(ErrorType::kInvalidRequest,
                              std::string("\"") + key + "\" holds a value that is not a number");
        out.push_back(v.get<double>());
    }
    return out;
}

base::Result<Calibrator> calibrator_of(const std::string& name, const json& engine,
                                       const std::string& version) {
    Calibrator c;
    // An engine refitted alone (ops/fit-calibrator --engines) names its own fit's version.
    const auto own = engine.is_object() ? engine.find("version") : engine.end();
    c.version =
        (own != engine.end() && own->is_string() ? own->get<std::string>() : version) + "/" + name;
    c.engine = name;
    if (!engine.is_object() || !engine.contains("features") || !engine["features"].is_array() ||
        !engine.contains("bias") || !engine["bias"].is_number())
        return make_error(ErrorType::kInvalidRequest,
                          "engine \"" + name + "\" needs \"features\" and \"bias\"");
    for (const auto& f : engine["features"]) {
        if (!f.is_string())
            return make_error(ErrorType::kInvalidRequest, "a feature name is not a string");
        c.features.push_back(f.get<std::string>());
    }
    c.bias = engine["bias"].get<double>();
    for (auto [key, into] : {std::pair{"mean", &c.mean}, std::pair{"scale", &c.scale},
                             std::pair{"weight", &c.weight}}) {
        auto values = numbers(engine, key, c.features.size());
        if (!values) return values.error();
        *into = std::move(values).value();
    }
    if (std::any_of(c.scale.begin(), c.scale.end(), [](double s) { return !(s > 0.0); }))
        return make_error(ErrorType::kInvalidRequest, "every \"scale\" must be positive");
    for (auto [key, into] :
         {std::pair{"unanswered", &c.unanswered}, std::pair{"withheld", &c.withheld}}) {
        const auto u = engine.find(key);
        if (u == engine.end()) continue;
        if (!u->is_object() || !u->contains("probability") || !(*u)["probability"].is_number() ||
            !((*u)["probability"].get<double>() >= 0.0 && (*u)["probability"].get<double>() <= 1.0))
            return make_error(ErrorType::kInvalidRequest,
                              std::string("\"") + key + "\" needs a \"probability\" from 0 to 1");
        *into = (*u)["probability"].get<double>();
    }
    if (const auto w = engine.find("withhold_below"); w != engine.end()) {
        if (!w->is_number() || !(w->get<double>() >= 0.0 && w->get<double>() <= 1.0))
            return make_error(ErrorType::kInvalidRequest,
                              "\"withhold_below\" must be a number from 0 to 1");
        c.withhold_below = w->get<double>();
    }
    return c;
}

}  // namespace

base::Result<std::vector<Calibrator>> parse_calibrators(std::string_view json_text) {
    const json doc = json::parse(json_text, nullptr, false);
    if (doc.is_discarded()) return make_error(ErrorType::kInvalidJson, "not JSON");
    if (!doc.is_object() || !doc.contains("version") || !doc["version"].is_string() ||
        !doc.contains("engines") || !doc["engines"].is_object())
        return make_error(ErrorType::kInvalidRequest,
                          "a calibration file needs \"version\" and \"engines\"");
    std::vector<Calibrator> out;
    for (const auto& [name, engine] : doc["engines"].items()) {
        auto c = calibrator_of(name, engine, doc["version"].get<std::string>());
        if (!c)
            return make_error(c.error().type, "calibrator \"" + name + "\": " + c.error().message);
        out.push_back(std::move(c).value());
    }
    return out;
}

const Calibrator* shipped_calibrator(std::string_view engine) {
    // Parsed once; the shipped file is checked by the unit tests, so a bad one never ships.
    static const std::vector<Calibrator> shipped = [] {
        auto parsed = parse_calibrators(detail::calibration_json());
        return parsed ? std::move(parsed).value() : std::vector<Calibrator>{};
    }();
    for (const auto& c : shipped) {
        if (c.engine == engine) return &c;
    }
    return nullptr;
}

Confidence calibrate(const Calibrator& calibrator, const EvidenceFeatures& features) {
    Confidence out;
    out.calibrator = calibrator.version;
    double logit = calibrator.bias;
    for (std::size_t i = 0; i < calibrator.features.size(); ++i) {
        const auto it = std::find_if(features.begin(), features.end(), [&](const auto& f) {
            return f.name == calibrator.features[i];
        });
        const double value = it == features.end() ? calibrator.mean[i] : it->value;
        const double effect =
            calibrator.weight[i] * (value - calibrator.mean[i]) / calibrator.scale[i];
        logit += effect;
        out.effects.push_back({calibrator.features[i], value, effect});
    }
    std::stable_sort(out.effects.begin(), out.effects.end(), [](const auto& a, const auto& b) {
        return std::abs(a.effect) > std::abs(b.effect);
    });
    out.probability = 1.0 / (1.0 + std::exp(-logit));
    const auto flag = [&](std::string_view name) {
        const auto it = std::find_if(features.begin(), features.end(),
                                     [&](const auto& f) { return f.name == name; });
        return it == features.end() ? std::optional<double>() : it->value;
    };
    if (flag("answered") != 0.0) return out;
    // Without a short answer the regression does not score it: its kind's observed rate does.
    const bool withheld = calibrator.withheld && flag("withheld") == 1.0;
    if (!withheld && !calibrator.unanswered) return out;
    out.probability = withheld ? *calibrator.withheld : *calibrator.unanswered;
    out.effects.clear();
    out.effects.push_back({"answered", 0.0, 0.0});
    if (withheld) out.effects.push_back({"withheld", 1.0, 0.0});
    return out;
}

QuestionExpectation question_expectation(std::string_view question) {
    const auto analysed = detail::analysed_question(question);
    return {analysed->relations.chain.size(),
            analysed->intent.type == detail::AnswerType::kYesNo,
            analysed->intent.list,
            analysed->intent.type == detail::AnswerType::kAgent,
            analysed->intent.type == detail::AnswerType::kTime,
            analysed->intent.type == detail::AnswerType::kNumber};
}

std::vector<std::string> stated_values(std::string_view sentence, bool times) {
    std::vector<std::string> out;
    const auto kind = times ? detail::SpanKind::kTime : detail::SpanKind::kNumber;
    for (auto& span : detail::answer_spans(sentence))
        if (span.kind == kind) out.push_back(std::move(span.text));
    return out;
}

std::vector<QuestionPart> question_parts(std::string_view question,
                                         const std::vector<std::string>& statements) {
    const auto analysed = detail::analysed_question(question);
    const auto& rel = analysed->relations;
    std::vector<double> best(rel.mentions.size(), 0.0);
    for (const auto& s : statements) {
        const auto match = detail::mention_match(s, rel);
        for (std::size_t m = 0; m < best.size(); ++m) best[m] = std::max(best[m], match.best[m]);
    }
    std::vector<QuestionPart> parts;
    const std::string& class_word = analysed->intent.class_word;
    for (const std::size_t m : rel.chain) {
        QuestionPart part;
        bool names_class = false;  // "which lighthouses": the answer's class, not a relation
        for (const std::size_t w : rel.mentions[m].words) {
            part.words += (part.words.empty() ? "" : " ") + rel.words[w].surface;
            names_class = names_class || rel.words[w].surface == class_word;
        }
        if (names_class) continue;
        part.covered = best[m] >= kStatesPart;
        parts.push_back(std::move(part));
    }
    return parts;
}

bool answer_type_mismatch(std::string_view question, std::string_view answer) {
    return detail::answer_type_mismatch(detail::analysed_question(question)->intent, answer);
}

std::string_view confidence_words(double probability) noexcept {
    if (probability >= 0.9) return "very likely";
    if (probability >= 0.7) return "likely";
    if (probability >= 0.4) return "uncertain";
    return "unlikely";
}

}  // namespace glassbox::reasoner
