// The router's own abstention (workers/query/router_abstention.hpp): when it abstains, and why
// it says it is unsure.
#include "workers/query/router_abstention.hpp"

#include <gtest/gtest.h>

namespace glassbox::query {
namespace {

using nlohmann::json;
using schema::explain::AnswerConfidence;

AnswerConfidence confidence_of(double p, std::vector<schema::explain::EvidenceFeatureRecord> f) {
    AnswerConfidence c;
    c.probability = p;
    c.calibrator = "test";
    c.features = std::move(f);
    return c;
}

json answer() {
    return {{"response", "Built in 1881 [1]."},
            {"answer", "1881"},
            {"answer_selections", {"urn:s"}},
            {"citations", {{{"n", 1}, {"spans", {{{"start", 9}, {"end", 13}}}}}}}};
}

// The doubt abstention_note names after "what lowered it most: ".
std::string why(const json& body) {
    std::string text = body["response"];
    const auto from = text.find("what lowered it most: ");
    const auto to = text.find(". What was found");
    if (from == std::string::npos || to == std::string::npos) return text;
    return text.substr(from + 22, to - from - 22);
}

TEST(RouterAbstentionTest, OnlyACalibratedConfidenceBelowTheFloorAbstains) {
    json body = answer();
    AnswerConfidence none;  // no calibrator: nothing to weigh against a floor
    EXPECT_FALSE(abstain_below_floor(body, none, 0.5, std::nullopt, 1));
    AnswerConfidence at = confidence_of(0.5, {});
    EXPECT_FALSE(abstain_below_floor(body, at, 0.5, 0.5, 1));
    AnswerConfidence done = confidence_of(0.1, {});
    done.abstained = true;  // the engine said it does not know already
    EXPECT_FALSE(abstain_below_floor(body, done, 0.5, 0.1, 1));
    EXPECT_EQ(body, answer()) << "left as it was";

    AnswerConfidence below = confidence_of(0.1, {});
    EXPECT_TRUE(abstain_below_floor(body, below, 0.5, 0.1, 1));
    EXPECT_TRUE(below.abstained);
    EXPECT_EQ(body["abstained"], true);
    EXPECT_EQ(body["answer"], "");
    EXPECT_TRUE(body["answer_selections"].empty());
    const std::string text = body["response"];
    EXPECT_TRUE(
        text.starts_with("I do not know for sure. The evidence points to 1881, but its "
                         "confidence, 10 % (unlikely), is below the 50 % asked for"))
        << text;
    const auto start = body["citations"][0]["spans"][0]["start"].get<std::size_t>();
    EXPECT_EQ(text.substr(start, 4), "1881") << text;
    EXPECT_TRUE(text.ends_with("What was found: Built in 1881 [1].")) << text;
}

TEST(RouterAbstentionTest, WhyIsTheEnginesDisagreementWhenItTookTheAnswerBelowTheFloor) {
    const auto engine_conflict =
        schema::explain::EvidenceFeatureRecord{"engine_conflict", 0.5, -0.8};
    const auto margin = schema::explain::EvidenceFeatureRecord{"margin", 0.1, -1.5};
    // The engine's own 0.6 passed the floor: the disagreement is why, though margin lowered more.
    json body = answer();
    AnswerConfidence lowered = confidence_of(0.3, {margin, engine_conflict});
    ASSERT_TRUE(abstain_below_floor(body, lowered, 0.5, 0.6, 1));
    EXPECT_EQ(why(body), "the engines disagree on it");
    // Below the floor already (a router floor above the engine's): the feature that lowered most.
    body = answer();
    AnswerConfidence weak = confidence_of(0.2, {margin, engine_conflict});
    ASSERT_TRUE(abstain_below_floor(body, weak, 0.5, 0.4, 1));
    EXPECT_EQ(why(body), "another answer is about as well supported") << "graph-rag's words";
    // The agent's features in the agent's words; a feature no engine words, weak evidence.
    body = answer();
    body["engine"] = "agent";
    AnswerConfidence ends = confidence_of(0.2, {{"answer_ends", 3.0, -1.0}, engine_conflict});
    ASSERT_TRUE(abstain_below_floor(body, ends, 0.5, 0.2, 1));
    EXPECT_EQ(why(body), "the lookups end at several things");
    body = answer();
    AnswerConfidence unknown = confidence_of(0.2, {{"novel_feature", 1.0, -1.0}});
    ASSERT_TRUE(abstain_below_floor(body, unknown, 0.5, 0.2, 1));
    EXPECT_EQ(why(body), "its evidence is weak");
    body = answer();
    AnswerConfidence disputed = confidence_of(0.2, {{"conflict", 0.5, -2.0}, margin});
    ASSERT_TRUE(abstain_below_floor(body, disputed, 0.5, 0.2, 1));
    EXPECT_EQ(why(body), "sources disagree on it");
    body = answer();
    AnswerConfidence most = confidence_of(0.1, {margin, {"engine_conflict", 0.5, -2.0}});
    ASSERT_TRUE(abstain_below_floor(body, most, 0.5, 0.3, 1));
    EXPECT_EQ(why(body), "the engines disagree on it");
}

TEST(RouterAbstentionTest, AnEmptyAnswerIsTheNoteAloneAndOnlyTheWinnersSpansMove) {
    json empty = {{"response", ""}, {"answer", ""}};
    AnswerConfidence c = confidence_of(0.1, {});
    ASSERT_TRUE(abstain_below_floor(empty, c, 0.25, 0.1, 0));
    const std::string text = empty["response"];
    EXPECT_TRUE(
        text.starts_with("I do not know for sure. The evidence does not settle on an answer"))
        << text;
    EXPECT_EQ(text.find("What was found"), std::string::npos) << text;

    json two = answer();
    two["citations"].push_back({{"n", 2}, {"spans", {{{"start", 3}, {"end", 4}}}}});
    AnswerConfidence d = confidence_of(0.1, {});
    ASSERT_TRUE(abstain_below_floor(two, d, 0.25, 0.1, 1));
    EXPECT_EQ(two["citations"][1]["spans"][0]["start"], 3) << "a rival engine's citation";
    EXPECT_GT(two["citations"][0]["spans"][0]["start"].get<std::size_t>(), 9u);
}

}  // namespace
}  // namespace glassbox::query
