// Run URIs: one UUID per run, patterns, recovery of the run from a URI.
#include "schema/explain_uris.hpp"

#include <regex>
#include <set>

#include <gtest/gtest.h>

namespace glassbox::schema::explain {
namespace {

TEST(RunUris, GeneratesVersion4Uuids) {
    const std::regex v4("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        const auto run = RunUris::generate();
        EXPECT_TRUE(std::regex_match(run.uuid(), v4)) << run.uuid();
        seen.insert(run.uuid());
    }
    EXPECT_EQ(seen.size(), 1000u);
}

TEST(RunUris, Patterns) {
    const auto run = RunUris::from_uuid("0123ABCD-0000-4000-8000-00000000000F");
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(run->uuid(), "0123abcd-0000-4000-8000-00000000000f");
    const std::string p = "urn:glassbox:0123abcd-0000-4000-8000-00000000000f:";
    EXPECT_EQ(run->question(), p + "question");
    EXPECT_EQ(run->grounding(), p + "grounding");
    EXPECT_EQ(run->exploration(), p + "exploration");
    EXPECT_EQ(run->focus(), p + "focus");
    EXPECT_EQ(run->synthesis(), p + "synthesis");
    EXPECT_EQ(run->conclusion(), p + "conclusion");
    EXPECT_EQ(run->routing_decision(), p + "routing");
    EXPECT_EQ(run->escalation(1), p + "escalation:1");
    EXPECT_EQ(run->analysis(2), p + "analysis:2");
    EXPECT_EQ(run->observation(2), p + "observation:2");
    EXPECT_EQ(run->edge_selection(3), p + "focus:edge:3");
    EXPECT_EQ(run->retrieved_chunk(4), p + "exploration:chunk:4");
    EXPECT_EQ(run->ranked_chunk(5), p + "focus:chunk:5");
    EXPECT_EQ(run->citation(0), p + "synthesis:citation:0");
    EXPECT_EQ(run->text("answer 1"), p + "text:answer%201");
    EXPECT_EQ(worker_agent_uri("graph-rag"), "urn:glassbox:agent:worker:graph-rag");
    EXPECT_EQ(model_agent_uri("llama3:8b/q4"), "urn:glassbox:agent:model:llama3%3A8b%2Fq4");
}

TEST(RunUris, RejectsMalformedUuids) {
    EXPECT_FALSE(RunUris::from_uuid("").has_value());
    EXPECT_FALSE(RunUris::from_uuid("0123abcd-0000-4000-8000-00000000000").has_value());
    EXPECT_FALSE(RunUris::from_uuid("0123abcd-0000-4000-8000_00000000000f").has_value());
    EXPECT_FALSE(RunUris::from_uuid("0123abcg-0000-4000-8000-00000000000f").has_value());
}

TEST(RunUris, RecoversTheRunOfAUri) {
    const auto run = RunUris::generate();
    auto back = RunUris::from_uri(run.edge_selection(2));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->uuid(), run.uuid());
    EXPECT_FALSE(RunUris::from_uri(worker_agent_uri("echo")).has_value());
    EXPECT_FALSE(RunUris::from_uri("https://example.org/x").has_value());
}

TEST(RunUris, SelectionsAndOwnership) {
    const auto run = RunUris::generate();
    const auto other = RunUris::generate();
    EXPECT_TRUE(run.owns(run.focus()));
    EXPECT_FALSE(run.owns(other.focus()));
    EXPECT_TRUE(run.is_selection(run.edge_selection(0)));
    EXPECT_TRUE(run.is_selection(run.retrieved_chunk(7)));
    EXPECT_TRUE(run.is_selection(run.ranked_chunk(1)));
    EXPECT_FALSE(run.is_selection(run.focus()));
    EXPECT_FALSE(run.is_selection(run.citation(0)));
    EXPECT_FALSE(run.is_selection(run.focus() + ":edge:"));
    EXPECT_FALSE(run.is_selection(run.focus() + ":edge:1x"));
    EXPECT_FALSE(run.is_selection(other.edge_selection(0)));
}

}  // namespace
}  // namespace glassbox::schema::explain
