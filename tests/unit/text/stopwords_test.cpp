// The one stopword list: function words, question and request words; content words are not in it.
#include "text/stopwords.hpp"

#include <gtest/gtest.h>

namespace glassbox::text {
namespace {

TEST(Stopwords, FunctionAndQuestionWordsAreStopwords) {
    for (const char* w : {"a", "the", "of", "and", "is", "was", "which", "who", "whose", "where",
                          "when", "what", "whats", "how", "why", "they", "your", "would"})
        EXPECT_TRUE(is_stopword(w)) << w;
}

TEST(Stopwords, WordsThatFrameARequestAreStopwords) {
    for (const char* w : {"name", "named", "list", "tell", "show", "please", "kind", "type",
                          "known", "called", "find"})
        EXPECT_TRUE(is_stopword(w)) << w;
    // The leftovers of a split contraction ("don't", "it's").
    EXPECT_TRUE(is_stopword("s"));
    EXPECT_TRUE(is_stopword("t"));
}

TEST(Stopwords, ContentWordsAreNot) {
    for (const char* w : {"spouse", "born", "club", "country", "film", "directed", "capital",
                          "population", "1986", "z\xC3\xBCrich", ""})
        EXPECT_FALSE(is_stopword(w)) << w;
}

TEST(Stopwords, TheListIsLowerCase) {
    // Callers lower-case first: an upper-case word is not looked up case-insensitively.
    EXPECT_FALSE(is_stopword("The"));
    EXPECT_TRUE(is_stopword("the"));
}

}  // namespace
}  // namespace glassbox::text
