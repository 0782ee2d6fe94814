// The explain steps of a traced run (the agent's and the RAG services' traces): one step as the
// runtime sends it, and the end of a trace and its request on a failure.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "base/result.hpp"
#include "schema/explain_uris.hpp"
#include "workers/runtime/request_context.hpp"

namespace glassbox::runtime {

// One step of the trace whose Question is `session`: `uri` with its state, the calling step
// (`parent_uri`, for a sub-trace), the error a kError step records, and the builder of its
// triples.
ExplainStep trace_step(const std::string& session, const std::string& uri, ExplainState state,
                       const std::optional<std::string>& parent_uri,
                       const std::optional<base::Error>& error,
                       std::function<void(schema::TripleSink&)> build);

// The step that ends `run`'s trace (its Question is `session`) with status error, recording
// `error` as the trace's error: prov:endedAtTime now and gb:status, under the session's URI.
ExplainStep trace_failure_step(const schema::explain::RunUris& run, const std::string& session,
                               const std::optional<std::string>& parent_uri, base::Error error);

// Ends `context`'s request with `error`, unless it already ended. After a cancel or a passed
// deadline it ends with the cancellation error alone: the broker ends the open trace itself
// (§5.3). Otherwise `end_trace` runs first (the caller sends trace_failure_step there when its
// trace is still open), then ERROR goes out.
void fail_traced_request(RequestContext& context, const base::Error& error,
                         const std::function<void()>& end_trace);

}  // namespace glassbox::runtime
