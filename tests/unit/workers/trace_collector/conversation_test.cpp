// Conversations in the trace store: turns indexed from ended top-level runs with
// gb:conversation, the bounds, forget, the v1 → v2 migration and the service's ops.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "base/time_format.hpp"
#include "base/utf8.hpp"
#include "schema/messages_trace.hpp"
#include "storage/sqlite_database.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "tests/support/wait_until.hpp"
#include "tests/unit/workers/trace_collector/schema3_store.hpp"
#include "workers/trace_collector/trace_service.hpp"

namespace glassbox::trace::testing {
namespace {

using base::ErrorType;
using nlohmann::json;
using schema::TraceStatus;

constexpr std::int64_t kT0 = 1'790'000'000'000;

FakeRun turn_run(const std::string& conversation, const std::string& question,
                 std::int64_t started_ms, std::optional<std::string> parent = std::nullopt) {
    auto run = FakeRun::make("graph-rag", question, started_ms, std::move(parent));
    run.conversation = conversation;
    return run;
}

// A run's end whose Synthesis states a short answer (gb:shortAnswer), as the RAG workers write.
schema::ExplainMessage end_with_short_answer(const FakeRun& run, const std::string& answer,
                                             const std::string& short_answer) {
    auto m = run.end(TraceStatus::kComplete, answer);
    explain::StepInfo step;
    step.generated_at = at(run.started_ms + 10);
    m.explain_triples =
        explain::synthesis(run.uris, step, explain::StoredText{answer, std::nullopt}, {},
                           explain::ShortAnswer{short_answer, {}});
    const auto tail = explain::trace_end(run.uris, at(run.started_ms + 12), TraceStatus::kComplete);
    m.explain_triples.insert(m.explain_triples.end(), tail.begin(), tail.end());
    return m;
}

class ConversationTest : public StoreTest {
protected:
    json turns(const std::string& conversation, std::int64_t limit = 10) {
        auto r = store_->turns(conversation, limit);
        EXPECT_TRUE(r.ok()) << r.error().describe();
        auto typed = schema::decode<schema::ConversationTurns>(r.ok() ? *r : json::object());
        EXPECT_TRUE(typed.ok()) << (r.ok() ? r->dump() : "");
        return r.ok() ? (*r)["turns"] : json::array();
    }
    std::vector<std::string> questions(const std::string& conversation, std::int64_t limit = 100) {
        std::vector<std::string> out;
        for (const auto& t : turns(conversation, limit))
            out.push_back(t["question"].get<std::string>());
        return out;
    }
};

GLASSBOX_TRACE_BACKENDS(ConversationTest);

TEST_P(ConversationTest, AnEndedTopLevelRunWithAConversationIsATurn) {
    const auto first = turn_run("chat-1", "Who wrote Dune?", kT0);
    const auto sub = turn_run("chat-1", "a sub-question", kT0 + 1, first.uris.analysis(0));
    auto plain = FakeRun::make("graph-rag", "no conversation", kT0 + 2);
    store({first.open(), sub.open(), sub.end(), plain.open(), plain.end()}, kT0 + 5);
    // Running: not a turn yet. A sub-run and a run without a conversation never are.
    EXPECT_TRUE(turns("chat-1").empty());

    store({end_with_short_answer(first, "Frank Herbert wrote Dune.", "Frank Herbert")}, kT0 + 20);
    const auto t = turns("chat-1");
    ASSERT_EQ(t.size(), 1u) << t.dump();
    EXPECT_EQ(t[0]["question"], "Who wrote Dune?");
    EXPECT_EQ(t[0]["answer"], "Frank Herbert wrote Dune.");
    EXPECT_EQ(t[0]["short_answer"], "Frank Herbert");
    EXPECT_EQ(t[0]["trace"], first.uris.uuid());
    EXPECT_EQ(t[0]["started"], base::format_xsd_datetime_ms(kT0));
    EXPECT_EQ(t[0]["status"], "complete");

    // A second terminal delivery (redelivered) adds nothing; an error run is a turn too.
    store({end_with_short_answer(first, "Frank Herbert wrote Dune.", "Frank Herbert")}, kT0 + 30);
    const auto failed = turn_run("chat-1", "And when?", kT0 + 100);
    store({failed.open(), failed.end(TraceStatus::kError, "")}, kT0 + 120);
    const auto both = turns("chat-1");
    ASSERT_EQ(both.size(), 2u);
    EXPECT_EQ(both[1]["status"], "error");
    EXPECT_TRUE(both[0]["short_answer"].is_string());
    EXPECT_TRUE(both[1]["short_answer"].is_null()) << "echo's synthesis states no short answer";
    EXPECT_TRUE(turns("unknown").empty());

    // The end stored before the Question that names the conversation: a turn once both are in.
    const auto reordered = turn_run("chat-1", "Out of order?", kT0 + 200);
    store({reordered.end()}, kT0 + 220);
    EXPECT_EQ(turns("chat-1").size(), 2u);
    store({reordered.open()}, kT0 + 230);
    EXPECT_EQ(turns("chat-1").size(), 3u);
}

TEST_P(ConversationTest, TheLastNTurnsOldestFirstAndConversationsMostRecentFirst) {
    std::vector<schema::ExplainMessage> batch;
    for (int i = 0; i < 5; ++i) {
        const auto run = turn_run("a", "q" + std::to_string(i), kT0 + i * 1000);
        batch.push_back(run.open());
        batch.push_back(run.end());
    }
    const auto other = turn_run("b", "elsewhere", kT0 + 2500);
    batch.push_back(other.open());
    batch.push_back(other.end());
    store(batch, kT0 + 9000);
    EXPECT_EQ(questions("a", 3), (std::vector<std::string>{"q2", "q3", "q4"}));
    EXPECT_EQ(questions("a"), (std::vector<std::string>{"q0", "q1", "q2", "q3", "q4"}));

    auto listed = store_->conversations(10);
    ASSERT_TRUE(listed.ok());
    ASSERT_TRUE(schema::decode<schema::ConversationList>(*listed).ok()) << listed->dump();
    const auto& sessions = (*listed)["sessions"];
    ASSERT_EQ(sessions.size(), 2u);
    EXPECT_EQ(sessions[0]["session_id"], "a");
    EXPECT_EQ(sessions[0]["turns"], 5);
    EXPECT_EQ(sessions[0]["started"], base::format_xsd_datetime_ms(kT0));
    EXPECT_EQ(sessions[0]["last"], base::format_xsd_datetime_ms(kT0 + 4000));
    EXPECT_EQ(sessions[1]["session_id"], "b");
    auto one = store_->conversations(1);
    ASSERT_TRUE(one.ok());
    EXPECT_EQ((*one)["sessions"].size(), 1u);
}

TEST_P(ConversationTest, AtMostMaxTurnsAreKeptTheOldestDropped) {
    std::vector<schema::ExplainMessage> batch;
    for (int i = 0; i < 70; ++i) {
        const auto run = turn_run("long", "q" + std::to_string(i), kT0 + i);
        batch.push_back(run.open());
        batch.push_back(run.end());
    }
    // Two batches: the bound holds across commits, not only within one.
    store(std::vector(batch.begin(), batch.begin() + 100), kT0 + 1000);
    store(std::vector(batch.begin() + 100, batch.end()), kT0 + 2000);
    const auto kept = questions("long");
    ASSERT_EQ(kept.size(), 64u);
    EXPECT_EQ(kept.front(), "q6");
    EXPECT_EQ(kept.back(), "q69");
    auto listed = store_->conversations(10);
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ((*listed)["sessions"][0]["turns"], 64);
    EXPECT_EQ((*listed)["sessions"][0]["started"], base::format_xsd_datetime_ms(kT0 + 6));
}

TEST_P(ConversationTest, AtMostMaxBytesOfTurnTextAndOneTurnIsCutToItsBudget) {
    config_.conversation_max_bytes = 1000;
    config_.turn_max_bytes = 400;
    TearDown();
    SetUp();
    // Each turn: question "qN" (2 bytes) + a 198-byte answer = 200 bytes: five fit in 1000.
    std::vector<schema::ExplainMessage> batch;
    for (int i = 0; i < 8; ++i) {
        const auto run = turn_run("c", "q" + std::to_string(i), kT0 + i);
        batch.push_back(run.open());
        batch.push_back(run.end(TraceStatus::kComplete, std::string(198, 'a')));
    }
    store(batch, kT0 + 100);
    EXPECT_EQ(questions("c"), (std::vector<std::string>{"q3", "q4", "q5", "q6", "q7"}));

    // An answer longer than the turn's budget (and than the store's text threshold, so kept in
    // `texts`) is cut there, on a UTF-8 boundary, marked with "…"; the turns before it that no
    // longer fit are dropped.
    std::string long_answer;
    for (int i = 0; i < 300; ++i) long_answer += "é";  // 600 bytes
    const auto big = turn_run("c", "big?", kT0 + 50);
    store({big.open(), big.end(TraceStatus::kComplete, long_answer)}, kT0 + 200);
    const auto t = turns("c", 100);
    ASSERT_FALSE(t.empty());
    const std::string cut = t.back()["answer"].get<std::string>();
    EXPECT_LE(cut.size() + 4, 400u);
    EXPECT_EQ(cut.substr(cut.size() - 3), "…");
    EXPECT_EQ(cut.substr(0, 4), "éé");
    EXPECT_FALSE(base::find_invalid_utf8(cut).has_value());
    std::size_t total = 0;
    for (const auto& turn : t)
        total +=
            turn["question"].get<std::string>().size() + turn["answer"].get<std::string>().size();
    EXPECT_LE(total, 1000u);
    EXPECT_EQ(t.size(), 4u) << t.dump();  // 400 + 3 × 200
}

TEST_P(ConversationTest, ForgetDeletesTheTurnsAndKeepsTheTraces) {
    const auto run = turn_run("secret", "What did I ask?", kT0);
    const auto other = turn_run("kept", "Still here?", kT0 + 1);
    store({run.open(), run.end(), other.open(), other.end()}, kT0 + 10);
    auto gone = store_->forget("secret");
    ASSERT_TRUE(gone.ok()) << gone.error().describe();
    EXPECT_EQ(*gone, (json{{"session_id", "secret"}, {"deleted", 1}}));
    EXPECT_TRUE(turns("secret").empty());
    auto listed = store_->conversations(10);
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ((*listed)["sessions"].size(), 1u);
    EXPECT_EQ((*listed)["sessions"][0]["session_id"], "kept");
    EXPECT_TRUE(store_->show(run.session(), at(kT0 + 20)).ok()) << "the run's trace stays";
    auto again = store_->forget("secret");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)["deleted"], 0);
}

TEST_P(ConversationTest, AVersion1StoreIsMigratedOnOpen) {
    if (on_postgres()) GTEST_SKIP() << "SQLite's migrations (PostgreSQL stores start at 4)";
    const auto before = FakeRun::make("echo", "stored by version 1", kT0);
    store({before.open(), before.end()}, kT0 + 10);
    store_.reset();
    downgrade_to_schema3(dir_ / "traces.db");
    {
        // Back to the version 1 schema: no conversation column, no conversation tables.
        storage::OpenOptions options;
        auto db = storage::Database::open(dir_ / "traces.db", options);
        ASSERT_TRUE(db.ok()) << db.error().describe();
        ASSERT_TRUE((*db)
                        ->exec("DROP TABLE turns; DROP TABLE conversations; DROP INDEX "
                               "sessions_top_collection; "
                               "ALTER TABLE sessions DROP COLUMN conversation; "
                               "ALTER TABLE sessions DROP COLUMN collection; "
                               "ALTER TABLE sessions DROP COLUMN tokens_in; "
                               "ALTER TABLE sessions DROP COLUMN tokens_out; "
                               "UPDATE meta SET value = '1' WHERE key = 'schema';")
                        .ok());
    }
    auto read_only = TraceStore::open(dir_ / "traces.db", OpenMode::kReadOnly, config_);
    ASSERT_FALSE(read_only.ok()) << "a reader does not migrate";
    auto opened = TraceStore::open(dir_ / "traces.db", OpenMode::kReadWrite, config_);
    ASSERT_TRUE(opened.ok()) << opened.error().describe();
    store_ = std::move(opened).value();
    EXPECT_TRUE(store_->show(before.session(), at(kT0 + 20)).ok());
    const auto after = turn_run("new", "asked after the upgrade", kT0 + 100);
    store({after.open(), after.end()}, kT0 + 110);
    EXPECT_EQ(questions("new"), (std::vector<std::string>{"asked after the upgrade"}));
}

class ConversationServiceTest : public ConversationTest {
protected:
    base::Result<json> ask(const json& body) {
        return answer_trace_request(*store_, body, [](const json&) { return true; });
    }
};

GLASSBOX_TRACE_BACKENDS(ConversationServiceTest);

TEST_P(ConversationServiceTest, OpsAndTheirChecks) {
    for (int i = 0; i < 12; ++i) {
        const auto run = turn_run("s1", "q" + std::to_string(i), kT0 + i);
        store({run.open(), run.end()}, kT0 + 100 + i);
    }
    auto t = ask({{"op", "turns"}, {"session_id", "s1"}});
    ASSERT_TRUE(t.ok()) << t.error().describe();
    EXPECT_EQ((*t)["session_id"], "s1");
    ASSERT_EQ((*t)["turns"].size(), 10u) << "default limit";
    EXPECT_EQ((*t)["turns"][0]["question"], "q2");
    auto unknown = ask({{"op", "turns"}, {"session_id", "nobody"}, {"limit", 5}});
    ASSERT_TRUE(unknown.ok());
    EXPECT_TRUE((*unknown)["turns"].empty());
    auto listed = ask({{"op", "conversations"}});
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ((*listed)["sessions"][0]["turns"], 12);

    for (const json& bad :
         {json{{"op", "turns"}}, json{{"op", "turns"}, {"session_id", ""}},
          json{{"op", "turns"}, {"session_id", 7}},
          json{{"op", "turns"}, {"session_id", std::string(257, 'x')}},
          json{{"op", "turns"}, {"session_id", "s1"}, {"limit", 101}},
          json{{"op", "turns"}, {"session_id", "s1"}, {"limit", 0}},
          json{{"op", "conversations"}, {"limit", "ten"}}, json{{"op", "forget"}}}) {
        auto r = ask(bad);
        ASSERT_FALSE(r.ok()) << bad.dump();
        EXPECT_EQ(r.error().type, ErrorType::kInvalidRequest) << bad.dump();
    }
    auto gone = ask({{"op", "forget"}, {"session_id", "s1"}});
    ASSERT_TRUE(gone.ok()) << gone.error().describe();
    EXPECT_EQ((*gone)["deleted"], 12);
}

// Issue 31: the previous turn's answer can reach the asker before its trace reaches the store.
// `settle_ms` waits for the conversation's running runs, but never for the asker's own.
TEST_P(ConversationServiceTest, TurnsSettleWaitsForTheConversationsRunningRunButNotTheAskers) {
    const auto previous = turn_run("s2", "Who designed Greyhollow Light?", kT0);
    const auto asker = turn_run("s2", "What else did she design?", kT0 + 50);
    store({previous.open(), asker.open()}, kT0 + 51);
    auto reader = site_->open(OpenMode::kReadOnly, config_);
    ASSERT_TRUE(reader.ok()) << reader.error().describe();
    // The previous run ends once the request is settling: the collector's counters are read
    // only there (they say nothing is in flight), so the end comes while it waits.
    std::atomic<bool> settling{false};
    std::thread ender([&] {
        (void)glassbox::test_support::wait_until([&] { return settling.load(); });
        store({end_with_short_answer(previous, "Ilse Varrow designed Greyhollow Light.",
                                     "Ilse Varrow")},
              kT0 + 200);
    });
    auto settled = answer_trace_request(
        **reader,
        {{"op", "turns"},
         {"session_id", "s2"},
         {"limit", 1},
         {"settle_ms", schema::kMaxTurnsSettleMs},
         {"current", asker.uris.uuid()}},
        [](const json&) { return true; },
        [&settling] {
            settling = true;
            return schema::TraceCollectorStats{};
        });
    ender.join();
    ASSERT_TRUE(settled.ok()) << settled.error().describe();
    ASSERT_EQ((*settled)["turns"].size(), 1u)
        << "the turn that was running when asked: " << settled->dump();
    EXPECT_EQ((*settled)["turns"][0]["short_answer"], "Ilse Varrow");
    // Without settle_ms nothing is waited for.
    auto now = ask({{"op", "turns"}, {"session_id", "s3"}});
    ASSERT_TRUE(now.ok());
    EXPECT_TRUE((*now)["turns"].empty());
    for (const json& bad :
         {json{{"op", "turns"}, {"session_id", "s2"}, {"settle_ms", schema::kMaxTurnsSettleMs + 1}},
          json{{"op", "turns"}, {"session_id", "s2"}, {"settle_ms", -1}},
          json{{"op", "turns"}, {"session_id", "s2"}, {"settle_ms", 10}, {"current", 3}},
          json{{"op", "turns"}, {"session_id", "s2"}, {"strict", "yes"}}}) {
        auto r = ask(bad);
        ASSERT_FALSE(r.ok()) << bad.dump();
        EXPECT_EQ(r.error().type, ErrorType::kInvalidRequest) << bad.dump();
    }
}

// `strict`: a person asked for a conversation by its id, and a typo is NotFound naming the
// nearest, not an empty conversation.
TEST_P(ConversationServiceTest, AStrictTurnsOfAnUnknownConversationIsNotFoundWithTheNearest) {
    const auto run = turn_run("chat-1a2b", "q", kT0);
    store({run.open(), run.end()}, kT0 + 10);
    auto known = ask({{"op", "turns"}, {"session_id", "chat-1a2b"}, {"strict", true}});
    ASSERT_TRUE(known.ok()) << known.error().describe();
    EXPECT_EQ((*known)["turns"].size(), 1u);
    auto typo = ask({{"op", "turns"}, {"session_id", "chat-1a2c"}, {"strict", true}});
    ASSERT_FALSE(typo.ok());
    EXPECT_EQ(typo.error().type, ErrorType::kNotFound);
    EXPECT_NE(typo.error().message.find("did you mean chat-1a2b?"), std::string::npos)
        << typo.error().message;
}

}  // namespace
}  // namespace glassbox::trace::testing
