// The trace store's evaluation runs (docs/evaluation.md, "Evaluation runs"): recorded by
// `glassbox eval` through the trace service, listed newest first, shown with their rows, and
// their charts read back for the gateway.
#include "workers/trace_collector/eval_runs.hpp"

#include <cstdint>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/time_format.hpp"
#include "schema/untrusted_json.hpp"
#include "storage/sql.hpp"
#include "workers/trace_collector/trace_store.hpp"
#include "workers/trace_collector/trace_store_detail.hpp"

namespace glassbox::trace {

using base::ErrorType;
using base::make_error;
using base::Result;
using detail::to_ms;
using nlohmann::json;
using storage::sql::Connection;
using storage::sql::Row;
using storage::sql::TransactionKind;

namespace {

// What a list row holds: everything but the rows and the charts.
constexpr const char* kEvalRunColumns =
    "name, question_set, set_path, engine, collection, started, finished, recorded, summary";

json eval_time(const Row& row, int column) {
    return row.is_null(column) ? json(nullptr)
                               : json(base::format_xsd_datetime_ms(row.int64(column)));
}

// Stored JSON read back as untrusted as any stored text: `fallback` when it does not parse to
// the kind expected.
json stored_json(std::string_view text, json fallback) {
    auto parsed = schema::parse_untrusted_json(text);
    if (!parsed || parsed->type() != fallback.type()) return fallback;
    return std::move(*parsed);
}

// One eval_runs row (kEvalRunColumns) as eval_list and eval_show answer it.
json run_json(const Row& row) {
    json out = json::object();
    out["name"] = std::string(row.text(0));
    out["set"] = std::string(row.text(1));
    out["set_path"] = std::string(row.text(2));
    out["engine"] = std::string(row.text(3));
    out["collection"] = std::string(row.text(4));
    out["started"] = eval_time(row, 5);
    out["finished"] = eval_time(row, 6);
    out["recorded"] = base::format_xsd_datetime_ms(row.int64(7));
    out["summary"] = stored_json(row.text(8), json::object());
    return out;
}

Result<json> find_run(Connection& db, std::string_view name, bool with_rows) {
    auto q = db.prepare(std::string("SELECT ") + kEvalRunColumns +
                        ", question_rows FROM eval_runs WHERE name = ?1");
    if (!q) return q.error();
    q->bind(1, name);
    auto found = q->first([&](const Row& row) {
        json run = run_json(row);
        if (with_rows) run["rows"] = stored_json(row.text(9), json::array());
        return run;
    });
    if (!found) return found.error();
    if (!*found)
        return make_error(ErrorType::kNotFound, "no evaluation run \"" + std::string(name) + "\"");
    return std::move(**found);
}

}  // namespace

Result<json> TraceStore::record_eval_run(const EvalRunRecord& run, WallClock::time_point now) {
    auto transaction = storage::sql::Transaction::begin(*db_, TransactionKind::kWrite);
    if (!transaction) return transaction.error();
    auto gone = db_->prepare("DELETE FROM eval_runs WHERE name = ?1");
    if (!gone) return gone.error();
    gone->bind(1, std::string_view{run.name});
    if (auto r = gone->run(); !r) return r.error();
    const bool replaced = db_->changes() > 0;
    auto insert = db_->prepare(
        "INSERT INTO eval_runs(name, question_set, set_path, engine, collection, started, "
        "finished, recorded, summary, question_rows, reliability, risk_coverage) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
    if (!insert) return insert.error();
    insert->bind(1, std::string_view{run.name})
        .bind(2, std::string_view{run.set})
        .bind(3, std::string_view{run.set_path})
        .bind(4, std::string_view{run.engine})
        .bind(5, std::string_view{run.collection})
        .bind(6, run.started_ms)
        .bind(7, run.finished_ms)
        .bind(8, to_ms(now))
        .bind(9, run.summary.dump(-1, ' ', false, json::error_handler_t::replace))
        .bind(10, run.rows.dump(-1, ' ', false, json::error_handler_t::replace))
        .bind(11, std::string_view{run.reliability_svg})
        .bind(12, std::string_view{run.risk_coverage_svg});
    if (auto r = insert->run(); !r) return r.error();
    // The newest kMaxEvalRuns stay: the runs are small, but nothing else bounds their number.
    auto trim = db_->prepare(
        "DELETE FROM eval_runs WHERE id NOT IN (SELECT id FROM eval_runs "
        "ORDER BY recorded DESC, id DESC LIMIT ?1)");
    if (!trim) return trim.error();
    trim->bind(1, kMaxEvalRuns);
    if (auto r = trim->run(); !r) return r.error();
    auto stored = find_run(*db_, run.name, false);
    if (!stored) return stored.error();
    if (auto r = transaction->commit(); !r) return r.error();
    return json{{"run", std::move(*stored)}, {"replaced", replaced}};
}

Result<json> TraceStore::eval_runs(std::int64_t limit, std::int64_t offset) {
    auto transaction = storage::sql::Transaction::begin(*db_, TransactionKind::kRead);
    if (!transaction) return transaction.error();
    auto q = db_->prepare(std::string("SELECT ") + kEvalRunColumns +
                          " FROM eval_runs ORDER BY recorded DESC, id DESC LIMIT ?1 OFFSET ?2");
    if (!q) return q.error();
    q->bind(1, limit).bind(2, offset);
    json runs = json::array();
    if (auto r = q->each([&](const Row& row) { runs.push_back(run_json(row)); }); !r)
        return r.error();
    auto count = db_->prepare("SELECT COUNT(*) FROM eval_runs");
    if (!count) return count.error();
    auto total = count->first([](const Row& row) { return row.int64(0); });
    if (!total) return total.error();
    return json{{"runs", std::move(runs)}, {"total", total->value_or(0)}};
}

Result<json> TraceStore::eval_run(std::string_view name) {
    auto run = find_run(*db_, name, true);
    if (!run) return run.error();
    return json{{"run", std::move(*run)}};
}

Result<std::string> TraceStore::eval_chart(std::string_view name, EvalChart chart) {
    auto q = db_->prepare(chart == EvalChart::kReliability
                              ? "SELECT reliability FROM eval_runs WHERE name = ?1"
                              : "SELECT risk_coverage FROM eval_runs WHERE name = ?1");
    if (!q) return q.error();
    q->bind(1, name);
    auto svg = q->first([](const Row& row) { return std::string(row.text(0)); });
    if (!svg) return svg.error();
    if (!*svg)
        return make_error(ErrorType::kNotFound, "no evaluation run \"" + std::string(name) + "\"");
    return std::move(**svg);
}

}  // namespace glassbox::trace
