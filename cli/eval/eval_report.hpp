// What `glassbox eval` reports over a question set (docs/evaluation.md): accuracy measures,
// calibration error and accuracy at a coverage (the charts: cli/eval/eval_charts.hpp).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/eval/answer_scoring.hpp"

namespace glassbox::cli::eval {

// One question of the set and how it was answered.
struct EvalRow {
    std::string id;  // the set's `id`, else the line number
    std::string question;
    std::vector<std::string> accepted;
    bool list = false;                  // "kind": "list": every accepted answer is asked for
    std::optional<double> named_share;  // a list question: the share of them the answer names
    std::string answer;                 // the answer text
    std::optional<std::string> short_answer;
    AnswerScore score;
    std::optional<double> confidence;                   // the answer's, when it carries one
    std::string calibrator;                             // the calibrator that scored it
    nlohmann::json evidence = nlohmann::json::array();  // its evidence features, as the FINAL
    bool abstained = false;                             // the answer says it does not know
    // An answer that abstained: the score of what it reports having found (found_text), which
    // calibration judges against its confidence.
    std::optional<AnswerScore> found;
    std::string trace;  // the run's trace (session URI)
    std::string error;  // the typed error when there was no answer
    double seconds = 0.0;
    bool attached = false;  // its score is attached to its trace as an evaluation
};

// Whether a row counts as answered right: answered (no error, no abstention) and a hit.
bool correct(const EvalRow& row) noexcept;

// Whether what the answer's confidence is about was right, for calibration (ECE, accuracy at
// coverage): the stated answer, or for an answer that abstained what it reports having found
// (an abstention keeps its confidence: the probability that what it found is right). An error
// is wrong.
bool right_for_calibration(const EvalRow& row) noexcept;

// Confidence bin [lower, upper) (the last includes 1) of the reliability diagram.
struct CalibrationBin {
    double lower = 0.0;
    double upper = 0.0;
    std::size_t questions = 0;
    double mean_confidence = 0.0;
    double accuracy = 0.0;
};

// The answers kept when only the most confident share `coverage` of the questions is answered.
struct CoveragePoint {
    double coverage = 0.0;
    std::size_t kept = 0;
    double accuracy = 0.0;
};

struct EvalSummary {
    std::size_t questions = 0;
    std::size_t errors = 0;
    std::size_t abstained = 0;
    std::size_t with_confidence = 0;
    double hits1 = 0.0;  // shares of all questions (an error or an abstention is a miss)
    double exact = 0.0;
    double f1 = 0.0;
    // List questions ("kind": "list"): how many, and the share answered naming every accepted
    // answer (an error or an abstention is incomplete).
    std::size_t list_questions = 0;
    double complete = 0.0;
    // Calibration, when every question has a confidence (an error counts as confidence 0).
    std::optional<double> ece;
    std::vector<CalibrationBin> bins;
    std::vector<CoveragePoint> at_coverage;  // 100, 80 and 50 %
    std::vector<CoveragePoint> curve;        // every k of n, most confident first
    // Evaluations attached to the questions' traces (`traces list --evaluated`), and the rows
    // with a trace whose attaching failed, with the first failure's error ("" when none).
    std::size_t attached = 0;
    std::size_t attach_failed = 0;
    std::string attach_error;
};

// A row as the evaluation run's record holds it (docs/evaluation.md, "Evaluation runs"): the
// question, its verdict and scores, and its trace, its long texts cut to a few hundred bytes.
nlohmann::json to_record_json(const EvalRow& row);

inline constexpr std::size_t kCalibrationBins = 10;

EvalSummary summarise(std::span<const EvalRow> rows);

nlohmann::json to_json(const EvalRow& row);
nlohmann::json to_json(const EvalSummary& summary);

}  // namespace glassbox::cli::eval
