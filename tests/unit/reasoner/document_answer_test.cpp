// The extractive document writer on invented documents: the answering sentence first (by the
// expected answer type, along a two-step bridge), yes/no and either-or questions decided from
// the evidence or left undecided, at most three exact, cited, distinct sentences.
#include <gtest/gtest.h>

#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "reasoner/detail/answer_spans.hpp"
#include "reasoner/reasoner.hpp"

namespace glassbox::reasoner {
namespace {

// The chunk id of "… [c2]" and the quote before it (a "Yes: " / "No: " lead stripped).
std::pair<std::string, std::string> split_cited(const std::string& sentence) {
    const auto open = sentence.rfind(" [");
    if (open == std::string::npos || sentence.back() != ']') return {};
    std::string quote = sentence.substr(0, open);
    for (std::string_view lead : {"Yes: ", "No: "})
        if (quote.starts_with(lead)) quote.erase(0, lead.size());
    return {sentence.substr(open + 2, sentence.size() - open - 3), quote};
}

// Every sentence cites one given chunk and quotes it exactly; none repeats; at most three.
void expect_well_formed(const ComposedAnswer& a, const std::vector<TextChunk>& chunks) {
    EXPECT_LE(a.sentences.size(), 3u);
    std::set<std::string> seen;
    for (const auto& s : a.sentences) {
        const auto [id, quote] = split_cited(s);
        const TextChunk* chunk = nullptr;
        for (const auto& c : chunks)
            if (c.id == id) chunk = &c;
        ASSERT_NE(chunk, nullptr) << "not cited with a given id: " << s;
        EXPECT_NE(chunk->text.find(quote), std::string::npos) << "not an exact quote: " << s;
        EXPECT_TRUE(seen.insert(quote).second) << "repeated: " << s;
    }
    for (const auto& id : a.answer_ids) {
        bool given = false;
        for (const auto& c : chunks) given = given || c.id == id;
        EXPECT_TRUE(given) << id;
    }
}

TEST(AnswerSpansTest, APrepositionOpeningTheSentenceIsNotPartOfAName) {
    const auto spans = detail::answer_spans("Near Marrow Island the schooner sank.");
    ASSERT_FALSE(spans.empty());
    EXPECT_EQ(spans[0].text, "Marrow Island");
    EXPECT_EQ(spans[0].kind, detail::SpanKind::kName);
}

// A question one sentence answers: that sentence leads, cited, and gives the short answer.
struct LeadCase {
    std::string name;
    std::vector<TextChunk> chunks;
    std::string question;
    std::string lead;                     // the first sentence
    std::string answer;                   // the short answer
    std::vector<std::string> answer_ids;  // empty: not checked
};

void PrintTo(const LeadCase& c, std::ostream* out) { *out << c.name; }

const LeadCase kLeadCases[] = {
    {"TheSentenceWithAYearLeadsAWhenQuestion",
     {{"c1",
       "The Harrow Lighthouse guards the Wendmoor cliffs and the lighthouse keepers of Harrow "
       "were famous. The lighthouse is painted white.",
       "Harrow Lighthouse"},
      {"c2", "Building work on the Harrow Lighthouse ended in 1874, after two winters.",
       "Harrow Lighthouse history"}},
     "When was the Harrow Lighthouse finished?",
     "Building work on the Harrow Lighthouse ended in 1874, after two winters. [c2]",
     "1874",
     {"c2"}},
    {"AWhoQuestionIsAnsweredWithANameTheQuestionDoesNotHold",
     {{"c1", "The Corvin Prize is awarded each spring in Dalmere for corvine studies.",
       "Corvin Prize"},
      {"c2", "The Corvin Prize was founded by Mirela Vostok, a zoologist.", "Founders"}},
     "Who founded the Corvin Prize?",
     "The Corvin Prize was founded by Mirela Vostok, a zoologist. [c2]",
     "Mirela Vostok",
     {"c2"}},
    {"AHowManyQuestionIsAnsweredWithANumber",
     {{"c1", "The Ostrel Choir sings in the Ostrel cathedral. The choir tours every summer.",
       "Ostrel Choir"},
      {"c2", "The choir has 48 singers and one conductor.", "Ostrel Choir members"}},
     "How many singers does the Ostrel Choir have?",
     "The choir has 48 singers and one conductor. [c2]",
     "48",
     {}},
    {"AOneStepAnswerIsNotReplacedByABridge",
     {{"c1", "The Kessel Tower stands in Amberley and was designed by Tomas Reuel.",
       "Kessel Tower"},
      {"c2", "Amberley is a market town with a museum of clocks.", "Amberley"}},
     "Who designed the Kessel Tower?",
     "The Kessel Tower stands in Amberley and was designed by Tomas Reuel. [c1]",
     "Tomas Reuel",
     {}},
    // Regression: a sentence sharing a place name with a well-matching one was taken for a second
    // step, and its stray year ("a year before") led.
    {"NoBridgeWhenOneSentenceAnswersAlready",
     {{"c1",
       "The Vane Clock was cast by the Tolley Foundry of Harrowgate in 1902, a year before the "
       "hall opened.",
       "Vane Clock"},
      {"c2", "Marsh Yard in Cobble was founded in 1870 by Ivo Marsh, who was born in Harrowgate.",
       "Marsh Yard"},
      {"c3", "The Tolley Foundry in Harrowgate was founded in 1861 by Ada Tolley.",
       "Tolley Foundry"}},
     "In which year was the Tolley Foundry founded?",
     "The Tolley Foundry in Harrowgate was founded in 1861 by Ada Tolley. [c3]",
     "1861",
     {}},
};

class LeadSentenceTest : public ::testing::TestWithParam<LeadCase> {};

TEST_P(LeadSentenceTest, LeadsAndGivesTheShortAnswer) {
    const LeadCase& c = GetParam();
    ExtractiveModel m;
    const auto a = m.answer_from_chunks(c.question, c.chunks);
    ASSERT_FALSE(a.sentences.empty());
    EXPECT_EQ(a.sentences[0], c.lead);
    EXPECT_EQ(a.answer, c.answer);
    if (!c.answer_ids.empty()) {
        EXPECT_EQ(a.answer_ids, c.answer_ids);
    }
    expect_well_formed(a, c.chunks);
}

INSTANTIATE_TEST_SUITE_P(DocumentAnswerTest, LeadSentenceTest, ::testing::ValuesIn(kLeadCases),
                         [](const ::testing::TestParamInfo<LeadCase>& info) {
                             return info.param.name;
                         });

TEST(DocumentAnswerTest, FollowsTheBridgeToTheSentenceThatAnswers) {
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1",
         "Port Varn is a harbour town. Several films, such as Grey Lantern, were shot in Port "
         "Varn.",
         "Port Varn"},
        {"c2", "Quiet Meadow is a novel. It was adapted for radio.", "Quiet Meadow"},
        {"c3", "Grey Lantern is a drama directed by Ilse Moravec. It opened in spring.",
         "Grey Lantern"},
    };
    const auto a = m.answer_from_chunks("Who directed the film shot in Port Varn?", chunks);
    ASSERT_GE(a.sentences.size(), 2u);
    EXPECT_EQ(a.sentences[0], "Grey Lantern is a drama directed by Ilse Moravec. [c3]");
    EXPECT_EQ(a.sentences[1], "Several films, such as Grey Lantern, were shot in Port Varn. [c1]");
    EXPECT_EQ(a.answer, "Ilse Moravec");
    EXPECT_EQ(a.answer_ids, std::vector<std::string>{"c3"});
    expect_well_formed(a, chunks);
}

TEST(DocumentAnswerTest, NeitherAPlaceForWhoNorANameForWhatHappened) {
    // Regression: "Who runs …" was answered with the town after "in", and "What happened …"
    // was read as "which happened" and answered with a name.
    ExtractiveModel m;
    const std::vector<TextChunk> museum{
        {"c1",
         "The Tallow Harbour Museum opened in Port Emmet in 1921. The museum is run by its "
         "curator, Jory Pell.",
         "The Tallow Harbour Museum"}};
    const auto who = m.answer_from_chunks("Who runs the Tallow Harbour Museum?", museum);
    EXPECT_NE(who.answer, "Port Emmet");
    expect_well_formed(who, museum);

    const std::vector<TextChunk> storm{
        {"c1", "Vell Light was badly damaged in the Long Storm by a wave from Orm Point.",
         "Lighthouses"}};
    const auto what = m.answer_from_chunks("What happened to Vell Light in the Long Storm?", storm);
    EXPECT_EQ(what.answer, "");
    ASSERT_EQ(what.sentences.size(), 1u);
    EXPECT_EQ(what.sentences[0],
              "Vell Light was badly damaged in the Long Storm by a wave from Orm Point. [c1]");
}

TEST(DocumentAnswerTest, AQuotedTitleIsTheShortAnswerWholeAndOnOneLine) {
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1", "Mara Tell wrote the song \"Salt\nand Rain\" in 1990.", "Mara Tell"}};
    const auto a = m.answer_from_chunks("Which song did Mara Tell write?", chunks);
    EXPECT_EQ(a.answer, "Salt and Rain");
    EXPECT_EQ(a.answer_ids, std::vector<std::string>{"c1"});
    expect_well_formed(a, chunks);
}

TEST(AnswerSpansTest, AnAcronymBeforeALowerCaseNounModifiesTheNameAfterIt) {
    const auto spans = detail::answer_spans("It was created by TV executive Orla Venn in 1985.");
    ASSERT_GE(spans.size(), 2u);
    EXPECT_EQ(spans[0].text, "TV");
    EXPECT_TRUE(spans[0].modifier);
    EXPECT_EQ(spans[1].text, "Orla Venn");
    EXPECT_FALSE(spans[1].modifier);
}

TEST(AnswerSpansTest, APossessiveNameBeforeANameIsItsOwner) {
    const auto spans = detail::answer_spans("He hosts Harbor TV's Tidewater Hour every week.");
    ASSERT_GE(spans.size(), 2u);
    EXPECT_EQ(spans[0].text, "Harbor TV");
    EXPECT_TRUE(spans[0].owner);
    EXPECT_EQ(spans[1].text, "Tidewater Hour");
    EXPECT_FALSE(spans[1].owner);
}

TEST(DocumentAnswerTest, WhoIsAnsweredByTheNameAfterByAndItsTitleWords) {
    // Regression: "created by TV executive X" was answered "TV" (the acronym took "by").
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1", "Saltmarsh Lane was created by TV executive Orla Venn for the Corvo network.",
         "Saltmarsh Lane"}};
    const auto a = m.answer_from_chunks("Who created Saltmarsh Lane?", chunks);
    EXPECT_EQ(a.answer, "Orla Venn");
    expect_well_formed(a, chunks);
}

TEST(DocumentAnswerTest, WhatShowIsTheNameAfterItsOwner) {
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1", "Dara Quell is a retired sailor and the host of Harbor TV's Tidewater Hour.",
         "Dara Quell"}};
    const auto a = m.answer_from_chunks("What show does Dara Quell host?", chunks);
    EXPECT_EQ(a.answer, "Tidewater Hour");
    expect_well_formed(a, chunks);
}

TEST(DocumentAnswerTest, AWhichQuestionIsAnsweredByTheNameDefinedAsItsClass) {
    // "Which 1990 Norland comedy …": the year and the capitalised word modify the class, the
    // class is "comedy"; the film defined as one answers, not the studio beside it.
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1",
         "Pell Street (English: The Road) is a 1990 Norland comedy film, produced by Ivo Brand on "
         "Corvo Films Ltd banner and directed by Ana Sild.",
         "Pell Street"}};
    const auto a =
        m.answer_from_chunks("Which 1990 Norland comedy was produced by Ivo Brand?", chunks);
    EXPECT_EQ(a.answer, "Pell Street");
    expect_well_formed(a, chunks);
}

TEST(DocumentAnswerTest, AnOrganisationDoesNotAnswerWhere) {
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1", "Tomas Reuel is the head rowing coach at Marrow Bay University.", "Tomas Reuel"}};
    const auto a = m.answer_from_chunks("In which city does Tomas Reuel coach rowing?", chunks);
    EXPECT_EQ(a.answer, "");
    expect_well_formed(a, chunks);
}

TEST(DocumentAnswerTest, AnUndecidedEitherOrIsNotAnsweredWithAThirdName) {
    // Regression: "Which plant is larger, A or B?" with nothing to compare was answered with
    // another name of the sentences.
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1", "Velloria marsh is a species of flowering plant known as Orren's bell.", "Velloria"},
        {"c2", "Tansel is a genus of flowering plant in the daisy family.", "Tansel"},
    };
    const auto a =
        m.answer_from_chunks("Which plant is larger, the Velloria or the Tansel?", chunks);
    EXPECT_EQ(a.answer, "");
    ASSERT_FALSE(a.sentences.empty());
    expect_well_formed(a, chunks);
}

TEST(DocumentAnswerTest, AQuotedSentenceNamingTheClassAskedGivesTheShortAnswer) {
    // "Awarded what medal?": a name of the class asked ("the Kessa Medal") answers, not a
    // person of the better-matching sentence, and the answer cites its own sentence's chunk.
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1",
         "Iron Tide is a war drama television film starring Ivo Brand as the real life captain "
         "and Ana Sild.",
         "Iron Tide"},
        {"c2", "Orla Venn, the real life captain, was awarded the Kessa Medal in 1944.",
         "Orla Venn"},
    };
    const auto a = m.answer_from_chunks(
        "The real life captain that Ivo Brand plays in the television film Iron Tide was awarded "
        "what medal?",
        chunks);
    ASSERT_FALSE(a.sentences.empty());
    EXPECT_EQ(a.answer, "Kessa Medal");
    EXPECT_EQ(a.answer_ids, std::vector<std::string>{"c2"});
    expect_well_formed(a, chunks);
}

const std::vector<TextChunk>& harbours() {
    static const std::vector<TextChunk> chunks{
        {"c1", "Brell Harbour is a fishing port in Kessa province on the Norland coast.",
         "Brell Harbour"},
        {"c2", "Ostin Bay is a sheltered bay in Durn province with a lighthouse.", "Ostin Bay"},
        {"c3", "Tarn Quay is a fishing port in Kessa province.", "Tarn Quay"},
    };
    return chunks;
}

TEST(DocumentAnswerTest, YesNoQuestionsStartWithTheAnswerTheEvidenceGives) {
    ExtractiveModel m;
    const auto& chunks = harbours();
    const auto no =
        m.answer_from_chunks("Are Brell Harbour and Ostin Bay in the same province?", chunks);
    EXPECT_EQ(no.answer, "no");
    ASSERT_FALSE(no.sentences.empty());
    EXPECT_TRUE(no.sentences[0].starts_with("No: ")) << no.sentences[0];
    expect_well_formed(no, chunks);

    const auto yes =
        m.answer_from_chunks("Are Brell Harbour and Tarn Quay in the same province?", chunks);
    EXPECT_EQ(yes.answer, "yes");
    ASSERT_FALSE(yes.sentences.empty());
    EXPECT_TRUE(yes.sentences[0].starts_with("Yes: ")) << yes.sentences[0];
    EXPECT_EQ(yes.answer_ids, (std::vector<std::string>{"c1", "c3"}));
    expect_well_formed(yes, chunks);

    const auto both =
        m.answer_from_chunks("Are Brell Harbour and Tarn Quay both fishing ports?", chunks);
    EXPECT_EQ(both.answer, "yes");
    const auto not_both =
        m.answer_from_chunks("Are Brell Harbour and Ostin Bay both fishing ports?", chunks);
    EXPECT_EQ(not_both.answer, "no");
    ASSERT_FALSE(not_both.sentences.empty());
    EXPECT_NE(not_both.sentences[0].find("[c2]"), std::string::npos)
        << "the entity that lacks it first: " << not_both.sentences[0];
}

TEST(DocumentAnswerTest, AnUndecidedYesNoQuestionHasNoAnswerAndNoInventedYesOrNo) {
    ExtractiveModel m;
    const auto& chunks = harbours();
    for (const char* question : {"Are Brell Harbour and Ostin Bay both older than the railway?",
                                 "Is Vell Castle haunted?"}) {
        const auto a = m.answer_from_chunks(question, chunks);
        EXPECT_EQ(a.answer, "") << question;
        EXPECT_TRUE(a.answer_ids.empty()) << question;
        for (const auto& s : a.sentences) {
            EXPECT_FALSE(s.starts_with("Yes")) << s;
            EXPECT_FALSE(s.starts_with("No")) << s;
        }
        expect_well_formed(a, chunks);
    }
}

TEST(DocumentAnswerTest, EitherOrQuestionsCompareTheDates) {
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1", "The Quill Review is a literary magazine first published in 1952 in Harlow.",
         "The Quill Review"},
        {"c2", "Lantern Weekly is a news magazine founded in 1921.", "Lantern Weekly"},
    };
    const auto first = m.answer_from_chunks(
        "Which magazine was started first, The Quill Review or Lantern Weekly?", chunks);
    EXPECT_EQ(first.answer, "Lantern Weekly");
    ASSERT_FALSE(first.sentences.empty());
    EXPECT_EQ(first.sentences[0], "Lantern Weekly is a news magazine founded in 1921. [c2]");
    expect_well_formed(first, chunks);
    const auto later = m.answer_from_chunks(
        "Which magazine was started later, The Quill Review or Lantern Weekly?", chunks);
    EXPECT_EQ(later.answer, "Quill Review");
}

TEST(DocumentAnswerTest, AnEitherOrIsAnsweredWithTheNameTheOptionsOwnDocumentGivesIt) {
    ExtractiveModel m;
    const std::vector<TextChunk> chunks{
        {"c1", "Orla Maren Tessary (born 4 May 1931) is an Irish painter.", "Orla Tessary"},
        {"c2", "Brannoc Vell (born 1950) is a Welsh painter.", "Brannoc Vell"},
    };
    // The winner's document names her in full; the option's words are in it, in order.
    const auto older = m.answer_from_chunks("Who is older, Orla Tessary or Brannoc Vell?", chunks);
    EXPECT_EQ(older.answer, "Orla Maren Tessary");
    expect_well_formed(older, chunks);
    // Its document gives no fuller name: the option as asked.
    const auto younger =
        m.answer_from_chunks("Who is younger, Orla Tessary or Brannoc Vell?", chunks);
    EXPECT_EQ(younger.answer, "Brannoc Vell");
    // A description at the document's start is no name ("the painter Orla Tessary").
    const std::vector<TextChunk> described{
        {"c1", "The painter Orla Tessary (born 1931) lived in Cork.", "Orla Tessary"},
        {"c2", "Brannoc Vell (born 1950) is a Welsh painter.", "Brannoc Vell"},
    };
    EXPECT_EQ(m.answer_from_chunks("Who is older, Orla Tessary or Brannoc Vell?", described).answer,
              "Orla Tessary");
}

TEST(DocumentAnswerTest, AtMostThreeSentencesAndNoneRepeated) {
    ExtractiveModel m;
    std::vector<TextChunk> chunks;
    const std::vector<std::string> goods{"coal", "timber", "grain", "salt", "wool", "slate"};
    for (std::size_t i = 0; i < goods.size(); ++i) {
        // Every chunk twice: the same text under two ids.
        const std::string text = "The Merrow canal carries " + goods[i] +
                                 " to Fenn by barge. The " + goods[i] +
                                 " barges of the Merrow canal reach Fenn weekly.";
        chunks.push_back({"c" + std::to_string(2 * i + 1), text, "Merrow canal " + goods[i]});
        chunks.push_back({"c" + std::to_string(2 * i + 2), text, "Merrow canal " + goods[i]});
    }
    const auto a =
        m.answer_from_chunks("What does the Merrow canal carry to Fenn by barge?", chunks);
    EXPECT_EQ(a.sentences.size(), 3u);
    expect_well_formed(a, chunks);
}

}  // namespace
}  // namespace glassbox::reasoner
