// The evidence features of an agent's answer (workers/agent/answer_features.hpp).
#include "workers/agent/answer_features.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace glassbox::agent {
namespace {

double flag(bool value) { return value ? 1.0 : 0.0; }

double log_count(std::size_t n) { return std::log1p(static_cast<double>(n)); }

// The distinct ends of the answer among the facts behind it: each label the answer names once.
std::size_t answer_ends(const AgentRunEvidence& run) {
    std::set<std::string> ends;
    for (const auto i : run.behind) {
        if (i >= run.facts.size()) continue;
        const auto& label = run.facts[i].fact.other_label;
        if (answer_names(run.answer, label)) ends.insert(normalise_name(label));
    }
    return ends.size();
}

// The lookups (iterations) the facts behind the answer come from: the chain's length.
std::size_t chain_hops(const AgentRunEvidence& run) {
    std::set<std::size_t> iterations;
    for (const auto i : run.behind)
        if (i < run.facts.size()) iterations.insert(run.facts[i].iteration);
    return iterations.size();
}

}  // namespace

reasoner::EvidenceFeatures agent_features(const AgentRunEvidence& run,
                                          const AnswerEvidence& cited) {
    const bool answered = !normalise_name(run.answer).empty();
    const std::size_t planned = reasoner::question_expectation(run.question).relations;
    const std::size_t hops = chain_hops(run);
    const std::size_t gap =
        hops == 0 || planned == 0 ? 0 : (hops > planned ? hops - planned : planned - hops);
    int weakest = 0;
    for (const auto& s : cited.answer_sources) weakest = std::max(weakest, s.data_tier);
    return {
        {"answered", flag(answered)},
        {"final_answer", flag(run.final_answer)},
        {"chain_complete", flag(answered && run.final_answer && !run.behind.empty())},
        {"planned_hops", static_cast<double>(std::min<std::size_t>(planned, 5))},
        {"chain_hops", static_cast<double>(std::min<std::size_t>(hops, 5))},
        {"hop_gap", static_cast<double>(std::min<std::size_t>(gap, 3))},
        {"answer_ends", log_count(answered ? answer_ends(run) : 0)},
        {"answer_backed", flag(answered && (!run.behind.empty() || !cited.citations.empty()))},
        {"answer_facts", log_count(run.behind.size())},
        {"answer_sources", log_count(cited.answer_sources.size())},
        {"weakest_tier", static_cast<double>(weakest)},
        {"iterations", static_cast<double>(run.iterations)},
        {"empty_lookup", flag(run.empty_lookups > 0)},
        {"tool_errors", static_cast<double>(std::min<std::size_t>(run.tool_errors, 3))},
        {"type_mismatch",
         flag(answered && reasoner::answer_type_mismatch(run.question, run.answer))},
        {"rag_answer", flag(answered && run.rag_answer)},
        {"rag_confidence", answered && run.rag_answer ? run.rag_confidence.value_or(0.0) : 0.0},
    };
}

}  // namespace glassbox::agent
