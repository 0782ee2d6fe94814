// The trace store's evaluations (docs/evaluation.md, "Evaluations on traces"): attaching a
// question set's score to a run, and reading a run's evaluations back for list and show.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/time_format.hpp"
#include "schema/messages_trace.hpp"
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
using storage::sql::Statement;
using storage::sql::TransactionKind;

namespace {

constexpr const char* kEvaluationColumns =
    "run, question_set, question_id, answers, correct, hit, exact_match, f1, confidence, "
    "evaluated";

json optional_real(const Row& row, int column) {
    return row.is_null(column) ? json(nullptr) : json(row.real(column));
}

// One evaluations row (kEvaluationColumns) as schema::TraceEvaluation encodes it.
json evaluation_json(const Row& row) {
    json answers = json::array();
    // Written by evaluate() as a JSON array of strings; read as untrusted as any stored text.
    if (auto parsed = schema::parse_untrusted_json(row.text(3)); parsed && parsed->is_array()) {
        for (auto& answer : *parsed)
            if (answer.is_string()) answers.push_back(std::move(answer));
    }
    json out = json::object();
    out["run"] = std::string(row.text(0));
    out["set"] = std::string(row.text(1));
    out["question_id"] = row.is_null(2) ? json(nullptr) : json(std::string(row.text(2)));
    out["answers"] = std::move(answers);
    out["correct"] = row.int64(4) != 0;
    out["hit"] = row.is_null(5) ? json(nullptr) : json(row.int64(5) != 0);
    out["exact_match"] = optional_real(row, 6);
    out["f1"] = optional_real(row, 7);
    out["confidence"] = optional_real(row, 8);
    out["evaluated"] = base::format_xsd_datetime_ms(row.int64(9));
    return out;
}

void bind_optional_real(Statement& q, int index, const std::optional<double>& value) {
    if (value) {
        q.bind(index, *value);
    } else {
        q.bind_null(index);
    }
}

Result<void> insert_evaluation(Connection& db, std::int64_t session,
                               const schema::TraceEvaluation& e, std::int64_t evaluated) {
    auto q = db.prepare(std::string("INSERT INTO evaluations(session, ") + kEvaluationColumns +
                        ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    if (!q) return q.error();
    q->bind(1, session)
        .bind(2, std::string_view{e.run})
        .bind(3, std::string_view{e.set})
        .bind(4, e.question_id)
        .bind(5, json(e.answers).dump())
        .bind(6, std::int64_t{e.correct ? 1 : 0});
    if (e.hit) {
        q->bind(7, std::int64_t{*e.hit ? 1 : 0});
    } else {
        q->bind_null(7);
    }
    bind_optional_real(*q, 8, e.exact_match);
    bind_optional_real(*q, 9, e.f1);
    bind_optional_real(*q, 10, e.confidence);
    q->bind(11, evaluated);
    return q->run();
}

// Drops the session's evaluations beyond its newest kMaxEvaluationsPerRun; answers how many it
// keeps.
Result<std::int64_t> trim_evaluations(Connection& db, std::int64_t session) {
    auto trim = db.prepare(
        "DELETE FROM evaluations WHERE session = ?1 AND id NOT IN (SELECT id FROM evaluations "
        "WHERE session = ?1 ORDER BY id DESC LIMIT ?2)");
    if (!trim) return trim.error();
    trim->bind(1, session).bind(2, static_cast<std::int64_t>(schema::kMaxEvaluationsPerRun));
    if (auto r = trim->run(); !r) return r.error();
    auto count = db.prepare("SELECT COUNT(*) FROM evaluations WHERE session = ?1");
    if (!count) return count.error();
    count->bind(1, session);
    auto n = count->first([](const Row& row) { return row.int64(0); });
    if (!n) return n.error();
    return n->value_or(0);
}

}  // namespace

Result<json> TraceStore::evaluate(std::string_view id, const schema::TraceEvaluation& evaluation,
                                  WallClock::time_point now) {
    auto transaction = storage::sql::Transaction::begin(*db_, TransactionKind::kWrite);
    if (!transaction) return transaction.error();
    auto uri = resolve_session(id);
    if (!uri) return uri.error();
    auto row = db_->prepare("SELECT id FROM sessions WHERE uri = ?1");
    if (!row) return row.error();
    row->bind(1, std::string_view{*uri});
    auto session = row->first([](const Row& r) { return r.int64(0); });
    row->reset();
    if (!session) return session.error();
    if (!*session) return make_error(ErrorType::kNotFound, "no trace " + std::string(id));
    const std::int64_t evaluated = to_ms(now);
    if (auto r = insert_evaluation(*db_, **session, evaluation, evaluated); !r) return r.error();
    auto kept = trim_evaluations(*db_, **session);
    if (!kept) return kept.error();
    if (auto r = transaction->commit(); !r) return r.error();
    schema::TraceEvaluation stored = evaluation;
    stored.evaluated = base::format_xsd_datetime_ms(evaluated);
    return schema::encode(schema::TraceEvaluated{*uri, std::move(stored), *kept});
}

namespace detail {

Result<json> session_evaluations(Connection& db, std::int64_t session) {
    auto q = db.prepare(std::string("SELECT ") + kEvaluationColumns +
                        " FROM evaluations WHERE session = ?1 ORDER BY id");
    if (!q) return q.error();
    q->bind(1, session);
    json out = json::array();
    auto read = q->each([&](const Row& row) { out.push_back(evaluation_json(row)); });
    if (!read) return read.error();
    return out;
}

}  // namespace detail

}  // namespace glassbox::trace
