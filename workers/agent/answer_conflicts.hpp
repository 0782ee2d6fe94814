// Conflicts between a looked-up fact and a document (docs/confidence.md, conflicts): when the
// agent's evidence holds the value a fact gives for the question and a document passage's answer
// to the same question that gives another, the answer says so with both citations, the trace
// records a gb:Conflict, and the confidence is lowered (reasoner::lower_for_conflicts).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/explain_builder.hpp"
#include "schema/messages.hpp"

namespace glassbox::agent {

// True only when `a` and `b` plainly give different values, compared by type: numbers (years,
// counts, dates' parts) disagree when the two share no number; yes and no disagree; names
// (neither holding a number) disagree when they share no content word. Anything else (equal
// once normalised, one name inside the other, a number against a name, a partial overlap, a
// long phrase) is not called a conflict: a false conflict lowers a right answer's confidence.
bool values_disagree(std::string_view a, std::string_view b);

// One value the evidence gives for the question, with what the answer can cite it by.
struct EvidenceValue {
    std::string subject;  // in words ("" for a passage's answer)
    std::string predicate;
    std::string value;
    std::string selection;  // the step entity that kept it (an Observation, a chunk selection)
    std::vector<std::string> sources;
    std::uint32_t citation = 0;  // its number among the answer's citations (0: not cited)
};

// graph-rag's short answer `answer` as a fact's value, from `ground`, the citation it came from:
// only when that is an edge whose text ("subject predicate object", in words) ends with the
// answer, so a list answer or a value the synthesis composed is never compared. The subject is
// the text before the value (the citation gives the fact as one text: its subject and predicate
// together; the predicate stays ""); the selection and source are the edge's; not numbered.
std::optional<EvidenceValue> edge_answer_value(std::string_view answer,
                                               const schema::RagCitation& ground);

// Every fact value against every passage value that values_disagree with it. The value `answer`
// gives (normalised equal) is the stated one, the other the rival; a pair whose values the
// answer gives neither of is left out (the answer stated no side). Subject and predicate come
// from the fact.
std::vector<schema::explain::AnswerConflict> fact_passage_conflicts(
    std::string_view answer, const std::vector<EvidenceValue>& facts,
    const std::vector<EvidenceValue>& passages);

}  // namespace glassbox::agent
