// question_intent: the expected answer type of invented questions, and the literal checks.
#include "reasoner/detail/question_intent.hpp"

#include <string>
#include <string_view>
#include <utility>

#include <gtest/gtest.h>

#include "reasoner/detail/relation_cues.hpp"
#include "text/similarity.hpp"

namespace glassbox::reasoner::detail {
namespace {

using TypeAndClass = std::pair<AnswerType, std::string>;

// The answer type `question` asks for, and the class word naming it.
TypeAndClass type_and_class(std::string_view question) {
    const auto intent = question_intent(question);
    return {intent.type, intent.class_word};
}

TEST(QuestionIntentTest, WhWordsGiveTheirType) {
    EXPECT_EQ(question_intent("Who founded the shipyard that built the MV Curlew?").type,
              AnswerType::kAgent);
    EXPECT_EQ(question_intent("whose daughter ran the yard ?").type, AnswerType::kAgent);
    EXPECT_EQ(question_intent("When did the Curlew first sail?").type, AnswerType::kTime);
    EXPECT_EQ(question_intent("Where is Brinehaven?").type, AnswerType::kPlace);
    EXPECT_EQ(question_intent("How many ships did the yard build?").type, AnswerType::kNumber);
    EXPECT_EQ(question_intent("What is the tonnage of the Curlew?").type, AnswerType::kAny);
}

TEST(QuestionIntentTest, WhichXAsksForAnX) {
    EXPECT_EQ(type_and_class("which club does Lionel_MESSI play for ?"),
              TypeAndClass(AnswerType::kClass, "club"));
    EXPECT_EQ(type_and_class("In what year was the yard founded?"),
              TypeAndClass(AnswerType::kTime, "year"));
    const auto country = question_intent("the shipyard is in which country ?");
    EXPECT_EQ(country.type, AnswerType::kPlace);
    EXPECT_EQ(country.wh, "which");
}

TEST(QuestionIntentTest, TheClassIsTheNounThatEndsThePhrase) {
    // Of two words the second ends the phrase: "soccer club is" → club.
    EXPECT_EQ(type_and_class("which soccer club is based in Harbourland ?"),
              TypeAndClass(AnswerType::kClass, "club"));
    // A named entity after the class word does not replace it.
    EXPECT_EQ(question_intent("which team Ola_VENN plays for ?").class_word, "team");
    EXPECT_EQ(question_intent("what faith does the keeper practice ?").class_word, "faith");
}

TEST(QuestionIntentTest, AnInstructionAsksForAnX) {
    EXPECT_EQ(type_and_class("name a soccer club in Harbourland ?"),
              TypeAndClass(AnswerType::kClass, "club"));
    EXPECT_EQ(type_and_class("List the ships built in 1898"),
              TypeAndClass(AnswerType::kClass, "ships"));
    EXPECT_EQ(question_intent("give me a city on the coast").type, AnswerType::kPlace);
    // "Name" as a subject, not an instruction.
    EXPECT_EQ(question_intent("Name the founder of the yard").class_word, "founder");
}

TEST(QuestionIntentTest, AQuestionForEveryAnswerIsAList) {
    const auto children = question_intent("who are the children of Ilse_VARROW ?");
    EXPECT_TRUE(children.list);
    EXPECT_EQ(children.list_noun, "children");
    const auto ships = question_intent("List the ships built in 1898");
    EXPECT_TRUE(ships.list);
    EXPECT_EQ(ships.list_noun, "ships");
    EXPECT_TRUE(question_intent("which lighthouses did Ilse Varrow design?").list);
    EXPECT_TRUE(question_intent("name all the kids of Ada_MOOR ?").list);
    // One thing asked: the nationality of the children, the club, a yes/no, a count.
    EXPECT_FALSE(question_intent("what is the nationality of Ada_MOOR 's children ?").list);
    EXPECT_FALSE(question_intent("which club does Lionel_MESSI play for ?").list);
    EXPECT_FALSE(question_intent("Are the lighthouses on Solen Island?").list);
    EXPECT_FALSE(question_intent("How many ships did the yard build?").list);
    // Not a list, but counted in words when several answers come.
    EXPECT_EQ(question_intent("who plays Winger ?").list_noun, "people");
    EXPECT_EQ(question_intent("what did the Great Gale damage ?").list_noun, "things");
}

TEST(QuestionIntentTest, AlternativesJoinedByOrAreOneRelation) {
    const auto gender = question_intent("is ola_venn 's father a man or a woman ?");
    EXPECT_EQ(gender.chain, (std::vector<std::string>{"parent", "gender"}));
}

TEST(QuestionIntentTest, AuxiliaryFirstIsYesNo) {
    EXPECT_EQ(question_intent("Are the Curlew and the Gannet from the same yard?").type,
              AnswerType::kYesNo);
    EXPECT_EQ(question_intent("Did Oskar Brenn found the yard?").type, AnswerType::kYesNo);
    EXPECT_TRUE(question_intent("Was it built in 1898?").wh.empty());
    EXPECT_NE(question_intent("Which ship is older, the Curlew or the Gannet?").type,
              AnswerType::kYesNo);
    // Alternatives are no yes/no question.
    EXPECT_EQ(question_intent("is ola_venn 's father a man or a woman ?").type, AnswerType::kAny);
}

TEST(QuestionIntentTest, TheChainRunsOutwardsFromTheNamedEntity) {
    // Nested clauses before the entity read right to left.
    const auto founder = question_intent("Who founded the yard that built the MV Petrel?");
    EXPECT_EQ(founder.entities, (std::vector<std::string>{"MV Petrel"}));
    ASSERT_EQ(founder.chain.size(), 3u);
    EXPECT_EQ(founder.chain.front(), "built");
    EXPECT_EQ(founder.chain.back(), "founder");
    // Possessives after the entity read left to right, before the "of" clauses.
    const auto kin = question_intent("the religion of father of queen_mab 's kid ?");
    EXPECT_EQ(kin.entities, (std::vector<std::string>{"queen mab"}));
    EXPECT_EQ(kin.chain, (std::vector<std::string>{"child", "parent", "religion"}));
    const auto spouses = question_intent("the wife of ola_venn 's husband 's wife ?");
    EXPECT_EQ(spouses.chain, (std::vector<std::string>{"spouse", "spouse", "spouse"}));
    // A type word beside the entity is not a step of the chain.
    const auto club = question_intent("which country is the soccer team Harbour_FC based in ?");
    for (const auto& step : club.chain) EXPECT_NE(step.rfind("type:", 0), 0u) << step;
}

// The remembered analysis is what analysing anew gives, for the question asked (never a
// neighbour's), also once more questions than the table holds pushed it out.
TEST(QuestionIntentTest, AnalysedQuestionIsTheAnalysisOfThatQuestion) {
    const auto expect_fresh = [](std::string_view question) {
        SCOPED_TRACE(std::string(question));
        const auto analysed = analysed_question(question);
        ASSERT_NE(analysed, nullptr);
        const auto analysis = analyze_question(question);
        const auto intent = question_intent(question, analysis);
        const auto relations = question_relations(analysis);
        ASSERT_EQ(analysed->analysis.candidates.size(), analysis.candidates.size());
        for (std::size_t i = 0; i < analysis.candidates.size(); ++i)
            EXPECT_EQ(analysed->analysis.candidates[i].text, analysis.candidates[i].text);
        ASSERT_EQ(analysed->analysis.tokens.size(), analysis.tokens.size());
        EXPECT_EQ(analysed->intent.type, intent.type);
        EXPECT_EQ(analysed->intent.class_word, intent.class_word);
        EXPECT_EQ(analysed->intent.entities, intent.entities);
        EXPECT_EQ(analysed->intent.chain, intent.chain);
        EXPECT_EQ(analysed->relations.chain, relations.chain);
        EXPECT_EQ(analysed->relations.mentions.size(), relations.mentions.size());
        EXPECT_EQ(analysed->relations.total_weight, relations.total_weight);
    };
    const std::string first = "Who founded the shipyard that built the MV Curlew?";
    const auto remembered = analysed_question(first);
    EXPECT_EQ(analysed_question(first), remembered);  // asked again: the same analysis
    expect_fresh(first);
    for (int i = 0; i < 20; ++i)
        expect_fresh("which club does Player_" + std::to_string(i) + " play for ?");
    expect_fresh(first);
    EXPECT_NE(analysed_question(first), remembered);                    // pushed out, analysed anew
    expect_fresh("Who founded the shipyard that built the MV Curlew");  // one byte less
    EXPECT_EQ(remembered->intent.type, AnswerType::kAgent);  // the caller's copy outlives it
}

TEST(QuestionIntentTest, TypeMismatchRulesOutValuesOfTheWrongKind) {
    const auto who = question_intent("Who built the MV Petrel?");
    EXPECT_TRUE(answer_type_mismatch(who, "1911"));
    EXPECT_FALSE(answer_type_mismatch(who, "Varn Ironworks"));
    const auto when = question_intent("When was the MV Petrel built?");
    EXPECT_TRUE(answer_type_mismatch(when, "Varn Ironworks"));
    EXPECT_FALSE(answer_type_mismatch(when, "12 May 1911"));
    const auto many = question_intent("How many ships did the yard build?");
    EXPECT_TRUE(answer_type_mismatch(many, "Varn Ironworks"));
    EXPECT_FALSE(answer_type_mismatch(many, "14"));
    const auto number = question_intent("what number does Ola_VENN wear ?");
    EXPECT_FALSE(answer_type_mismatch(number, "9"));
    EXPECT_FALSE(answer_type_mismatch(question_intent("What is the Petrel?"), "1911"));
}

TEST(QuestionIntentTest, LiteralShapes) {
    EXPECT_TRUE(looks_like_time("1898"));
    EXPECT_TRUE(looks_like_time("12 May 1898"));
    EXPECT_TRUE(looks_like_time("1890s"));
    EXPECT_FALSE(looks_like_time("Oskar Brenn"));
    EXPECT_FALSE(looks_like_time("42"));
    EXPECT_TRUE(looks_like_number("42"));
    EXPECT_TRUE(looks_like_number("3.5 km"));
    EXPECT_TRUE(looks_like_number("two million"));
    EXPECT_FALSE(looks_like_number("Brinehaven"));
}

// Relation words carry their stem's trigrams (issue 33: made once per question, not per
// predicate word and request); predicate_match gives what it gives without them, spelling
// matches ("spousal" / "spouse") included.
TEST(QuestionIntentTest, RelationWordsCarryTheirTrigramsAndMatchAsWithout) {
    const auto relations = question_relations(
        analyze_question("what is the nationality of the spouse of the founder of Brinehaven ?"));
    ASSERT_FALSE(relations.words.empty());
    auto without = relations.words;
    bool some = false;
    for (std::size_t j = 0; j < without.size(); ++j) {
        const auto& w = relations.words[j];
        EXPECT_EQ(w.stem_trigrams.packed.empty(), w.stem.size() < kTrigramStemMin) << w.stem;
        if (!w.stem_trigrams.packed.empty()) {
            EXPECT_EQ(w.stem_trigrams.packed, text::trigrams(w.stem).packed) << w.stem;
        }
        some = some || !w.stem_trigrams.packed.empty();
        without[j].stem_trigrams = {};
    }
    EXPECT_TRUE(some);
    for (const std::string_view predicate :
         {"national of", "nationalities", "nationalist", "spouse", "spousal", "founded by",
          "married to", "nations", "wifes", "foundry", "is in country", "plays in club inverse"}) {
        EXPECT_EQ(predicate_match(predicate, relations.words), predicate_match(predicate, without))
            << predicate;
    }
    // A spelling match is found through the trigrams (neither the stem nor a cue is shared):
    // "spousal" against "spouse", 0.6 x their trigram similarity.
    bool spelled = false;
    for (const auto& row : predicate_match("spousal", relations.words))
        for (const double m : row) spelled = spelled || (m > 0.0 && m < 0.6);
    EXPECT_TRUE(spelled);
}

// answer_type_mismatch splits a label once for both literal checks: the same as the checks.
TEST(QuestionIntentTest, TypeMismatchIsTheLiteralChecksOfTheLabel) {
    for (const std::string_view question :
         {"who founded Brinehaven ?", "where is Brinehaven ?", "which club does X play for ?"}) {
        const auto intent = question_intent(question);
        for (const std::string_view label :
             {"1890s", "12 May 1990", "twenty", "Brinehaven", "7", "may", "1990 AD", ""}) {
            EXPECT_EQ(answer_type_mismatch(intent, label),
                      looks_like_time(label) || looks_like_number(label))
                << question << " / " << label;
        }
    }
}

}  // namespace
}  // namespace glassbox::reasoner::detail
