// Resolving a follow-up question's reference ("it", "he", "its", "that film") to an entity of the
// previous turn of the conversation, without a model: a deterministic rule (docs/agent.md §5),
// shared by the agent's offline planner and the query worker.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace glassbox::text {

// A turn of the conversation as the trace store keeps it.
struct EarlierTurn {
    std::string question;
    std::string answer;        // the answer text
    std::string short_answer;  // "" when there was none
};

struct ResolvedReference {
    std::string question;   // the question with the reference replaced (as given when none)
    std::string reference;  // the words replaced, as written ("it", "that film")
    std::string entity;     // what they were read as; "" when nothing was resolved
    std::string rule;       // why this entity: "answer", "question-entity", "type:<noun>"
    bool resolved() const noexcept { return !entity.empty(); }
};

// The first reference of `question` read against the LAST of `turns` (oldest first):
//  - references: "it", "he", "she", "they", "him", "them"; the possessives "its", "his",
//    "their" and "her" before a word (rewritten "<entity> 's"); "this <noun>", "the same
//    <noun>", and "that <noun>" where "that" opens the question or follows a preposition or a
//    verb (not "the company that built": a relative "that");
//  - candidates: the turn's short answer when it names something (not yes/no, not empty) and
//    the turn question's named entity (its longest run of capitalised or underscored words);
//  - a noun reference takes the candidate whose type is that noun when known (the answer's:
//    the noun the turn asked for, "which company …"; the entity's: its name holds the noun,
//    or the answer text says "<entity> is a <noun>"), else as "it";
//  - "he", "she", "they" … take the answer when the turn asked "who …", else the entity;
//  - "it", "its" take the answer when the turn asked "which/what <noun> …" (a thing), else the
//    entity. The other candidate when the chosen one is missing; none: nothing resolved.
ResolvedReference resolve_reference(std::string_view question,
                                    const std::vector<EarlierTurn>& turns);

// What a follow-up asks for besides what the conversation already answered: "What else did she
// design?", "Which other lights are there?", "Who designed one too?". `marker` is the word that
// asks it ("else", "other", "others", "another", "too", "besides"); `entities` are what the
// LAST of `turns` answered and asked about (the items of its short answer, split at commas and
// "and", and its question's named entity), without the entity `resolved` read a reference as:
// the answer is to be something besides them. Empty without such a word or without turns.
struct Exclusion {
    std::string marker;
    std::vector<std::string> entities;
    bool any() const noexcept { return !entities.empty(); }
};
Exclusion already_answered(std::string_view question, const std::vector<EarlierTurn>& turns,
                           const ResolvedReference& resolved);

// The longest run of capitalised (or underscored) words of `text`, underscores as spaces; a
// capitalised question word opening the text is no name. "" when there is none.
std::string named_entity(std::string_view text);

}  // namespace glassbox::text
