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

#include "reasoner/value_disagreement.hpp"
#include "schema/explain_builder.hpp"
#include "schema/messages.hpp"

namespace glassbox::agent {

// The typed, conservative comparison of two values (reasoner/value_disagreement.hpp).
using reasoner::values_disagree;

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
// only when that is an edge whose object is the answer, so a list answer or a value the synthesis
// composed is never compared. The subject and predicate are the citation's (graph-rag gives an
// edge's fact in parts), so a name value can be checked against document sentences
// (disputing_sentences). A citation without the parts (an older writer) gives the fact as one
// text: it must end with the answer, the subject is the text before it and the predicate stays
// "" (no sentence check). The selection and source are the edge's; not numbered.
std::optional<EvidenceValue> edge_answer_value(std::string_view answer,
                                               const schema::RagCitation& ground);

// The name one document sentence gives for `subject`'s `predicate` when it is not `value` (a
// name): the sentence names the subject, then, within a few lower-case words and no clause break
// (no comma, no "which"), a word of the predicate ("designed" for "designed by"), then after at
// most three small words ("by", "the") a run of capitalised words, the rival name, which
// values_disagree with `value`. Conservative: a sentence that names `value` anywhere (a second
// person in another role beside it), a relation word not of this predicate ("built" for a
// "designed by" fact), the subject after the relation, or no name right after it: nullopt.
std::optional<std::string> sentence_rival_name(std::string_view sentence, std::string_view subject,
                                               std::string_view predicate, std::string_view value);

// Each of `passages`' sentences that gives `fact` (a name value, its subject and predicate in
// words) another name (sentence_rival_name), as a passage value cited by that passage's
// selection and source (not numbered): at most one per passage. A value holding a number, or a
// fact without a subject or predicate, is not checked here (values_disagree compares numbers).
std::vector<EvidenceValue> disputing_sentences(const EvidenceValue& fact,
                                               const std::vector<schema::RagCitation>& passages);

// Every fact value against every passage value that values_disagree with it. The value `answer`
// gives (normalised equal) is the stated one, the other the rival; a pair whose values the
// answer gives neither of is left out (the answer stated no side). Subject and predicate come
// from the fact.
std::vector<schema::explain::AnswerConflict> fact_passage_conflicts(
    std::string_view answer, const std::vector<EvidenceValue>& facts,
    const std::vector<EvidenceValue>& passages);

}  // namespace glassbox::agent
