// Typed answer candidates in a quoted sentence (names and titles, dates, numbers) for the
// extractive document writer (internal to reasoner/).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::reasoner::detail {

enum class SpanKind {
    kName,    // a run of capitalised words ("Stephen King", "Medal of Honor") or a quoted title
    kTime,    // a year, a date ("April 5, 1975", "12 May 1898"), a decade or a century
    kNumber,  // a number or a count word ("72", "2.5 million", "twice")
};

struct AnswerSpan {
    std::string text;       // as written in the sentence, without surrounding punctuation
    std::size_t first = 0;  // index of its first word among the sentence's words
    std::size_t last = 0;   // index of its last word
    SpanKind kind = SpanKind::kName;
    std::string before;  // the lower-case word just before it ("by", "in"); empty at the start
    bool punct_before = false;  // punctuation between it and the word before ("province, China")
    bool modifier = false;      // reads as an adjective: "American actor", "South Korean group"
    // The owner of the name written after it: "NBA TV" in "NBA TV's NBA Inside Stuff" (of a
    // "what show" question, the show is the name after; of a "who", the owner may be asked).
    bool owner = false;
};

// The sentence's words (whitespace-separated, punctuation stripped), lower-case: the positions
// AnswerSpan::first / last count.
std::vector<std::string> sentence_words(std::string_view sentence);

// Every candidate in `sentence`, in order of their first word. A date's words are not also a
// name ("April" in "April 5, 1975"); a quoted title is a name even in lower case.
std::vector<AnswerSpan> answer_spans(std::string_view sentence);

}  // namespace glassbox::reasoner::detail
