// One RAG run's explain trace: the Question, each step as it completes (with its duration,
// model and tokens), and the end — complete with the last step, or error on any failure path.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/explain_builder.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "workers/runtime/request_context.hpp"

namespace glassbox::rag {

// Times one step and sums the LLM calls made in it.
class StepTimer {
public:
    StepTimer() : started_(std::chrono::steady_clock::now()) {}
    void add(const schema::LlmResponse& response);
    // An embeddings call made in the step (several: one record from the first's start to the
    // last's end, of all their texts).
    void add(const schema::explain::EmbeddingsCall& call);
    // The StepInfo for the builders: now, the duration since construction, tokens and model
    // (when an LLM was called), the embeddings call (when one was made), derived from `previous`
    // (empty for the first step).
    schema::explain::StepInfo info(const std::string& previous) const;
    std::uint64_t input_tokens() const noexcept { return in_; }
    std::uint64_t output_tokens() const noexcept { return out_; }

private:
    std::chrono::steady_clock::time_point started_;
    std::uint64_t in_ = 0;
    std::uint64_t out_ = 0;
    std::string model_;
    bool called_ = false;
    std::optional<schema::explain::EmbeddingsCall> embeddings_;
};

// Cuts `text` to at most `max_chars` code points (never inside a character).
std::string_view cut_to_chars(std::string_view text, std::size_t max_chars);

class RagTrace {
public:
    // Writes a step's triples (schema/explain_builder.hpp's sink overloads).
    using Build = std::function<void(schema::TripleSink&)>;

    // `explain` false: nothing is built or sent (the bench-only switch).
    RagTrace(runtime::RequestContext& context, std::string_view service, bool explain);

    const schema::explain::RunUris& run() const noexcept { return run_; }
    const std::string& session() const noexcept { return session_; }

    // Sends the Question (the query cut to `max_chars` characters). A top-level run (no
    // parent_uri) with a non-empty `conversation` (the request's session_id) records it as
    // gb:conversation: the run is a turn of that conversation. A non-empty `collection` (the one
    // the request asks) becomes gb:collection, a non-empty `revision_of` (the request's: the run
    // it asks again) prov:wasRevisionOf.
    base::Result<void> open(std::string_view query, std::size_t max_chars,
                            const std::optional<std::string>& parent_uri,
                            std::string_view conversation = {}, std::string_view collection = {},
                            std::string_view revision_of = {});
    // Sends one step, deferred to the next call (RequestContext::defer_explain). The builder
    // runs only when explain is on, and then when the step goes out: after the next call's
    // request. It must own what it reads (captures by value; the StepInfo taken at completion).
    base::Result<void> step(const std::string& uri, Build build);
    // Sends the last step together with the end of the trace (status complete), at once: the
    // builder may read the caller's locals.
    base::Result<void> complete(const std::string& uri, const Build& build);
    // Ends the request with `error`: unless the request was cancelled (the broker closes the
    // trace then), the trace is ended first with status error.
    void fail(const base::Error& error);

private:
    // Defers the step to the next call (or the reply); with `now`, sends it at once.
    base::Result<void> send(const std::string& uri, Build build, runtime::ExplainState state,
                            const std::optional<base::Error>& error, bool now = false);

    runtime::RequestContext& context_;
    bool explain_;
    schema::explain::RunUris run_;
    std::string session_;
    std::string agent_;
    std::optional<std::string> parent_uri_;
    bool opened_ = false;
    bool ended_ = false;
};

}  // namespace glassbox::rag
