// Cost (docs/traces.md, "Cost"): each stored model call priced at ingest by costs.prices (a model
// without a price has no cost, never 0), a run's cost with its sub-runs', the steps' costs in
// show, the totals of stats by model and by day, the price of the time kept, and the rows pruned
// with their trace; on SQLite and PostgreSQL.
#include <gtest/gtest.h>

#include <cmath>

#include "schema/messages_trace.hpp"
#include "storage/pg_connection.hpp"
#include "storage/sqlite_database.hpp"
#include "tests/support/trace_store_suite.hpp"

namespace glassbox::trace::testing {
namespace {

using nlohmann::json;

constexpr std::int64_t kT0 = 1'790'000'000'000;  // 2026-09-21T14:13:20Z, epoch ms
constexpr std::int64_t kDay = 86'400'000;
constexpr std::int64_t kNow = kT0 + 3 * kDay;

// gpt-4o priced; local-llama not.
constexpr const char* kPrices = R"({"gpt-4o": {"input": 2.5, "output": 10}})";

double gpt4o(double in, double out) { return (in * 2.5 + out * 10.0) / 1e6; }

explain::StepInfo call(std::int64_t ms, const std::string& model, std::uint64_t in,
                       std::uint64_t out) {
    explain::StepInfo step;
    step.generated_at = at(ms);
    step.duration = milliseconds{5};
    step.model = model;
    step.input_tokens = in;
    step.output_tokens = out;
    return step;
}

// Message `seq` of `run` for step `id` with `triples`, the run's end when `end`.
schema::ExplainMessage step_message(const FakeRun& run, std::uint64_t seq, const std::string& id,
                                    std::vector<schema::Triple> triples, bool end = false) {
    schema::ExplainMessage m;
    m.session = run.session();
    m.seq = seq;
    m.service = run.service;
    m.worker = run.service + "-test/0";
    m.explain_id = id;
    m.explain_triples = std::move(triples);
    if (end) {
        const auto tail =
            explain::trace_end(run.uris, at(run.started_ms + 100), schema::TraceStatus::kComplete);
        m.explain_triples.insert(m.explain_triples.end(), tail.begin(), tail.end());
        m.end_of_trace = true;
        m.trace_status = schema::TraceStatus::kComplete;
    }
    return m;
}

class CostTest : public StoreTest {
protected:
    void SetUp() override {
        auto prices = schema::parse_prices(kPrices, "EUR");
        ASSERT_TRUE(prices.ok());
        config_.prices = *prices;
        StoreTest::SetUp();
    }

    // A graph-rag-like run: Grounding by gpt-4o (1000 in / 100 out), Synthesis by local-llama.
    FakeRun graph_rag(std::int64_t started, std::int64_t received) {
        auto run = FakeRun::make("graph-rag", "who built it?", started);
        const auto grounding =
            explain::grounding(run.uris, call(started + 10, "gpt-4o", 1000, 100), {"ship"});
        const auto synthesis =
            explain::synthesis(run.uris, call(started + 20, "local-llama", 200, 50),
                               explain::StoredText{"the yard", std::nullopt});
        store({run.open(), step_message(run, 1, run.uris.grounding(), grounding),
               step_message(run, 2, run.uris.synthesis(), synthesis, true)},
              received);
        return run;
    }

    // An agent-like run: Analysis by gpt-4o (400 in / 40 out) calling a graph-rag sub-run whose
    // Synthesis is by gpt-4o (2000 in / 0 out), then a Conclusion by local-llama.
    std::pair<FakeRun, FakeRun> agent(std::int64_t started, std::int64_t received) {
        auto run = FakeRun::make("agent", "and then?", started);
        auto sub = FakeRun::make("graph-rag", "and then?", started + 30, run.uris.analysis(0));
        explain::AgentAction action{"look it up", "graph-rag", R"({"q": "x"})"};
        const auto analysis =
            explain::analysis(run.uris, 0, call(started + 20, "gpt-4o", 400, 40), action);
        const auto sub_synthesis =
            explain::synthesis(sub.uris, call(started + 40, "gpt-4o", 2000, 0),
                               explain::StoredText{"x", std::nullopt});
        const auto conclusion =
            explain::conclusion(run.uris, call(started + 60, "local-llama", 10, 5),
                                explain::StoredText{"done", std::nullopt}, "final-answer");
        store({run.open(), step_message(run, 1, run.uris.analysis(0), analysis), sub.open(),
               step_message(sub, 1, sub.uris.synthesis(), sub_synthesis, true),
               step_message(run, 2, run.uris.conclusion(), conclusion, true)},
              received);
        return {run, sub};
    }

    json show(const FakeRun& run) {
        auto shown = store_->show(run.session(), at(kNow));
        EXPECT_TRUE(shown.ok()) << shown.error().describe();
        if (!shown.ok()) return json::object();
        EXPECT_TRUE(schema::decode<schema::TraceDetail>(*shown).ok()) << shown->dump();
        return *shown;
    }

    json costs() {
        auto stats = store_->stats(at(kNow));
        EXPECT_TRUE(stats.ok()) << stats.error().describe();
        if (!stats.ok()) return json::object();
        auto decoded = schema::decode<schema::TraceStats>(*stats);
        EXPECT_TRUE(decoded.ok() && decoded->costs.has_value()) << stats->dump();
        return (*stats)["costs"];
    }

    // A count the SQL reads in this store's database, by a connection of its own.
    std::int64_t count(const std::string& sql) {
        std::optional<std::int64_t> n;
        const auto read = [&](auto& q) {
            auto value = q.first([](const auto& row) { return row.int64(0); });
            EXPECT_TRUE(value.ok()) << value.error().describe();
            if (value.ok()) n = *value;
        };
        if (on_postgres()) {
            storage::PgOptions options;
            options.dsn = site_->dsn();
            auto db = storage::PgConnection::open(options);
            EXPECT_TRUE(db.ok()) << db.error().describe();
            if (!db) return -1;
            auto q = (*db)->prepare(sql);
            if (q) read(*q);
        } else {
            auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
            EXPECT_TRUE(db.ok()) << db.error().describe();
            if (!db) return -1;
            auto q = (*db)->prepare_once(sql);
            if (q) read(*q);
        }
        return n.value_or(-1);
    }
};

GLASSBOX_TRACE_BACKENDS(CostTest);

// The event of `shown` whose explain_id is `id`.
json event_of(const json& shown, const std::string& id) {
    for (const auto& e : shown["events"])
        if (e["explain_id"] == id) return e;
    ADD_FAILURE() << "no event " << id;
    return json::object();
}

TEST_P(CostTest, AGraphRagRunsStepsArePricedAndTheUnpricedModelHasNoCost) {
    const auto run = graph_rag(kT0, kT0 + 100);
    const json shown = show(run);
    const json grounding = event_of(shown, run.uris.grounding());
    ASSERT_TRUE(grounding["costs"].is_array()) << grounding.dump();
    ASSERT_EQ(grounding["costs"].size(), 1u);
    const json& priced = grounding["costs"][0];
    EXPECT_EQ(priced["step"], run.uris.grounding());
    EXPECT_EQ(priced["model"], "gpt-4o");
    EXPECT_EQ(priced["input_tokens"], 1000);
    EXPECT_EQ(priced["output_tokens"], 100);
    EXPECT_DOUBLE_EQ(priced["cost"].get<double>(), gpt4o(1000, 100));
    EXPECT_EQ(priced["currency"], "EUR");
    const json synthesis = event_of(shown, run.uris.synthesis());
    ASSERT_EQ(synthesis["costs"].size(), 1u);
    EXPECT_EQ(synthesis["costs"][0]["model"], "local-llama");
    EXPECT_TRUE(synthesis["costs"][0]["cost"].is_null()) << "no price: null, not 0";
    EXPECT_FALSE(event_of(shown, run.session()).contains("costs")) << "the Question used none";
    const json& session = shown["session"];
    EXPECT_DOUBLE_EQ(session["cost"].get<double>(), gpt4o(1000, 100));
    EXPECT_EQ(session["currency"], "EUR");
    EXPECT_EQ(session["unpriced"], json::array({"local-llama"}));
}

TEST_P(CostTest, ASubRunsCostCountsTowardItsTopLevelRun) {
    const auto [run, sub] = agent(kT0, kT0 + 100);
    const json shown = show(run);
    EXPECT_DOUBLE_EQ(shown["session"]["cost"].get<double>(), gpt4o(400 + 2000, 40))
        << shown["session"].dump();
    EXPECT_EQ(shown["session"]["unpriced"], json::array({"local-llama"}));
    ASSERT_EQ(shown["subtraces"].size(), 1u);
    const json& sub_session = shown["subtraces"][0]["session"];
    EXPECT_DOUBLE_EQ(sub_session["cost"].get<double>(), gpt4o(2000, 0));
    EXPECT_FALSE(sub_session.contains("unpriced")) << sub_session.dump();
    // list: the top-level row with its sub-run's cost; the sub-run's own with --all.
    ListQuery q;
    q.include_subtraces = true;
    auto listed = store_->list(q, at(kNow));
    ASSERT_TRUE(listed.ok()) << listed.error().describe();
    ASSERT_TRUE(schema::decode<schema::TraceSessionList>(*listed).ok());
    std::map<std::string, json> rows;
    for (const auto& row : (*listed)["sessions"]) rows[row["session"]] = row;
    EXPECT_DOUBLE_EQ(rows[run.session()]["cost"].get<double>(), gpt4o(2400, 40));
    EXPECT_DOUBLE_EQ(rows[sub.session()]["cost"].get<double>(), gpt4o(2000, 0));
}

TEST_P(CostTest, ARunWithoutModelCallsHasANullCost) {
    const auto run = FakeRun::make("echo", "hello?", kT0);
    store({run.open(), run.end()}, kT0 + 100);
    const json shown = show(run);
    EXPECT_TRUE(shown["session"]["cost"].is_null());
    EXPECT_FALSE(shown["session"].contains("unpriced"));
}

TEST_P(CostTest, StatsTotalByModelAndByDay) {
    graph_rag(kT0, kT0 + 100);            // day 1: 1000/100 gpt-4o, 200/50 local-llama
    agent(kT0 + kDay, kT0 + kDay + 100);  // day 2: 2400/40 gpt-4o, 10/5 local-llama
    const json c = costs();
    EXPECT_EQ(c["currency"], "EUR");
    EXPECT_NEAR(c["total"].get<double>(), gpt4o(3400, 140), 1e-12);
    ASSERT_EQ(c["by_model"].size(), 2u) << c.dump();
    EXPECT_EQ(c["by_model"][0]["model"], "gpt-4o") << "the costliest first";
    EXPECT_EQ(c["by_model"][0]["input_tokens"], 3400);
    EXPECT_EQ(c["by_model"][0]["output_tokens"], 140);
    EXPECT_NEAR(c["by_model"][0]["cost"].get<double>(), gpt4o(3400, 140), 1e-12);
    EXPECT_EQ(c["by_model"][1]["model"], "local-llama");
    EXPECT_EQ(c["by_model"][1]["input_tokens"], 210);
    EXPECT_EQ(c["by_model"][1]["output_tokens"], 55);
    EXPECT_TRUE(c["by_model"][1]["cost"].is_null());
    EXPECT_EQ(c["unpriced"], json::array({"local-llama"}));
    ASSERT_EQ(c["by_day"].size(), 2u);
    EXPECT_EQ(c["by_day"][0]["day"], "2026-09-22") << "newest first";
    EXPECT_NEAR(c["by_day"][0]["cost"].get<double>(), gpt4o(2400, 40), 1e-12);
    EXPECT_EQ(c["by_day"][1]["day"], "2026-09-21");
    EXPECT_NEAR(c["by_day"][1]["cost"].get<double>(), gpt4o(1000, 100), 1e-12);
}

TEST_P(CostTest, ARedeliveredEventIsPricedOnce) {
    const auto run = graph_rag(kT0, kT0 + 100);
    const auto grounding =
        explain::grounding(run.uris, call(kT0 + 10, "gpt-4o", 1000, 100), {"ship"});
    const auto outcome = store({step_message(run, 1, run.uris.grounding(), grounding)}, kT0 + 200);
    EXPECT_EQ(outcome.duplicates, 1u);
    EXPECT_NEAR(costs()["total"].get<double>(), gpt4o(1000, 100), 1e-12);
    EXPECT_EQ(count("SELECT COUNT(*) FROM step_costs"), 2);
}

TEST_P(CostTest, ARunKeepsThePriceOfItsTime) {
    const auto before = graph_rag(kT0, kT0 + 100);
    // The prices change (a restart of the collector with new costs.prices): only later runs.
    store_.reset();
    config_.prices.models["gpt-4o"] = schema::ModelPrice{5.0, 20.0};
    config_.prices.models["local-llama"] = schema::ModelPrice{0.0, 0.0};
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_NE(store_, nullptr);
    const auto after = graph_rag(kT0 + 1000, kT0 + 1100);
    EXPECT_DOUBLE_EQ(show(before)["session"]["cost"].get<double>(), gpt4o(1000, 100));
    const json later = show(after)["session"];
    EXPECT_DOUBLE_EQ(later["cost"].get<double>(), 2 * gpt4o(1000, 100));
    EXPECT_FALSE(later.contains("unpriced")) << "local-llama is priced at 0 now";
    EXPECT_EQ(event_of(show(after), after.uris.synthesis())["costs"][0]["cost"], 0.0);
}

TEST_P(CostTest, PruneRemovesTheCostRowsWithTheirTrace) {
    graph_rag(kT0, kT0 + 100);
    const auto [run, sub] = agent(kNow - 1000, kNow - 900);
    ASSERT_EQ(count("SELECT COUNT(*) FROM step_costs"), 5);
    PruneRequest request;
    request.older_than = milliseconds{kDay};
    request.now = at(kNow);
    auto pruned = store_->prune(request);
    ASSERT_TRUE(pruned.ok()) << pruned.error().describe();
    EXPECT_EQ(pruned->traces, 1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM step_costs"), 3) << "the old trace's rows went with it";
    EXPECT_NEAR(costs()["total"].get<double>(), gpt4o(2400, 40), 1e-12);
    // and the rest go with theirs (a trace with a sub-run)
    request.older_than = milliseconds{0};
    request.now = at(kNow + 1);
    ASSERT_TRUE(store_->prune(request).ok());
    EXPECT_EQ(count("SELECT COUNT(*) FROM step_costs"), 0);
    EXPECT_EQ(costs()["by_model"], json::array());
}

}  // namespace
}  // namespace glassbox::trace::testing
