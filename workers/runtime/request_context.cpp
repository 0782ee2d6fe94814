// RequestContext: a handler's replies travel to its slot's I/O loop over the inproc channel, or
// straight to the broker from the I/O thread for an inline request (detail/slot_channel.hpp).
#include "workers/runtime/request_context.hpp"

#include <algorithm>

#include "base/log.hpp"
#include "base/utf8.hpp"
#include "bus/detail/frame_io.hpp"
#include "bus/worker_frames.hpp"
#include "schema/explain_builder.hpp"
#include "schema/explain_terms.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"
#include "schema/otel_ids.hpp"
#include "schema/untrusted_json.hpp"
#include "workers/runtime/detail/slot_channel.hpp"
#include "workers/runtime/explain_redaction.hpp"

namespace glassbox::runtime {
namespace {

using base::Error;
using base::ErrorType;
using base::make_error;
using base::Result;

std::string dump(const nlohmann::json& value) {
    // Invalid UTF-8 inside a handler's strings must not throw here: replace it.
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The body of `message` with `step`'s triples redacted and the redactions recorded on the step
// (explain_redaction.hpp); the error's message too, with every pattern (errors quote input).
std::string redacted_body(schema::ExplainMessage& message, const ExplainStep& step,
                          const text::Redactor& redactor, schema::TripleForm form) {
    text::RedactionTally tally;
    if (message.error) {
        if (auto redacted = redactor.redact_everywhere(message.error->message,
                                                       text::RedactionScope::kOther, tally))
            message.error->message = std::move(*redacted);
    }
    if (!step.build) {
        std::vector<schema::Triple> triples = step.triples;
        for (auto& t : triples) {
            if (!t.p.is_iri()) continue;
            if (auto redacted = redact_object(redactor, t.p.as_iri().value, t.o, tally))
                t.o = std::move(*redacted);
        }
        const auto graph = triples.empty() ? std::optional<std::string>(message.explain_graph)
                                           : triples.front().graph;
        for (auto& t : redaction_triples(step.explain_id, tally, graph))
            triples.push_back(std::move(t));
        return schema::encode_text(message, triples, form);
    }
    return schema::encode_text(
        message,
        [&](schema::TripleSink& sink) {
            RedactingSink redacting(sink, redactor, tally);
            step.build(redacting);
            record_redactions(sink, step.explain_id, tally);
        },
        form);
}

}  // namespace

Result<RequestMeta> decode_request_meta(std::string_view text, Clock::time_point received) {
    auto frame = bus::decode_request_meta(text);  // the one codec of the GBW01 meta frame
    if (!frame) return std::move(frame).error();
    RequestMeta out;
    out.request_id = std::move(frame.value().request_id);
    out.service = std::move(frame.value().service);
    // Clamp absurd values so the time_point arithmetic cannot overflow (the broker caps at 1 h).
    const auto ms = std::min<std::uint64_t>(frame.value().deadline_ms, 365ULL * 24 * 3600 * 1000);
    out.deadline_ms = std::chrono::milliseconds{static_cast<std::int64_t>(ms)};
    out.deadline = received + out.deadline_ms;
    out.attempt = frame.value().attempt;
    out.client = std::move(frame.value().client);
    out.client_takes_explain = frame.value().explain != bus::kMetaExplainNone;
    // Only a well-formed id is taken (the broker checked the client's option already).
    if (schema::otel::valid_trace_id(frame.value().trace))
        out.trace = std::move(frame.value().trace);
    return out;
}

std::string_view to_string(ExplainState state) noexcept {
    switch (state) {
        case ExplainState::kOpen:
            return schema::protocol::kStateOpen;
        case ExplainState::kComplete:
            return schema::protocol::kStateComplete;
        case ExplainState::kError:
            return schema::protocol::kStateError;
    }
    return schema::protocol::kStateError;
}

std::string build_explain_body(const ExplainStep& step, std::uint64_t seq, std::string_view service,
                               std::string_view worker, const text::Redactor* redactor) {
    schema::ExplainMessage message;
    message.session = step.session;
    message.seq = seq;
    message.service = std::string(service);
    message.worker = std::string(worker);
    message.parent_uri = step.parent_uri;
    message.explain_id = step.explain_id;
    message.end_of_trace = step.state != ExplainState::kOpen;
    switch (step.state) {
        case ExplainState::kOpen:
            message.trace_status = schema::TraceStatus::kNone;
            break;
        case ExplainState::kComplete:
            message.trace_status = schema::TraceStatus::kComplete;
            break;
        case ExplainState::kError:
            message.trace_status = schema::TraceStatus::kError;
            break;
    }
    message.error = step.error;
    // The dictionary form (docs/protocol.md §8.1) unless GLASSBOX_EXPLAIN_PLAIN=1 asks for plain.
    const auto form = schema::explain_triple_form_from_env();
    if (redactor != nullptr && !redactor->empty())
        return redacted_body(message, step, *redactor, form);
    if (!step.build) return schema::encode_text(message, step.triples, form);
    // Reserve what the largest body so far needed (a focus step is tens of kilobytes), up to
    // 256 KiB: one huge step must not make every later small one allocate that much.
    static thread_local std::size_t largest = 4096;
    auto body = schema::encode_text(message, step.build, form, largest);
    largest = std::clamp<std::size_t>(body.size(), largest, 256 * 1024);
    return body;
}

RequestContext::RequestContext(RequestMeta meta, nlohmann::json body, std::string worker_id,
                               detail::HandlerChannel& channel,
                               std::function<bus::BusClient&()> bus, std::string_view body_text)
    : meta_(std::move(meta)),
      body_(std::move(body)),
      body_text_(body_text),
      worker_id_(std::move(worker_id)),
      channel_(channel),
      bus_(std::move(bus)),
      run_(schema::explain::RunUris::generate()) {
    // THE RULE (docs/operations.md, "Logs"): a run's lines carry its top-level run's trace id;
    // a request made on behalf of a run says which (meta trace), any other is top-level itself.
    otel_trace_id_ =
        meta_.trace.empty() ? schema::otel::trace_id_of(run_.question()).value_or("") : meta_.trace;
    base::set_log_field("session", run_.question());
    base::set_log_field("trace", run_.question());
    base::set_log_field("otel_trace_id", otel_trace_id_);
}

std::chrono::milliseconds RequestContext::remaining() const noexcept {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(meta_.deadline - Clock::now());
    return std::max(left, std::chrono::milliseconds{0});
}

bool RequestContext::cancelled() {
    if (cancelled_) return true;
    if (channel_.cancel_arrived()) cancelled_ = true;
    if (!cancelled_ && Clock::now() >= meta_.deadline) {
        cancelled_ = true;
        deadline_passed_ = true;
    }
    return cancelled_;
}

base::Error RequestContext::cancellation_error() const {
    // The broker answers the client itself at the deadline; a worker reporting Cancelled there
    // could win the race and mislabel it, so the deadline keeps its own type.
    if (deadline_passed_ || Clock::now() >= meta_.deadline) {
        return make_error(ErrorType::kDeadlineExceeded, "the request's deadline passed");
    }
    return make_error(ErrorType::kCancelled, "the request was cancelled");
}

Result<void> RequestContext::send_partial(const nlohmann::json& body) {
    if (finished_) return make_error(ErrorType::kInternal, "the request has already ended");
    if (auto r = flush_explains(); !r) return r;
    bus::Frames frames;
    frames.emplace_back(1, detail::channel::kPartial);
    frames.push_back(dump(body));
    if (!channel_.send(std::move(frames))) {
        return make_error(ErrorType::kInternal, "the worker's I/O loop is gone");
    }
    return {};
}

Result<void> RequestContext::send_partial_text(std::string body) {
    if (finished_) return make_error(ErrorType::kInternal, "the request has already ended");
    if (auto r = flush_explains(); !r) return r;
    bus::Frames frames;
    frames.emplace_back(1, detail::channel::kPartial);
    frames.push_back(std::move(body));
    if (!channel_.send(std::move(frames))) {
        return make_error(ErrorType::kInternal, "the worker's I/O loop is gone");
    }
    return {};
}

Result<std::uint64_t> RequestContext::number_explain(const ExplainStep& message) {
    if (finished_) return make_error(ErrorType::kInternal, "the request has already ended");
    if (message.session.empty())
        return make_error(ErrorType::kInvalidRequest, "explain message without a session");
    const bool first = sessions_.empty();
    auto& session = sessions_[message.session];
    // The trace has begun: from here on every line this thread logs for the request names it.
    if (first && message.session != run_.question()) {
        base::set_log_field("session", message.session);
        base::set_log_field("trace", message.session);
        // A session of the handler's own making: its trace is the caller's when one was given,
        // else the session's own (or its parent's run, for a caller that gave no trace id).
        if (meta_.trace.empty()) {
            const auto run = message.parent_uri
                                 ? schema::explain::RunUris::from_uri(*message.parent_uri)
                                 : schema::explain::RunUris::from_uri(message.session);
            if (run) otel_trace_id_ = schema::otel::trace_id_of(run->question()).value_or("");
            base::set_log_field("otel_trace_id", otel_trace_id_);
        }
    }
    if (session.ended) {
        return make_error(ErrorType::kInvalidRequest,
                          "explain session " + message.session + " has already ended");
    }
    const std::uint64_t seq = session.next_seq++;
    if (message.state != ExplainState::kOpen) session.ended = true;
    return seq;
}

Result<void> RequestContext::send_numbered(const ExplainStep& message, std::uint64_t seq) {
    bus::Frames frames;
    frames.reserve(5);
    frames.emplace_back(1, detail::channel::kExplain);
    frames.push_back(message.session);
    frames.push_back(std::to_string(seq));
    frames.emplace_back(to_string(message.state));
    frames.push_back(build_explain_body(message, seq, meta_.service, worker_id_, redactor_));
    if (!channel_.send(std::move(frames))) {
        return make_error(ErrorType::kInternal, "the worker's I/O loop is gone");
    }
    return {};
}

Result<std::uint64_t> RequestContext::send_explain(const ExplainStep& message) {
    if (auto r = flush_explains(); !r) return r.error();
    auto seq = number_explain(message);
    if (!seq) return seq;
    if (auto r = send_numbered(message, *seq); !r) return r.error();
    return seq;
}

Result<std::uint64_t> RequestContext::defer_explain(ExplainStep step) {
    auto seq = number_explain(step);
    if (!seq) return seq;
    deferred_.emplace_back(std::move(step), *seq);
    return seq;
}

Result<void> RequestContext::flush_explains() {
    std::vector<std::pair<ExplainStep, std::uint64_t>> pending;
    pending.swap(deferred_);
    for (auto& [step, seq] : pending) {
        if (auto r = send_numbered(step, seq); !r) return r;
    }
    return {};
}

Result<std::uint64_t> RequestContext::send_explain(std::string session, std::string explain_id,
                                                   std::vector<schema::Triple> triples,
                                                   ExplainState state) {
    ExplainStep step;
    step.session = std::move(session);
    step.explain_id = std::move(explain_id);
    step.triples = std::move(triples);
    step.state = state;
    return send_explain(step);
}

Result<void> RequestContext::send_terminal(char kind, std::vector<std::string> frames) {
    if (finished_) return make_error(ErrorType::kInternal, "the request has already ended");
    (void)flush_explains();  // the trace's messages before the terminal, even if one fails
    bus::Frames message;
    message.reserve(frames.size() + 1);
    message.emplace_back(1, kind);
    for (auto& frame : frames) message.push_back(std::move(frame));
    finished_ = true;  // even if the send fails: a second terminal would be worse
    if (!channel_.send(std::move(message))) {
        return make_error(ErrorType::kInternal, "the worker's I/O loop is gone");
    }
    return {};
}

void RequestContext::close_open_sessions(const Error& why) {
    // §5.3: after cancel or deadline the broker closes open sessions itself; two closers would
    // collide on the sequence number.
    if (cancelled()) return;
    std::vector<std::string> open;
    for (const auto& [session, state] : sessions_) {
        if (!state.ended) open.push_back(session);
    }
    for (const auto& session : open) {
        ExplainStep last;
        last.session = session;
        last.explain_id = session;
        last.state = ExplainState::kError;
        last.error = why;
        // A glassbox session URI names its run: end the Question activity in the triples too.
        if (const auto run = schema::explain::RunUris::from_uri(session)) {
            last.triples = schema::explain::trace_end(*run, std::chrono::system_clock::now(),
                                                      schema::TraceStatus::kError);
        }
        (void)send_explain(last);
    }
}

Result<void> RequestContext::reply(const nlohmann::json& body) { return reply_text(dump(body)); }

Result<void> RequestContext::reply_text(std::string body) {
    if (finished_) return make_error(ErrorType::kInternal, "the request has already ended");
    close_open_sessions(
        make_error(ErrorType::kInternal, "the service replied before ending its trace"));
    std::vector<std::string> frames;
    frames.push_back(std::move(body));  // moved, not copied: a reply may be large
    return send_terminal(detail::channel::kReply, std::move(frames));
}

Result<void> RequestContext::fail(const Error& error) {
    if (finished_) return make_error(ErrorType::kInternal, "the request has already ended");
    // Error texts often quote input: the one sent (and put in the trace) is valid UTF-8.
    Error sent = error;
    sent.message = base::printable_utf8(error.message);
    close_open_sessions(sent);
    return send_terminal(detail::channel::kError,
                         {std::string(base::to_string(sent.type)), sent.message});
}

void RequestContext::finish_if_open(const Error& error) {
    if (!finished_) (void)fail(error);
}

Result<CallResult> RequestContext::call(std::string_view service, const nlohmann::json& body,
                                        std::chrono::milliseconds deadline,
                                        const std::function<void(const bus::Reply&)>& on_reply,
                                        FinalBody final_body, ExplainBody explain_body) {
    return call_with(service, &body, {}, deadline, on_reply, final_body, explain_body);
}

Result<CallResult> RequestContext::call_text(std::string_view service, std::string_view body_text,
                                             std::chrono::milliseconds deadline,
                                             const std::function<void(const bus::Reply&)>& on_reply,
                                             FinalBody final_body, ExplainBody explain_body) {
    return call_with(service, nullptr, body_text, deadline, on_reply, final_body, explain_body);
}

Result<CallResult> RequestContext::call_with(std::string_view service, const nlohmann::json* body,
                                             std::string_view body_text,
                                             std::chrono::milliseconds deadline,
                                             const std::function<void(const bus::Reply&)>& on_reply,
                                             FinalBody final_body, ExplainBody explain_body) {
    auto id = send_call(service, body, body_text, deadline);
    if (!id) return std::move(id).error();
    if (auto r = flush_explains(); !r) {  // while the callee works
        bus_().abandon(*id);
        return r.error();
    }
    return await_call(*id, service, on_reply, final_body, explain_body);
}

Result<std::vector<CallResult>> RequestContext::call_all(std::span<const CallSpec> calls) {
    std::vector<bus::RequestId> ids;
    const auto abandon_from = [&](std::size_t first) {
        for (std::size_t i = first; i < ids.size(); ++i) bus_().abandon(ids[i]);
    };
    for (const auto& c : calls) {
        auto id = c.text_body ? send_call(c.service, nullptr, *c.text_body, c.deadline)
                              : send_call(c.service, &c.body, {}, c.deadline);
        if (!id) {
            abandon_from(0);
            return std::move(id).error();
        }
        ids.push_back(std::move(id).value());
    }
    if (auto r = flush_explains(); !r) {  // while the callees work
        abandon_from(0);
        return r.error();
    }
    std::vector<CallResult> results;
    results.reserve(calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i) {
        auto result = await_call(ids[i], calls[i].service, {}, calls[i].final_body);
        if (!result) {
            abandon_from(i + 1);
            return std::move(result).error();
        }
        results.push_back(std::move(result).value());
    }
    return results;
}

Result<bus::RequestId> RequestContext::send_call(std::string_view service,
                                                 const nlohmann::json* body,
                                                 std::string_view body_text,
                                                 std::chrono::milliseconds deadline) {
    const auto left = remaining();
    if (left.count() <= 0 || cancelled()) {
        return make_error(ErrorType::kDeadlineExceeded,
                          "no time left to call " + std::string(service));
    }
    if (deadline.count() <= 0 || deadline > left) deadline = left;
    // The callee's run nests in this request's trace: option trace= (docs/protocol.md §4.1).
    bus::BusClient& bus = bus_();
    bus::RequestOptions options = bus.config().request_options;
    options.trace = otel_trace_id_;
    auto id = body ? bus.send_raw(service, dump(*body), deadline, options)
                   : bus.send_raw(service, body_text, deadline, options);
    if (!id) return std::move(id).error();
    ++calls_;
    static const auto logger = base::component_logger("worker");  // looked up once
    logger->debug("event=call request_id={} call_id={} service={} deadline_ms={} otel_trace_id={}",
                  meta_.request_id, *id, service, deadline.count(), otel_trace_id_);
    return id;
}

Result<CallResult> RequestContext::await_call(
    const bus::RequestId& id, std::string_view service,
    const std::function<void(const bus::Reply&)>& on_reply, FinalBody final_body,
    ExplainBody explain_body) {
    bus::BusClient& bus = bus_();
    CallResult result;
    // Wait in short slices so a CANCEL of this request also stops the call.
    constexpr std::chrono::milliseconds kSlice{50};
    for (;;) {
        auto reply = bus.next(id, kSlice);
        // Inline, the slot's I/O loop heartbeats and reads a CANCEL only when let (a stream of
        // replies never times out); on the handler thread this does nothing.
        channel_.serve_connection();
        if (!reply) {
            if (reply.error().type != ErrorType::kTimeout) return std::move(reply).error();
            if (cancelled()) {
                bus.abandon(id);
                return make_error(ErrorType::kCancelled,
                                  "cancelled while calling " + std::string(service));
            }
            continue;
        }
        if (reply->kind == bus::ReplyKind::kError) return *reply->error;
        // This thread's BusClient leaves bodies unparsed (parse_bodies off): parse what is used.
        const bool parse = reply->kind == bus::ReplyKind::kFinal ? final_body == FinalBody::kJson
                           : reply->kind == bus::ReplyKind::kExplain
                               ? explain_body == ExplainBody::kJson
                               : true;
        if (parse && reply->body.is_null()) {
            auto body = schema::parse_untrusted_json(reply->text);
            if (!body) {
                bus.abandon(id);
                return make_error(ErrorType::kUpstreamError,
                                  std::string(service) +
                                      " answered a body that is not JSON: " + body.error().message);
            }
            reply->body = std::move(body).value();
        }
        if (on_reply) on_reply(*reply);
        switch (reply->kind) {
            case bus::ReplyKind::kData:
                result.data.push_back(std::move(reply->body));
                break;
            case bus::ReplyKind::kExplain:
                if (parse) {
                    result.explain.push_back(std::move(reply->body));
                } else {
                    result.explain_text.push_back(std::move(reply->text));
                }
                break;
            case bus::ReplyKind::kFinal:
                result.final = std::move(reply->body);
                result.final_text = std::move(reply->text);
                return result;
            case bus::ReplyKind::kError:
                break;  // returned above
        }
    }
}

base::Result<nlohmann::json> parse_request_body(std::string_view text) {
    auto body = schema::parse_untrusted_json(text);
    if (!body) {
        static const auto logger = base::component_logger("worker");  // looked up once
        logger->info("event=invalid_json");
        return base::make_error(base::ErrorType::kInvalidJson,
                                "the request body: " + body.error().message);
    }
    return body;
}

}  // namespace glassbox::runtime
