// ExtractiveModel::answer_from_edges on invented graphs: the path along the asked chain, the
// typed end node, an edge and its inverse as one fact, agreement, lists and literals.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "reasoner/reasoner.hpp"
#include "tests/support/citation_marker_ids.hpp"

namespace glassbox::reasoner {
namespace {

using test_support::marker_ids;

// A small invented harbour: ships, the yard that built them, its founder, years.
const std::vector<LabelledEdge> kHarbour{
    {"e1", "MV Petrel", "was built in year", "1911"},
    {"e2", "MV Petrel", "was built by", "Varn Ironworks"},
    {"e3", "Varn Ironworks", "was founded in year", "1870"},
    {"e4", "Varn Ironworks", "was founded by", "Hedda Varn"},
    {"e5", "MV Tern", "was built by", "Varn Ironworks"},
    {"e6", "Hedda Varn", "was born in", "Skelport"},
    {"e7", "Varn Ironworks", "has population", "5"},
};

TEST(GraphAnswerTest, FollowsTheAskedChainToAnAgent) {
    ExtractiveModel m;
    const auto a = m.answer_from_edges("Who founded the yard that built the MV Petrel?", kHarbour);
    EXPECT_EQ(a.answer, "Hedda Varn");
    EXPECT_EQ(a.answer_ids, (std::vector<std::string>{"e2", "e4"}));
    ASSERT_FALSE(a.sentences.empty());
    EXPECT_EQ(a.sentences[0],
              "Hedda Varn founded Varn Ironworks, which built the MV Petrel [e2][e4].");
    EXPECT_LE(a.sentences.size(), 2u);
}

TEST(GraphAnswerTest, TheExpectedTypeChoosesTheEndNode) {
    ExtractiveModel m;
    // "when" wants a year: the year edge, not the builder.
    const auto when = m.answer_from_edges("When was the MV Petrel built?", kHarbour);
    EXPECT_EQ(when.answer, "1911");
    EXPECT_EQ(when.sentences[0], "The MV Petrel was built in 1911 [e1].");
    // "who" wants an agent: the builder, not the year.
    const auto who = m.answer_from_edges("Who built the MV Petrel?", kHarbour);
    EXPECT_EQ(who.answer, "Varn Ironworks");
    EXPECT_EQ(who.sentences[0], "Varn Ironworks built the MV Petrel [e2].");
}

TEST(GraphAnswerTest, ThreeHopChainEndsWhereTheQuestionAsks) {
    ExtractiveModel m;
    const auto a = m.answer_from_edges(
        "Where was the founder of the yard that built the MV Tern born?", kHarbour);
    EXPECT_EQ(a.answer, "Skelport");
    EXPECT_EQ(a.answer_ids, (std::vector<std::string>{"e5", "e4", "e6"}));
    ASSERT_EQ(a.sentences.size(), 1u);
    EXPECT_NE(a.sentences[0].find("Skelport"), std::string::npos);
}

TEST(GraphAnswerTest, AnEdgeAndItsInverseAreOneFact) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"e1", "Ola VENN", "plays in club", "Harbour FC"},
        {"e2", "Harbour FC", "plays in club inverse", "Ola VENN"},
        {"e3", "Ola VENN", "plays position", "Keeper"},
        {"e4", "Keeper", "plays position inverse", "Ola VENN"},
    };
    const auto a = m.answer_from_edges("which club does Ola_VENN play for ?", edges);
    EXPECT_EQ(a.answer, "Harbour FC");
    ASSERT_EQ(a.sentences.size(), 1u);
    EXPECT_EQ(a.sentences[0], "Harbour FC is the club Ola VENN plays in [e1].");
    std::set<std::string> distinct(a.sentences.begin(), a.sentences.end());
    EXPECT_EQ(distinct.size(), a.sentences.size());
}

TEST(GraphAnswerTest, SeveralAnswersAreListedCompactlyWithAgreement) {
    ExtractiveModel m;
    std::vector<LabelledEdge> edges;
    const std::vector<std::string> players{"Ana ORT", "Bo LEE", "Cy DAL", "Di MOR",
                                           "Ed FEN",  "Fa GIL", "Go HAN"};
    for (std::size_t i = 0; i < players.size(); ++i)
        edges.push_back(
            {"e" + std::to_string(i + 1), "Winger", "plays position inverse", players[i]});
    const auto a = m.answer_from_edges("who plays Winger ?", edges);
    EXPECT_EQ(a.answer, "Ana ORT, Bo LEE, Cy DAL, Di MOR, Ed FEN and 2 others");
    ASSERT_EQ(a.sentences.size(), 1u);
    // Several answers are counted.
    EXPECT_EQ(a.sentences[0],
              "7 people, Ana ORT, Bo LEE, Cy DAL, Di MOR, Ed FEN and 2 others, play position "
              "Winger [e1][e2][e3][e4][e5].");
    // One answer: the verb agrees with one subject, and nothing is counted.
    const auto one = m.answer_from_edges("who plays Winger ?", {edges.front()});
    EXPECT_EQ(one.sentences[0], "Ana ORT plays position Winger [e1].");
    // A question asking for the list gets every answer the facts have.
    const auto all = m.answer_from_edges("list the players who play Winger ?", edges);
    EXPECT_EQ(all.answer, "Ana ORT, Bo LEE, Cy DAL, Di MOR, Ed FEN, Fa GIL and Go HAN");
    EXPECT_TRUE(all.sentences[0].starts_with("7 players, Ana ORT,")) << all.sentences[0];
    EXPECT_NE(all.sentences[0].find("[e7]"), std::string::npos) << all.sentences[0];
}

TEST(GraphAnswerTest, WhatAnEventDidIsListedWithACount) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"e1", "Great Gale of 1887", "damaged", "Cobble Quay"},
        {"e2", "Great Gale of 1887", "damaged", "Saltspire Light"},
        {"e3", "Great Gale of 1887", "year of event", "1887"},
    };
    const auto a = m.answer_from_edges("What did the Great Gale of 1887 damage?", edges);
    EXPECT_EQ(a.answer, "Cobble Quay and Saltspire Light");
    ASSERT_FALSE(a.sentences.empty());
    EXPECT_EQ(a.sentences[0],
              "The Great Gale of 1887 damaged 2 things: Cobble Quay and Saltspire Light [e1][e2].");
}

TEST(GraphAnswerTest, AnAnswerJoiningTwoNamedEntitiesWinsAndSaysBoth) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"e1", "Winger", "plays position inverse", "Ana ORT"},
        {"e2", "Winger", "plays position inverse", "Bo LEE"},
        {"e3", "Bo LEE", "plays in club", "Harbour FC"},
        {"e4", "Ana ORT", "plays in club", "Quay United"},
    };
    const auto a = m.answer_from_edges("who plays at position Winger for club Harbour_FC ?", edges);
    EXPECT_EQ(a.answer, "Bo LEE");
    ASSERT_EQ(a.sentences.size(), 2u);
    EXPECT_EQ(a.sentences[0].rfind("Bo LEE", 0), 0u) << a.sentences[0];
    // The path from one named entity, then the fact joining the answer to the other.
    EXPECT_EQ(a.sentences[1].rfind("Bo LEE plays ", 0), 0u) << a.sentences[1];
    std::vector<std::string> ids = marker_ids(a.sentences[0] + " " + a.sentences[1]);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, (std::vector<std::string>{"e2", "e3"}));
    EXPECT_EQ(a.answer_ids.size(), 2u);
}

TEST(GraphAnswerTest, NounRelationsReadAsEnglish) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"e1", "queen_mab", "children", "prince_tor"},
        {"e2", "prince_tor", "gender", "male"},
        {"e3", "queen_mab", "gender", "female"},
    };
    const auto a = m.answer_from_edges("what is the gender of queen_mab 's children ?", edges);
    EXPECT_EQ(a.answer, "male");
    EXPECT_EQ(a.sentences[0], "Male is the gender of prince_tor, a child of queen_mab [e1][e2].");
}

TEST(GraphAnswerTest, LiteralsAreValuesWithTheirUnit) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"e1", "Skel Light", "has height in metres", "31.5"},
        {"e2", "Skel Light", "was built in year", "1860"},
    };
    const auto a = m.answer_from_edges("How tall is Skel Light?", edges);
    EXPECT_EQ(a.answer, "31.5");
    EXPECT_EQ(a.sentences[0], "Skel Light has a height of 31.5 metres [e1].");
}

// Invented royal family: one edge per relation, as a knowledge graph keeps them.
const std::vector<LabelledEdge> kFamily{
    {"e1", "queen mab", "spouse", "king odo"},    {"e2", "queen mab", "parents", "lord wren"},
    {"e3", "lord wren", "children", "queen mab"}, {"e4", "queen mab", "parents", "lady ash"},
    {"e5", "lady ash", "religion", "old faith"},  {"e6", "king odo", "gender", "male"},
};

TEST(GraphAnswerTest, AWalkMayComeBackOverAFactTheQuestionAsksAgain) {
    ExtractiveModel m;
    // spouse → spouse → spouse from queen mab: king odo, by way of queen mab herself.
    const auto spouses = m.answer_from_edges("the wife of queen_mab 's husband 's wife ?", kFamily);
    EXPECT_EQ(spouses.answer, "king odo");
    ASSERT_FALSE(spouses.sentences.empty());
    // Stated from the last named entity on, once: not "…, the spouse of X, the spouse of …".
    EXPECT_EQ(spouses.sentences[0], "King odo is the spouse of queen mab [e1].");
    // Back and forth over one fact that says nothing asked again is no path: the spouse's
    // gender, not queen mab's spouse's spouse.
    const auto gender = m.answer_from_edges("what is the gender of queen_mab 's spouse ?", kFamily);
    EXPECT_EQ(gender.answer, "male");
}

TEST(GraphAnswerTest, AClassWordAskedTwiceIsOneStep) {
    ExtractiveModel m;
    // "faith" and "practice" both ask the religion: two steps (parent, religion), not three.
    const auto a = m.answer_from_edges("what faith does queen_mab 's mom practice ?", kFamily);
    EXPECT_EQ(a.answer, "old faith");
    EXPECT_EQ(a.answer_ids, (std::vector<std::string>{"e4", "e5"}));
}

TEST(GraphAnswerTest, APredicateNamingTheClassFitsItsObjectOnly) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"e1", "Harbour FC", "is in country", "Harbourland"},
        {"e2", "Ola VENN", "plays for country", "Harbourland"},
        {"e3", "Kari STRAND", "plays for country", "Harbourland"},
    };
    // The players have a country; they are not one.
    const auto a =
        m.answer_from_edges("which country is the soccer team Harbour_FC based in ?", edges);
    EXPECT_EQ(a.answer, "Harbourland");
    EXPECT_EQ(a.answer_ids, (std::vector<std::string>{"e1"}));
    // "name a club in X": the class is all that is asked; the nodes named as clubs answer.
    const std::vector<LabelledEdge> clubs{
        {"e1", "Ola VENN", "plays for country", "Harbourland"},
        {"e2", "Club Skerry", "is in country", "Harbourland"},
        {"e3", "Harbour FC", "is in country", "Harbourland"},
    };
    const auto club = m.answer_from_edges("name a soccer club in Harbourland ?", clubs);
    EXPECT_EQ(club.answer, "Club Skerry");
}

TEST(GraphAnswerTest, ANodeTypedAsAnotherClassIsNotTheOneAsked) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"e1", "Skel Light", "was designed by", "Ada Moor"},
        {"e2", "Ada Moor", "was born in", "Wickham"},
        {"e3", "Wickham", "is located on", "Holm"},
        {"e4", "Wickham", "type", "town"},
        {"e5", "Holm", "type", "island"},
    };
    // The class asked for picks the node on the path: the island, or the town.
    for (const auto& [question, answer] : std::vector<std::pair<std::string, std::string>>{
             {"On which island was the designer of Skel Light born?", "Holm"},
             {"In which town was the designer of Skel Light born?", "Wickham"}})
        EXPECT_EQ(m.answer_from_edges(question, edges).answer, answer) << question;
}

TEST(GraphAnswerTest, YesOrNoWhenTheFactsDecide) {
    ExtractiveModel m;
    const auto yes = m.answer_from_edges("Was the MV Petrel built by Varn Ironworks?", kHarbour);
    EXPECT_EQ(yes.answer, "yes");
    EXPECT_EQ(yes.answer_ids, (std::vector<std::string>{"e2"}));
    ASSERT_FALSE(yes.sentences.empty());
    EXPECT_EQ(yes.sentences[0], "Yes: The MV Petrel was built by Varn Ironworks [e2].");
    // The asked relation leads elsewhere and nothing joins the two: no, and what is so.
    const std::vector<LabelledEdge> edges{
        {"e1", "MV Tern", "was built by", "Varn Ironworks"},
        {"e2", "Hedda Varn", "was born in", "Skelport"},
    };
    const auto no = m.answer_from_edges("Was the MV Tern built by Hedda Varn?", edges);
    EXPECT_EQ(no.answer, "no");
    EXPECT_EQ(no.sentences[0], "No: The MV Tern was built by Varn Ironworks [e1].");
    // Nothing about the asked relation: undecided, no short answer (not an entity's name).
    const auto open = m.answer_from_edges("Was Hedda Varn married to Ola Venn?", kHarbour);
    EXPECT_TRUE(open.answer.empty());
}

TEST(GraphAnswerTest, UndecidedSaysSoWithoutAnAnswer) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{{"e1", "Skel Light", "was built in year", "1860"}};
    const auto a = m.answer_from_edges("Who married the keeper of Skel Light?", edges);
    EXPECT_TRUE(a.answer.empty());
    EXPECT_TRUE(a.answer_ids.empty());
    ASSERT_EQ(a.sentences.size(), 1u);
    EXPECT_TRUE(marker_ids(a.sentences[0]).empty());
    const auto none = m.answer_from_edges("Who built it?", {});
    EXPECT_TRUE(none.answer.empty());
    ASSERT_EQ(none.sentences.size(), 1u);
}

// A relation word that only resembles the class asked ("plays" for "teams") must not beat the
// relation whose ends the graph shows to be of that class: the clubs "is in country" reaches,
// though only one of them has a club fact here (the others are clubs as ends of the same
// relation), not the players "plays for country" reaches.
TEST(GraphAnswerTest, TheClassAskedIsAnsweredByEndsTheGraphShowsOfIt) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"e1", "Ola VENN", "plays for country", "Norland"},
        {"e2", "Bo LEE", "plays for country", "Norland"},
        {"e3", "Ana ORT", "plays for country", "Norland"},
        {"e4", "Harbour FC", "is in country", "Norland"},
        {"e5", "Quay United", "is in country", "Norland"},
        {"e6", "Ola VENN", "plays in club", "Harbour FC"},
    };
    for (const char* q :
         {"which soccer teams are based in Norland ?", "name the clubs in the country Norland ?"}) {
        const auto a = m.answer_from_edges(q, edges);
        EXPECT_EQ(a.answer, "Harbour FC and Quay United") << q;
    }
    // "players" and "club" share the lexicon's cue, but a player is who plays: the subjects of
    // "plays in club", not its objects.
    for (const char* q : {"which players play for the national team of Norland ?",
                          "list the players who play for the country Norland ?"}) {
        const auto a = m.answer_from_edges(q, edges);
        EXPECT_EQ(a.answer, "Ola VENN, Bo LEE and Ana ORT") << q;
    }
}

// A word of a named entity's name is not named by the question ("norland" in
// "alda_pavlova_of_norland"): the parent whose nationality is Norland is no better an answer
// than the other, and both are listed.
TEST(GraphAnswerTest, AWordOfANameIsNotANamedEntity) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"e1", "alda pavlova of norland", "parents", "pavel of norland"},
        {"e2", "pavel of norland", "nationality", "norland"},
        {"e3", "alda pavlova of norland", "parents", "mira of halden"},
        {"e4", "mira of halden", "children", "alda pavlova of norland"},
    };
    for (const char* q : {"who are the parents of alda_pavlova_of_norland ?",
                          "list the mother and father of alda_pavlova_of_norland ?"}) {
        const auto a = m.answer_from_edges(q, edges);
        EXPECT_EQ(a.answer, "pavel of norland and mira of halden") << q;
    }
}

}  // namespace
}  // namespace glassbox::reasoner
