// The charts `glassbox eval` writes beside its report, as self-contained SVG documents.
#pragma once

#include <string>

#include "cli/eval/eval_report.hpp"

namespace glassbox::cli::eval {

// The reliability diagram: each confidence bin's accuracy against its mean confidence, beside
// the diagonal of perfect calibration, with the bin's question count. Without confidences the
// chart says so.
std::string reliability_svg(const EvalSummary& summary);

// The risk-coverage curve: the error rate of the answers kept when only the most confident
// share of the questions is answered, for every share.
std::string risk_coverage_svg(const EvalSummary& summary);

}  // namespace glassbox::cli::eval
