// What `glassbox eval` reports over a question set (cli/eval/eval_report.hpp).
#include "cli/eval/eval_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "base/utf8.hpp"

namespace glassbox::cli::eval {
namespace {

using nlohmann::json;

// A question's confidence for calibration: an error is an answer of confidence 0.
double confidence_of(const EvalRow& row) noexcept {
    return row.error.empty() ? std::clamp(row.confidence.value_or(0.0), 0.0, 1.0) : 0.0;
}

std::vector<CalibrationBin> calibration_bins(std::span<const EvalRow> rows) {
    std::vector<CalibrationBin> bins(kCalibrationBins);
    const double width = 1.0 / static_cast<double>(kCalibrationBins);
    for (std::size_t b = 0; b < bins.size(); ++b) {
        bins[b].lower = width * static_cast<double>(b);
        bins[b].upper = width * static_cast<double>(b + 1);
    }
    for (const auto& row : rows) {
        const double c = confidence_of(row);
        const auto b =
            std::min(kCalibrationBins - 1,
                     static_cast<std::size_t>(c * static_cast<double>(kCalibrationBins)));
        bins[b].questions += 1;
        bins[b].mean_confidence += c;
        bins[b].accuracy += right_for_calibration(row) ? 1.0 : 0.0;
    }
    for (auto& bin : bins) {
        if (bin.questions == 0) continue;
        bin.mean_confidence /= static_cast<double>(bin.questions);
        bin.accuracy /= static_cast<double>(bin.questions);
    }
    return bins;
}

// Expected calibration error: the questions' share in each bin times the gap between its
// accuracy and its mean confidence, summed.
double expected_calibration_error(std::span<const CalibrationBin> bins, std::size_t n) {
    double ece = 0.0;
    for (const auto& bin : bins) {
        ece += static_cast<double>(bin.questions) / static_cast<double>(n) *
               std::abs(bin.accuracy - bin.mean_confidence);
    }
    return ece;
}

// Rows most confident first (the set's order among equals), and the accuracy of each prefix.
std::vector<CoveragePoint> coverage_curve(std::span<const EvalRow> rows) {
    std::vector<std::size_t> order(rows.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return confidence_of(rows[a]) > confidence_of(rows[b]);
    });
    std::vector<CoveragePoint> curve;
    std::size_t hits = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
        hits += right_for_calibration(rows[order[k]]) ? 1 : 0;
        curve.push_back({static_cast<double>(k + 1) / static_cast<double>(rows.size()), k + 1,
                         static_cast<double>(hits) / static_cast<double>(k + 1)});
    }
    return curve;
}

CoveragePoint at_coverage(std::span<const CoveragePoint> curve, double coverage) {
    const auto n = static_cast<double>(curve.size());
    const auto kept = std::clamp<std::size_t>(static_cast<std::size_t>(std::lround(coverage * n)),
                                              1, curve.size());
    CoveragePoint point = curve[kept - 1];
    point.coverage = coverage;
    return point;
}

}  // namespace

bool correct(const EvalRow& row) noexcept {
    return row.error.empty() && !row.abstained && row.score.hit;
}

bool right_for_calibration(const EvalRow& row) noexcept {
    if (!row.error.empty()) return false;
    if (row.abstained) return row.found && row.found->hit;
    return row.score.hit;
}

EvalSummary summarise(std::span<const EvalRow> rows) {
    EvalSummary s;
    s.questions = rows.size();
    if (rows.empty()) return s;
    for (const auto& row : rows) {
        s.errors += row.error.empty() ? 0 : 1;
        s.abstained += row.abstained ? 1 : 0;
        s.with_confidence += row.confidence ? 1 : 0;
        const bool answered = row.error.empty() && !row.abstained;
        s.hits1 += answered && row.score.hit ? 1.0 : 0.0;
        s.exact += answered ? row.score.exact : 0.0;
        s.f1 += answered ? row.score.f1 : 0.0;
        if (row.list) {
            ++s.list_questions;
            s.complete += answered && row.named_share && *row.named_share >= 1.0 ? 1.0 : 0.0;
        }
    }
    if (s.list_questions > 0) s.complete /= static_cast<double>(s.list_questions);
    const auto n = static_cast<double>(rows.size());
    s.hits1 /= n;
    s.exact /= n;
    s.f1 /= n;
    if (s.with_confidence + s.errors < s.questions) return s;  // not every answer is scored
    s.bins = calibration_bins(rows);
    s.ece = expected_calibration_error(s.bins, rows.size());
    s.curve = coverage_curve(rows);
    for (const double coverage : {1.0, 0.8, 0.5})
        s.at_coverage.push_back(at_coverage(s.curve, coverage));
    return s;
}

json to_json(const EvalRow& row) {
    json out{{"id", row.id},
             {"question", row.question},
             {"answers", row.accepted},
             {"answer", row.answer},
             {"judged", row.score.judged},
             {"hit", row.score.hit},
             {"exact", row.score.exact},
             {"f1", row.score.f1},
             {"abstained", row.abstained},
             {"trace", row.trace},
             {"attached", row.attached},
             {"seconds", row.seconds}};
    out["short_answer"] = row.short_answer ? json(*row.short_answer) : json(nullptr);
    out["confidence"] = row.confidence ? json(*row.confidence) : json(nullptr);
    out["calibrator"] = row.calibrator;
    out["evidence"] = row.evidence;
    if (row.list) out["named_share"] = row.named_share ? json(*row.named_share) : json(nullptr);
    if (row.found) out["found_hit"] = row.found->hit;
    if (!row.error.empty()) out["error"] = row.error;
    return out;
}

json to_record_json(const EvalRow& row) {
    const auto cut = [](const std::string& text, std::size_t max) {
        return std::string(base::utf8_prefix(text, max));
    };
    const std::string verdict = !row.error.empty() ? "error"
                                : row.abstained    ? "abstain"
                                : row.score.hit    ? "hit"
                                                   : "miss";
    json out{{"id", cut(row.id, 256)},
             {"question", cut(row.question, 1024)},
             {"verdict", verdict},
             {"correct", correct(row)},
             {"hit", row.score.hit},
             {"exact", row.score.exact},
             {"f1", row.score.f1},
             {"abstained", row.abstained},
             {"judged", cut(row.score.judged, 512)},
             {"attached", row.attached},
             {"seconds", row.seconds}};
    out["trace"] = row.trace.empty() ? json(nullptr) : json(row.trace);
    out["confidence"] = row.confidence ? json(*row.confidence) : json(nullptr);
    if (row.list) out["named_share"] = row.named_share ? json(*row.named_share) : json(nullptr);
    if (!row.error.empty()) out["error"] = cut(row.error, 512);
    return out;
}

json to_json(const EvalSummary& s) {
    json out{{"questions", s.questions},
             {"errors", s.errors},
             {"abstained", s.abstained},
             {"with_confidence", s.with_confidence},
             {"hits1", s.hits1},
             {"exact", s.exact},
             {"f1", s.f1}};
    if (s.list_questions > 0) {
        out["list_questions"] = s.list_questions;
        out["complete"] = s.complete;
    }
    out["attached"] = s.attached;
    out["attach_failed"] = s.attach_failed;
    out["attach_error"] = s.attach_error.empty() ? json(nullptr) : json(s.attach_error);
    out["ece"] = s.ece ? json(*s.ece) : json(nullptr);
    out["bins"] = json::array();
    for (const auto& b : s.bins) {
        out["bins"].push_back({{"lower", b.lower},
                               {"upper", b.upper},
                               {"questions", b.questions},
                               {"mean_confidence", b.mean_confidence},
                               {"accuracy", b.accuracy}});
    }
    out["accuracy_at_coverage"] = json::array();
    for (const auto& p : s.at_coverage) {
        out["accuracy_at_coverage"].push_back(
            {{"coverage", p.coverage}, {"kept", p.kept}, {"accuracy", p.accuracy}});
    }
    return out;
}

}  // namespace glassbox::cli::eval
