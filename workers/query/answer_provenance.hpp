// Epistemic provenance of a routed answer: its sources with their data tier, the derivation
// chain, the aggregate tier (the weakest the answer depends on) and, when several engines
// answered, each source's reciprocal-rank-fusion contribution (docs/query.md §4).
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "schema/explain_builder.hpp"
#include "workers/query/engine_run.hpp"
#include "workers/query/router.hpp"

namespace glassbox::query {

// At most this many sources are listed per answer.
inline constexpr std::size_t kMaxAnswerSources = 20;

// The derivation step an engine contributes: "graph-rag:traversal", "document-rag:retrieval",
// "agent:react".
std::string engine_step(const std::string& engine);

// `runs[winner]` is the answer. The sources are the winner's (its cited chunks or documents,
// else the sources of what it kept, else its FINAL's `sources`), best first; with two or more
// runs that found sources, each carries its RRF score over every run's ranking (k = 60).
// A source of unknown tier counts as tier 4 in the aggregate (conservative); no source at all: 4.
schema::explain::AnswerProvenance answer_provenance(const RouteDecision& route,
                                                    const std::vector<EngineRun>& runs,
                                                    std::size_t winner);

// {"engine","derivation":[...],"aggregate_tier","sources":[{"source","tier","engine",
// "fusion_score"?, "loaded_at"?, "date"?, "stale"?}]}
nlohmann::json provenance_json(const schema::explain::AnswerProvenance& provenance);

}  // namespace glassbox::query
