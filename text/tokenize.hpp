// Word splitting, ASCII lower-casing and the light suffix stemmer shared by the workers.
#pragma once

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/ascii.hpp"

namespace glassbox::text {

// ASCII lower-case (other bytes unchanged).
std::string lower(std::string_view s);

// True for the bytes of a word: ASCII letters and digits, and every byte >= 0x80 (so UTF-8
// words stay whole). Underscores, apostrophes and other ASCII punctuation separate words.
constexpr bool is_word_byte(unsigned char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

// Calls on_word(word, start) with each lower-cased word of `text` (maximal runs of word bytes)
// and the offset where it starts in `text`; on_word(word) is accepted too. The view is valid
// during the call only (one buffer is reused).
template <typename OnWord>
void for_each_word(std::string_view text, OnWord&& on_word) {
    std::string word;
    std::size_t start = 0;
    const auto flush = [&] {
        if (word.empty()) return;
        if constexpr (std::invocable<OnWord&, std::string_view, std::size_t>) {
            on_word(std::string_view(word), start);
        } else {
            on_word(std::string_view(word));
        }
        word.clear();
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (!is_word_byte(static_cast<unsigned char>(c))) {
            flush();
            continue;
        }
        if (word.empty()) start = i;
        word.push_back(base::ascii_lower(c));
    }
    flush();
}

// The words of `s` (as for_each_word), except that a possessive "s" after an apostrophe is
// dropped: "Arthur's" gives "arthur". (A U+2019 apostrophe is made of word bytes, so
// "Arthur’s" stays one word.)
std::vector<std::string> words(std::string_view s);

// A light suffix stemmer (plurals, -ing, -ed, a few irregular forms): "children" -> "child",
// "plays" -> "play", "countries" -> "country", "based" -> "bas" (as "base"). Takes a lower-case
// word.
std::string stem(std::string_view lower_word);

// The content words of `s` (words() without stopwords), stemmed, in order.
std::vector<std::string> content_stems(std::string_view s);

// The words of `s` joined by single spaces: "Cruz_Azul_FC" and "cruz azul fc" both give
// "cruz azul fc".
std::string normalize(std::string_view s);
// normalize() into `out` (replaced), reusing its capacity.
void normalize_into(std::string_view s, std::string& out);

// Whether `padded` (words joined by single spaces, a space at either end) holds `phrase` as
// whole words: padded.find(" " + phrase + " ") != npos, without building that string.
bool contains_phrase(std::string_view padded, std::string_view phrase) noexcept;

}  // namespace glassbox::text
