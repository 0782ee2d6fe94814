// The relation-word lexicon of the extractive model: which relation concepts a question word
// can express ("wife" -> spouse, "born" -> birth, "where" -> location).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "reasoner/detail/question_intent.hpp"

namespace glassbox::reasoner::detail {

// The relation concepts a word can express ("wife" -> spouse; "born" -> birth; "where" ->
// location), first the main one; empty for a word with none. Takes a lower-case word; a word
// not in the lexicon is looked up by its stem (text::stem).
const std::vector<std::string_view>& relation_cues(std::string_view lower_word);

// Stems this long or longer are compared by spelling (trigrams) in predicate_match.
inline constexpr std::size_t kTrigramStemMin = 4;

// How well each of a predicate's content words expresses each relation word: 1 same stem, 0.8
// a shared cue, up to 0.6 for similar spelling. Rows: the predicate's words; columns: `rel`.
std::vector<std::vector<double>> predicate_match(std::string_view predicate,
                                                 const std::vector<RelationWord>& rel);

// A predicate against the question's relation mentions: per predicate word and mention, the
// best of the mention's words; and per mention, the best of all the predicate's words.
struct PredicateMatch {
    std::vector<std::vector<double>> by_word;
    std::vector<double> best;
};

PredicateMatch mention_match(std::string_view predicate, const QuestionRelations& rel);

}  // namespace glassbox::reasoner::detail
