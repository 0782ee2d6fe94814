// The trace service's evaluation-run ops (docs/traces.md §2, docs/evaluation.md "Evaluation
// runs"): eval_record, eval_list, eval_show and eval_chart, each request checked field by field.
#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/time_format.hpp"
#include "base/utf8.hpp"
#include "workers/trace_collector/eval_runs.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace {
namespace {

using base::ErrorType;
using base::make_error;
using base::Result;
using nlohmann::json;

base::Error invalid_eval(std::string message) {
    return make_error(ErrorType::kInvalidRequest, std::move(message));
}

// A text field of `object`: a UTF-8 string of at most `max` bytes without control characters,
// non-empty when `required`; "" when absent and not required.
Result<std::string> eval_text_field(const json& object, const char* key, std::string_view where,
                                    bool required, std::size_t max) {
    const std::string name = "\"" + std::string(where) + key + "\"";
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) {
        if (required) return invalid_eval(name + " must be a non-empty string");
        return std::string();
    }
    if (!it->is_string()) return invalid_eval(name + " must be a string");
    const auto& text = it->get_ref<const std::string&>();
    if (required && text.empty()) return invalid_eval(name + " must be a non-empty string");
    const bool control = std::any_of(text.begin(), text.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (text.size() > max || base::find_invalid_utf8(text) || control)
        return invalid_eval(name + " must be UTF-8 of at most " + std::to_string(max) +
                            " bytes without control characters");
    return text;
}

// A run's name: what the gateway puts in a path segment, so no '/' and not "." or "..".
Result<std::string> run_name(const json& object, std::string_view where) {
    auto name = eval_text_field(object, "name", where, true, kMaxEvalRunNameBytes);
    if (!name) return name.error();
    if (name->find('/') != std::string::npos || *name == "." || *name == "..")
        return invalid_eval("\"" + std::string(where) + "name\" must not hold '/' nor be . or ..");
    return name;
}

Result<std::optional<std::int64_t>> time_field(const json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::optional<std::int64_t>{};
    const auto ms = it->is_string() ? base::parse_xsd_datetime_ms(it->get<std::string>())
                                    : std::optional<std::int64_t>{};
    if (!ms)
        return invalid_eval(std::string("\"eval_run.") + key +
                            "\" must be an xsd:dateTime such as 2026-11-22T00:00:00Z");
    return std::optional<std::int64_t>{ms};
}

// The summary: an object whose `questions` is a count and whose shares are in [0, 1].
Result<json> summary_field(const json& run) {
    const auto it = run.find("summary");
    if (it == run.end() || !it->is_object())
        return invalid_eval("\"eval_run.summary\" must be an object with \"questions\"");
    const json& summary = *it;
    const auto questions = summary.find("questions");
    if (questions == summary.end() || !questions->is_number_integer() ||
        questions->get<std::int64_t>() < 0)
        return invalid_eval("\"eval_run.summary.questions\" must be a count (an integer from 0)");
    for (const char* key : {"hits1", "exact", "f1", "ece", "complete"}) {
        const auto share = summary.find(key);
        if (share == summary.end() || share->is_null()) continue;
        if (!share->is_number() || share->get<double>() < 0.0 || share->get<double>() > 1.0)
            return invalid_eval(std::string("\"eval_run.summary.") + key +
                                "\" must be a number from 0 to 1 or null");
    }
    if (summary.dump(-1, ' ', false, json::error_handler_t::replace).size() > kMaxEvalSummaryBytes)
        return invalid_eval("\"eval_run.summary\" must be at most " +
                            std::to_string(kMaxEvalSummaryBytes) + " bytes of JSON");
    return summary;
}

// The rows: at most kMaxEvalRunRows objects, each with an `id` and, when it has one, a `trace`.
Result<json> rows_field(const json& run) {
    const auto it = run.find("rows");
    if (it == run.end() || it->is_null()) return json::array();
    if (!it->is_array() || it->size() > kMaxEvalRunRows)
        return invalid_eval("\"eval_run.rows\" must be a list of at most " +
                            std::to_string(kMaxEvalRunRows) + " objects");
    for (const auto& row : *it) {
        if (!row.is_object() || !row.contains("id") || !row["id"].is_string())
            return invalid_eval(
                "each of \"eval_run.rows\" must be an object with an \"id\" string");
        if (row.contains("trace") && !row["trace"].is_string() && !row["trace"].is_null())
            return invalid_eval("a row's \"trace\" must be a session URI (a string) or null");
    }
    if (it->dump(-1, ' ', false, json::error_handler_t::replace).size() > kMaxEvalRowsBytes)
        return invalid_eval("\"eval_run.rows\" must be at most " +
                            std::to_string(kMaxEvalRowsBytes) + " bytes of JSON");
    return *it;
}

bool contains_folded(std::string_view text, std::string_view needle) {
    const auto at = std::search(
        text.begin(), text.end(), needle.begin(), needle.end(),
        [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
    return at != text.end();
}

// A chart: an SVG document (optionally after an XML declaration) of at most kMaxEvalChartBytes,
// UTF-8, with nothing that runs: no script element, no foreign HTML, no javascript: link and no
// event attribute. The gateway serves it with a CSP that forbids scripts anyway; this keeps what
// the store holds what `glassbox eval` writes.
Result<std::string> chart_field(const json& body, const char* key) {
    const std::string name = std::string("\"") + key + "\"";
    const auto it = body.find(key);
    if (it == body.end() || !it->is_string())
        return invalid_eval(name + " must be the chart, an SVG document (a string)");
    const auto& svg = it->get_ref<const std::string&>();
    if (svg.size() > kMaxEvalChartBytes || base::find_invalid_utf8(svg))
        return invalid_eval(name + " must be UTF-8 of at most " +
                            std::to_string(kMaxEvalChartBytes) + " bytes");
    std::string_view head(svg);
    if (head.starts_with("<?xml")) {
        const auto end = head.find("?>");
        head = end == std::string_view::npos ? std::string_view() : head.substr(end + 2);
        while (!head.empty() && std::isspace(static_cast<unsigned char>(head.front())))
            head.remove_prefix(1);
    }
    if (!head.starts_with("<svg"))
        return invalid_eval(name + " must be an SVG document (<svg ...>)");
    for (const std::string_view banned : {"<script", "<foreignobject", "javascript:", "<iframe"}) {
        if (contains_folded(svg, banned))
            return invalid_eval(name + " must not hold scripts or embedded documents");
    }
    // An event attribute: whitespace, "on", letters, optional spaces, '='.
    for (std::size_t i = 0; i + 3 < svg.size(); ++i) {
        if (!std::isspace(static_cast<unsigned char>(svg[i]))) continue;
        if (std::tolower(static_cast<unsigned char>(svg[i + 1])) != 'o' ||
            std::tolower(static_cast<unsigned char>(svg[i + 2])) != 'n')
            continue;
        std::size_t j = i + 3;
        while (j < svg.size() && std::isalpha(static_cast<unsigned char>(svg[j]))) ++j;
        while (j < svg.size() && svg[j] == ' ') ++j;
        if (j > i + 3 && j < svg.size() && svg[j] == '=')
            return invalid_eval(name + " must not hold event attributes");
    }
    return svg;
}

Result<EvalRunRecord> record_request(const json& body) {
    const auto it = body.find("eval_run");
    if (it == body.end() || !it->is_object())
        return invalid_eval(
            "eval_record needs \"eval_run\": an object with name, set, engine and "
            "summary");
    const json& run = *it;
    EvalRunRecord out;
    auto name = run_name(run, "eval_run.");
    if (!name) return name.error();
    auto set = eval_text_field(run, "set", "eval_run.", true, kMaxEvalRunNameBytes);
    auto engine = eval_text_field(run, "engine", "eval_run.", true, kMaxEvalRunNameBytes);
    auto collection = eval_text_field(run, "collection", "eval_run.", false, kMaxEvalRunNameBytes);
    auto set_path = eval_text_field(run, "set_path", "eval_run.", false, kMaxEvalRunPathBytes);
    for (auto* r : {&set, &engine, &collection, &set_path})
        if (!*r) return r->error();
    auto started = time_field(run, "started");
    if (!started) return started.error();
    auto finished = time_field(run, "finished");
    if (!finished) return finished.error();
    auto summary = summary_field(run);
    if (!summary) return summary.error();
    auto rows = rows_field(run);
    if (!rows) return rows.error();
    auto reliability = chart_field(body, "reliability_svg");
    if (!reliability) return reliability.error();
    auto risk = chart_field(body, "risk_coverage_svg");
    if (!risk) return risk.error();
    out.name = std::move(*name);
    out.set = std::move(*set);
    out.engine = std::move(*engine);
    out.collection = std::move(*collection);
    out.set_path = std::move(*set_path);
    out.started_ms = *started;
    out.finished_ms = *finished;
    out.summary = std::move(*summary);
    out.rows = std::move(*rows);
    out.reliability_svg = std::move(*reliability);
    out.risk_coverage_svg = std::move(*risk);
    return out;
}

Result<std::int64_t> eval_bounded(const json& body, const char* key, std::int64_t fallback,
                                  std::int64_t min, std::int64_t max) {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) return fallback;
    const bool fits =
        it->is_number_integer() &&
        !(it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) &&
        it->get<std::int64_t>() >= min && it->get<std::int64_t>() <= max;
    if (!fits)
        return invalid_eval(std::string("\"") + key + "\" must be an integer from " +
                            std::to_string(min) + " to " + std::to_string(max));
    return it->get<std::int64_t>();
}

}  // namespace

bool is_eval_op(std::string_view op) noexcept {
    return op == "eval_record" || op == "eval_list" || op == "eval_show" || op == "eval_chart";
}

Result<json> answer_eval_request(TraceStore& store, const json& body, std::string_view op) {
    if (op == "eval_record") {
        auto run = record_request(body);
        if (!run) return run.error();
        return store.record_eval_run(*run);
    }
    if (op == "eval_list") {
        auto limit = eval_bounded(body, "limit", kDefaultEvalListLimit, 1, kMaxEvalListLimit);
        if (!limit) return limit.error();
        auto offset = eval_bounded(body, "offset", 0, 0, std::numeric_limits<std::int32_t>::max());
        if (!offset) return offset.error();
        return store.eval_runs(*limit, *offset);
    }
    auto name = run_name(body, "");
    if (!name) return name.error();
    if (op == "eval_show") return store.eval_run(*name);
    const auto chart = body.find("chart");
    const std::string which =
        chart != body.end() && chart->is_string() ? chart->get<std::string>() : std::string();
    if (which != "reliability" && which != "risk_coverage")
        return invalid_eval("\"chart\" must be reliability or risk_coverage");
    auto svg = store.eval_chart(
        *name, which == "reliability" ? EvalChart::kReliability : EvalChart::kRiskCoverage);
    if (!svg) return svg.error();
    return json{{"svg", std::move(*svg)}};
}

}  // namespace glassbox::trace
