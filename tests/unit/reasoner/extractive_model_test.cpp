// The extractive model: concepts from realistic questions, edge scoring that ranks the
// matching edges first, reasons, and answers that cite only what they were given.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <utility>

#include "reasoner/reasoner.hpp"
#include "tests/support/citation_marker_ids.hpp"
#include "text/tokenize.hpp"

namespace glassbox::reasoner {
namespace {

bool has(const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

std::size_t rank_of(const std::vector<std::string>& list, const std::string& item) {
    return static_cast<std::size_t>(std::find(list.begin(), list.end(), item) - list.begin());
}

// ---- concepts ---------------------------------------------------------------------------------

TEST(ExtractConceptsTest, UnderscoreNamesComeFirstAsPlainWords) {
    ExtractiveModel m;
    const auto c = m.extract_concepts("which country is the soccer team Cruz_Azul_FC based in ?");
    ASSERT_FALSE(c.empty());
    EXPECT_EQ(c.front(), "Cruz Azul FC");
    EXPECT_TRUE(has(c, "country"));
    EXPECT_FALSE(has(c, "which"));
    EXPECT_FALSE(has(c, "?"));

    const auto royal = m.extract_concepts(
        "what is the gender of princess_beatrice_of_the_united_kingdom 's children ?");
    ASSERT_FALSE(royal.empty());
    EXPECT_EQ(royal.front(), "princess beatrice of the united kingdom");
    EXPECT_TRUE(has(royal, "gender"));
    EXPECT_TRUE(has(royal, "children"));
}

TEST(ExtractConceptsTest, CapitalisedAndAllCapsNamesAreEntities) {
    ExtractiveModel m;
    const auto both =
        m.extract_concepts("who plays at position Forward for club New_England_Revolution ?");
    ASSERT_GE(both.size(), 2u);
    EXPECT_EQ(std::set<std::string>(both.begin(), both.begin() + 2),
              (std::set<std::string>{"New England Revolution", "Forward"}));
    EXPECT_TRUE(has(both, "plays"));

    const auto caps = m.extract_concepts("what number does HENRIQUE wear ?");
    ASSERT_FALSE(caps.empty());
    EXPECT_EQ(caps.front(), "HENRIQUE");

    const auto spans = m.extract_concepts(
        "Which magazine was started first, Arthur's Magazine or First for Women?");
    EXPECT_TRUE(has(spans, "Arthur's Magazine")) << ::testing::PrintToString(spans);
    EXPECT_TRUE(has(spans, "First for Women")) << ::testing::PrintToString(spans);
    EXPECT_FALSE(has(spans, "Which"));
    EXPECT_LT(rank_of(spans, "First for Women"), rank_of(spans, "magazine"));
}

TEST(ExtractConceptsTest, PossessiveOwnersQuotesAndNumbers) {
    ExtractiveModel m;
    const auto owner =
        m.extract_concepts("what is the name of the child of mom of khufu 's children ?");
    ASSERT_FALSE(owner.empty());
    EXPECT_EQ(owner.front(), "khufu");
    EXPECT_FALSE(has(owner, "children's")) << "a relation word is not an entity";

    const auto quoted = m.extract_concepts("Who recorded \"Bohemian Rhapsody\" in 1975?");
    ASSERT_FALSE(quoted.empty());
    EXPECT_EQ(quoted.front(), "Bohemian Rhapsody");
    EXPECT_TRUE(has(quoted, "1975"));
    EXPECT_TRUE(has(quoted, "recorded"));
}

TEST(ExtractConceptsTest, NamesJoinedByAndOrOrAreSeparateConcepts) {
    ExtractiveModel m;
    const auto c =
        m.extract_concepts("Are King Vidor and Géza von Cziffra both American directors?");
    ASSERT_GE(c.size(), 2u);
    EXPECT_EQ(c[0], "King Vidor");
    EXPECT_EQ(c[1], "Géza von Cziffra");
    EXPECT_TRUE(has(c, "King Vidor and Géza von Cziffra")) << "kept, weaker, for titles";
    EXPECT_LT(rank_of(c, "Géza von Cziffra"), rank_of(c, "King Vidor and Géza von Cziffra"));

    const auto titles =
        m.extract_concepts("Who performed in both Welcome to the Show and the band f(x)?");
    EXPECT_TRUE(has(titles, "Welcome to the Show")) << ::testing::PrintToString(titles);
    EXPECT_TRUE(has(titles, "f(x)")) << ::testing::PrintToString(titles);

    const auto initials =
        m.extract_concepts("What do E. B. White and Dan Masterson have in common?");
    EXPECT_TRUE(has(initials, "E. B. White")) << ::testing::PrintToString(initials);
    EXPECT_TRUE(has(initials, "Dan Masterson"));
}

TEST(ExtractConceptsTest, AtMostTheLimitDistinctAndNeverEmptyStrings) {
    ExtractiveModel m;
    const std::string question =
        "Compare the Golden Gate Bridge, the Brooklyn Bridge, the Tower Bridge, the Rialto Bridge, "
        "the Charles Bridge, the Ponte Vecchio, the Millau Viaduct, the Akashi Bridge, the "
        "Sydney Harbour Bridge and the Forth Bridge by length, age, cost and golden colour";
    const auto c = m.extract_concepts(question);
    EXPECT_EQ(c.size(), 10u);
    std::set<std::string> normalized;
    for (const auto& s : c) {
        EXPECT_FALSE(s.empty());
        EXPECT_TRUE(normalized.insert(text::normalize(s)).second) << "duplicate " << s;
    }
    EXPECT_EQ(m.extract_concepts(question, 3).size(), 3u);
    EXPECT_TRUE(m.extract_concepts("").empty());
    EXPECT_TRUE(m.extract_concepts("   ?? ").empty());
    EXPECT_TRUE(m.extract_concepts("what is it ?").empty()) << "only stopwords: nothing to look up";
}

// Every development question of kg-pathquestion names its topic entities with underscores or
// capitals; each must come out as a concept, and the first concept must be one of them.
TEST(ExtractConceptsTest, FindsTheTopicEntitiesOfThePathQuestions) {
    const std::filesystem::path file =
        std::filesystem::path(GLASSBOX_SHARED_DATA) / "kg-pathquestion" / "questions-dev.jsonl";
    if (!std::filesystem::exists(file)) GTEST_SKIP() << "no " << file << " (../shared/data absent)";
    ExtractiveModel m;
    std::ifstream in(file);
    std::string line;
    std::size_t questions = 0;
    while (std::getline(in, line)) {
        const auto q = nlohmann::json::parse(line);
        const auto concepts = m.extract_concepts(q["question"].get<std::string>());
        std::set<std::string> got;
        for (const auto& c : concepts) got.insert(text::normalize(c));
        bool first_is_topic = false;
        for (const auto& topic : q["topic_entities"]) {
            const auto t = text::normalize(topic.get<std::string>());
            EXPECT_TRUE(got.contains(t)) << q["question"] << " lacks " << t;
            first_is_topic =
                first_is_topic || (!concepts.empty() && text::normalize(concepts[0]) == t);
        }
        EXPECT_TRUE(first_is_topic) << q["question"];
        ++questions;
    }
    EXPECT_GT(questions, 100u);
}

// ---- edge scoring ----------------------------------------------------------------------------

std::vector<double> score(const std::string& question, const std::vector<LabelledEdge>& edges,
                          const std::vector<double>* similarity = nullptr) {
    ExtractiveModel m;
    return m.score_edges(question, m.extract_concepts(question), edges, similarity).value();
}

// A question and the edges it is scored against: each (higher, lower) pair of edge indices must
// rank in that order, and every score lies in [0, 1].
struct RankingCase {
    std::string name;
    std::string question;
    std::vector<LabelledEdge> edges;
    std::vector<std::pair<std::size_t, std::size_t>> ranked;
};

void PrintTo(const RankingCase& c, std::ostream* out) { *out << c.name; }

// A ship, the yard that built it and the yard's founder, with the years.
const std::vector<LabelledEdge> kYard{
    {"e1", "MV Petrel", "was built in year", "1911"},
    {"e2", "MV Petrel", "was built by", "Varn Ironworks"},
    {"e3", "Varn Ironworks", "was founded in year", "1870"},
    {"e4", "Varn Ironworks", "was founded by", "Hedda Varn"},
};

const RankingCase kRankingCases[] = {
    // The matching edge first; then an edge of the named entity, above a stranger's.
    {"TheMatchingEdgeRanksAboveUnrelatedOnes",
     "which country is the soccer team Cruz_Azul_FC based in ?",
     {{"e1", "Cruz Azul FC", "is in country", "Mexico"},
      {"e2", "Cruz Azul FC", "plays in club inverse", "Marco FABIAN"},
      {"e3", "Paris Saint-Germain FC", "is in country", "France"},
      {"e4", "Marco FABIAN", "is aged", "24"}},
     {{0, 1}, {0, 2}, {0, 3}, {1, 3}}},
    // The second hop that answers 'where' (e5) beats the other club edges.
    {"BothEdgesOfATwoHopPathBeatTheirNeighbours",
     "where is the football club that Eric_CHOUPO_MOTING plays for ?",
     {{"e1", "Eric CHOUPO MOTING", "plays position", "Forward"},
      {"e2", "1. FSV Mainz 05", "plays in club inverse", "Nicolai MUELLER"},
      {"e3", "Eric CHOUPO MOTING", "plays in club", "1. FSV Mainz 05"},
      {"e4", "Eric CHOUPO MOTING", "is aged", "25"},
      {"e5", "1. FSV Mainz 05", "is in country", "Germany"},
      {"e6", "Nicolai MUELLER", "wears number", "27"}},
     {{2, 0}, {2, 3}, {4, 1}, {4, 5}, {4, 0}}},
    // "other half" and "spouse" both name the spouse relation; the chain has three spouse hops,
    // each above each of the three other edges.
    {"RelationWordsMatchThroughSynonymsAndRepeatAlongAChain",
     "what is the other half of spouse of henry_v_holy_roman_emperor 's spouse ?",
     {{"e1", "henry v holy roman emperor", "spouse", "matilda"},
      {"e2", "matilda", "spouse", "geoffrey v count of anjou"},
      {"e3", "geoffrey v count of anjou", "spouse", "matilda of anjou"},
      {"e4", "henry v holy roman emperor", "gender", "male"},
      {"e5", "matilda", "religion", "catholicism"},
      {"e6", "geoffrey v count of anjou", "place of birth", "anjou"}},
     {{0, 3}, {0, 4}, {0, 5}, {1, 3}, {1, 4}, {1, 5}, {2, 3}, {2, 4}, {2, 5}}},
    {"APathJoiningBothNamedEntitiesWins",
     "name a player who plays at Forward position at the club FC_Porto ?",
     {{"e1", "Forward", "plays position inverse", "Abel HERNANDEZ"},
      {"e2", "Forward", "plays position inverse", "Jackson MARTINEZ"},
      {"e3", "FC Porto", "plays in club inverse", "Jackson MARTINEZ"},
      {"e4", "FC Porto", "plays in club inverse", "HELTON"},
      {"e5", "HELTON", "plays position", "Goalkeeper"}},
     {{1, 0}, {2, 3}, {2, 4}}},
    // The expected answer type: "who" wants the founder and the builder, not the years ...
    {"TheExpectedAnswerTypeRanksTheAgentAboveTheYear",
     "Who founded the yard that built the MV Petrel?",
     kYard,
     {{3, 2}, {1, 0}}},
    // ... and "when" the founding year, not the founder.
    {"TheExpectedAnswerTypeRanksTheYearAboveTheAgent",
     "When was the yard that built the MV Petrel founded?",
     kYard,
     {{2, 3}}},
};

class EdgeRankingTest : public ::testing::TestWithParam<RankingCase> {};

TEST_P(EdgeRankingTest, RanksTheEdgesInOrder) {
    const RankingCase& c = GetParam();
    const auto s = score(c.question, c.edges);
    ASSERT_EQ(s.size(), c.edges.size());
    for (double x : s) {
        EXPECT_GE(x, 0.0);
        EXPECT_LE(x, 1.0);
    }
    for (const auto& [higher, lower] : c.ranked)
        EXPECT_GT(s[higher], s[lower]) << c.edges[higher].id << " above " << c.edges[lower].id;
}

INSTANTIATE_TEST_SUITE_P(ScoreEdgesTest, EdgeRankingTest, ::testing::ValuesIn(kRankingCases),
                         [](const ::testing::TestParamInfo<RankingCase>& info) {
                             return info.param.name;
                         });

TEST(ScoreEdgesTest, DeterministicAndIndependentOfEdgeOrder) {
    std::vector<LabelledEdge> edges{
        {"e1", "Cruz Azul FC", "is in country", "Mexico"},
        {"e2", "Cruz Azul FC", "plays in club inverse", "Marco FABIAN"},
        {"e3", "Marco FABIAN", "plays position", "Midfielder"},
        {"e4", "Mexico", "is in country inverse", "Club America"},
    };
    const std::string q = "which country is the soccer team Cruz_Azul_FC based in ?";
    const auto first = score(q, edges);
    EXPECT_EQ(first, score(q, edges));
    std::reverse(edges.begin(), edges.end());
    auto reversed = score(q, edges);
    std::reverse(reversed.begin(), reversed.end());
    EXPECT_EQ(first, reversed);
    EXPECT_TRUE(score(q, {}).empty());
}

TEST(ScoreEdgesTest, EmbeddingSimilarityIsBlendedIn) {
    const std::vector<LabelledEdge> edges{
        {"e1", "Lake Orrin", "feeds", "River Tam"},
        {"e2", "Lake Orrin", "borders", "Tam Forest"},
    };
    const std::string q = "What does Lake_Orrin do?";
    const auto plain = score(q, edges);
    EXPECT_EQ(plain[0], plain[1]) << "lexically alike";
    const std::vector<double> cosines{0.9, 0.1};
    const auto blended = score(q, edges, &cosines);
    EXPECT_GT(blended[0], blended[1]);
    for (double x : blended) EXPECT_LE(x, 1.0);
}

// A club (named in the question) with `players` players, each playing the same position: every
// path from the club through a player to the position goes on to every other player, so a
// search that walks each path costs players squared (20,000 edges took ~25 s).
std::vector<LabelledEdge> club_with_one_position(std::size_t players) {
    std::vector<LabelledEdge> edges;
    for (std::size_t i = 0; i < players; ++i) {
        const std::string player = "Player " + std::to_string(i);
        edges.push_back({"c" + std::to_string(i), "Cruz Azul FC", "plays in club inverse", player});
        edges.push_back({"p" + std::to_string(i), player, "plays position", "Forward"});
    }
    return edges;
}

// The scores, and the search's work counted rather than timed: the model asks its cancel check
// once every few thousand steps, so the number of checks grows as the steps do.
std::pair<std::vector<double>, int> score_counting_checks(const std::string& question,
                                                          const std::vector<LabelledEdge>& edges) {
    ExtractiveModel m;
    int asked = 0;
    const CancelCheck count = [&asked] {
        ++asked;
        return false;
    };
    auto scores = m.score_edges(question, m.extract_concepts(question), edges, nullptr, count);
    EXPECT_TRUE(scores);
    return {scores.value_or(std::vector<double>{}), asked};
}

TEST(ScoreEdgesTest, AHubReachedByManyPathsScoresInNearLinearTime) {
    const std::string q = "which country is the soccer team Cruz_Azul_FC based in ?";
    const auto small = score(q, club_with_one_position(3));
    const auto edges = club_with_one_position(10'000);
    // Four times the players: about four times the steps when near-linear, sixteen times when
    // every path is walked (and then the step budget, far beyond either, would cut it short).
    const int quarter = score_counting_checks(q, club_with_one_position(2'500)).second;
    const auto [large, whole] = score_counting_checks(q, edges);
    ASSERT_GT(quarter, 0) << "the cancel check is asked during the search";
    EXPECT_LE(whole, 5 * quarter) << "quadratic in the edges again? " << quarter << " then "
                                  << whole << " checks";
    ASSERT_EQ(large.size(), edges.size());
    // Every club edge and every position edge scores as in the small graph: each still has its
    // best path (club, player, position, other player).
    for (std::size_t i = 0; i < large.size(); ++i) {
        EXPECT_EQ(large[i], small[i % 2]) << i;
        if (large[i] != small[i % 2]) break;
    }
    EXPECT_GT(small[1], 0.0) << "a position edge has no lexical evidence: its score is its path's";
}

TEST(ScoreEdgesTest, ACancelledScoringStopsPromptly) {
    ExtractiveModel m;
    const std::string q = "which country is the soccer team Cruz_Azul_FC based in ?";
    const auto edges = club_with_one_position(10'000);
    int asked = 0;
    const CancelCheck cancelled = [&asked] { return ++asked > 1; };
    const auto scores = m.score_edges(q, m.extract_concepts(q), edges, nullptr, cancelled);
    EXPECT_FALSE(scores) << "a cancelled scoring answers nothing";
    EXPECT_EQ(asked, 2) << "stops at the first check that says cancelled";
    EXPECT_FALSE(m.reason_edges(q, edges, [] { return true; }));
    const CancelCheck never = [] { return false; };
    EXPECT_TRUE(m.score_edges(q, m.extract_concepts(q), edges, nullptr, never));
}

// ---- reasons ---------------------------------------------------------------------------------

TEST(ReasonEdgesTest, SayWhatMatched) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"e1", "Cruz Azul FC", "is in country", "Mexico"},
        {"e2", "Marco FABIAN", "is aged", "24"},
    };
    const auto r =
        m.reason_edges("which country is the soccer team Cruz_Azul_FC based in ?", edges).value();
    ASSERT_EQ(r.size(), 2u);
    EXPECT_NE(r[0].find("\"Cruz Azul FC\" is named in the question"), std::string::npos) << r[0];
    EXPECT_NE(r[0].find("\"country\""), std::string::npos) << r[0];
    EXPECT_NE(r[1].find("matches no entity or relation word"), std::string::npos) << r[1];
    EXPECT_EQ(
        r,
        m.reason_edges("which country is the soccer team Cruz_Azul_FC based in ?", edges).value());
}

// Labels and predicates that recur across edges are looked at once a call: each edge's reason is
// still its own, the same as when it is reasoned about alone.
TEST(ReasonEdgesTest, RecurringLabelsAndPredicatesGiveEachEdgeItsOwnReason) {
    ExtractiveModel m;
    const std::string q = "which country is the soccer team Cruz_Azul_FC based in ?";
    const std::vector<LabelledEdge> edges{
        {"e1", "Cruz Azul FC", "is in country", "Mexico"},
        {"e2", "Marco FABIAN", "is aged", "24"},
        {"e3", "Cruz Azul FC", "is in country", "Spain"},
        {"e4", "Marco FABIAN", "is aged", "25"},
    };
    const auto r = m.reason_edges(q, edges).value();
    ASSERT_EQ(r.size(), 4u);
    EXPECT_NE(r[2].find("\"Cruz Azul FC\" is named in the question"), std::string::npos) << r[2];
    EXPECT_NE(r[2].find("its relation \"is in country\" matches \"country\""), std::string::npos)
        << r[2];
    EXPECT_NE(r[3].find("\"Marco FABIAN is aged 25\" matches no entity or relation word"),
              std::string::npos)
        << r[3];
    for (std::size_t i = 0; i < edges.size(); ++i)
        EXPECT_EQ(r[i], m.reason_edges(q, {edges[i]}).value().at(0)) << i;
}

TEST(ReasonEdgesTest, AnEdgeFurtherAlongAPathSaysWhereThePathStarts) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"e1", "Eric CHOUPO MOTING", "plays in club", "1. FSV Mainz 05"},
        {"e2", "1. FSV Mainz 05", "is in country", "Germany"},
    };
    const auto r =
        m.reason_edges("where is the football club that Eric_CHOUPO_MOTING plays for ?", edges)
            .value();
    ASSERT_EQ(r.size(), 2u);
    EXPECT_NE(r[1].find("reached from \"Eric CHOUPO MOTING\", named in the question, through "
                        "\"plays in club\""),
              std::string::npos)
        << r[1];
    EXPECT_NE(r[1].find("\"where\""), std::string::npos) << r[1];
}

// ---- synthesis -------------------------------------------------------------------------------

using test_support::marker_ids;

std::string joined(const std::vector<std::string>& pieces) {
    std::string out;
    for (const auto& p : pieces) out += (out.empty() ? "" : " ") + p;
    return out;
}

TEST(SynthesisTest, GraphAnswersCiteOnlyGivenIds) {
    ExtractiveModel m;
    const std::vector<LabelledEdge> edges{
        {"bad id!", "Cruz Azul FC", "is in country", "Atlantis"},
        {"e1", "Cruz Azul FC", "is in country", "Mexico"},
        {"e2", "Forward", "plays position inverse", "Marco FABIAN"},
        {"e3", "Cruz Azul FC", "plays in club inverse", "Marco FABIAN"},
        {"e1", "Cruz Azul FC", "is in country", "Duplicate"},
    };
    const auto a =
        m.answer_from_edges("which country is the soccer team Cruz_Azul_FC based in ?", edges);
    EXPECT_EQ(a.answer, "Mexico");
    EXPECT_EQ(a.answer_ids, (std::vector<std::string>{"e1"}));
    ASSERT_FALSE(a.sentences.empty());
    EXPECT_EQ(a.sentences[0], "Mexico is the country Cruz Azul FC is in [e1].");
    const std::string text = joined(a.sentences);
    for (const auto& id : marker_ids(text))
        EXPECT_TRUE(id == "e1" || id == "e2" || id == "e3") << id;
    EXPECT_EQ(text.find("Atlantis"), std::string::npos) << "an edge it cannot cite is left out";
    EXPECT_EQ(text.find("Duplicate"), std::string::npos) << "a repeated id is used once";

    // An inverse predicate reads the other way round.
    const auto who = m.answer_from_edges("who plays Forward ?", edges);
    EXPECT_EQ(who.answer, "Marco FABIAN");
    EXPECT_EQ(who.sentences[0], "Marco FABIAN plays position Forward [e2].");

    const auto none = m.answer_from_edges("q", {}).sentences;
    ASSERT_EQ(none.size(), 1u);
    EXPECT_TRUE(marker_ids(none[0]).empty());
}

TEST(SynthesisTest, DocumentAnswersQuoteTheBestSentencesExactly) {
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1", "Paris has many museums. The Louvre is the largest of them.", "Paris"},
        {"c2",
         "The Eiffel Tower is a wrought-iron tower in Paris. Construction of the Eiffel Tower "
         "was finished in March 1889 by the company of Gustave Eiffel. It is 330 m tall.",
         "Eiffel Tower"},
    };
    const auto pieces =
        m.answer_from_chunks("When was construction of the Eiffel Tower finished?", chunks)
            .sentences;
    ASSERT_FALSE(pieces.empty());
    EXPECT_EQ(pieces[0],
              "Construction of the Eiffel Tower was finished in March 1889 by the company of "
              "Gustave Eiffel. [c2]");
    for (const auto& p : pieces) {
        const auto ids = marker_ids(p);
        ASSERT_EQ(ids.size(), 1u) << p;
        const auto& chunk = ids[0] == "c1" ? chunks[0] : chunks[1];
        const std::string quote = p.substr(0, p.size() - ids[0].size() - 3);
        EXPECT_NE(chunk.text.find(quote), std::string::npos) << "not an exact quote: " << quote;
    }
    EXPECT_LE(pieces.size(), 3u);
    EXPECT_EQ(pieces,
              m.answer_from_chunks("When was construction of the Eiffel Tower finished?", chunks)
                  .sentences);
}

TEST(SynthesisTest, MarkdownHeadingsAreNeverQuoted) {
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1",
         "The old light was damaged in the storm of 1887.\n# The Storm of 1887\nThe storm of 1887 "
         "tore the lantern open and the keeper kept a lamp burning.\n\n## Storm damage\n",
         "Storms"},
    };
    const auto pieces =
        m.answer_from_chunks("What did the storm of 1887 damage?", chunks).sentences;
    ASSERT_FALSE(pieces.empty());
    for (const auto& p : pieces) {
        EXPECT_EQ(p.find('#'), std::string::npos) << p;
        const std::string quote = p.substr(0, p.size() - std::string(" [c1]").size());
        EXPECT_NE(chunks[0].text.find(quote), std::string::npos) << "not an exact quote: " << quote;
    }
    EXPECT_EQ(pieces.size(), 2u);
}

TEST(SynthesisTest, ComparisonQuestionsQuoteBothDocuments) {
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1",
         "Arthur's Magazine (1844-1846) was an American literary periodical published in "
         "Philadelphia.",
         "Arthur's Magazine"},
        {"c2",
         "First for Women is a woman's magazine published by Bauer Media Group in the USA. The "
         "magazine was started in 1989.",
         "First for Women"},
        {"c3", "Philadelphia is the largest city in Pennsylvania.", "Philadelphia"},
    };
    const auto pieces =
        m.answer_from_chunks(
             "Which magazine was started first Arthur's Magazine or First for Women?", chunks)
            .sentences;
    std::set<std::string> cited;
    for (const auto& p : pieces)
        for (const auto& id : marker_ids(p)) cited.insert(id);
    EXPECT_TRUE(cited.contains("c1"));
    EXPECT_TRUE(cited.contains("c2"));
}

TEST(SynthesisTest, ChunksWithUnusableIdsAreNeverCited) {
    ExtractiveModel m;
    const auto pieces =
        m.answer_from_chunks("tower", {{"no spaces allowed", "The tower is tall.", ""}}).sentences;
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_TRUE(marker_ids(pieces[0]).empty());
}

TEST(CountWordsTest, CountsWhitespaceSeparatedTokens) {
    const std::pair<std::string, std::size_t> cases[] = {
        {"", 0}, {"  ", 0}, {"one", 1}, {" two  words\n", 2}, {"{\"concepts\":[\"a b\"]}", 2}};
    for (const auto& [text, words] : cases) EXPECT_EQ(count_words(text), words) << text;
}

}  // namespace
}  // namespace glassbox::reasoner
