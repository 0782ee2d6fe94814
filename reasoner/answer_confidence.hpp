// How far to trust an answer (docs/confidence.md): the evidence features an engine measured,
// mapped to a probability of being right by a logistic calibrator fitted on question sets
// (ops/fit-calibrator); the fitted parameters ship in reasoner/calibration.json.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace glassbox::reasoner {

// One measured signal of an answer's evidence, e.g. {"path_linked", 1}.
struct EvidenceFeature {
    std::string name;
    double value = 0.0;
    bool operator==(const EvidenceFeature&) const = default;
};
using EvidenceFeatures = std::vector<EvidenceFeature>;

// A fitted calibrator for one engine: p = 1 / (1 + exp(-(bias + Σ weight·(x − mean)/scale))).
struct Calibrator {
    std::string version;  // names the fit: a trace records which calibrator scored it
    std::string engine;
    std::vector<std::string> features;
    std::vector<double> mean;
    std::vector<double> scale;
    std::vector<double> weight;
    double bias = 0.0;
    // The probability of an answer that gives no short answer ("answered" = 0): such answers
    // are few in a fit's data, so they get their own observed rate, not the regression's
    // extrapolation. nullopt: the regression applies to them too.
    std::optional<double> unanswered;
    // The probability of an answer whose short answer was withheld (withhold_below; its features
    // say "withheld" 1): its text was written around a weak candidate, so it is less often right
    // than one that found no short answer. nullopt: `unanswered` applies to it too.
    std::optional<double> withheld;
    // Below this probability the engine withholds its short answer and gives the passages alone,
    // whose first sentence then stands as the answer (document RAG; ops/fit-calibrator sets it
    // where, on held-out folds, no withheld answer was even partly right). nullopt: never.
    std::optional<double> withhold_below;
};

// What a feature did to the score: its term of the log-odds (positive raised it).
struct FeatureEffect {
    std::string name;
    double value = 0.0;
    double effect = 0.0;
    bool operator==(const FeatureEffect&) const = default;
};

struct Confidence {
    double probability = 0.0;            // in [0, 1]
    std::string calibrator;              // the calibrator's version
    std::vector<FeatureEffect> effects;  // largest |effect| first
};

// The calibrators of a calibration file ({"version", "engines": {name: {"features", "mean",
// "scale", "weight", "bias"}}}); a file of another shape is an InvalidRequest naming the fault.
// An engine's own "version" (one refitted alone) stands for the file's in its calibrator's.
base::Result<std::vector<Calibrator>> parse_calibrators(std::string_view json_text);

// The calibrator shipped for `engine` ("graph-rag", "document-rag", "agent"), nullptr when there is
// none.
const Calibrator* shipped_calibrator(std::string_view engine);

// The answer's confidence by `calibrator`; a feature the calibrator names but `features` lacks
// counts at its mean (no effect), and features it does not name are ignored. An answer whose
// "answered" feature is 0 gets the calibrator's withheld probability when its "withheld" feature
// is 1 and the calibrator has one, else its unanswered probability when it has one.
Confidence calibrate(const Calibrator& calibrator, const EvidenceFeatures& features);

// What a question says about the answer it expects, from its words alone (the extractive
// model's question analysis): how many relations it chains from its named entity (the hops a
// path to the answer should take; 0 when none is recognised), whether it is a yes/no
// question, and whether it asks for a list.
struct QuestionExpectation {
    std::size_t relations = 0;
    bool yes_no = false;
    bool list = false;    // it asks for every answer ("who are the children of X")
    bool agent = false;   // it asks who (a person or an organisation)
    bool time = false;    // it asks when (a year, a date)
    bool number = false;  // it asks how many, how much, how old
};
QuestionExpectation question_expectation(std::string_view question);

// A part the question asks for: one of its relations, in its words ("children", "born"), and
// whether one of the statements given states it (a fact's predicate expresses it at least as well
// as a shared relation cue; docs/confidence.md, completeness).
struct QuestionPart {
    std::string words;
    bool covered = false;
};
// The question's relation parts in the order its chain takes them (from the named entity out),
// each checked against `statements` (the predicates of the facts an answer rests on).
std::vector<QuestionPart> question_parts(std::string_view question,
                                         const std::vector<std::string>& statements);

// The times (`times`) or else the numbers a sentence states, as written ("April 5, 1975",
// "1,200"): the extractive writer's typed candidates.
std::vector<std::string> stated_values(std::string_view sentence, bool times);

// True when `answer` cannot be what the question asks for: a year or a number for "who",
// "where" or "which X"; anything but a time for "when"; anything but a number for "how many".
bool answer_type_mismatch(std::string_view question, std::string_view answer);

// The confidence in words, as the answer says it: "very likely" (≥ 0.9), "likely" (≥ 0.7),
// "uncertain" (≥ 0.4), "unlikely".
std::string_view confidence_words(double probability) noexcept;

}  // namespace glassbox::reasoner
