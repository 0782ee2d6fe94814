// The evidence features of an agent's answer (docs/confidence.md, docs/agent.md §7): what the
// run shows about the ground its final answer stands on, measured after it, whichever model
// planned the lookups. The "agent" calibrator (reasoner/answer_confidence.hpp) turns them into a
// probability.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "reasoner/answer_confidence.hpp"
#include "workers/agent/answer_evidence.hpp"

namespace glassbox::agent {

// What the features read: the question, the answer, how the run went, and what it rests on.
struct AgentRunEvidence {
    std::string question;
    std::string answer;         // the short answer ("": none)
    bool final_answer = false;  // the loop ended with the model's final answer
    std::size_t iterations = 0;
    std::vector<StepFact> facts;      // every fact the lookups showed
    std::vector<std::size_t> behind;  // facts_behind(answer, facts)
    std::size_t empty_lookups = 0;    // lookups (triples-query) that found no fact or failed
    std::size_t tool_errors = 0;      // other tool calls that failed
    // The answer is a RAG tool's short answer, and that tool's calibrated confidence.
    bool rag_answer = false;
    std::optional<double> rag_confidence;
};

// answered, final_answer, chain_complete (the answer stands on lookup facts and the loop ended
// with it), planned_hops (the relations the question chains), chain_hops (the lookups the facts
// behind the answer come from), hop_gap (|planned − chained|, at most 3), answer_ends (log(1+n),
// n the ends a list answer names), answer_backed (cited facts or citations), answer_facts
// (log(1+n)), answer_sources (log(1+n)), weakest_tier (of the cited sources, 0 not known),
// iterations, empty_lookup, tool_errors (at most 3), type_mismatch, rag_answer, rag_confidence
// (0 when the answer is not a RAG tool's).
reasoner::EvidenceFeatures agent_features(const AgentRunEvidence& run, const AnswerEvidence& cited);

}  // namespace glassbox::agent
