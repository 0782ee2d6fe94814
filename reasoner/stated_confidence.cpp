// What an answer states about its confidence (reasoner/stated_confidence.hpp).
#include "reasoner/stated_confidence.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace glassbox::reasoner {
namespace {

std::string percent_of(double probability) {
    return std::to_string(static_cast<int>(std::lround(probability * 100.0))) + " %";
}

}  // namespace

schema::explain::AnswerConfidence stated_confidence(const EvidenceFeatures& features,
                                                    std::string_view engine) {
    schema::explain::AnswerConfidence out;
    const auto* calibrator = shipped_calibrator(engine);
    if (calibrator == nullptr) {
        for (const auto& f : features) out.features.push_back({f.name, f.value, std::nullopt});
        return out;
    }
    const auto scored = calibrate(*calibrator, features);
    out.probability = scored.probability;
    out.calibrator = scored.calibrator;
    for (const auto& f : features) {
        const auto it = std::find_if(scored.effects.begin(), scored.effects.end(),
                                     [&](const auto& e) { return e.name == f.name; });
        out.features.push_back(
            {f.name, f.value,
             it == scored.effects.end() ? std::nullopt : std::optional<double>(it->effect)});
    }
    return out;
}

std::optional<std::string> most_lowering_feature(const schema::explain::AnswerConfidence& c) {
    const schema::explain::EvidenceFeatureRecord* worst = nullptr;
    for (const auto& f : c.features) {
        if (f.effect && *f.effect < 0.0 && (worst == nullptr || *f.effect < *worst->effect))
            worst = &f;
    }
    if (worst == nullptr) return std::nullopt;
    return worst->name;
}

bool below_floor(const schema::explain::AnswerConfidence& confidence, double floor) noexcept {
    return confidence.probability && *confidence.probability < floor;
}

std::string abstention_note(const schema::explain::AnswerConfidence& confidence, double floor,
                            std::string_view said, std::string_view why) {
    const double p = confidence.probability.value_or(0.0);
    std::string note = "I do not know for sure. ";
    note += said.empty() ? std::string("The evidence decides no answer")
                         : "The evidence points to " + std::string(said);
    note += ", but its confidence, " + percent_of(p) + " (" + std::string(confidence_words(p)) +
            "), is below the " + percent_of(floor) +
            " asked for; what lowered it most: " + std::string(why) + ".";
    return note;
}

void add_confidence_fields(nlohmann::json& final,
                           const schema::explain::AnswerConfidence& confidence) {
    if (confidence.probability) {
        final["confidence"] = *confidence.probability;
        final["confidence_words"] = confidence_words(*confidence.probability);
        final["calibrator"] = confidence.calibrator;
    }
    if (confidence.abstained) final["abstained"] = true;
    auto evidence = nlohmann::json::array();
    for (const auto& f : confidence.features) {
        nlohmann::json item{{"name", f.name}, {"value", f.value}};
        if (f.effect) item["effect"] = *f.effect;
        evidence.push_back(std::move(item));
    }
    final["evidence"] = std::move(evidence);
}

}  // namespace glassbox::reasoner
