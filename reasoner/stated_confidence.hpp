// What an answer states about its confidence (docs/confidence.md): its evidence features scored
// by the engine's shipped calibrator as the trace records them, the FINAL's confidence fields,
// and the words an answer below its floor says instead (abstention). Any engine's worker uses
// them; the features themselves are the engine's own.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "reasoner/answer_confidence.hpp"
#include "schema/explain_builder.hpp"

namespace glassbox::reasoner {

// `features`, scored by the calibrator shipped for `engine` when there is one (probability,
// version, each feature's effect); without one, the features alone.
schema::explain::AnswerConfidence stated_confidence(const EvidenceFeatures& features,
                                                    std::string_view engine);

// The feature that lowered the confidence most (the most negative effect); nullopt when none
// lowered it.
std::optional<std::string> most_lowering_feature(const schema::explain::AnswerConfidence& c);

// True when the answer is to abstain: it has a calibrated probability below `floor`.
bool below_floor(const schema::explain::AnswerConfidence& confidence, double floor) noexcept;

// What an abstaining answer says first: "I do not know for sure. The evidence points to
// <said> (or: decides no answer), but its confidence, 12 % (unlikely), is below the 25 % asked
// for; what lowered it most: <why>." `confidence` must hold a probability.
std::string abstention_note(const schema::explain::AnswerConfidence& confidence, double floor,
                            std::string_view said, std::string_view why);

// Adds the confidence to a FINAL body: "confidence", "confidence_words" and "calibrator" (when
// calibrated), "abstained" (when it did), "evidence" ([{"name", "value", "effect"}]).
void add_confidence_fields(nlohmann::json& final,
                           const schema::explain::AnswerConfidence& confidence);

}  // namespace glassbox::reasoner
