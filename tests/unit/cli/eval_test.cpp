// glassbox eval's scoring and report (cli/eval/): the answer measures, calibration error,
// accuracy at a coverage and the charts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/eval/answer_scoring.hpp"
#include "cli/eval/eval_charts.hpp"
#include "cli/eval/eval_report.hpp"

namespace glassbox::cli::eval {
namespace {

TEST(AnswerScoringTest, NormalisesAsSquadDoes) {
    EXPECT_EQ(squad_normalise("The  Eiffel-Tower, in Paris!"), "eiffeltower in paris");
    EXPECT_EQ(squad_normalise("an apple a day"), "apple day");
    EXPECT_EQ(squad_normalise("..."), "");
}

TEST(AnswerScoringTest, TokenF1CountsSharedWordsOnce) {
    EXPECT_DOUBLE_EQ(token_f1("Paris", "paris"), 1.0);
    EXPECT_DOUBLE_EQ(token_f1("Paris France", "Paris"), 2.0 * 0.5 * 1.0 / 1.5);
    EXPECT_DOUBLE_EQ(token_f1("London", "Paris"), 0.0);
    EXPECT_DOUBLE_EQ(token_f1("the", "a"), 1.0);  // both empty once normalised
    EXPECT_DOUBLE_EQ(token_f1("paris paris", "paris"), 2.0 * 0.5 * 1.0 / 1.5);
}

TEST(AnswerScoringTest, NamesWholeWordsOnly) {
    EXPECT_TRUE(names("It is based in Mexico.", "mexico"));
    EXPECT_TRUE(names("MEXICO", "mexico"));
    EXPECT_FALSE(names("New Mexicans", "mexico"));
    EXPECT_FALSE(names("born in 1986", "1"));
    EXPECT_TRUE(names("born in 1986 and 1", "1"));
    EXPECT_FALSE(names("Zürich", "rich"));  // a multi-byte letter is part of the word
    EXPECT_FALSE(names("anything", ""));
}

TEST(AnswerScoringTest, ReadableAnswerUndoesUnderscores) {
    EXPECT_EQ(readable_answer("Cruz_Azul_FC"), "cruz azul fc");
}

TEST(AnswerScoringTest, FirstSentenceSkipsInitialsAndNumbers) {
    EXPECT_EQ(first_sentence("  E. B. White wrote it. Then more."), "E. B. White wrote it.");
    EXPECT_EQ(first_sentence("He played for 1. FC Nuernberg. Later Bayern."),
              "He played for 1. FC Nuernberg.");
    EXPECT_EQ(first_sentence("No end here "), "No end here");
    EXPECT_EQ(first_sentence("Is it? yes it is."), "Is it? yes it is.");
}

TEST(AnswerScoringTest, ScoresTheShortAnswerElseTheFirstSentence) {
    const std::vector<std::string> gold{"Clint_DEMPSEY", "Mexico"};
    auto s = score_answer(std::string("Mexico"), "Long text about Spain.", gold);
    EXPECT_EQ(s.judged, "Mexico");
    EXPECT_TRUE(s.hit);
    EXPECT_DOUBLE_EQ(s.exact, 1.0);
    EXPECT_DOUBLE_EQ(s.f1, 1.0);
    s = score_answer(std::string(""), "Clint Dempsey plays forward. Also Mexico.", gold);
    EXPECT_EQ(s.judged, "Clint Dempsey plays forward.");
    EXPECT_TRUE(s.hit);
    EXPECT_DOUBLE_EQ(s.exact, 0.0);
    EXPECT_GT(s.f1, 0.0);
    s = score_answer(std::nullopt, "Spain. Mexico.", gold);
    EXPECT_FALSE(s.hit);  // only the first sentence is judged
}

EvalRow row(bool hit, std::optional<double> confidence, std::string error = {}) {
    EvalRow r;
    r.score.hit = hit;
    r.score.exact = hit ? 1.0 : 0.0;
    r.score.f1 = hit ? 1.0 : 0.0;
    r.confidence = confidence;
    r.error = std::move(error);
    return r;
}

TEST(AnswerScoringTest, AListAnswerIsScoredByTheShareOfAnswersItNames) {
    const std::vector<std::string> gold{"Cobble_Quay", "Saltspire_Light", "Greyhollow_Light"};
    EXPECT_DOUBLE_EQ(named_share(std::nullopt, "It damaged Cobble Quay and Saltspire Light.", gold),
                     2.0 / 3.0);
    EXPECT_DOUBLE_EQ(named_share(std::string("Greyhollow Light"),
                                 "It damaged Cobble Quay and Saltspire Light.", gold),
                     1.0);
    EXPECT_DOUBLE_EQ(named_share(std::nullopt, "", gold), 0.0);
}

TEST(EvalReportTest, ListQuestionsAreCompleteOnlyWhenEveryAnswerIsNamed) {
    std::vector<EvalRow> rows(3);
    for (auto& r : rows) r.list = true;
    rows[0].named_share = 1.0;
    rows[1].named_share = 0.5;
    rows[2].named_share = 1.0;
    rows[2].abstained = true;  // withheld: not complete
    EvalRow plain;             // not a list question: not counted
    rows.push_back(plain);
    const auto s = summarise(rows);
    EXPECT_EQ(s.list_questions, 3u);
    EXPECT_DOUBLE_EQ(s.complete, 1.0 / 3.0);
    EXPECT_EQ(to_json(s).at("list_questions"), 3);
    EXPECT_FALSE(to_json(rows[3]).contains("named_share"));
    EXPECT_EQ(to_json(rows[1]).at("named_share"), 0.5);
}

TEST(EvalReportTest, WithoutConfidenceThereIsNoCalibration) {
    const std::vector<EvalRow> rows{row(true, std::nullopt), row(false, 0.4)};
    const auto s = summarise(rows);
    EXPECT_EQ(s.questions, 2u);
    EXPECT_DOUBLE_EQ(s.hits1, 0.5);
    EXPECT_EQ(s.with_confidence, 1u);
    EXPECT_FALSE(s.ece.has_value());
    EXPECT_TRUE(s.at_coverage.empty());
    EXPECT_NE(reliability_svg(s).find("no confidence"), std::string::npos);
}

TEST(EvalReportTest, CalibrationErrorIsTheWeightedGapPerBin) {
    // Bin 0.9: two answers at 0.95, one right (gap 0.45); bin 0.2: two at 0.25, both wrong
    // (gap 0.25). ECE = 0.5 * 0.45 + 0.5 * 0.25 = 0.35.
    const std::vector<EvalRow> rows{row(true, 0.95), row(false, 0.95), row(false, 0.25),
                                    row(false, 0.25)};
    const auto s = summarise(rows);
    ASSERT_TRUE(s.ece.has_value());
    EXPECT_NEAR(*s.ece, 0.35, 1e-12);
    EXPECT_EQ(s.bins[9].questions, 2u);
    EXPECT_DOUBLE_EQ(s.bins[9].accuracy, 0.5);
    EXPECT_EQ(s.bins[2].questions, 2u);
}

TEST(EvalReportTest, CalibrationJudgesWhatAnAbstentionFoundAndHitsCountOnlyStatedAnswers) {
    const std::vector<std::string> gold{"Hebron Academy"};
    const std::string text =
        "I do not know for sure. The evidence does not settle on an answer, but its "
        "confidence, 16 % (unlikely), is below the 25 % asked for. What was found: He "
        "graduated from Hebron Academy. He taught in Maine.";
    EXPECT_EQ(found_text(text), "He graduated from Hebron Academy. He taught in Maine.");
    EXPECT_EQ(found_text("Saltspire Light [1]."), "");
    // Two abstentions at 0.15: one found the answer, one did not; two stated answers at 0.95,
    // both right. Hits count the stated ones only; calibration judges all four.
    std::vector<EvalRow> rows{row(true, 0.95), row(true, 0.95), row(false, 0.15), row(false, 0.15)};
    rows[2].abstained = true;
    rows[2].answer = text;
    rows[2].found = score_answer(std::nullopt, found_text(text), gold);
    rows[3].abstained = true;
    rows[3].found = score_answer(std::nullopt, "Nothing about a school.", gold);
    ASSERT_TRUE(rows[2].found->hit);
    EXPECT_FALSE(rows[3].found->hit);
    EXPECT_FALSE(correct(rows[2]));
    EXPECT_TRUE(right_for_calibration(rows[2]));
    EXPECT_FALSE(right_for_calibration(rows[3]));
    const auto s = summarise(rows);
    EXPECT_DOUBLE_EQ(s.hits1, 0.5);
    EXPECT_EQ(s.abstained, 2u);
    // Bin 0.9: 2 of 2 right at 0.95 (gap 0.05); bin 0.1: 1 of 2 at 0.15 (gap 0.35).
    ASSERT_TRUE(s.ece.has_value());
    EXPECT_NEAR(*s.ece, 0.5 * 0.05 + 0.5 * 0.35, 1e-12);
    EXPECT_DOUBLE_EQ(s.at_coverage[0].accuracy, 0.75);
    EXPECT_EQ(to_json(rows[2]).at("found_hit"), true);
    EXPECT_FALSE(to_json(rows[0]).contains("found_hit"));
}

TEST(EvalReportTest, AccuracyAtCoverageKeepsTheMostConfident) {
    std::vector<EvalRow> rows;
    rows.reserve(10);
    for (int i = 0; i < 10; ++i) rows.push_back(row(i < 5, 1.0 - 0.05 * i));  // right ones first
    const auto s = summarise(rows);
    ASSERT_EQ(s.at_coverage.size(), 3u);
    EXPECT_DOUBLE_EQ(s.at_coverage[0].accuracy, 0.5);  // 100 %
    EXPECT_EQ(s.at_coverage[1].kept, 8u);
    EXPECT_DOUBLE_EQ(s.at_coverage[1].accuracy, 5.0 / 8.0);
    EXPECT_DOUBLE_EQ(s.at_coverage[2].accuracy, 1.0);  // 50 %: the five right ones
    EXPECT_EQ(s.curve.size(), 10u);
}

TEST(EvalReportTest, AnErrorIsAMissOfConfidenceZero) {
    const std::vector<EvalRow> rows{row(true, 0.9), row(true, std::nullopt, "Timeout: x")};
    const auto s = summarise(rows);
    EXPECT_EQ(s.errors, 1u);
    EXPECT_DOUBLE_EQ(s.hits1, 0.5);  // the error's score does not count
    ASSERT_TRUE(s.ece.has_value());
    EXPECT_EQ(s.bins[0].questions, 1u);
    EXPECT_DOUBLE_EQ(s.bins[0].accuracy, 0.0);
}

TEST(EvalReportTest, ChartsAreSvgDocumentsWithTheirData) {
    const std::vector<EvalRow> rows{row(true, 0.95), row(false, 0.25)};
    const auto s = summarise(rows);
    const auto reliability = reliability_svg(s);
    EXPECT_EQ(reliability.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
    EXPECT_NE(reliability.find("ECE"), std::string::npos);
    EXPECT_NE(reliability.find("<circle"), std::string::npos);
    const auto risk = risk_coverage_svg(s);
    EXPECT_NE(risk.find("<polyline"), std::string::npos);
    EXPECT_NE(risk.find("</svg>"), std::string::npos);
}

TEST(EvalReportTest, RowsAndSummaryAsJson) {
    auto r = row(true, 0.7);
    r.id = "q1";
    r.trace = "urn:glassbox:x:question";
    const auto j = to_json(r);
    EXPECT_EQ(j["id"], "q1");
    EXPECT_EQ(j["hit"], true);
    EXPECT_DOUBLE_EQ(j["confidence"].get<double>(), 0.7);
    EXPECT_FALSE(j.contains("error"));
    const auto s = to_json(summarise(std::vector<EvalRow>{r}));
    EXPECT_EQ(s["questions"], 1);
    EXPECT_EQ(s["accuracy_at_coverage"].size(), 3u);
}

// The row an evaluation run's record holds (docs/evaluation.md, "Evaluation runs"): its verdict in
// words, its trace (null without one) and its long texts cut at a character boundary.
TEST(EvalReportTest, RecordRowsSayTheVerdictAndCutLongTexts) {
    auto hit = row(true, 0.9);
    hit.id = "q1";
    hit.trace = "urn:glassbox:x:question";
    hit.question = std::string(1023, 'a') + "\u00e9 and more";  // é straddles the 1024th byte
    const auto j = to_record_json(hit);
    EXPECT_EQ(j["verdict"], "hit");
    EXPECT_EQ(j["correct"], true);
    EXPECT_EQ(j["trace"], "urn:glassbox:x:question");
    EXPECT_EQ(j["question"], std::string(1023, 'a')) << "cut before the character, not in it";
    EXPECT_FALSE(j.contains("named_share"));

    auto failed = row(false, std::nullopt);
    failed.error = "Timeout: " + std::string(1000, 'x');
    const auto e = to_record_json(failed);
    EXPECT_EQ(e["verdict"], "error");
    EXPECT_EQ(e["trace"], nullptr);
    EXPECT_EQ(e["confidence"], nullptr);
    EXPECT_EQ(e["error"].get<std::string>().size(), 512u);

    auto withheld = row(true, 0.2);
    withheld.abstained = true;
    withheld.list = true;
    EXPECT_EQ(to_record_json(withheld)["verdict"], "abstain");
    EXPECT_EQ(to_record_json(withheld)["correct"], false);
    EXPECT_TRUE(to_record_json(withheld).contains("named_share"));
}

}  // namespace
}  // namespace glassbox::cli::eval
