// What an agent's answer rests on: the facts of its lookups that lead to the answer (traced back
// from it) and its RAG tools' citations, with the sources and data tiers the store recorded for
// them; they become the FINAL's `sources` and `citations` and the Conclusion's answer sources
// (docs/agent.md §6).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "schema/explain_builder.hpp"
#include "schema/messages.hpp"
#include "workers/agent/agent_tools.hpp"

namespace glassbox::agent {

// At most this many lookup facts are traced back from one answer (each becomes a citation).
inline constexpr std::size_t kMaxAnswerFacts = 32;

// A fact a lookup showed, with the iteration whose lookup showed it.
struct StepFact {
    ObservedFact fact;
    std::size_t iteration = 0;
};

// True when `answer` names `label` (both compared as normalise_name): it is the answer, or one
// item of a list answer ("A, B and C", "A, B and 3 others": the label stands between the start,
// ", " or " and " and the end, ", " or " and "), so a label that holds "and" still matches whole.
bool answer_names(std::string_view answer, std::string_view label);

// The facts the answer rests on, as indices into `facts`, in the order found (the answer's own
// facts first). The rule, deterministic and independent of the model that planned the lookups:
// a fact whose other end the answer names (answer_names: each end of a list answer), shown by
// the last iteration that showed such a fact, leads to the answer;
// then, going back, a fact whose other end is the entity a chosen fact was looked up from, shown
// by an iteration before that entity's lookup, leads to it. Each stored triple once; at most
// `limit`. No answer: none.
std::vector<std::size_t> facts_behind(std::string_view answer, const std::vector<StepFact>& facts,
                                      std::size_t limit = kMaxAnswerFacts);

struct AnswerEvidence {
    std::vector<schema::RagCitation> citations;                     // numbered from 1
    std::vector<std::string> sources;                               // each once, in citation order
    std::vector<schema::explain::AnswerSourceInfo> answer_sources;  // with tier, each once
};

// The citations of `chosen` facts (`fact_sources[i]` are chosen[i]'s stored sources, best
// first; a shorter list: not known) and then the RAG tools' citations; the sources are the
// cited files and chunks (a source cited with two tiers keeps the weaker), then the RAG tools'
// uncited `rag_sources` (tier not known) when nothing is cited.
AnswerEvidence answer_evidence(const std::vector<ObservedFact>& chosen,
                               const std::vector<std::vector<schema::FactSource>>& fact_sources,
                               const std::vector<schema::RagCitation>& rag_citations,
                               const std::vector<std::string>& rag_sources);

// `text` with the markers of citations 1..`count` when it has none: "[1][2]" before its closing
// full stop (or at its end), as the RAG engines place theirs, so the answer says which of the
// numbered sources it rests on (issue 31: agent answers listed sources the text never cited).
// Text that already holds a "[n]" marker (a model that cited) is returned as it is. Citations in
// `left_out` are not marked: a passage that disagrees with the answer does not support it (the
// conflict note cites it).
std::string with_citation_markers(std::string text, std::size_t count,
                                  const std::set<std::uint32_t>& left_out = {});

// `text`, a RAG tool's answer passed on as the agent's, cited as the agent numbers its sources:
// the tool's markers go back where the tool put them, each numbered as `citations` (the agent's,
// numbered from 1) number the citation of the same selection. The tool's FINAL turned its
// markers into its citations' `spans` (code points of that text): each span's marker goes at its
// end (before the sentence's closing stop, as the CLI places them); a "[n]" the text still
// holds (a conflict note the tool wrote) is renumbered. A tool citation the agent does not cite,
// or a span outside `text`, is not marked. A text without markers of its own then gets those of
// the agent's other citations but `left_out` (its lookups' facts, another tool's passages) at
// its end, as with_citation_markers adds them.
std::string with_tool_markers(std::string text,
                              const std::vector<schema::RagCitation>& tool_citations,
                              const std::vector<schema::RagCitation>& citations,
                              const std::set<std::uint32_t>& left_out = {});

}  // namespace glassbox::agent
