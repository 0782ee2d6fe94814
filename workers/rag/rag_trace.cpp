// Explain emission of a RAG run, and step timing.
#include "workers/rag/rag_trace.hpp"

#include <cstdlib>
#include <cstring>

#include "workers/rag/rag_config.hpp"

namespace glassbox::rag {

namespace explain = schema::explain;

bool explain_disabled_by_env() {
    const char* value = std::getenv(kNoExplainEnv);
    return value != nullptr && std::strcmp(value, "1") == 0;
}

void StepTimer::add(const schema::LlmResponse& response) {
    in_ += response.in_token;
    out_ += response.out_token;
    if (!response.model.empty()) model_ = response.model;
    called_ = true;
}

explain::StepInfo StepTimer::info(const std::string& previous) const {
    explain::StepInfo step;
    step.generated_at = std::chrono::system_clock::now();
    if (!previous.empty()) step.derived_from = previous;
    step.duration = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
    if (called_) {
        step.input_tokens = in_;
        step.output_tokens = out_;
        if (!model_.empty()) step.model = model_;
    }
    return step;
}

std::string_view cut_to_chars(std::string_view text, std::size_t max_chars) {
    std::size_t chars = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (chars == max_chars) return text.substr(0, i);
        ++chars;
    }
    return text;
}

RagTrace::RagTrace(runtime::RequestContext& context, std::string_view service, bool explain)
    : context_(context),
      explain_(explain),
      run_(explain::RunUris::generate()),
      session_(run_.question()),
      agent_(explain::worker_agent_uri(service)) {}

schema::Result<void> RagTrace::send(const std::string& uri, Triples triples, runtime::ExplainState state,
                                    const std::optional<schema::Error>& error, std::function<Triples()> build) {
    runtime::ExplainStep step;
    step.session = session_;
    step.explain_id = uri;
    step.triples = std::move(triples);
    step.state = state;
    step.parent_uri = parent_uri_;
    step.error = error;
    step.build = std::move(build);
    // Sent once the next call's request is out (or before the reply): the building, encoding
    // and the broker's routing of the step overlap the callee's work instead of delaying it.
    auto sent = context_.defer_explain(std::move(step));
    if (!sent) return sent.error();
    return {};
}

schema::Result<void> RagTrace::open(std::string_view query, std::size_t max_chars,
                                    const std::optional<std::string>& parent_uri) {
    parent_uri_ = parent_uri;
    opened_ = true;
    if (!explain_) return {};
    const auto started = std::chrono::system_clock::now();
    std::optional<std::string_view> parent;
    if (parent_uri_ && !parent_uri_->empty()) parent = *parent_uri_;
    return send(session_, explain::question(run_, cut_to_chars(query, max_chars), started, agent_, parent),
                runtime::ExplainState::kOpen, std::nullopt);
}

schema::Result<void> RagTrace::step(const std::string& uri, std::function<Triples()> build) {
    if (!explain_) return {};
    return send(uri, {}, runtime::ExplainState::kOpen, std::nullopt, std::move(build));
}

schema::Result<void> RagTrace::complete(const std::string& uri, const std::function<Triples()>& build) {
    ended_ = true;
    if (!explain_) return {};
    auto triples = build();
    auto end = explain::trace_end(run_, std::chrono::system_clock::now(), schema::TraceStatus::kComplete);
    triples.insert(triples.end(), end.begin(), end.end());
    return send(uri, std::move(triples), runtime::ExplainState::kComplete, std::nullopt);
}

void RagTrace::fail(const schema::Error& error) {
    if (context_.finished()) return;
    // After a cancel or a passed deadline the broker ends the open trace itself (§5.3).
    if (context_.cancelled()) {
        (void)context_.fail(context_.cancellation_error());
        return;
    }
    if (explain_ && opened_ && !ended_) {
        ended_ = true;
        (void)send(session_, explain::trace_end(run_, std::chrono::system_clock::now(), schema::TraceStatus::kError),
                   runtime::ExplainState::kError, error);
    }
    (void)context_.fail(error);
}

}  // namespace glassbox::rag
