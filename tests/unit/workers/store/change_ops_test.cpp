// The store service's knowledge-change ops through a real worker: a forget or a replacing commit
// answers its change and sends the change's trace (the store run's explain messages, the last one
// ending it complete) before the reply; a bad body or an unknown source is a typed error with no
// trace, and the worker keeps serving.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "schema/messages.hpp"
#include "schema/vocabulary.hpp"
#include "tests/unit/workers/store/store_worker_fixture.hpp"
#include "workers/store/change_ops.hpp"

namespace glassbox::store {
namespace {

using nlohmann::json;
namespace cmd = schema::protocol::worker_cmd;

constexpr const char* kNquads =
    "<http://example.org/a> <http://example.org/p> \"1\" .\n"
    "<http://example.org/b> <http://example.org/p> \"2\" .\n";

class ChangeOpsTest : public testing::StoreWorkerFixture {
protected:
    void SetUp() override { start_store("gb-store-change"); }

    // Sends `body`; the explain messages that came before the terminal go to `explains`.
    runtime::testing::WorkerMessage call(const json& body, char terminal,
                                         std::vector<schema::ExplainMessage>* explains = nullptr) {
        const std::string token = "t" + std::to_string(++requests_);
        broker.skipped.clear();
        broker.answers_heartbeats = true;
        broker.send_request(identity_, token, body.dump(), token, 10'000, "store");
        auto message = broker.expect(terminal, std::chrono::milliseconds{10'000});
        EXPECT_TRUE(message) << body.dump();
        for (const auto& passed : broker.skipped) {
            if (passed.command() != cmd::kExplain) continue;
            auto decoded = schema::decode<schema::ExplainMessage>(json::parse(passed.frames[8]));
            EXPECT_TRUE(decoded) << decoded.error().describe();
            if (explains && decoded) explains->push_back(std::move(*decoded));
        }
        if (!message) return {};
        return std::move(*message);
    }

    void load(const std::string& source, const std::string& nquads) {
        const auto reply = call(json{{"op", "load-triples"},
                                     {"collection", "kb"},
                                     {"source", {{"uri", source}}},
                                     {"nquads", nquads}},
                                cmd::kReply);
        ASSERT_GE(reply.frames.size(), 6u);
    }

    int requests_ = 0;
};

TEST_F(ChangeOpsTest, ForgetSourceAnswersItsChangeAfterTheChangesTrace) {
    load("file:///data/a.nt", kNquads);
    std::vector<schema::ExplainMessage> trace;
    const auto reply = call(json{{"op", kOpForgetSource},
                                 {"collection", "kb"},
                                 {"source", "file:///data/a.nt"},
                                 {"actor", "ada"}},
                            cmd::kReply, &trace);
    ASSERT_GE(reply.frames.size(), 6u);
    auto change = schema::decode<schema::KnowledgeChangeSummary>(json::parse(reply.frames[5]));
    ASSERT_TRUE(change) << change.error().describe();
    EXPECT_EQ(change->kind, "forget-source");
    EXPECT_EQ(change->facts_removed, 2u);
    EXPECT_EQ(change->collection, "kb");
    EXPECT_EQ(change->removed_sources, std::vector<std::string>{"file:///data/a.nt"});
    ASSERT_FALSE(trace.empty());
    EXPECT_EQ(trace.front().session, change->trace);
    EXPECT_EQ(trace.front().service, "store");
    for (std::size_t i = 0; i + 1 < trace.size(); ++i) EXPECT_FALSE(trace[i].end_of_trace);
    EXPECT_TRUE(trace.back().end_of_trace);
    EXPECT_EQ(trace.back().trace_status, schema::TraceStatus::kComplete);
    std::size_t removed = 0;
    for (const auto& message : trace) {
        for (const auto& t : message.explain_triples) {
            if (t.p == schema::iri(std::string(schema::vocab::kRemovedFact))) ++removed;
        }
    }
    EXPECT_EQ(removed, 2u);

    // Gone now: NotFound, and no trace for it.
    std::vector<schema::ExplainMessage> none;
    const auto again =
        call(json{{"op", kOpForgetSource}, {"collection", "kb"}, {"source", "file:///data/a.nt"}},
             cmd::kError, &none);
    ASSERT_GE(again.frames.size(), 6u);
    EXPECT_EQ(again.frames[5], "NotFound");
    EXPECT_TRUE(none.empty());
}

TEST_F(ChangeOpsTest, BadBodiesAreTypedErrorsAndTheWorkerKeepsServing) {
    load("file:///data/a.nt", kNquads);
    for (const json& bad :
         {json{{"op", kOpForgetSource}, {"collection", "kb"}},
          json{{"op", kOpForgetDocument}, {"collection", "kb"}, {"source", "x"}},
          json{{"op", kOpForgetFact}, {"collection", "kb"}},
          json{{"op", kOpForgetFact}, {"collection", "kb"}, {"fact", "not a triple"}},
          json{{"op", kOpForgetSource}, {"collection", "kb"}, {"source", 3}},
          json{{"op", "load-commit"}, {"collection", "kb"}, {"load", "l1"}, {"replace", "yes"}}}) {
        const auto error = call(bad, cmd::kError);
        ASSERT_GE(error.frames.size(), 6u) << bad.dump();
        EXPECT_TRUE(error.frames[5] == "InvalidRequest" || error.frames[5] == "DecodeError")
            << bad.dump() << ": " << error.frames[5];
    }
    const auto unknown_collection =
        call(json{{"op", kOpForgetSource}, {"collection", "nope"}, {"source", "file:///x"}},
             cmd::kError);
    EXPECT_EQ(unknown_collection.frames[5], "NotFound");
    // Still serving, and nothing was removed.
    const auto stats = call(json{{"op", "stats"}, {"collection", "kb"}}, cmd::kReply);
    EXPECT_EQ(json::parse(stats.frames[5]).value("quads", 0), 2);
}

TEST_F(ChangeOpsTest, AReplacingCommitAnswersTheChangeWithTheLoadsCounts) {
    load("file:///data/a.nt", kNquads);
    const json source{{"uri", "file:///data/a.nt"}};
    call(json{{"op", "load-triples"},
              {"collection", "kb"},
              {"load", "l2"},
              {"source", source},
              {"nquads",
               "<http://example.org/a> <http://example.org/p> \"1\" .\n"
               "<http://example.org/c> <http://example.org/p> \"3\" .\n"}},
         cmd::kReply);
    std::vector<schema::ExplainMessage> trace;
    const auto reply =
        call(json{{"op", "load-commit"}, {"collection", "kb"}, {"load", "l2"}, {"replace", true}},
             cmd::kReply, &trace);
    const json body = json::parse(reply.frames[5]);
    EXPECT_EQ(body.value("added", 0), 1);
    EXPECT_EQ(body.value("present", 0), 1);
    auto change = schema::decode<schema::KnowledgeChangeSummary>(body["change"]);
    ASSERT_TRUE(change) << change.error().describe();
    EXPECT_EQ(change->kind, "replace");
    EXPECT_EQ(change->facts_added, 1u);
    EXPECT_EQ(change->facts_removed, 1u);
    EXPECT_EQ(change->facts_unchanged, 1u);
    ASSERT_EQ(change->sources.size(), 1u);
    EXPECT_EQ(change->sources[0].source, "file:///data/a.nt");
    ASSERT_FALSE(trace.empty());
    EXPECT_EQ(trace.front().session, change->trace);
    EXPECT_TRUE(trace.back().end_of_trace);
}

}  // namespace
}  // namespace glassbox::store
