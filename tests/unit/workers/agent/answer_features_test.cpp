// The evidence features of an agent's answer: list answers traced back end by end, what the
// features read from a run, and the words an abstaining answer gives for a feature.
#include <cmath>

#include <gtest/gtest.h>

#include "reasoner/stated_confidence.hpp"
#include "tests/unit/workers/agent/step_facts.hpp"
#include "workers/agent/answer_features.hpp"

namespace glassbox::agent {
namespace {

using test_support::fact;

double feature(const reasoner::EvidenceFeatures& features, const std::string& name) {
    for (const auto& f : features)
        if (f.name == name) return f.value;
    ADD_FAILURE() << "no feature " << name;
    return std::nan("");
}

TEST(AnswerNames, NamesEachItemOfAListAnswerAndNoPartOfAName) {
    EXPECT_TRUE(answer_names("Cobble Quay", "cobble_quay"));
    EXPECT_TRUE(answer_names("Cobble Quay and Saltspire Light", "Cobble Quay"));
    EXPECT_TRUE(answer_names("Cobble Quay and Saltspire Light", "Saltspire Light"));
    EXPECT_TRUE(answer_names("A, Brenn and Daughters and C", "Brenn and Daughters"));
    EXPECT_TRUE(answer_names("A, B and 3 others", "B"));
    EXPECT_FALSE(answer_names("Cobble Quay and Saltspire Light", "Saltspire"));
    EXPECT_FALSE(answer_names("New Port", "Port"));
    EXPECT_FALSE(answer_names("Port", ""));
    EXPECT_FALSE(answer_names("", "Port"));
}

TEST(FactsBehind, CitesEveryEndOfAListAnswer) {
    const std::vector<StepFact> facts = {
        fact("Gale", "damaged", "Cobble Quay", "Gale", 0),
        fact("Gale", "damaged", "Saltspire Light", "Gale", 0),
        fact("Gale", "type", "event", "Gale", 0),
    };
    const auto both = facts_behind("Cobble Quay and Saltspire Light", facts);
    EXPECT_EQ(both, (std::vector<std::size_t>{0, 1}));
    EXPECT_EQ(facts_behind("Saltspire Light", facts), (std::vector<std::size_t>{1}));
}

// A three-hop chain answered with two ends, every lookup found something.
AgentRunEvidence chained_run() {
    AgentRunEvidence run;
    run.question = "Where was the founder of the company that built the Meridian Telescope born?";
    run.facts = {
        fact("Telescope", "builtBy", "Yard", "Telescope", 1),
        fact("Yard", "foundedBy", "Founder", "Yard", 2),
        fact("Founder", "bornIn", "Port Aldous", "Founder", 3),
        fact("Founder", "bornIn", "Tarnwick", "Founder", 3),
    };
    run.answer = "Port Aldous and Tarnwick";
    run.behind = facts_behind(run.answer, run.facts);
    run.final_answer = true;
    run.iterations = 4;
    return run;
}

TEST(AgentFeatures, ReadTheChainBehindTheAnswer) {
    const auto run = chained_run();
    AnswerEvidence cited;
    cited.citations.resize(4);
    cited.answer_sources = {{"file:///k.ttl", 1, "agent"}, {"file:///l.ttl", 3, "agent"}};
    const auto features = agent_features(run, cited);
    EXPECT_EQ(feature(features, "answered"), 1.0);
    EXPECT_EQ(feature(features, "final_answer"), 1.0);
    EXPECT_EQ(feature(features, "chain_complete"), 1.0);
    EXPECT_EQ(feature(features, "chain_hops"), 3.0);
    EXPECT_DOUBLE_EQ(feature(features, "answer_ends"), std::log1p(2.0));
    EXPECT_DOUBLE_EQ(feature(features, "answer_facts"), std::log1p(4.0));
    EXPECT_EQ(feature(features, "answer_backed"), 1.0);
    EXPECT_DOUBLE_EQ(feature(features, "answer_sources"), std::log1p(2.0));
    EXPECT_EQ(feature(features, "weakest_tier"), 3.0);
    EXPECT_EQ(feature(features, "iterations"), 4.0);
    EXPECT_EQ(feature(features, "empty_lookup"), 0.0);
    EXPECT_EQ(feature(features, "type_mismatch"), 0.0);
    EXPECT_EQ(feature(features, "rag_answer"), 0.0);
    EXPECT_GE(feature(features, "planned_hops"), 1.0);
    EXPECT_EQ(feature(features, "hop_gap"),
              std::abs(feature(features, "planned_hops") - feature(features, "chain_hops")));
}

TEST(AgentFeatures, AnAnswerWithoutGroundAndARagAnswerReadDifferently) {
    auto run = chained_run();
    run.answer = "1887";  // a year for "where", standing on no fact
    run.behind = facts_behind(run.answer, run.facts);
    run.final_answer = false;
    run.empty_lookups = 1;
    run.tool_errors = 5;
    const auto bare = agent_features(run, AnswerEvidence{});
    EXPECT_EQ(feature(bare, "chain_complete"), 0.0);
    EXPECT_EQ(feature(bare, "answer_backed"), 0.0);
    EXPECT_EQ(feature(bare, "answer_ends"), 0.0);
    EXPECT_EQ(feature(bare, "chain_hops"), 0.0);
    EXPECT_EQ(feature(bare, "hop_gap"), 0.0);
    EXPECT_EQ(feature(bare, "empty_lookup"), 1.0);
    EXPECT_EQ(feature(bare, "tool_errors"), 3.0);
    EXPECT_EQ(feature(bare, "type_mismatch"), 1.0);

    run.answer = "Port Aldous";
    run.behind.clear();
    run.rag_answer = true;
    run.rag_confidence = 0.8;
    AnswerEvidence cited;
    cited.citations.resize(1);
    const auto rag = agent_features(run, cited);
    EXPECT_EQ(feature(rag, "rag_answer"), 1.0);
    EXPECT_DOUBLE_EQ(feature(rag, "rag_confidence"), 0.8);
    EXPECT_EQ(feature(rag, "answer_backed"), 1.0);  // by the RAG tool's citation

    run.answer.clear();
    const auto none = agent_features(run, cited);
    EXPECT_EQ(feature(none, "answered"), 0.0);
    EXPECT_EQ(feature(none, "rag_answer"), 0.0);
    EXPECT_EQ(feature(none, "rag_confidence"), 0.0);
}

TEST(AgentFeatures, EveryFeatureHasItsOwnDoubt) {
    for (const auto& f : agent_features(chained_run(), AnswerEvidence{}))
        EXPECT_NE(reasoner::doubt_words("agent", f.name), "its evidence is weak") << f.name;
    EXPECT_EQ(reasoner::doubt_words("agent", "no-such-feature"), "its evidence is weak");
}

}  // namespace
}  // namespace glassbox::agent
