// Question analysis for the extractive model (internal to reasoner/): the question's tokens,
// its entity mentions and its concepts, most salient first.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::reasoner::detail {

inline bool is_ascii_upper(char c) { return c >= 'A' && c <= 'Z'; }
inline bool is_ascii_lower(char c) { return c >= 'a' && c <= 'z'; }

// A citation marker id the writers may cite: [A-Za-z0-9_-]{1,32}.
inline bool valid_marker_id(std::string_view id) {
    if (id.empty() || id.size() > 32) return false;
    for (char c : id) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

// One whitespace-separated piece of the question, punctuation stripped.
struct Token {
    std::string text;  // as written, without surrounding punctuation or a possessive 's
    std::string lower;
    std::size_t index = 0;    // position among tokens
    bool possessive = false;  // followed by 's
    bool sentence_initial = false;
    bool break_after = false;  // punctuation or a possessive after it ends a phrase
    bool punct_after = false;  // punctuation after it
    bool underscore = false;
    bool capitalized = false;
    bool all_caps = false;
    bool number = false;
    bool stop = false;
    bool in_entity = false;   // part of an entity mention
    bool appositive = false;  // a type word next to an entity mention ("the club X")
};

struct Candidate {
    std::string text;
    int score = 0;
    std::size_t position = 0;
    bool entity = false;
};

struct QuestionAnalysis {
    std::vector<Token> tokens;
    std::vector<Candidate> candidates;  // sorted, most salient first, distinct
};

// Tokens, entity mentions and concepts of `question` (extract_concepts gives the concepts).
QuestionAnalysis analyze_question(std::string_view question);

}  // namespace glassbox::reasoner::detail
