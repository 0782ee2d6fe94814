// Evaluation runs (docs/evaluation.md, "Evaluation runs"): recorded, listed newest first, shown
// with their rows, their charts read back, replaced by name, kept to the newest, left by prune,
// the 10 → 11 migration, and the eval_* ops with their checks.
#include <gtest/gtest.h>

#include "tests/support/trace_store_suite.hpp"
#include "workers/trace_collector/eval_runs.hpp"
#include "workers/trace_collector/trace_service.hpp"

namespace glassbox::trace::testing {
namespace {

using base::ErrorType;
using nlohmann::json;

constexpr std::int64_t kT0 = 1'790'000'000'000;  // 2026-09-21, epoch ms
constexpr std::int64_t kHour = 3'600'000;

const std::string kReliability =
    "<svg xmlns=\"http://www.w3.org/2000/svg\"><title>Reliability</title></svg>\n";
const std::string kRiskCoverage =
    "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><title>Risk</title>"
    "</svg>\n";

json summary_of(int questions, double hits1) {
    return {{"questions", questions},
            {"errors", 0},
            {"hits1", hits1},
            {"exact", hits1},
            {"f1", hits1},
            {"ece", 0.125},
            {"complete", nullptr},
            {"accuracy_at_coverage", json::array({{{"coverage", 1.0}, {"accuracy", hits1}}})}};
}

EvalRunRecord record_of(const std::string& name, double hits1) {
    EvalRunRecord run;
    run.name = name;
    run.set = "capitals";
    run.set_path = "/sets/capitals.jsonl";
    run.engine = "graph-rag";
    run.collection = "geo";
    run.started_ms = kT0;
    run.finished_ms = kT0 + 5000;
    run.summary = summary_of(2, hits1);
    run.rows = json::array({{{"id", "q1"}, {"trace", "urn:glassbox:aaaa:question"}, {"hit", true}},
                            {{"id", "q2"}, {"trace", nullptr}, {"hit", false}}});
    run.reliability_svg = kReliability;
    run.risk_coverage_svg = kRiskCoverage;
    return run;
}

// The eval_record request body `glassbox eval` sends for record_of(name, hits1).
json record_request(const std::string& name, double hits1 = 0.5) {
    const auto run = record_of(name, hits1);
    return {{"op", "eval_record"},
            {"eval_run",
             {{"name", run.name},
              {"set", run.set},
              {"set_path", run.set_path},
              {"engine", run.engine},
              {"collection", run.collection},
              {"started", "2026-09-21T14:13:20Z"},
              {"finished", "2026-09-21T14:13:25Z"},
              {"summary", run.summary},
              {"rows", run.rows}}},
            {"reliability_svg", run.reliability_svg},
            {"risk_coverage_svg", run.risk_coverage_svg}};
}

class EvalRunTest : public StoreTest {
protected:
    json recorded(const EvalRunRecord& run, std::int64_t at_ms) {
        auto r = store_->record_eval_run(run, at(at_ms));
        EXPECT_TRUE(r.ok()) << r.error().describe();
        return r.ok() ? *r : json::object();
    }
    json listed(std::int64_t limit = 50, std::int64_t offset = 0) {
        auto r = store_->eval_runs(limit, offset);
        EXPECT_TRUE(r.ok()) << r.error().describe();
        return r.ok() ? *r : json::object();
    }
    base::Result<json> ask(const json& body) {
        return answer_trace_request(*store_, body, [](const json&) { return true; });
    }
    void expect_invalid(const json& body, const std::string& says) {
        auto r = ask(body);
        ASSERT_FALSE(r.ok()) << body.dump().substr(0, 300);
        EXPECT_EQ(r.error().type, ErrorType::kInvalidRequest) << body.dump().substr(0, 300);
        EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
    }
};

GLASSBOX_TRACE_BACKENDS(EvalRunTest);

TEST_P(EvalRunTest, RunsAreListedNewestFirstShownWithTheirRowsAndChartsReadBack) {
    const json first = recorded(record_of("run-a", 0.5), kT0 + 10'000);
    EXPECT_EQ(first["replaced"], false);
    EXPECT_EQ(first["run"]["name"], "run-a");
    EXPECT_EQ(first["run"]["recorded"], "2026-09-21T14:13:30.000Z");
    recorded(record_of("run-b", 1.0), kT0 + 20'000);

    const json list = listed();
    EXPECT_EQ(list["total"], 2);
    ASSERT_EQ(list["runs"].size(), 2u) << list.dump();
    EXPECT_EQ(list["runs"][0]["name"], "run-b");
    EXPECT_EQ(list["runs"][1]["name"], "run-a");
    const json& a = list["runs"][1];
    EXPECT_EQ(a["set"], "capitals");
    EXPECT_EQ(a["set_path"], "/sets/capitals.jsonl");
    EXPECT_EQ(a["engine"], "graph-rag");
    EXPECT_EQ(a["collection"], "geo");
    EXPECT_EQ(a["started"], "2026-09-21T14:13:20.000Z");
    EXPECT_EQ(a["finished"], "2026-09-21T14:13:25.000Z");
    EXPECT_EQ(a["summary"], summary_of(2, 0.5));
    EXPECT_FALSE(a.contains("rows")) << "the list leaves the rows out";
    // Paged.
    const json second = listed(1, 1);
    ASSERT_EQ(second["runs"].size(), 1u);
    EXPECT_EQ(second["runs"][0]["name"], "run-a");
    EXPECT_EQ(second["total"], 2);

    auto shown = store_->eval_run("run-a");
    ASSERT_TRUE(shown.ok()) << shown.error().describe();
    EXPECT_EQ((*shown)["run"]["rows"], record_of("run-a", 0.5).rows);
    EXPECT_EQ((*shown)["run"]["summary"]["hits1"], 0.5);
    auto reliability = store_->eval_chart("run-a", EvalChart::kReliability);
    ASSERT_TRUE(reliability.ok());
    EXPECT_EQ(*reliability, kReliability);
    auto risk = store_->eval_chart("run-a", EvalChart::kRiskCoverage);
    ASSERT_TRUE(risk.ok());
    EXPECT_EQ(*risk, kRiskCoverage);

    for (const auto& missing : {store_->eval_run("run-c").error(),
                                store_->eval_chart("run-c", EvalChart::kReliability).error()}) {
        EXPECT_EQ(missing.type, ErrorType::kNotFound);
        EXPECT_NE(missing.message.find("run-c"), std::string::npos);
    }
}

TEST_P(EvalRunTest, RecordingANameAgainReplacesTheRun) {
    recorded(record_of("run-a", 0.5), kT0);
    recorded(record_of("run-b", 0.5), kT0 + 1);
    const json again = recorded(record_of("run-a", 0.75), kT0 + 2);
    EXPECT_EQ(again["replaced"], true);
    const json list = listed();
    EXPECT_EQ(list["total"], 2);
    ASSERT_EQ(list["runs"].size(), 2u);
    EXPECT_EQ(list["runs"][0]["name"], "run-a") << "newest recorded first";
    EXPECT_EQ(list["runs"][0]["summary"]["hits1"], 0.75);
}

TEST_P(EvalRunTest, OnlyTheNewestRunsAreKeptAndPruneLeavesThem) {
    const std::int64_t runs = kMaxEvalRuns + 3;
    for (std::int64_t i = 0; i < runs; ++i)
        recorded(record_of("run-" + std::to_string(i), 0.5), kT0 + i);
    json list = listed(kMaxEvalListLimit);
    EXPECT_EQ(list["total"], kMaxEvalRuns);
    EXPECT_EQ(list["runs"][0]["name"], "run-" + std::to_string(runs - 1));
    EXPECT_EQ(store_->eval_run("run-2").error().type, ErrorType::kNotFound) << "the oldest went";
    EXPECT_TRUE(store_->eval_run("run-3").ok());

    // A trace old enough to prune: it goes, the evaluation runs stay (they are not traces).
    auto trace = FakeRun::make("echo", "old", kT0);
    store({trace.open(), trace.end()}, kT0 + 10);
    PruneRequest request;
    request.older_than = std::chrono::milliseconds{kHour};
    request.now = at(kT0 + 48 * kHour);
    auto pruned = store_->prune(request);
    ASSERT_TRUE(pruned.ok()) << pruned.error().describe();
    EXPECT_EQ(pruned->traces, 1);
    EXPECT_EQ(listed()["total"], kMaxEvalRuns);
}

TEST_P(EvalRunTest, AVersion10StoreIsMigratedOnOpen) {
    downgrade("DROP TABLE eval_runs; UPDATE meta SET value = '10' WHERE key = 'schema'");
    auto read_only = site_->open(OpenMode::kReadOnly, config_);
    ASSERT_FALSE(read_only.ok()) << "a reader does not migrate";
    EXPECT_NE(read_only.error().message.find("unsupported schema version 10"), std::string::npos)
        << read_only.error().message;
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(store_);
    recorded(record_of("after", 1.0), kT0);
    EXPECT_EQ(listed()["total"], 1);
    EXPECT_TRUE(reopen(OpenMode::kReadOnly)) << "version 11 now";
}

TEST_P(EvalRunTest, OpsAnswerAsTheStoreDoes) {
    EXPECT_TRUE(is_write_request({{"op", "eval_record"}}));
    for (const char* op : {"eval_list", "eval_show", "eval_chart"})
        EXPECT_FALSE(is_write_request({{"op", op}})) << op;
    auto done = ask(record_request("run-a"));
    ASSERT_TRUE(done.ok()) << done.error().describe();
    EXPECT_EQ((*done)["run"]["name"], "run-a");
    EXPECT_EQ((*done)["run"]["started"], "2026-09-21T14:13:20.000Z");

    auto list = ask({{"op", "eval_list"}, {"limit", 10}});
    ASSERT_TRUE(list.ok()) << list.error().describe();
    EXPECT_EQ((*list)["total"], 1);
    auto shown = ask({{"op", "eval_show"}, {"name", "run-a"}});
    ASSERT_TRUE(shown.ok()) << shown.error().describe();
    EXPECT_EQ((*shown)["run"]["rows"].size(), 2u);
    auto chart = ask({{"op", "eval_chart"}, {"name", "run-a"}, {"chart", "risk_coverage"}});
    ASSERT_TRUE(chart.ok()) << chart.error().describe();
    EXPECT_EQ((*chart)["svg"], kRiskCoverage);
    EXPECT_EQ(ask({{"op", "eval_show"}, {"name", "nope"}}).error().type, ErrorType::kNotFound);
}

TEST_P(EvalRunTest, BadRequestsAreRefusedNamingTheField) {
    const auto with = [](const json::json_pointer& at, json value) {
        json body = record_request("run-a");
        body[at] = std::move(value);
        return body;
    };
    expect_invalid({{"op", "eval_record"}}, "\"eval_run\"");
    expect_invalid(with("/eval_run/name"_json_pointer, "a/b"), "eval_run.name");
    expect_invalid(with("/eval_run/name"_json_pointer, ".."), "eval_run.name");
    expect_invalid(with("/eval_run/name"_json_pointer, ""), "eval_run.name");
    expect_invalid(with("/eval_run/name"_json_pointer, std::string(300, 'x')), "eval_run.name");
    expect_invalid(with("/eval_run/set"_json_pointer, "line\nbreak"), "eval_run.set");
    expect_invalid(with("/eval_run/engine"_json_pointer, 7), "eval_run.engine");
    expect_invalid(with("/eval_run/started"_json_pointer, "yesterday"), "eval_run.started");
    expect_invalid(with("/eval_run/summary"_json_pointer, json::array()), "eval_run.summary");
    expect_invalid(with("/eval_run/summary/questions"_json_pointer, -1), "summary.questions");
    expect_invalid(with("/eval_run/summary/hits1"_json_pointer, 1.5), "summary.hits1");
    expect_invalid(with("/eval_run/summary/ece"_json_pointer, "low"), "summary.ece");
    expect_invalid(with("/eval_run/rows"_json_pointer, json::array({1})), "eval_run.rows");
    expect_invalid(with("/eval_run/rows"_json_pointer, json::array({{{"id", "q"}, {"trace", 1}}})),
                   "\"trace\"");
    json many = json::array();
    for (std::size_t i = 0; i <= kMaxEvalRunRows; ++i) many.push_back({{"id", "q"}});
    expect_invalid(with("/eval_run/rows"_json_pointer, many), "eval_run.rows");
    // Charts: SVG, and nothing in them that runs.
    expect_invalid(with("/reliability_svg"_json_pointer, nullptr), "\"reliability_svg\"");
    expect_invalid(with("/reliability_svg"_json_pointer, "<html></html>"), "an SVG document");
    expect_invalid(with("/risk_coverage_svg"_json_pointer, "<svg><SCRIPT>alert(1)</SCRIPT></svg>"),
                   "must not hold scripts");
    expect_invalid(
        with("/risk_coverage_svg"_json_pointer, "<svg><a href=\"JavaScript:alert(1)\">x</a></svg>"),
        "must not hold scripts");
    expect_invalid(
        with("/reliability_svg"_json_pointer, "<svg><rect onclick =\"alert(1)\"/></svg>"),
        "event attributes");
    expect_invalid(with("/reliability_svg"_json_pointer,
                        "<svg>" + std::string(kMaxEvalChartBytes, ' ') + "</svg>"),
                   "\"reliability_svg\"");
    // Reads.
    expect_invalid({{"op", "eval_list"}, {"limit", 0}}, "\"limit\"");
    expect_invalid({{"op", "eval_list"}, {"limit", kMaxEvalListLimit + 1}}, "\"limit\"");
    expect_invalid({{"op", "eval_list"}, {"offset", -1}}, "\"offset\"");
    expect_invalid({{"op", "eval_show"}}, "\"name\"");
    expect_invalid({{"op", "eval_chart"}, {"name", "run-a"}, {"chart", "pie"}}, "\"chart\"");
    EXPECT_EQ(listed()["total"], 0) << "nothing was stored";
}

}  // namespace
}  // namespace glassbox::trace::testing
