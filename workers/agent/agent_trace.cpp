// Explain emission of an agent run.
#include "workers/agent/agent_trace.hpp"

#include "schema/services.hpp"
#include "workers/runtime/run_trace.hpp"

namespace glassbox::agent {

namespace explain = schema::explain;
using base::ErrorType;
using base::make_error;

namespace {

std::string cut_chars(std::string_view text, std::size_t max_chars) {
    std::size_t chars = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (chars++ == max_chars) return std::string(text.substr(0, i));
    }
    return std::string(text);
}

constexpr std::size_t kQuestionChars = 1'000;

}  // namespace

AgentTrace::AgentTrace(runtime::RequestContext& context, bool explain)
    : context_(context), explain_(explain), run_(context.run()), session_(run_.question()) {}

base::Result<void> AgentTrace::send(const std::string& uri,
                                    std::function<void(schema::TripleSink&)> build,
                                    runtime::ExplainState state,
                                    const std::optional<base::Error>& error) {
    if (uri != session_) last_ = uri;
    if (!explain_) return {};
    auto step = runtime::trace_step(session_, uri, state, parent_uri_, error, std::move(build));
    // Open steps are deferred: they go out with the next call's request, overlapping its work.
    auto sent = state == runtime::ExplainState::kOpen ? context_.defer_explain(std::move(step))
                                                      : context_.send_explain(step);
    if (!sent) return sent.error();
    return {};
}

base::Result<void> AgentTrace::open(std::string_view question,
                                    const std::optional<std::string>& parent_uri,
                                    const std::string& conversation, const std::string& collection,
                                    const std::string& revision_of) {
    parent_uri_ = parent_uri;
    opened_ = true;
    std::optional<std::string> turn_of;
    if (!parent_uri && !conversation.empty()) turn_of = conversation;
    return send(
        session_,
        [run = run_, query = cut_chars(question, kQuestionChars),
         started = std::chrono::system_clock::now(),
         agent = explain::worker_agent_uri(schema::services::kAgent), parent = parent_uri,
         turn_of = std::move(turn_of), collection, revision_of](schema::TripleSink& out) {
            explain::question(out, run, query, started, agent,
                              parent ? std::optional<std::string_view>(*parent) : std::nullopt,
                              turn_of ? std::optional<std::string_view>(*turn_of) : std::nullopt,
                              {}, collection, revision_of);
        },
        runtime::ExplainState::kOpen, std::nullopt);
}

base::Result<void> AgentTrace::analysis(std::size_t n, const explain::StepInfo& info,
                                        explain::AgentAction action) {
    reached_ = "analysis " + std::to_string(n);
    return send(
        run_.analysis(n),
        [run = run_, n, info, action = std::move(action)](schema::TripleSink& out) {
            explain::analysis(out, run, n, info, action);
        },
        runtime::ExplainState::kOpen, std::nullopt);
}

base::Result<void> AgentTrace::observation(std::size_t n, const explain::StepInfo& info,
                                           std::string text, explain::ObservationInfo details) {
    reached_ = "observation " + std::to_string(n);
    return send(
        run_.observation(n),
        [run = run_, n, info, text = std::move(text),
         details = std::move(details)](schema::TripleSink& out) {
            explain::observation(out, run, n, info, explain::StoredText{text, std::nullopt},
                                 details);
        },
        runtime::ExplainState::kOpen, std::nullopt);
}

base::Result<void> AgentTrace::conclude(const explain::StepInfo& info, std::string answer,
                                        std::string termination,
                                        std::optional<std::string> short_answer,
                                        const std::optional<base::Error>& error,
                                        std::optional<explain::AnswerProvenance> provenance,
                                        std::optional<explain::AnswerConfidence> confidence) {
    reached_ = "conclusion";
    ended_ = true;
    const auto status = error ? schema::TraceStatus::kError : schema::TraceStatus::kComplete;
    return send(
        run_.conclusion(),
        [run = run_, info, answer = std::move(answer), termination = std::move(termination),
         short_answer = std::move(short_answer), status, provenance = std::move(provenance),
         confidence = std::move(confidence),
         ended = std::chrono::system_clock::now()](schema::TripleSink& out) {
            explain::conclusion(out, run, info, explain::StoredText{answer, std::nullopt},
                                termination, short_answer);
            if (provenance) explain::answer_provenance(out, run, *provenance);
            if (confidence) explain::conclusion_confidence(out, run, *confidence);
            explain::trace_end(out, run, ended, status);
        },
        error ? runtime::ExplainState::kError : runtime::ExplainState::kComplete, error);
}

void AgentTrace::fail(const base::Error& error) {
    runtime::fail_traced_request(context_, error, [&] {
        if (!explain_ || !opened_ || ended_) return;
        ended_ = true;
        // The trace names the step the run reached; the reply carries the error as it is.
        (void)context_.send_explain(runtime::trace_failure_step(
            run_, session_, parent_uri_,
            make_error(error.type, error.message + " (reached: " + reached_ + ")")));
    });
}

}  // namespace glassbox::agent
