// Classical text analysis for the extractive provider: words, stopwords, a light stemmer,
// character-trigram similarity and a small lexicon of relation-bearing words.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace glassbox::llm::text {

// ASCII lower-case (other bytes unchanged).
std::string lower(std::string_view s);

// The word tokens of `s`, lower-cased: runs of letters and digits (bytes >= 0x80 count as
// letters, so UTF-8 words stay whole); underscores and punctuation separate words; a
// possessive "s" after an apostrophe is dropped.
std::vector<std::string> words(std::string_view s);

// Function words and question words ("the", "of", "which", "name", ...).
bool is_stopword(std::string_view lower_word);

// A light suffix stemmer (plurals, -ing, -ed, a few irregular plurals): "children" -> "child",
// "plays" -> "play", "countries" -> "country", "based" -> "base".
std::string stem(std::string_view lower_word);

// The content words of `s`, stemmed, in order (stopwords removed).
std::vector<std::string> content_stems(std::string_view s);

// Dice coefficient of the padded character trigrams of the lower-cased strings, 0..1.
double trigram_similarity(std::string_view a, std::string_view b);

// The relation concepts a word can express ("wife" -> spouse; "born" -> birth; "where" ->
// location), first the main one; empty for a word with none. Takes a lower-case word.
const std::vector<std::string_view>& relation_cues(std::string_view lower_word);

// Letters and digits only, lower-cased, one space between words: "Cruz_Azul_FC" and
// "cruz azul fc" both give "cruz azul fc".
std::string normalize(std::string_view s);

}  // namespace glassbox::llm::text
