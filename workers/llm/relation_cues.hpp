// The relation-word lexicon of the extractive model: which relation concepts a question word
// can express ("wife" -> spouse, "born" -> birth, "where" -> location).
#pragma once

#include <string_view>
#include <vector>

namespace glassbox::llm {

// The relation concepts a word can express ("wife" -> spouse; "born" -> birth; "where" ->
// location), first the main one; empty for a word with none. Takes a lower-case word; a word
// not in the lexicon is looked up by its stem (text::stem).
const std::vector<std::string_view>& relation_cues(std::string_view lower_word);

}  // namespace glassbox::llm
