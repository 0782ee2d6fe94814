// What an answer states about its confidence (docs/confidence.md): its evidence features scored
// by the engine's shipped calibrator as the trace records them, the FINAL's confidence fields,
// and the words an answer below its floor says instead (abstention). Any engine's worker uses
// them; the features themselves are the engine's own.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reasoner/answer_confidence.hpp"
#include "schema/explain_builder.hpp"
#include "schema/messages.hpp"

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

// What lowered an answer of `engine` most, in words for a reader ("another answer is about as
// well supported"), for the evidence feature `feature` (docs/confidence.md, the features): the
// agent's features have their own words, graph-rag's and document-rag's share one table, and the
// router's "engine_conflict" is "the engines disagree on it". "its evidence is weak" for a
// feature without words.
std::string_view doubt_words(std::string_view engine, std::string_view feature) noexcept;

// What an abstaining answer says first: "I do not know for sure. The evidence points to
// <said> (or: does not settle on an answer), but its confidence, 12 % (unlikely), is below the
// 25 % asked for; what lowered it most: <why>." `confidence` must hold a probability.
std::string abstention_note(const schema::explain::AnswerConfidence& confidence, double floor,
                            std::string_view said, std::string_view why);

// What follows an abstention's note when something was found (appended to the note as it is),
// then the answer it withheld (its citations shifted past the note). Every engine writes it, and
// `glassbox eval` finds what an abstention found by it.
inline constexpr std::string_view kWhatWasFound = " What was found: ";

// Lowers a calibrated confidence for its conflicts: times the stated value's share of the
// sources of both values (the smallest share over the conflicts), recorded as the evidence
// feature "conflict" with its effect on the log-odds. No conflict or no probability: unchanged.
// Every engine that finds conflicts (graph-rag among its facts, the agent between a fact and a
// document) lowers its confidence this one way.
void lower_for_conflicts(schema::explain::AnswerConfidence& confidence);

// The stated value's share of the sources of both values, the smallest over `conflicts` (1 when
// none has a source on either side).
double sources_share(const std::vector<schema::explain::AnswerConflict>& conflicts) noexcept;

// Lowers a calibrated confidence to `share` of it (0–1), recorded as the evidence feature
// `feature` with the share as its value and its effect on the log-odds. No probability:
// unchanged. lower_for_conflicts is this with the sources' share and "conflict".
void lower_by_share(schema::explain::AnswerConfidence& confidence, double share,
                    std::string feature);

// What the answer says of its conflicts, after the answer: "Sources disagree on this: [1] gives
// A; [2] gives B." (each value cited by its citation number when the conflict gives it, else by
// the citation carrying its selection, else named by its first source).
// "" when none.
std::string conflicts_note(const std::vector<schema::explain::AnswerConflict>& conflicts,
                           const std::vector<schema::RagCitation>& citations);

// Adds the confidence to a FINAL body: "confidence", "confidence_words" and "calibrator" (when
// calibrated), "abstained" (when it did), "evidence" ([{"name", "value", "effect"}]) and, when
// there are any, "conflicts" ([{"subject", "predicate", "stated", "rival", "stated_sources",
// "rival_sources", "stated_selection"?, "rival_selection"?}]).
void add_confidence_fields(nlohmann::json& final,
                           const schema::explain::AnswerConfidence& confidence);

}  // namespace glassbox::reasoner
