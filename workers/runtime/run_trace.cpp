// The explain steps of a traced run, and the order of a traced request's failure.
#include "workers/runtime/run_trace.hpp"

#include <chrono>
#include <utility>

#include "schema/explain_builder.hpp"

namespace glassbox::runtime {

ExplainStep trace_step(const std::string& session, const std::string& uri, ExplainState state,
                       const std::optional<std::string>& parent_uri,
                       const std::optional<base::Error>& error,
                       std::function<void(schema::TripleSink&)> build) {
    ExplainStep step;
    step.session = session;
    step.explain_id = uri;
    step.state = state;
    step.parent_uri = parent_uri;
    step.error = error;
    step.build = std::move(build);
    return step;
}

ExplainStep trace_failure_step(const schema::explain::RunUris& run, const std::string& session,
                               const std::optional<std::string>& parent_uri, base::Error error) {
    return trace_step(session, session, ExplainState::kError, parent_uri, std::move(error),
                      [run, ended = std::chrono::system_clock::now()](schema::TripleSink& out) {
                          schema::explain::trace_end(out, run, ended, schema::TraceStatus::kError);
                      });
}

void fail_traced_request(RequestContext& context, const base::Error& error,
                         const std::function<void()>& end_trace) {
    if (context.finished()) return;
    if (context.cancelled()) {
        (void)context.fail(context.cancellation_error());
        return;
    }
    if (end_trace) end_trace();
    (void)context.fail(error);
}

}  // namespace glassbox::runtime
