// Relevance reflection without a model: how well an engine's evidence covers the question
// (docs/query.md §3).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "workers/query/evidence_triples.hpp"

namespace glassbox::query {

// One selection (a kept edge, a retrieved or re-ranked chunk) an engine's explain reported.
struct EvidenceItem {
    std::string selection;  // its explain URI
    double score = 0.0;
    std::string source;  // the chunk, document or file it came from ("" when not reported)
    int tier = 0;        // 1..4; 0: not known
    std::string text;    // what it says, as far as the trace tells (edge ends' names)
};

// What one engine run produced, read from its explain messages and its FINAL.
struct Evidence {
    std::vector<EvidenceItem> kept;           // in the engine's order (best first)
    std::string answer;                       // the FINAL's `response`
    std::optional<std::string> short_answer;  // absent when the template gave none
    std::string cited_text;                   // the citations' texts and titles
};

// Reads the evidence from an engine's explain bodies (PARTIAL explain, §8) and FINAL body:
// Focus edges (gb:EdgeSelection) and kept chunks (the Focus ones when re-ranked, else the
// Exploration ones) with their gb:score, source and gb:dataTier.
Evidence read_evidence(const std::vector<nlohmann::json>& explain, const nlohmann::json& final);
// The same from the triples gathered as the explain bodies arrived (as trees or as text).
Evidence read_gathered_evidence(const EvidenceTriples& triples, const nlohmann::json& final);

struct Relevance {
    double score = 0.0;            // 0..1
    double coverage = 0.0;         // share of the question's content words the evidence holds
    double entity_coverage = 0.0;  // share of the question's entity names it holds (1: none named)
    double decided = 0.0;    // 1: a short answer; 0: the evidence did not decide; 0.5: not known
    double top_score = 0.0;  // the best selection's score
    double gap = 0.0;        // (best - second) / best of the selection scores
    bool empty = true;       // nothing kept
    std::string reason;      // a short why, for the Escalation step
};

// The weights of the score (docs/query.md §3): coverage 0.35, entity coverage 0.25, decided
// 0.3, a clear best selection 0.1 (top score × (0.5 + gap / 2)). An empty result scores 0.
Relevance reflect(std::string_view question, const Evidence& evidence);

// A string field of an untrusted JSON body: "" when absent or not a string.
std::string string_of(const nlohmann::json& body, const char* key);

// An engine that failed: relevance 0 with the error as the reason.
Relevance failed_relevance(const base::Error& error);

}  // namespace glassbox::query
