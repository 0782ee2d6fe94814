// One engine run of a routed query: what was asked, what came back, how relevant it was.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "schema/explain_builder.hpp"
#include "workers/query/relevance.hpp"

namespace glassbox::query {

struct EngineRun {
    std::string engine;
    std::string query;                 // the question as this engine was asked it
    std::optional<base::Error> error;  // the run failed (or the engine is missing)
    nlohmann::json final;              // its FINAL body
    std::string session;               // its sub-trace's session URI
    std::string last_step;             // the explain URI of its last step (Synthesis, Conclusion)
    Evidence evidence;
    Relevance relevance;
    // The engine's calibrated confidence (docs/confidence.md), when its FINAL carries one: what
    // escalation and the winner are decided by; relevance decides for engines without one.
    std::optional<double> confidence;
    // How `relevance` was judged (llm or model-free, and why a model's judgement was not used).
    schema::explain::ReflectionInfo reflection;
    std::chrono::milliseconds duration{0};
    // The answer text streamed to the client for this run (provisional pieces, in order).
    std::string streamed;
};

}  // namespace glassbox::query
