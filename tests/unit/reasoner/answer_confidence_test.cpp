// Calibrated confidence (reasoner/answer_confidence.hpp): the calibration file's checks, the
// logistic mapping and each feature's effect, the shipped calibrators, the words.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "reasoner/answer_confidence.hpp"

namespace glassbox::reasoner {
namespace {

constexpr const char* kFile = R"({
  "version": "test-1",
  "engines": {
    "graph-rag": {"features": ["margin", "path_linked"], "mean": [0.1, 0.5],
                  "scale": [0.2, 0.5], "weight": [2.0, -1.0], "bias": 0.5}
  }
})";

TEST(AnswerConfidenceTest, ParsesACalibrationFile) {
    auto parsed = parse_calibrators(kFile);
    ASSERT_TRUE(parsed) << parsed.error().describe();
    ASSERT_EQ(parsed->size(), 1u);
    const auto& c = parsed->front();
    EXPECT_EQ(c.engine, "graph-rag");
    EXPECT_EQ(c.version, "test-1/graph-rag");
    EXPECT_EQ(c.features, (std::vector<std::string>{"margin", "path_linked"}));
    EXPECT_DOUBLE_EQ(c.bias, 0.5);
}

TEST(AnswerConfidenceTest, RefusesAFileOfAnotherShape) {
    EXPECT_EQ(parse_calibrators("{").error().type, base::ErrorType::kInvalidJson);
    EXPECT_FALSE(parse_calibrators(R"({"engines": {}})"));
    const auto short_weights = parse_calibrators(
        R"({"version": "v", "engines": {"x": {"features": ["a"], "mean": [0], "scale": [1],
            "weight": [], "bias": 0}}})");
    ASSERT_FALSE(short_weights);
    EXPECT_NE(short_weights.error().message.find("\"weight\""), std::string::npos);
    EXPECT_FALSE(parse_calibrators(
        R"({"version": "v", "engines": {"x": {"features": ["a"], "mean": [0], "scale": [0],
            "weight": [1], "bias": 0}}})"));
}

TEST(AnswerConfidenceTest, MapsFeaturesThroughTheLogistic) {
    const auto c = parse_calibrators(kFile)->front();
    // margin (0.5 - 0.1) / 0.2 * 2 = 4; path_linked (1 - 0.5) / 0.5 * -1 = -1; logit 0.5 + 3.
    const auto scored = calibrate(c, {{"margin", 0.5}, {"path_linked", 1.0}, {"other", 9.0}});
    EXPECT_NEAR(scored.probability, 1.0 / (1.0 + std::exp(-3.5)), 1e-12);
    EXPECT_EQ(scored.calibrator, "test-1/graph-rag");
    ASSERT_EQ(scored.effects.size(), 2u);         // "other" is not the calibrator's
    EXPECT_EQ(scored.effects[0].name, "margin");  // the largest effect first
    EXPECT_NEAR(scored.effects[0].effect, 4.0, 1e-12);
    EXPECT_NEAR(scored.effects[1].effect, -1.0, 1e-12);
    // A feature the answer lacks counts at its mean: no effect.
    const auto missing = calibrate(c, {{"margin", 0.1}});
    EXPECT_NEAR(missing.probability, 1.0 / (1.0 + std::exp(-0.5)), 1e-12);
}

TEST(AnswerConfidenceTest, AnAnswerWithoutAShortAnswerGetsItsOwnRate) {
    auto parsed = parse_calibrators(R"({"version": "v", "engines": {"document-rag": {
        "features": ["yes_no"], "mean": [0.1], "scale": [0.3], "weight": [3.0], "bias": 1.0,
        "unanswered": {"probability": 0.36, "questions": 9}}}})");
    ASSERT_TRUE(parsed) << parsed.error().describe();
    const auto& c = parsed->front();
    ASSERT_TRUE(c.unanswered);
    const auto none = calibrate(c, {{"answered", 0.0}, {"yes_no", 1.0}});
    EXPECT_DOUBLE_EQ(none.probability, 0.36);
    const auto some = calibrate(c, {{"answered", 1.0}, {"yes_no", 1.0}});
    EXPECT_GT(some.probability, 0.9);
    EXPECT_FALSE(parse_calibrators(R"({"version": "v", "engines": {"x": {"features": [],
        "mean": [], "scale": [], "weight": [], "bias": 0, "unanswered": {"probability": 2}}}})"));
}

TEST(AnswerConfidenceTest, AWithheldAnswerGetsTheRateOfWithheldAnswers) {
    auto parsed = parse_calibrators(R"({"version": "v", "engines": {"document-rag": {
        "features": ["yes_no"], "mean": [0.1], "scale": [0.3], "weight": [3.0], "bias": 1.0,
        "unanswered": {"probability": 0.42, "questions": 10},
        "withheld": {"probability": 0.16, "questions": 15}}}})");
    ASSERT_TRUE(parsed) << parsed.error().describe();
    const auto& c = parsed->front();
    ASSERT_EQ(c.withheld, 0.16);
    // Withheld: its own rate, and the trace says why.
    const auto withheld = calibrate(c, {{"answered", 0.0}, {"withheld", 1.0}});
    EXPECT_DOUBLE_EQ(withheld.probability, 0.16);
    ASSERT_EQ(withheld.effects.size(), 2u);
    EXPECT_EQ(withheld.effects[1].name, "withheld");
    // None found: the rate of those; a short answer: the regression.
    EXPECT_DOUBLE_EQ(calibrate(c, {{"answered", 0.0}, {"withheld", 0.0}}).probability, 0.42);
    EXPECT_DOUBLE_EQ(calibrate(c, {{"answered", 0.0}}).probability, 0.42);
    EXPECT_GT(calibrate(c, {{"answered", 1.0}, {"withheld", 0.0}, {"yes_no", 1.0}}).probability,
              0.9);
    // A file without the withheld rate: withheld answers get the unanswered one, as before.
    auto pooled = parse_calibrators(R"({"version": "v", "engines": {"document-rag": {
        "features": [], "mean": [], "scale": [], "weight": [], "bias": 0,
        "unanswered": {"probability": 0.25}}}})");
    ASSERT_TRUE(pooled);
    EXPECT_FALSE(pooled->front().withheld);
    EXPECT_DOUBLE_EQ(calibrate(pooled->front(), {{"answered", 0.0}, {"withheld", 1.0}}).probability,
                     0.25);
    EXPECT_FALSE(parse_calibrators(R"({"version": "v", "engines": {"x": {"features": [],
        "mean": [], "scale": [], "weight": [], "bias": 0, "withheld": {"probability": -1}}}})"));
}

TEST(AnswerConfidenceTest, AWithholdingThresholdIsReadAndBounded) {
    const auto parse = [](std::string_view withhold) {
        const std::string head = R"({"version": "v", "engines": {"document-rag": {
            "features": [], "mean": [], "scale": [], "weight": [], "bias": 0, "withhold_below": )";
        return parse_calibrators(head + std::string(withhold) + "}}}");
    };
    const auto parsed = parse("0.2");
    ASSERT_TRUE(parsed) << parsed.error().describe();
    EXPECT_EQ(parsed->front().withhold_below, 0.2);
    EXPECT_FALSE(parse("1.5"));
    EXPECT_FALSE(parse("\"low\""));
    auto without = parse_calibrators(R"({"version": "v", "engines": {"graph-rag": {
        "features": [], "mean": [], "scale": [], "weight": [], "bias": 0}}})");
    ASSERT_TRUE(without);
    EXPECT_FALSE(without->front().withhold_below);
}

TEST(AnswerConfidenceTest, TheQuestionsPartsAreCheckedAgainstWhatTheFactsState) {
    const auto parts = question_parts("When and where was Rosa Lind born?", {"born in"});
    ASSERT_GE(parts.size(), 2u);
    std::size_t covered = 0;
    for (const auto& p : parts) covered += p.covered ? 1 : 0;
    EXPECT_GE(covered, 1u);
    EXPECT_LT(covered, parts.size());
    // The class asked for is the answer, not a part to state.
    const auto lights = question_parts("Which lighthouses did Ilse Varrow design?", {});
    ASSERT_EQ(lights.size(), 1u);
    EXPECT_FALSE(lights[0].covered);
    EXPECT_TRUE(question_parts("who are the children of Ada_MOOR ?", {"children"})[0].covered);
    // "wives and husbands" is one part.
    EXPECT_EQ(question_parts("name all the wives and husbands of Ada_MOOR ?", {"spouse"}).size(),
              1u);
}

TEST(AnswerConfidenceTest, TheShippedFileParsesAndNamesItsEngines) {
    std::ifstream in(std::string(GLASSBOX_SOURCE_DIR) + "/reasoner/calibration.json");
    ASSERT_TRUE(in);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = parse_calibrators(text.str());
    ASSERT_TRUE(parsed) << parsed.error().describe();
    for (const auto& c : *parsed) {
        const Calibrator* shipped = shipped_calibrator(c.engine);
        ASSERT_NE(shipped, nullptr) << c.engine;
        EXPECT_EQ(shipped->version, c.version) << "the binary carries the file as it is";
        EXPECT_EQ(shipped->features, c.features);
    }
    EXPECT_EQ(shipped_calibrator("no-such-engine"), nullptr);
}

TEST(AnswerConfidenceTest, SaysItInWords) {
    EXPECT_EQ(confidence_words(0.95), "very likely");
    EXPECT_EQ(confidence_words(0.7), "likely");
    EXPECT_EQ(confidence_words(0.5), "uncertain");
    EXPECT_EQ(confidence_words(0.1), "unlikely");
}

TEST(AnswerConfidenceTest, ReadsWhatTheQuestionExpects) {
    EXPECT_EQ(question_expectation("Who built the MV Curlew?").relations, 1u);
    EXPECT_GE(question_expectation("Who founded the shipyard that built the MV Curlew?").relations,
              2u);
    EXPECT_TRUE(question_expectation("Is Brinehaven on Greyhollow?").yes_no);
    EXPECT_FALSE(question_expectation("Who designed Greyhollow Light?").yes_no);
    EXPECT_TRUE(answer_type_mismatch("Who designed Greyhollow Light?", "1887"));
    EXPECT_FALSE(answer_type_mismatch("Who designed Greyhollow Light?", "Ilse Varrow"));
    EXPECT_TRUE(answer_type_mismatch("How many people live in Brinehaven?", "Ilse Varrow"));
}

}  // namespace
}  // namespace glassbox::reasoner
