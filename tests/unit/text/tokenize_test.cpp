// Word splitting, lower-casing, the possessive rule, the stemmer and normalisation.
#include "text/tokenize.hpp"

#include <gtest/gtest.h>

#include <utility>

namespace glassbox::text {
namespace {

using Words = std::vector<std::string>;

TEST(Tokenize, LowerFoldsAsciiOnly) {
    EXPECT_EQ(lower("Cruz Azul FC"), "cruz azul fc");
    EXPECT_EQ(lower("\xC3\x89tienne"), "\xC3\x89tienne");  // É is not ASCII: unchanged
    EXPECT_EQ(lower(""), "");
}

TEST(Tokenize, WordsAreRunsOfLettersAndDigitsLowerCased) {
    EXPECT_EQ(words("Who founded Cruz_Azul_FC in 1927?"),
              (Words{"who", "founded", "cruz", "azul", "fc", "in", "1927"}));
    EXPECT_EQ(words("Z\xC3\xBCrich, Schweiz"), (Words{"z\xC3\xBCrich", "schweiz"}));
    EXPECT_EQ(words("  ...!  "), Words{});
    EXPECT_EQ(words(""), Words{});
}

TEST(Tokenize, WordsDropThePossessiveS) {
    EXPECT_EQ(words("Arthur's wife"), (Words{"arthur", "wife"}));
    EXPECT_EQ(words("THE ARTHUR'S"), (Words{"the", "arthur"}));
    // A lone "s" that is not possessive stays a word.
    EXPECT_EQ(words("plan s"), (Words{"plan", "s"}));
}

TEST(Tokenize, ForEachWordKeepsThePossessiveSAndGivesOffsets) {
    std::vector<std::pair<std::string, std::size_t>> seen;
    for_each_word("Arthur's  WIFE", [&](std::string_view w, std::size_t start) {
        seen.emplace_back(std::string(w), start);
    });
    const std::vector<std::pair<std::string, std::size_t>> expected{
        {"arthur", 0}, {"s", 7}, {"wife", 10}};
    EXPECT_EQ(seen, expected);
    Words plain;
    for_each_word("a-b", [&](std::string_view w) { plain.emplace_back(w); });
    EXPECT_EQ(plain, (Words{"a", "b"}));
}

TEST(Tokenize, StemMeetsInflectedForms) {
    EXPECT_EQ(stem("children"), "child");
    EXPECT_EQ(stem("plays"), "play");
    EXPECT_EQ(stem("countries"), "country");
    EXPECT_EQ(stem("playing"), "play");
    EXPECT_EQ(stem("matches"), "match");
    EXPECT_EQ(stem("born"), "birth");
    EXPECT_EQ(stem("based"), stem("base"));
    EXPECT_EQ(stem("placed"), stem("place"));
    // Words that only look plural keep their s.
    EXPECT_EQ(stem("class"), "class");
    EXPECT_EQ(stem("genus"), "genus");
    EXPECT_EQ(stem("analysis"), "analysis");
    // Short words are left alone.
    EXPECT_EQ(stem("is"), "is");
    EXPECT_EQ(stem("bed"), "bed");
}

TEST(Tokenize, ContentStemsDropStopwordsAndStem) {
    EXPECT_EQ(content_stems("Which countries did the children play for?"),
              (Words{"country", "child", "play"}));
    EXPECT_EQ(content_stems("what is the"), Words{});
}

TEST(Tokenize, NormalizeJoinsWordsWithOneSpace) {
    EXPECT_EQ(normalize("Cruz_Azul_FC"), "cruz azul fc");
    EXPECT_EQ(normalize("  cruz   azul, FC! "), "cruz azul fc");
    EXPECT_EQ(normalize("--"), "");
}

TEST(Tokenize, ContainsPhraseFindsWholeWordsOnly) {
    const std::string padded = " which country is cruz azul fc in ";
    for (const std::string phrase :
         {"cruz azul", "cruz azul fc", "which", "in", "azul f", "ruz azul", "fc in", "country is",
          "countr", "is c", "", "which country is cruz azul fc in", "in ", " in"}) {
        EXPECT_EQ(contains_phrase(padded, phrase),
                  padded.find(" " + phrase + " ") != std::string::npos)
            << phrase;
    }
    EXPECT_TRUE(contains_phrase(" in in ", "in"));
    EXPECT_FALSE(contains_phrase(" inin ", "in"));
    EXPECT_FALSE(contains_phrase("", "in"));
}

}  // namespace
}  // namespace glassbox::text
