// Two engines' short answers that disagree (docs/confidence.md, conflicts): after an escalation,
// the answer that won and each other engine's short answer are compared; a disagreement is a
// gb:Conflict between the engines, said in the answer with both engines' citations, and lowers
// the router's confidence (the winner's, times the stated side's share of both sides' sources).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/explain_builder.hpp"
#include "workers/query/engine_run.hpp"

namespace glassbox::query {

// One engine's short answer against the winner's, as a conflict: stated the winner's value,
// rival the other engine's, each with the selection of the citation its short answer came from
// (else the engine's last step) and that citation's source; `rival_engine` names the other.
struct EngineConflict {
    schema::explain::AnswerConflict conflict;
    std::string stated_engine;
    std::string rival_engine;
    nlohmann::json rival_citation;  // the rival engine's citation, as its FINAL gave it (or null)
    // Each engine's own calibrated confidence in its answer (EngineRun::confidence).
    std::optional<double> stated_confidence;
    std::optional<double> rival_confidence;
};

// The conflicts between `runs[winner]`'s short answer and every other run (not failed, another
// engine) whose short answer reasoner::values_disagree with it; none when the winner gave no
// short answer or no other engine ran. One per rival value (two engines giving the same rival
// value are one dispute).
std::vector<EngineConflict> engine_conflicts(const std::vector<EngineRun>& runs,
                                             std::size_t winner);

// Adds `found` to the router's FINAL `body` (the winner's FINAL as passed on): each rival's
// citation appended to "citations" (numbered after the winner's), the conflicts after the
// engine's own in "conflicts", a note after the response ("The engines disagree: graph-rag gives
// 1879 [1]; document-rag gives 1881 [3]."), and the confidence lowered for them (the feature
// "engine_conflict"; the engine's own conflicts are not counted again, and a dispute the engine
// reported itself is left out). The confidence keeps the stated value's share of the two engines'
// own confidences (the smallest over the rivals): a weak rival, an answer escalated past, lowers
// it little, an equally sure one halves it; without both confidences, the share of the two
// sides' sources (reasoner::lower_for_conflicts). Returns the confidence
// as the body now states it (nullopt when the body has none), for the Conclusion.
std::optional<schema::explain::AnswerConfidence> add_engine_conflicts(
    nlohmann::json& body, std::vector<EngineConflict> found);

}  // namespace glassbox::query
