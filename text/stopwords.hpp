// The one English stopword list: function words and the words that frame a question.
#pragma once

#include <string_view>

namespace glassbox::text {

// True for a word that carries no content in a question or a title: articles, pronouns,
// prepositions, conjunctions, auxiliaries, question words ("which", "whats"), the words that
// frame a request ("name", "list", "tell", "kind", "type", "known", "called") and the stray
// "s" / "t" of a split contraction. Takes a lower-case word.
bool is_stopword(std::string_view lower_word) noexcept;

}  // namespace glassbox::text
