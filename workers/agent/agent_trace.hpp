// The explain trace of one agent run: Question → (Analysis [+ToolUse] → Observation)* →
// Conclusion, each step sent as it completes; ended complete with the Conclusion, or error.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "schema/explain_builder.hpp"
#include "workers/runtime/request_context.hpp"

namespace glassbox::agent {

class AgentTrace {
public:
    // `explain` false: nothing is built or sent (the bench-only switch).
    AgentTrace(runtime::RequestContext& context, bool explain);

    const schema::explain::RunUris& run() const noexcept { return run_; }
    const std::string& session() const noexcept { return session_; }
    // The last step sent ("" before the first): the next step is derived from it.
    const std::string& last_step() const noexcept { return last_; }
    // The step being worked on, for a trace ended by a failure (docs/agent.md).
    void reached(std::string what) { reached_ = std::move(what); }
    const std::string& reached() const noexcept { return reached_; }

    // The Question; a top-level run (no parent) with a `conversation` (the request's session_id)
    // records it as gb:conversation: the run is a turn of that conversation.
    // A non-empty `collection` (the one the request asks) becomes gb:collection, a non-empty
    // `revision_of` (the run it asks again) prov:wasRevisionOf.
    base::Result<void> open(std::string_view question, const std::optional<std::string>& parent_uri,
                            const std::string& conversation = {},
                            const std::string& collection = {},
                            const std::string& revision_of = {});
    base::Result<void> analysis(std::size_t n, const schema::explain::StepInfo& info,
                                schema::explain::AgentAction action);
    base::Result<void> observation(std::size_t n, const schema::explain::StepInfo& info,
                                   std::string text, schema::explain::ObservationInfo details);
    // The Conclusion and the end of the trace (status complete, or error with `error`). With
    // `provenance`, the Conclusion also records the answer's sources, their data tiers and the
    // aggregate tier (gb:answerSource, gb:aggregateTier, as a routed answer's); with
    // `confidence`, the answer's confidence as a RAG Synthesis records it (gb:answerConfidence,
    // gb:calibrator, gb:abstained, gb:evidenceFeature).
    base::Result<void> conclude(
        const schema::explain::StepInfo& info, std::string answer, std::string termination,
        std::optional<std::string> short_answer,
        const std::optional<base::Error>& error = std::nullopt,
        std::optional<schema::explain::AnswerProvenance> provenance = std::nullopt,
        std::optional<schema::explain::AnswerConfidence> confidence = std::nullopt);
    // Ends the request with `error` (the trace first, with status error, unless the request was
    // cancelled: the broker closes the trace then).
    void fail(const base::Error& error);

private:
    base::Result<void> send(const std::string& uri, std::function<void(schema::TripleSink&)> build,
                            runtime::ExplainState state, const std::optional<base::Error>& error);

    runtime::RequestContext& context_;
    bool explain_;
    schema::explain::RunUris run_;
    std::string session_;
    std::optional<std::string> parent_uri_;
    std::string last_;
    std::string reached_ = "question";
    bool opened_ = false;
    bool ended_ = false;
};

}  // namespace glassbox::agent
