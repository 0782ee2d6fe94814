// Explain emission of a RAG run, and step timing.
#include "workers/rag/rag_trace.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "workers/rag/rag_config.hpp"
#include "workers/runtime/run_trace.hpp"

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

void StepTimer::add(const explain::EmbeddingsCall& call) {
    if (!embeddings_) {
        embeddings_ = call;
        return;
    }
    const auto end =
        std::max(embeddings_->started_at + embeddings_->duration, call.started_at + call.duration);
    embeddings_->started_at = std::min(embeddings_->started_at, call.started_at);
    embeddings_->duration =
        std::chrono::duration_cast<std::chrono::milliseconds>(end - embeddings_->started_at);
    embeddings_->inputs += call.inputs;
    if (!call.model.empty()) embeddings_->model = call.model;
    if (call.dimensions != 0) embeddings_->dimensions = call.dimensions;
}

explain::StepInfo StepTimer::info(const std::string& previous) const {
    explain::StepInfo step;
    step.generated_at = std::chrono::system_clock::now();
    if (!previous.empty()) step.derived_from = previous;
    step.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started_);
    if (called_) {
        step.input_tokens = in_;
        step.output_tokens = out_;
        if (!model_.empty()) step.model = model_;
    }
    step.embeddings = embeddings_;
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
      run_(context.run()),
      session_(run_.question()),
      agent_(explain::worker_agent_uri(service)) {}

base::Result<void> RagTrace::send(const std::string& uri, Build build, runtime::ExplainState state,
                                  const std::optional<base::Error>& error, bool now) {
    auto step = runtime::trace_step(session_, uri, state, parent_uri_, error, std::move(build));
    // Deferred: sent once the next call's request is out (or before the reply), so the
    // building, encoding and the broker's routing of the step overlap the callee's work.
    auto sent = now ? context_.send_explain(step) : context_.defer_explain(std::move(step));
    if (!sent) return sent.error();
    return {};
}

base::Result<void> RagTrace::open(std::string_view query, std::size_t max_chars,
                                  const std::optional<std::string>& parent_uri,
                                  std::string_view conversation, std::string_view collection,
                                  std::string_view revision_of) {
    parent_uri_ = parent_uri;
    opened_ = true;
    if (!explain_) return {};
    std::optional<std::string> parent;
    if (parent_uri_ && !parent_uri_->empty()) parent = *parent_uri_;
    // A sub-run belongs to its caller's turn (docs/vocabulary.md §2).
    std::optional<std::string> turn_of;
    if (!parent && !conversation.empty()) turn_of = std::string(conversation);
    return send(
        session_,
        [run = run_, query = std::string(cut_to_chars(query, max_chars)),
         started = std::chrono::system_clock::now(), agent = agent_, parent = std::move(parent),
         turn_of = std::move(turn_of), collection = std::string(collection),
         revision_of = std::string(revision_of)](schema::TripleSink& out) {
            explain::question(out, run, query, started, agent,
                              parent ? std::optional<std::string_view>(*parent) : std::nullopt,
                              turn_of ? std::optional<std::string_view>(*turn_of) : std::nullopt,
                              {}, collection, revision_of);
        },
        runtime::ExplainState::kOpen, std::nullopt);
}

base::Result<void> RagTrace::step(const std::string& uri, Build build) {
    if (!explain_) return {};
    return send(uri, std::move(build), runtime::ExplainState::kOpen, std::nullopt);
}

base::Result<void> RagTrace::complete(const std::string& uri, const Build& build) {
    ended_ = true;
    if (!explain_) return {};
    return send(
        uri,
        [&build, this](schema::TripleSink& out) {
            build(out);
            // Stamped after the last step is built: that step's prov:generatedAtTime is read
            // inside build(), and the run may not end before what it generated.
            explain::trace_end(out, run_, std::chrono::system_clock::now(),
                               schema::TraceStatus::kComplete);
        },
        runtime::ExplainState::kComplete, std::nullopt, true);
}

void RagTrace::fail(const base::Error& error) {
    // After a cancel or a passed deadline the broker ends the open trace itself (§5.3).
    runtime::fail_traced_request(context_, error, [&] {
        if (!explain_ || !opened_ || ended_) return;
        ended_ = true;
        (void)context_.defer_explain(
            runtime::trace_failure_step(run_, session_, parent_uri_, error));
    });
}

}  // namespace glassbox::rag
