// Two engines' short answers compared after an escalation (workers/query/engine_disagreement.hpp):
// which pairs are a conflict, and what the router's FINAL gets for one.
#include "workers/query/engine_disagreement.hpp"

#include <gtest/gtest.h>

namespace glassbox::query {
namespace {

using nlohmann::json;

EngineRun run_of(const std::string& engine, std::optional<std::string> answer,
                 const std::string& source) {
    EngineRun run;
    run.engine = engine;
    run.last_step = "urn:" + engine + ":conclusion";
    run.evidence.short_answer = std::move(answer);
    run.final = {
        {"response", "The answer."},
        {"citations",
         {{{"n", 1}, {"kind", "chunk"}, {"chunk", source}, {"selection", "urn:" + engine}}}},
        {"confidence", 0.8},
        {"evidence", json::array()}};
    return run;
}

TEST(EngineConflictsTest, OnlyAnotherEnginesDisagreeingShortAnswerIsAConflict) {
    std::vector<EngineRun> runs = {run_of("graph-rag", "Ilse Varrow", "urn:a"),
                                   run_of("agent", "Varrow", "urn:b"),
                                   run_of("document-rag", "Tomas Heddle", "urn:c")};
    const auto found = engine_conflicts(runs, 0);
    ASSERT_EQ(found.size(), 1u) << "'Varrow' is the same name, shorter";
    EXPECT_EQ(found[0].rival_engine, "document-rag");
    EXPECT_EQ(found[0].conflict.stated, "Ilse Varrow");
    EXPECT_EQ(found[0].conflict.rival, "Tomas Heddle");
    EXPECT_EQ(found[0].conflict.stated_selection, "urn:graph-rag");
    EXPECT_EQ(found[0].conflict.rival_sources, std::vector<std::string>{"urn:c"});

    runs[2].error = base::make_error(base::ErrorType::kTimeout, "late");
    EXPECT_TRUE(engine_conflicts(runs, 0).empty()) << "a failed run gives no answer";
    runs[2].error.reset();
    runs[0].evidence.short_answer.reset();
    EXPECT_TRUE(engine_conflicts(runs, 0).empty()) << "the winner stated no short answer";
    EXPECT_TRUE(engine_conflicts({run_of("graph-rag", "1879", "urn:a")}, 0).empty())
        << "one engine: nothing to compare";
}

TEST(EngineConflictsTest, TwoRivalsGivingOneValueAreOneDispute) {
    const std::vector<EngineRun> runs = {run_of("graph-rag", "1879", "urn:a"),
                                         run_of("agent", "1881", "urn:b"),
                                         run_of("document-rag", "in 1881", "urn:c")};
    EXPECT_EQ(engine_conflicts(runs, 0).size(), 1u);
}

TEST(AddEngineConflictsTest, ADisputeTheWinnerReportedItselfIsNotSaidTwice) {
    const std::vector<EngineRun> runs = {run_of("agent", "1879", "urn:a"),
                                         run_of("document-rag", "1881", "urn:b")};
    json body = runs[0].final;
    body["conflicts"] = {{{"stated", "1879"}, {"rival", "1881"}, {"stated_sources", {"urn:a"}}}};
    const auto confidence = add_engine_conflicts(body, engine_conflicts(runs, 0));
    ASSERT_TRUE(confidence);
    EXPECT_EQ(confidence->probability, 0.8) << "not lowered again";
    EXPECT_EQ(body["response"], "The answer.");
    EXPECT_EQ(body["citations"].size(), 1u);

    json fresh = runs[0].final;
    const auto lowered = add_engine_conflicts(fresh, engine_conflicts(runs, 0));
    ASSERT_TRUE(lowered && lowered->probability);
    EXPECT_NEAR(*lowered->probability, 0.4, 1e-12);
    EXPECT_EQ(fresh["response"],
              "The answer.\n\nThe engines disagree: agent gives 1879 [1]; document-rag gives 1881 "
              "[2].");
    EXPECT_EQ(fresh["citations"][1]["chunk"], "urn:b");
    EXPECT_EQ(fresh["conflicts"].size(), 1u);
}

// With each engine's own confidence known, the stated value keeps its share of the two: a weak
// rival (an answer escalated past) lowers it little, an equally sure one halves it.
TEST(AddEngineConflictsTest, TheEnginesConfidencesWeighTheirSides) {
    std::vector<EngineRun> runs = {run_of("agent", "1879", "urn:a"),
                                   run_of("graph-rag", "1881", "urn:b")};
    runs[0].confidence = 0.8;
    runs[1].confidence = 0.2;
    json body = runs[0].final;
    const auto weak = add_engine_conflicts(body, engine_conflicts(runs, 0));
    ASSERT_TRUE(weak && weak->probability);
    EXPECT_NEAR(*weak->probability, 0.8 * 0.8, 1e-12);
    ASSERT_FALSE(weak->features.empty());
    EXPECT_EQ(weak->features.back().name, "engine_conflict");
    EXPECT_NEAR(weak->features.back().value, 0.8, 1e-12);
    ASSERT_TRUE(weak->features.back().effect);
    EXPECT_LT(*weak->features.back().effect, 0.0);

    runs[1].confidence = 0.8;
    body = runs[0].final;
    const auto equal = add_engine_conflicts(body, engine_conflicts(runs, 0));
    ASSERT_TRUE(equal && equal->probability);
    EXPECT_NEAR(*equal->probability, 0.4, 1e-12);

    runs[1].confidence.reset();  // uncalibrated rival: the sources' share, one each
    body = runs[0].final;
    const auto sources = add_engine_conflicts(body, engine_conflicts(runs, 0));
    ASSERT_TRUE(sources && sources->probability);
    EXPECT_NEAR(*sources->probability, 0.4, 1e-12);
}

}  // namespace
}  // namespace glassbox::query
