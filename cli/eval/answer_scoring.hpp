// Scoring one answer against a question set's accepted answers, as `glassbox eval` does
// (docs/evaluation.md): the same measures bench/quality/run reports, so figures agree.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace glassbox::cli::eval {

// SQuAD's answer normalisation: lower case, punctuation and the articles a/an/the removed,
// words separated by single spaces.
std::string squad_normalise(std::string_view text);

// Token F1 of `prediction` against `gold` after squad_normalise (1 when both are empty).
double token_f1(std::string_view prediction, std::string_view gold);

// A gold answer as an answer text writes it: PathQuestion writes names with underscores
// ("Cruz_Azul_FC"), so underscores become spaces; lower case.
std::string readable_answer(std::string_view gold);

// Whether `text` contains `phrase` as whole words, ignoring ASCII case ("1" is not named by
// "1986"). Bytes of multi-byte UTF-8 characters count as word characters.
bool names(std::string_view text, std::string_view phrase);

// The first sentence of an answer text: up to the first full stop, question or exclamation
// mark that ends a word of two or more characters and is followed by white space and a capital
// or digit (so "E. B. White" or "1. FC Nuernberg" do not end it); the whole text if none does.
std::string_view first_sentence(std::string_view text);

// What an answer that abstained reports having found: its text after the note's "What was
// found: " (docs/confidence.md §4), or "" when it names nothing found.
std::string_view found_text(std::string_view abstained_answer);

struct AnswerScore {
    std::string judged;  // the text judged: the short answer, else the first sentence
    bool hit = false;    // Hits@1: `judged` names an accepted answer
    double exact = 0.0;  // exact match of `judged` with an accepted answer (normalised)
    double f1 = 0.0;     // best token F1 of `judged` against the accepted answers
};

// The share of `accepted` that the whole answer (`text`, then the short answer) names: a list
// question's completeness (a set line with "kind": "list"; docs/evaluation.md).
double named_share(const std::optional<std::string>& short_answer, std::string_view text,
                   std::span<const std::string> accepted);

// Scores an answer: its short answer when it gave one (not empty), else the first sentence of
// its text, against every accepted answer (the best of each measure).
AnswerScore score_answer(const std::optional<std::string>& short_answer, std::string_view text,
                         std::span<const std::string> accepted);

}  // namespace glassbox::cli::eval
