// count_words, the extractive provider's token count, against its definition: runs of bytes that
// std::isspace (the "C" locale) does not call space, over every byte value and mixed texts.
#include <cctype>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "reasoner/reasoner.hpp"

namespace glassbox::reasoner {
namespace {

std::size_t words_by_isspace(std::string_view s) {
    std::size_t count = 0;
    bool in_word = false;
    for (char c : s) {
        const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
        if (!space && !in_word) ++count;
        in_word = !space;
    }
    return count;
}

TEST(CountWordsTest, EveryByteIsSpaceExactlyWhenIsspaceSaysSo) {
    for (int b = 0; b < 256; ++b) {
        const char c = static_cast<char>(b);
        const std::string text{'a', c, 'b'};
        EXPECT_EQ(count_words(text), words_by_isspace(text)) << "byte " << b;
        EXPECT_EQ(count_words(std::string(1, c)), words_by_isspace(std::string(1, c))) << b;
    }
}

TEST(CountWordsTest, MixedTextsCountAsBefore) {
    EXPECT_EQ(count_words(""), 0u);
    EXPECT_EQ(count_words(" \t\n"), 0u);
    EXPECT_EQ(count_words("  two words  "), 2u);
    EXPECT_EQ(count_words("caf\xC3\xA9\x0B\xC2\xA0x"), 2u)
        << "a vertical tab splits, U+00A0 does not";
    std::mt19937 random(33);
    const std::string alphabet = std::string(" \t\n\v\f\r\x1C\x85\xA0") + "ab\xC3";
    for (int i = 0; i < 2000; ++i) {
        std::string text(random() % 40, ' ');
        for (char& c : text) c = alphabet[random() % alphabet.size()];
        EXPECT_EQ(count_words(text), words_by_isspace(text)) << text;
    }
}

}  // namespace
}  // namespace glassbox::reasoner
