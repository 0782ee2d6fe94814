// Evaluation runs (docs/evaluation.md, "Evaluation runs"): what one `glassbox eval` reported,
// its figures, one row per question and its two charts, as the trace store keeps them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.hpp"

namespace glassbox::trace {

// The store keeps the newest this many evaluation runs (they are not traces: prune leaves them).
inline constexpr std::int64_t kMaxEvalRuns = 500;
// Bounds of an `eval_record` request: names and paths (bytes), the questions of one run, the
// summary's and the rows' JSON, and each chart.
inline constexpr std::size_t kMaxEvalRunNameBytes = 256;
inline constexpr std::size_t kMaxEvalRunPathBytes = 4096;
inline constexpr std::size_t kMaxEvalRunRows = 10'000;
inline constexpr std::size_t kMaxEvalSummaryBytes = std::size_t{64} * 1024;
inline constexpr std::size_t kMaxEvalRowsBytes = std::size_t{8} * 1024 * 1024;
inline constexpr std::size_t kMaxEvalChartBytes = std::size_t{512} * 1024;
// `limit` of eval_list: default and bound.
inline constexpr std::int64_t kDefaultEvalListLimit = 50;
inline constexpr std::int64_t kMaxEvalListLimit = 500;

// One evaluation run as `glassbox eval` records it (checked by the trace service).
struct EvalRunRecord {
    std::string name;  // the run's name: its report folder's; recording it again replaces it
    std::string set;   // the question set's name (its file's stem)
    std::string set_path;
    std::string engine;
    std::string collection;  // "" for the default
    std::optional<std::int64_t> started_ms;
    std::optional<std::int64_t> finished_ms;
    nlohmann::json summary = nlohmann::json::object();  // the figures (docs/evaluation.md)
    nlohmann::json rows = nlohmann::json::array();      // one object per question
    std::string reliability_svg;
    std::string risk_coverage_svg;
};

// The charts of a run, as eval_chart names them.
enum class EvalChart { kReliability, kRiskCoverage };

class TraceStore;

// Whether `op` is one of the trace service's evaluation-run ops (eval_run_requests.cpp).
bool is_eval_op(std::string_view op) noexcept;
// Answers eval_record, eval_list, eval_show or eval_chart (`op`) against `store`, the request
// checked field by field (InvalidRequest naming it); an unknown run NotFound.
base::Result<nlohmann::json> answer_eval_request(TraceStore& store, const nlohmann::json& body,
                                                 std::string_view op);

}  // namespace glassbox::trace
