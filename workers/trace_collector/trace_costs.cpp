// The cost rows of stored model calls (docs/traces.md, "Cost"): written at ingest, read by show,
// list and stats.
#include "workers/trace_collector/trace_costs.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "base/time_format.hpp"
#include "schema/messages_trace.hpp"
#include "workers/trace_collector/trace_store_detail.hpp"

namespace glassbox::trace::detail {

using nlohmann::json;
using storage::sql::Connection;
using storage::sql::Row;

namespace {

// Rows per INSERT: its parameters stay well under PostgreSQL's 65,535.
constexpr std::size_t kRowsPerInsert = 500;
constexpr int kColumns = 9;

// SQLite: INSERT OR FAIL. A multi-row INSERT whose constraints may ABORT needs a statement
// journal, and each statement journal is a savepoint at which SQLite 3.40's FTS5 writes the
// batch's pending full-text terms out as a new segment (fts5SavepointMethod); FAIL needs no
// journal, and a failure rolls the whole batch back anyway (TraceStore::store_batch).
std::string insert_sql(std::size_t rows, bool sqlite) {
    std::string sql = sqlite ? "INSERT OR FAIL INTO " : "INSERT INTO ";
    sql +=
        "step_costs(session, seq, step, model, day, input_tokens, output_tokens, "
        "cost, currency) VALUES ";
    int n = 1;
    for (std::size_t r = 0; r < rows; ++r) {
        sql += r == 0 ? "(" : ", (";
        for (int c = 0; c < kColumns; ++c, ++n) sql += (c == 0 ? "?" : ", ?") + std::to_string(n);
        sql += ')';
    }
    return sql + " ON CONFLICT(session, seq, step) DO NOTHING";
}

struct CostRow {
    const EventCalls* event;
    const ModelCall* call;
};

// A run's calls grouped by model and currency: SUM(cost), COUNT(cost), COUNT(*).
constexpr const char* kOwnCostSql =
    "SELECT model, currency, SUM(cost), COUNT(cost), COUNT(*) FROM step_costs WHERE session = ?1 "
    "GROUP BY model, currency ORDER BY model, currency";
constexpr const char* kTreeCostSql =
    "WITH RECURSIVE tree(id, uri) AS (SELECT id, uri FROM sessions WHERE id = ?1 "
    "UNION ALL SELECT s.id, s.uri FROM sessions s JOIN tree ON s.parent = tree.uri) "
    "SELECT model, currency, SUM(cost), COUNT(cost), COUNT(*) FROM step_costs "
    "WHERE session IN (SELECT id FROM tree) GROUP BY model, currency ORDER BY model, currency";

std::string day_text(std::int64_t day) {
    return base::format_xsd_datetime_ms(day * kDayMs).substr(0, 10);
}

}  // namespace

ModelCall& call_of(std::vector<ModelCall>& calls, std::string_view step) {
    for (auto& call : calls) {
        if (call.step == step) return call;
    }
    calls.push_back(ModelCall{std::string(step), {}, 0, 0});
    return calls.back();
}

base::Result<void> write_step_costs(Connection& db, const schema::PriceTable& prices,
                                    const std::vector<EventCalls>& events,
                                    std::int64_t received_ms) {
    std::vector<CostRow> rows;
    for (const auto& event : events) {
        for (const auto& call : event.calls) {
            if (!call.model.empty()) rows.push_back({&event, &call});
        }
    }
    const std::int64_t day = day_of(received_ms);
    for (std::size_t at = 0; at < rows.size(); at += kRowsPerInsert) {
        const std::size_t n = std::min(kRowsPerInsert, rows.size() - at);
        auto insert =
            db.prepare_once(insert_sql(n, db.dialect() != storage::sql::Dialect::kPostgres));
        if (!insert) return insert.error();
        for (std::size_t k = 0; k < n; ++k) {
            const auto& [event, call] = rows[at + k];
            const int c = static_cast<int>(k) * kColumns;
            insert->bind(c + 1, event->session)
                .bind(c + 2, event->seq)
                .bind(c + 3, std::string_view{call->step})
                .bind(c + 4, std::string_view{call->model})
                .bind(c + 5, day)
                .bind(c + 6, call->input_tokens)
                .bind(c + 7, call->output_tokens)
                .bind(c + 9, std::string_view{prices.currency});
            if (const auto cost =
                    prices.cost(call->model, call->input_tokens, call->output_tokens)) {
                insert->bind(c + 8, *cost);
            } else {
                insert->bind_null(c + 8);
            }
        }
        if (auto r = insert->run(); !r) return r;
    }
    return {};
}

base::Result<void> add_run_cost(Connection& db, std::int64_t session, bool subruns, json& summary) {
    auto q = db.prepare(subruns ? kTreeCostSql : kOwnCostSql);
    if (!q) return q.error();
    q->bind(1, session);
    std::optional<double> cost;
    std::optional<std::string> currency;
    std::set<std::string> unpriced;
    auto read = q->each([&](const Row& row) {
        const std::string model(row.text(0));
        if (row.int64(3) < row.int64(4)) unpriced.insert(model);
        if (row.int64(3) == 0) return;
        // Costs in one currency only: the first the run's priced calls were stored in.
        if (!currency) currency = std::string(row.text(1));
        if (*currency == row.text(1)) cost = cost.value_or(0) + row.real(2);
    });
    if (!read) return read.error();
    summary["cost"] = cost ? json(*cost) : json(nullptr);
    if (currency) summary["currency"] = *currency;
    if (!unpriced.empty()) summary["unpriced"] = unpriced;
    return {};
}

base::Result<std::map<std::int64_t, json>> event_costs(Connection& db, std::int64_t session) {
    auto q = db.prepare(
        "SELECT seq, step, model, input_tokens, output_tokens, cost, currency FROM step_costs "
        "WHERE session = ?1 ORDER BY seq, step");
    if (!q) return q.error();
    q->bind(1, session);
    std::map<std::int64_t, json> out;
    auto read = q->each([&](const Row& row) {
        auto& costs = out[row.int64(0)];
        if (costs.is_null()) costs = json::array();
        costs.push_back({{"step", std::string(row.text(1))},
                         {"model", std::string(row.text(2))},
                         {"input_tokens", row.int64(3)},
                         {"output_tokens", row.int64(4)},
                         {"cost", row.is_null(5) ? json(nullptr) : json(row.real(5))},
                         {"currency", std::string(row.text(6))}});
    });
    if (!read) return read.error();
    return out;
}

namespace {

// by_model: every model with its tokens and its cost in `currency` (null: never priced), the
// costliest first and the never priced last; the models some of whose calls had no price.
base::Result<void> costs_by_model(Connection& db, const std::string& currency, json& out) {
    auto q = db.prepare(
        "SELECT model, CAST(SUM(input_tokens) AS BIGINT), CAST(SUM(output_tokens) AS BIGINT), "
        "SUM(CASE WHEN currency = ?1 THEN cost END), COUNT(CASE WHEN currency = ?1 THEN cost "
        "END), COUNT(cost), COUNT(*) FROM step_costs GROUP BY model");
    if (!q) return q.error();
    q->bind(1, std::string_view{currency});
    std::vector<std::pair<double, json>> models;  // (cost, -1 when none; the row)
    json unpriced = json::array();
    auto read = q->each([&](const Row& row) {
        const std::string model(row.text(0));
        const bool priced = row.int64(4) != 0;
        models.emplace_back(priced ? row.real(3) : -1.0,
                            json{{"model", model},
                                 {"input_tokens", row.int64(1)},
                                 {"output_tokens", row.int64(2)},
                                 {"cost", priced ? json(row.real(3)) : json(nullptr)}});
        if (row.int64(5) < row.int64(6)) unpriced.push_back(model);
    });
    if (!read) return read.error();
    std::stable_sort(models.begin(), models.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    json by_model = json::array();
    for (auto& [cost, row] : models) by_model.push_back(std::move(row));
    out["by_model"] = std::move(by_model);
    out["unpriced"] = std::move(unpriced);
    return {};
}

}  // namespace

base::Result<json> cost_stats(Connection& db, const std::string& currency) {
    json out = {{"currency", currency}, {"total", 0.0}};
    {
        auto q = db.prepare(
            "SELECT day, SUM(cost) FROM step_costs WHERE currency = ?1 AND cost IS NOT NULL "
            "GROUP BY day ORDER BY day DESC LIMIT " +
            std::to_string(schema::kMaxCostDays));
        if (!q) return q.error();
        q->bind(1, std::string_view{currency});
        json days = json::array();
        auto read = q->each([&](const Row& row) {
            days.push_back({{"day", day_text(row.int64(0))}, {"cost", row.real(1)}});
        });
        if (!read) return read.error();
        out["by_day"] = std::move(days);
    }
    {
        auto q = db.prepare("SELECT SUM(cost) FROM step_costs WHERE currency = ?1");
        if (!q) return q.error();
        q->bind(1, std::string_view{currency});
        auto total = q->first([](const Row& row) { return row.is_null(0) ? 0.0 : row.real(0); });
        if (!total) return total.error();
        out["total"] = total->value_or(0.0);
    }
    if (auto r = costs_by_model(db, currency, out); !r) return r.error();
    return out;
}

}  // namespace glassbox::trace::detail
