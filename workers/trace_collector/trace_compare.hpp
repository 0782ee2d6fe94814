// The `trace` service's `compare` op (docs/traces.md, "Replay and compare"): two stored runs
// read from their triples (question, answer, confidence, sources, facts, models) and what
// changed from one to the other.
#pragma once

#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "schema/messages_trace.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace {

// What a stored trace (a `show` reply, sub-runs included) says of its run.
schema::ComparedRun compared_run(const schema::TraceDetail& trace);

// What changed from run `a` to run `b`: answers, confidence, sources and facts added and removed.
schema::TraceComparison compare_runs(schema::ComparedRun a, schema::ComparedRun b);

// The `compare` op: `a` and `b` name runs as `show` takes them (a session URI or a unique UUID
// prefix). An unknown one: NotFound naming it ("a: ..." / "b: ..."); an ambiguous prefix:
// InvalidRequest. Answers schema::TraceComparison.
base::Result<nlohmann::json> compare_traces(TraceStore& store, std::string_view a,
                                            std::string_view b);

}  // namespace glassbox::trace
