// What a question asks for, shared by the extractive model's scorer and its answer writers: the
// expected answer type ("who" → a person or organisation, "when" → a time, "which club" → a
// club), whether it is a yes/no question, and the class word of "which X" / "what X".
#pragma once

#include <string>
#include <string_view>

namespace glassbox::llm {

enum class AnswerType {
    kAny,     // "what is …", or nothing recognised
    kAgent,   // who / whom / whose: a person or an organisation
    kTime,    // when, what year, which date
    kPlace,   // where, in which city / country
    kNumber,  // how many, how much, how old, how long
    kClass,   // which X / what X: an X (class_word)
    kYesNo,   // is / are / was / did / does / can … at the start
};

std::string_view answer_type_name(AnswerType type) noexcept;

struct QuestionIntent {
    AnswerType type = AnswerType::kAny;
    std::string wh;          // the question word as written, lower-case ("who", "which"); empty for yes/no
    std::string class_word;  // kClass (and kTime / kPlace when a class word said so): "club", "year"
};

// Deterministic, from the words alone. A question word further in ("the club that X plays for
// is in which country") counts when no other one comes first.
QuestionIntent question_intent(std::string_view question);

// True when `value` reads as a year ("1898"), a date ("12 May 1898", "1898-05-12") or a
// decade/century ("1890s").
bool looks_like_time(std::string_view value);
// True when `value` is a number, optionally with a unit or scale word ("42", "3.5 km",
// "1,200", "two million").
bool looks_like_number(std::string_view value);

}  // namespace glassbox::llm
