// What a question asks for, shared by the extractive model's scorer and its answer writers: the
// expected answer type ("who" → a person or organisation, "when" → a time, "which club" → a
// club), whether it is a yes/no question, the class word of "which X" / "what X", the named
// entities, and the chain of relations asked for, in order from the named entity.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reasoner/detail/question_analysis.hpp"
#include "text/similarity.hpp"

namespace glassbox::reasoner::detail {

enum class AnswerType {
    kAny,     // "what is …", or nothing recognised
    kAgent,   // who / whom / whose: a person or an organisation
    kTime,    // when, what year, which date
    kPlace,   // where, in which city / country
    kNumber,  // how many, how much, how old, how long
    kClass,   // which X / what X: an X (class_word)
    kYesNo,   // is / are / was / did / does / can … at the start
};

struct QuestionIntent {
    AnswerType type = AnswerType::kAny;
    std::string wh;  // the question word as written, lower-case ("who", "which"); empty for yes/no
    std::string
        class_word;  // kClass (and kTime / kPlace when a class word said so): "club", "year"
    std::vector<std::string> entities;  // entity mentions as written, most salient first
    // The relations asked for, in order from the first named entity outwards: "the founder of
    // the shipyard that built X" → built, shipyard, founder ("X 's kid 's spouse" → child,
    // spouse). Each is a relation key: a lexicon concept (relation_cues) or a word's stem.
    std::vector<std::string> chain;
    // A question for every answer, not one ("list the ships built in 1898", "who are the
    // children of X", "which lighthouses did Y design"): an instruction to list or name all, a
    // plural verb after the question word, or a plural class or relation noun.
    bool list = false;
    // The plural noun to count its answers with ("lighthouses", "children"); "people" for who,
    // "things" otherwise.
    std::string list_noun;
};

// Deterministic, from the words alone. A question word further in ("the club that X plays for
// is in which country") counts when no other one comes first.
QuestionIntent question_intent(std::string_view question);
// The same from the question's analysis (detail::analyze_question), to analyse it once.
QuestionIntent question_intent(std::string_view question, const detail::QuestionAnalysis& analysis);

// True when `label` cannot be the answer the question expects: a year or a number for "who",
// "where" or "which X"; anything but a time for "when"; anything but a number for "how many".
bool answer_type_mismatch(const QuestionIntent& intent, std::string_view label);

// A question word that names a relation (not part of an entity mention).
struct RelationWord {
    std::string surface;
    std::string stem;
    std::vector<std::string_view> cues;
    double weight = 1.0;
    // The stem's trigrams, made once with the question's analysis (predicate_match compares
    // every predicate word of every request on the question with them); empty: made when needed.
    text::Trigrams stem_trigrams;
};

// The relation words of one key (main cue, else stem) within one clause of the question:
// "other half of spouse of X 's spouse" has three spouse mentions (clauses split at "of",
// "and", possessives and punctuation), "the football club that X plays for" one club mention
// however many of its words say "club". A path needs one edge per mention.
struct RelationMention {
    std::string key;
    std::vector<std::size_t> words;  // into QuestionRelations::words
    double weight = 0.0;
    std::size_t position = 0;  // the token index of its first word
    bool appositive = false;   // a type word beside an entity ("the club FC_Porto")
};

struct QuestionRelations {
    std::vector<RelationWord> words;
    std::vector<RelationMention> mentions;  // in question order
    // Indexes into `mentions`, the chain order: the mentions after the first named entity left
    // to right (possessives: "X 's kid 's spouse"), then those before it right to left (nested
    // "of" and relative clauses: "the founder of the shipyard that built X"). Appositive type
    // words are not part of the chain.
    std::vector<std::size_t> chain;
    double total_weight = 0.0;
};

// The relation words of an analysed question, grouped per clause, and their chain.
QuestionRelations question_relations(const detail::QuestionAnalysis& analysis);

// A question's analysis, intent and relations, as analyze_question, question_intent and
// question_relations give them.
struct AnalysedQuestion {
    QuestionAnalysis analysis;
    QuestionIntent intent;
    QuestionRelations relations;
};

// The analysed `question`, remembered for the last few questions this thread analysed: graph-rag
// asks the extractive model about one question four times (concepts, scoring, reasoning, the
// answer), and each call analysed it anew, some twice. The three are pure functions of the
// text, so a remembered one is what analysing again would give. Shared: a caller keeps its copy
// while later calls on the thread push it out of the table.
std::shared_ptr<const AnalysedQuestion> analysed_question(std::string_view question);

// True when `value` reads as a year ("1898"), a date ("12 May 1898", "1898-05-12") or a
// decade/century ("1890s").
bool looks_like_time(std::string_view value);
// True when `value` is a number, optionally with a unit or scale word ("42", "3.5 km",
// "1,200", "two million").
bool looks_like_number(std::string_view value);

}  // namespace glassbox::reasoner::detail
