// What an answer states about its confidence (reasoner/stated_confidence.hpp): features scored
// by a shipped calibrator, the FINAL's fields, the abstention note; an engine's own fit version.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "reasoner/stated_confidence.hpp"

namespace glassbox::reasoner {
namespace {

TEST(StatedConfidenceTest, TheAgentHasAShippedCalibrator) {
    const Calibrator* agent = shipped_calibrator("agent");
    ASSERT_NE(agent, nullptr) << "reasoner/calibration.json has no agent entry";
    EXPECT_TRUE(agent->version.ends_with("/agent")) << agent->version;
    EXPECT_FALSE(agent->features.empty());
}

TEST(StatedConfidenceTest, AnEngineRefittedAloneNamesItsOwnVersion) {
    const auto parsed = parse_calibrators(R"({"version": "file-1", "engines": {
        "a": {"features": [], "mean": [], "scale": [], "weight": [], "bias": 0},
        "b": {"features": [], "mean": [], "scale": [], "weight": [], "bias": 0,
              "version": "fit-2"}}})");
    ASSERT_TRUE(parsed) << parsed.error().describe();
    ASSERT_EQ(parsed->size(), 2u);
    EXPECT_EQ((*parsed)[0].version, "file-1/a");
    EXPECT_EQ((*parsed)[1].version, "fit-2/b");
}

TEST(StatedConfidenceTest, ScoresWithTheShippedCalibratorOrRecordsTheFeaturesAlone) {
    const EvidenceFeatures features{{"answered", 1.0}, {"iterations", 3.0}};
    const auto scored = stated_confidence(features, "agent");
    ASSERT_TRUE(scored.probability.has_value());
    EXPECT_GE(*scored.probability, 0.0);
    EXPECT_LE(*scored.probability, 1.0);
    EXPECT_EQ(scored.calibrator, shipped_calibrator("agent")->version);
    ASSERT_EQ(scored.features.size(), 2u);

    const auto alone = stated_confidence(features, "no-such-engine");
    EXPECT_FALSE(alone.probability.has_value());
    EXPECT_TRUE(alone.calibrator.empty());
    ASSERT_EQ(alone.features.size(), 2u);
    EXPECT_FALSE(alone.features[0].effect.has_value());
}

TEST(StatedConfidenceTest, TheFinalCarriesTheFieldsAndAnAbstentionSaysWhy) {
    schema::explain::AnswerConfidence c;
    c.probability = 0.12;
    c.calibrator = "v/agent";
    c.features = {{"iterations", 6.0, -1.5}, {"answer_ends", 0.7, 0.4}, {"hop_gap", 2.0, -2.0}};
    EXPECT_EQ(most_lowering_feature(c), std::optional<std::string>("hop_gap"));
    EXPECT_TRUE(below_floor(c, 0.25));
    EXPECT_FALSE(below_floor(c, 0.1));
    EXPECT_EQ(abstention_note(c, 0.25, "Port Aldous", "it took many steps"),
              "I do not know for sure. The evidence points to Port Aldous, but its confidence, "
              "12 % (unlikely), is below the 25 % asked for; what lowered it most: it took many "
              "steps.");
    c.abstained = true;
    nlohmann::json final = nlohmann::json::object();
    add_confidence_fields(final, c);
    EXPECT_DOUBLE_EQ(final["confidence"].get<double>(), 0.12);
    EXPECT_EQ(final["confidence_words"], "unlikely");
    EXPECT_EQ(final["calibrator"], "v/agent");
    EXPECT_EQ(final["abstained"], true);
    ASSERT_EQ(final["evidence"].size(), 3u);
    EXPECT_EQ(final["evidence"][2]["name"], "hop_gap");
    EXPECT_DOUBLE_EQ(final["evidence"][2]["effect"].get<double>(), -2.0);

    schema::explain::AnswerConfidence uncalibrated;
    uncalibrated.features = {{"iterations", 2.0, std::nullopt}};
    EXPECT_FALSE(below_floor(uncalibrated, 1.0));
    EXPECT_FALSE(most_lowering_feature(uncalibrated).has_value());
    nlohmann::json bare = nlohmann::json::object();
    add_confidence_fields(bare, uncalibrated);
    EXPECT_FALSE(bare.contains("confidence"));
    EXPECT_FALSE(bare.contains("abstained"));
    EXPECT_FALSE(bare["evidence"][0].contains("effect"));
}

// Issue 35: a conflict whose values the caller numbered (an agent's looked-up fact has no
// selection of its own) is said with those numbers; one without is found by its selection, else
// named by its source. The FINAL lists it; the confidence halves for a one-to-one dispute.
TEST(StatedConfidenceTest, AConflictIsSaidByItsCitationsListedAndLowersTheConfidence) {
    schema::explain::AnswerConfidence confidence;
    confidence.probability = 0.8;
    schema::explain::AnswerConflict numbered;
    numbered.subject = "Saltspire Light";
    numbered.predicate = "year built";
    numbered.stated = "1879";
    numbered.rival = "1881";
    numbered.stated_sources = {"file:orrin.ttl"};
    numbered.rival_sources = {"urn:chunk:register#0"};
    numbered.stated_citation = 2;
    numbered.rival_citation = 3;
    confidence.conflicts.push_back(numbered);
    schema::RagCitation other;
    other.n = 1;
    other.selection = "urn:sel:9";
    EXPECT_EQ(conflicts_note(confidence.conflicts, {other}),
              "Sources disagree on this: [2] gives 1879; [3] gives 1881.");
    auto by_selection = numbered;
    by_selection.stated_citation = 0;
    by_selection.rival_citation = 0;
    by_selection.stated_selection = "urn:sel:9";
    EXPECT_EQ(conflicts_note({by_selection}, {other}),
              "Sources disagree on this: [1] gives 1879; urn:chunk:register#0 gives 1881.");
    EXPECT_EQ(conflicts_note({}, {other}), "");

    lower_for_conflicts(confidence);
    EXPECT_NEAR(*confidence.probability, 0.4, 1e-12);
    ASSERT_EQ(confidence.features.back().name, "conflict");
    EXPECT_LT(confidence.features.back().effect.value_or(0.0), 0.0);
    nlohmann::json final = nlohmann::json::object();
    add_confidence_fields(final, confidence);
    ASSERT_EQ(final.at("conflicts").size(), 1u) << final.dump();
    EXPECT_EQ(final["conflicts"][0].at("stated"), "1879");
    EXPECT_EQ(final["conflicts"][0].at("rival_sources").at(0), "urn:chunk:register#0");
    EXPECT_FALSE(final["conflicts"][0].contains("stated_selection")) << "none: no key";
    confidence.conflicts[0].stated_selection = "urn:run:observation:0";
    confidence.conflicts[0].rival_selection = "urn:sub:focus:chunk:0";
    add_confidence_fields(final, confidence);
    EXPECT_EQ(final["conflicts"][0].value("stated_selection", ""), "urn:run:observation:0")
        << "the selections, for a caller that records the conflict again (the query router)";
    EXPECT_EQ(final["conflicts"][0].value("rival_selection", ""), "urn:sub:focus:chunk:0");
    nlohmann::json none = nlohmann::json::object();
    add_confidence_fields(none, schema::explain::AnswerConfidence{});
    EXPECT_FALSE(none.contains("conflicts")) << "no conflicts, no key";
}

}  // namespace
}  // namespace glassbox::reasoner
