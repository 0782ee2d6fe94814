// Evaluations on traces (docs/evaluation.md, "Evaluations on traces"): attached to a run, listed
// with `evaluated`, shown, kept to the newest, deleted with their trace on prune, the 6 → 7
// migration, and the `evaluate` op with its checks and its wait for a trace still to come.
#include <gtest/gtest.h>

#include <thread>

#include "schema/messages_trace.hpp"
#include "storage/pg_connection.hpp"
#include "storage/sqlite_database.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "workers/trace_collector/trace_service.hpp"

namespace glassbox::trace::testing {
namespace {

using base::ErrorType;
using nlohmann::json;
using schema::TraceEvaluation;

constexpr std::int64_t kT0 = 1'790'000'000'000;  // 2026-09-21, epoch ms
constexpr std::int64_t kHour = 3'600'000;
constexpr std::int64_t kNow = kT0 + 48 * kHour;

TraceEvaluation scored(const std::string& run, bool correct, double f1) {
    return TraceEvaluation{
        run, "capitals", "q-" + run, {"Paris", "paris, france"}, correct, correct, f1, f1, 0.8, ""};
}

class EvaluationTest : public StoreTest {
protected:
    FakeRun complete(const std::string& service, const std::string& question,
                     std::int64_t started) {
        auto run = FakeRun::make(service, question, started);
        store({run.open(), run.end()}, started + 10);
        return run;
    }
    json list(ListQuery query) {
        query.limit = 1000;
        auto listed = store_->list(query, at(kNow));
        EXPECT_TRUE(listed.ok()) << listed.error().describe();
        return listed.ok() ? *listed : json::object();
    }
    json evaluated_list() {
        ListQuery query;
        query.evaluated = true;
        return list(query);
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
            EXPECT_TRUE(q.ok()) << q.error().describe();
            if (q) read(*q);
        } else {
            auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
            EXPECT_TRUE(db.ok()) << db.error().describe();
            if (!db) return -1;
            auto q = (*db)->prepare_once(sql);
            EXPECT_TRUE(q.ok()) << q.error().describe();
            if (q) read(*q);
        }
        return n.value_or(-1);
    }
};

GLASSBOX_TRACE_BACKENDS(EvaluationTest);

TEST_P(EvaluationTest, EvaluationsAreListedWithTheirRunsAndShown) {
    const auto paris = complete("graph-rag", "capital of France?", kT0);
    const auto rome = complete("document-rag", "capital of Italy?", kT0 + 1);
    const auto never = complete("graph-rag", "capital of Spain?", kT0 + 2);

    auto first = store_->evaluate(paris.uris.uuid().substr(0, 8), scored("run-1", false, 0.5),
                                  at(kT0 + 100));
    ASSERT_TRUE(first.ok()) << first.error().describe();
    const auto reply = schema::decode<schema::TraceEvaluated>(*first);
    ASSERT_TRUE(reply.ok()) << reply.error().describe();
    EXPECT_EQ(reply->session, paris.session());
    EXPECT_EQ(reply->evaluations, 1);
    EXPECT_EQ(reply->evaluation.evaluated, "2026-09-21T14:13:20.100Z");
    ASSERT_TRUE(store_->evaluate(paris.session(), scored("run-2", true, 1.0), at(kT0 + 200)).ok());
    ASSERT_TRUE(store_->evaluate(rome.session(), scored("run-2", true, 0.75), at(kT0 + 300)).ok());

    const json listed = evaluated_list();
    ASSERT_EQ(listed["sessions"].size(), 2u) << listed.dump();
    EXPECT_EQ(listed["total"], 2);
    const auto typed = schema::decode<schema::TraceSessionList>(listed);
    ASSERT_TRUE(typed.ok()) << typed.error().describe();
    EXPECT_EQ(schema::encode(*typed).dump(), listed.dump()) << "the contract's encoding";
    // Newest first: rome, then paris with both of its evaluations, oldest first.
    EXPECT_EQ(typed->sessions[0].session, rome.session());
    const auto& evaluations = typed->sessions[1].evaluations;
    ASSERT_EQ(evaluations.size(), 2u);
    EXPECT_EQ(evaluations[0].run, "run-1");
    EXPECT_FALSE(evaluations[0].correct);
    EXPECT_EQ(evaluations[0].f1, std::optional(0.5));
    EXPECT_EQ(evaluations[1].run, "run-2");
    EXPECT_TRUE(evaluations[1].correct);
    EXPECT_EQ(evaluations[1].answers, (std::vector<std::string>{"Paris", "paris, france"}));
    EXPECT_EQ(evaluations[1].question_id, std::optional<std::string>("q-run-2"));
    EXPECT_EQ(evaluations[1].confidence, std::optional(0.8));
    EXPECT_EQ(evaluations[1].evaluated, "2026-09-21T14:13:20.200Z");

    // Combined with the other filters; without it every run is listed, the unevaluated with none.
    ListQuery by_kind;
    by_kind.evaluated = true;
    by_kind.kind = "graph-rag";
    const json graph = list(by_kind);
    ASSERT_EQ(graph["sessions"].size(), 1u);
    EXPECT_EQ(graph["sessions"][0]["session"], paris.session());
    ListQuery searched;
    searched.evaluated = true;
    searched.search = "Spain";
    EXPECT_EQ(list(searched)["sessions"].size(), 0u);
    const json all = list(ListQuery{});
    ASSERT_EQ(all["sessions"].size(), 3u);
    EXPECT_EQ(all["sessions"][0]["session"], never.session());
    EXPECT_EQ(all["sessions"][0]["evaluations"], json::array());

    auto shown = store_->show(paris.session(), at(kNow));
    ASSERT_TRUE(shown.ok()) << shown.error().describe();
    EXPECT_EQ((*shown)["session"]["evaluations"], listed["sessions"][1]["evaluations"]);
    EXPECT_EQ((*shown)["session"]["evaluations"].size(), 2u);
}

TEST_P(EvaluationTest, AnUnknownRunIsNotFoundAndOnlyTheNewestEvaluationsAreKept) {
    auto unknown = store_->evaluate("ffffffff", scored("r", true, 1.0), at(kNow));
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().type, ErrorType::kNotFound);
    EXPECT_EQ(count("SELECT COUNT(*) FROM evaluations"), 0);

    const auto run = complete("echo", "again and again", kT0);
    const std::size_t times = schema::kMaxEvaluationsPerRun + 3;
    for (std::size_t i = 0; i < times; ++i) {
        auto r = store_->evaluate(run.session(), scored("run-" + std::to_string(i), true, 1.0),
                                  at(kT0 + 100 + static_cast<std::int64_t>(i)));
        ASSERT_TRUE(r.ok()) << r.error().describe();
        EXPECT_EQ((*r)["evaluations"], std::min<std::size_t>(i + 1, schema::kMaxEvaluationsPerRun));
    }
    const json listed = evaluated_list();
    ASSERT_EQ(listed["sessions"].size(), 1u);
    const json& kept = listed["sessions"][0]["evaluations"];
    ASSERT_EQ(kept.size(), schema::kMaxEvaluationsPerRun);
    EXPECT_EQ(kept.front()["run"], "run-3") << "the three oldest went";
    EXPECT_EQ(kept.back()["run"], "run-" + std::to_string(times - 1));
}

TEST_P(EvaluationTest, EvaluationsGoWithTheirTraceWhenItIsPruned) {
    const auto old_run = complete("echo", "old", kT0);
    const auto new_run = complete("echo", "new", kNow - kHour);
    ASSERT_TRUE(store_->evaluate(old_run.session(), scored("a", true, 1.0), at(kT0 + 100)).ok());
    ASSERT_TRUE(store_->evaluate(old_run.session(), scored("b", false, 0.0), at(kT0 + 200)).ok());
    ASSERT_TRUE(store_->evaluate(new_run.session(), scored("b", true, 1.0), at(kNow)).ok());
    ASSERT_EQ(count("SELECT COUNT(*) FROM evaluations"), 3);

    PruneRequest request;
    request.older_than = milliseconds{24 * kHour};
    request.now = at(kNow);
    auto pruned = store_->prune(request);
    ASSERT_TRUE(pruned.ok()) << pruned.error().describe();
    EXPECT_EQ(pruned->traces, 1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM evaluations"), 1) << "the old trace's went with it";
    const json listed = evaluated_list();
    ASSERT_EQ(listed["sessions"].size(), 1u);
    EXPECT_EQ(listed["sessions"][0]["session"], new_run.session());
    // A run stored after the prune has none of the pruned trace's evaluations.
    const auto later = complete("echo", "later", kNow - 10);
    auto shown = store_->show(later.session(), at(kNow));
    ASSERT_TRUE(shown.ok());
    EXPECT_EQ((*shown)["session"]["evaluations"], json::array());
}

TEST_P(EvaluationTest, AVersion6StoreIsMigratedOnOpen) {
    const auto run = complete("echo", "stored by version 6", kT0);
    store_.reset();
    const std::string downgrade_sql =
        "DROP TABLE evaluations; UPDATE meta SET value = '6' WHERE key = 'schema'";
    downgrade(downgrade_sql);
    auto read_only = site_->open(OpenMode::kReadOnly, config_);
    ASSERT_FALSE(read_only.ok()) << "a reader does not migrate";
    EXPECT_NE(read_only.error().message.find("unsupported schema version 6"), std::string::npos)
        << read_only.error().message;
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(store_);
    // 6 → 7 (evaluations), then on to the current version (9: issue 36's usage index, mirror).
    EXPECT_EQ(count("SELECT COUNT(*) FROM meta WHERE key = 'schema' AND value = '11'"), 1);
    ASSERT_TRUE(store_->evaluate(run.session(), scored("after", true, 1.0), at(kNow)).ok());
    EXPECT_EQ(evaluated_list()["sessions"].size(), 1u);
}

class EvaluationServiceTest : public EvaluationTest {
protected:
    base::Result<json> ask(TraceStore& store, const json& body) {
        return answer_trace_request(store, body, [](const json&) { return true; });
    }
    base::Result<json> ask(const json& body) { return ask(*store_, body); }
    void expect_invalid(const json& body, const std::string& says) {
        auto r = ask(body);
        ASSERT_FALSE(r.ok()) << body.dump();
        EXPECT_EQ(r.error().type, ErrorType::kInvalidRequest) << body.dump();
        EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
    }
};

GLASSBOX_TRACE_BACKENDS(EvaluationServiceTest);

json request_for(const std::string& session, json evaluation) {
    return {{"op", "evaluate"}, {"session", session}, {"evaluation", std::move(evaluation)}};
}

TEST_P(EvaluationServiceTest, OpsAndTheirChecks) {
    const auto run = complete("query", "who?", kT0);
    EXPECT_TRUE(is_write_request({{"op", "evaluate"}}));
    const json good{{"run", "20261130T091715Z-set"},
                    {"set", "set"},
                    {"question_id", "7"},
                    {"answers", {"Ilse Varrow"}},
                    {"correct", true},
                    {"hit", true},
                    {"exact_match", 1.0},
                    {"f1", 1.0},
                    {"confidence", nullptr}};
    auto done = ask(request_for(run.uris.uuid().substr(0, 8), good));
    ASSERT_TRUE(done.ok()) << done.error().describe();
    const auto typed = schema::decode<schema::TraceEvaluated>(*done);
    ASSERT_TRUE(typed.ok()) << typed.error().describe();
    EXPECT_EQ(typed->session, run.session());
    EXPECT_EQ(typed->evaluation.run, "20261130T091715Z-set");
    EXPECT_FALSE(typed->evaluation.confidence);
    EXPECT_FALSE(typed->evaluation.evaluated.empty());
    // Only what is required.
    ASSERT_TRUE(
        ask(request_for(run.session(), {{"run", "r2"}, {"set", "s"}, {"correct", false}})).ok());
    auto listed = ask({{"op", "list"}, {"evaluated", true}});
    ASSERT_TRUE(listed.ok()) << listed.error().describe();
    ASSERT_EQ((*listed)["sessions"].size(), 1u);
    EXPECT_EQ((*listed)["sessions"][0]["evaluations"].size(), 2u);
    EXPECT_TRUE((*listed)["sessions"][0]["evaluations"][1]["f1"].is_null());

    auto unknown = ask(request_for("urn:nothing", good));
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().type, ErrorType::kNotFound);
    expect_invalid({{"op", "evaluate"}, {"evaluation", good}}, "evaluate needs \"session\"");
    expect_invalid({{"op", "evaluate"}, {"session", run.session()}}, "\"evaluation\"");
    expect_invalid(request_for(run.session(), "good"), "\"evaluation\"");
    const auto with = [&](const char* key, json value) {
        json e = good;
        if (value.is_discarded()) {
            e.erase(key);
        } else {
            e[key] = std::move(value);
        }
        return request_for(run.session(), e);
    };
    const json missing = json::value_t::discarded;
    expect_invalid(with("run", missing), "\"evaluation.run\"");
    expect_invalid(with("run", ""), "\"evaluation.run\"");
    expect_invalid(with("set", 5), "\"evaluation.set\"");
    expect_invalid(with("set", std::string(300, 's')), "at most 256 bytes");
    expect_invalid(with("question_id", "\xff\xfe"), "\"evaluation.question_id\" must be UTF-8");
    expect_invalid(with("correct", missing), "\"evaluation.correct\" must be true or false");
    expect_invalid(with("hit", "yes"), "\"evaluation.hit\"");
    expect_invalid(with("f1", 1.5), "\"evaluation.f1\" must be a number from 0 to 1");
    expect_invalid(with("exact_match", -0.1), "\"evaluation.exact_match\"");
    expect_invalid(with("confidence", "high"), "\"evaluation.confidence\"");
    expect_invalid(with("answers", "Paris"), "\"evaluation.answers\"");
    expect_invalid(with("answers", json::array({1})), "\"evaluation.answers\"");
    expect_invalid(with("answers", json(std::vector<std::string>(101, "a"))),
                   "\"evaluation.answers\"");
    expect_invalid({{"op", "list"}, {"evaluated", "yes"}}, "\"evaluated\" must be true or false");
    json unsettled = request_for(run.session(), good);
    unsettled["settle_ms"] = -1;
    expect_invalid(unsettled, "settle_ms");
    expect_invalid({{"op", "evaluates"}}, "evaluate");
}

// A run answers its asker before its trace is stored: with settle_ms the op waits for the trace
// to be stored (here by another writer, as the collector would), without it the run is not found.
TEST_P(EvaluationServiceTest, SettleWaitsForATraceStillToBeStored) {
    const auto run = FakeRun::make("query", "answered before it was stored", kT0);
    auto at_once = ask(request_for(run.session(), {{"run", "r"}, {"set", "s"}, {"correct", true}}));
    ASSERT_FALSE(at_once.ok());
    EXPECT_EQ(at_once.error().type, ErrorType::kNotFound);

    auto evaluator = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(evaluator);
    base::Result<json> waited = base::make_error(ErrorType::kInternal, "not asked");
    std::thread thread([&] {
        json request = request_for(run.session(), {{"run", "r"}, {"set", "s"}, {"correct", true}});
        request["settle_ms"] = schema::kMaxTurnsSettleMs;
        waited = ask(*evaluator, request);
    });
    store({run.open(), run.end()}, kT0 + 10);
    thread.join();
    ASSERT_TRUE(waited.ok()) << waited.error().describe();
    EXPECT_EQ((*waited)["session"], run.session());
    EXPECT_EQ(evaluated_list()["sessions"].size(), 1u);
}

}  // namespace
}  // namespace glassbox::trace::testing
