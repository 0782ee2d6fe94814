// What a service handler sees of one request: meta, parsed body, streaming replies, explain, calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "bus/bus_client.hpp"
#include "schema/explain_uris.hpp"
#include "schema/term.hpp"
#include "schema/triple_sink.hpp"
#include "text/redactor.hpp"

namespace glassbox::runtime {

namespace detail {
class HandlerChannel;  // where a request's messages go (detail/slot_channel.hpp)
}

using Clock = std::chrono::steady_clock;

// The GBW01 REQUEST meta frame (§5.1), with the deadline made absolute on receipt.
struct RequestMeta {
    std::string request_id;
    std::string service;
    std::chrono::milliseconds deadline_ms{0};  // time left when the broker dispatched it
    Clock::time_point deadline{};              // received + deadline_ms
    std::uint64_t attempt = 1;                 // counts from 1
    std::string client;                        // "GBC01" or "MDPC01"
    // False when the client asked not to receive this request's explain messages (meta
    // "explain": "none", docs/protocol.md §4.1): the handler still sends its own (they are
    // traced as always), but need not forward its sub-runs' explain messages to the client as
    // data. True otherwise, an MDPC01 client's request included.
    bool client_takes_explain = true;
    // The OTel trace id of the top-level run the request works for, when its caller (a worker
    // calling on behalf of a run) gave one (meta "trace", request option trace=, §4.1); empty
    // for a request that starts a trace of its own.
    std::string trace;
};

// Checks the meta JSON: an object with request_id (string), service (string), deadline_ms and
// attempt (non-negative integers); client optional. ProtocolError otherwise.
base::Result<RequestMeta> decode_request_meta(std::string_view text, Clock::time_point received);

// EXPLAIN states (§5.3): complete and error mark the last message of a session.
enum class ExplainState { kOpen, kComplete, kError };
std::string_view to_string(ExplainState state) noexcept;

// One explain message as a handler describes it; the runtime adds seq, service and worker and
// encodes the §8 body with schema's codec.
struct ExplainStep {
    std::string session;                  // the trace's session URI (its Question's URI)
    std::string explain_id;               // the URI of the step this message describes
    std::vector<schema::Triple> triples;  // built with schema/explain_builder.hpp
    ExplainState state = ExplainState::kOpen;
    std::optional<std::string> parent_uri;  // the calling step, for a sub-trace
    std::optional<base::Error> error;       // why the trace ended, with state kError
    // When set, writes the step's triples (instead of `triples`) as the message is encoded:
    // straight into the body's JSON (schema::explain::triple_json), no Term built. A deferred
    // step is built when it goes out, after the next call's request, so the building overlaps
    // the callee's work; such a builder owns what it reads.
    std::function<void(schema::TripleSink&)> build;
};

// The §8 body: message_type, session, seq, service, worker, parent_uri?, explain_id,
// explain_graph, explain_triples, end_of_trace, trace_status, error?. With a `redactor` that
// has rules, every text literal (and the error's message) is redacted first and the step
// records the redactions (workers/runtime/explain_redaction.hpp): the one place every worker's
// explain messages are encoded, so nothing unredacted leaves the worker.
std::string build_explain_body(const ExplainStep& step, std::uint64_t seq, std::string_view service,
                               std::string_view worker, const text::Redactor* redactor = nullptr);

// What a call to another service returned: its stream, then its FINAL body.
struct CallResult {
    std::vector<nlohmann::json> data;     // PARTIAL data bodies, in order
    std::vector<nlohmann::json> explain;  // PARTIAL explain bodies (already spooled by the broker)
    // With ExplainBody::kTextOnly, the PARTIAL explain bodies as received instead (`explain`
    // stays empty): not checked to be JSON, the caller reads them with a checking cursor.
    std::vector<std::string> explain_text;
    nlohmann::json final;    // the FINAL body, unless the call asked for its text only
    std::string final_text;  // the FINAL body as received
};

// How a call hands back its FINAL body: as a JSON tree, or as text only for a caller that
// decodes it with schema/json_fast.hpp (large triple-carrying replies).
enum class FinalBody { kJson, kTextOnly };

// How a call hands back the PARTIAL explain bodies its callee sends: as JSON trees, or as the
// text received (on_reply sees Reply::text, Reply::body null; CallResult::explain_text), for a
// caller that relays them as they are (send_partial_text) and reads what it needs with
// schema/json_cursor.hpp: an engine's explain messages are hundreds of kilobytes a question,
// and a tree of them cost a router more than all it does itself (issue 35).
enum class ExplainBody { kJson, kTextOnly };

// One call of RequestContext::call_all.
struct CallSpec {
    std::string service;
    nlohmann::json body;
    std::chrono::milliseconds deadline{0};
    FinalBody final_body = FinalBody::kJson;
    // When set, the body already written as JSON text (schema/json_fast.hpp encoders), sent as
    // is instead of `body`: the caller writes what dump(body) would, without building a tree.
    std::optional<std::string> text_body{};
};

// One request, handed to the handler on its slot's handler thread, or on the slot's I/O thread
// for a request WorkerConfig::run_inline took. Every request ends exactly once: reply() or fail()
// by the handler, else the runtime answers ERROR Internal. Not thread-safe: use it on the thread
// that called the handler only.
class RequestContext {
public:
    // Runtime-internal: handlers receive a context, they do not build one. `channel` is where its
    // messages go (the handler thread's PAIR to its I/O loop, or the I/O loop itself for an
    // inline request); `bus` lazily gives the calling thread's own BusClient.
    RequestContext(RequestMeta meta, nlohmann::json body, std::string worker_id,
                   detail::HandlerChannel& channel, std::function<bus::BusClient&()> bus,
                   std::string_view body_text = {});
    RequestContext(const RequestContext&) = delete;
    RequestContext& operator=(const RequestContext&) = delete;

    const RequestMeta& meta() const noexcept { return meta_; }
    const nlohmann::json& body() const noexcept { return body_; }
    // The body as received, valid while the handler runs. When WorkerConfig::text_body took the
    // request, body() is null and this is its only form: the handler checks it itself.
    std::string_view body_text() const noexcept { return body_text_; }
    const std::string& worker_id() const noexcept { return worker_id_; }
    // The URIs of the run this request's trace records, drawn when the request arrived so that
    // every log line about the request, its first included, names the trace's session. A
    // handler that traces begins its session at run().question().
    const schema::explain::RunUris& run() const noexcept { return run_; }
    // The OTel trace id of the trace this request's run belongs to: the top-level run's
    // (meta().trace when its caller gave one, else its own run's); what its log lines carry as
    // otel_trace_id= and what its calls to other services pass on as option trace=.
    const std::string& otel_trace_id() const noexcept { return otel_trace_id_; }
    // Runtime-internal: the redaction applied to this request's explain messages (null: none).
    void set_redactor(const text::Redactor* redactor) noexcept { redactor_ = redactor; }
    // Time left before the deadline (zero once it passed).
    std::chrono::milliseconds remaining() const noexcept;
    // True once the broker sent CANCEL for this request or its deadline passed. Cheap: poll it
    // between steps. A cancelled handler should stop and still end with fail() (or return).
    // Inline (WorkerConfig::run_inline) it also lets the slot's I/O loop serve its connection,
    // where a CANCEL is read (at most every WorkerConfig::inline_poll).
    bool cancelled();
    // Why cancelled() is true, as the typed error a handler should end with: DeadlineExceeded
    // when the deadline passed first, Cancelled when a CANCEL arrived first.
    base::Error cancellation_error() const;
    // True after reply() or fail().
    bool finished() const noexcept { return finished_; }

    // A stream chunk (PARTIAL, forwarded to a GBC01 client as `PARTIAL data`).
    base::Result<void> send_partial(const nlohmann::json& body);
    // The same with the body already JSON text (a callee's PARTIAL relayed as received), sent
    // as is: the caller has checked it is JSON.
    base::Result<void> send_partial_text(std::string body);
    // An explain message; the runtime numbers each session 0, 1, 2, … and returns the seq used.
    // InvalidRequest for an empty session or a session that already ended.
    base::Result<std::uint64_t> send_explain(const ExplainStep& step);
    // Shorthand for a step with no parent and no error.
    base::Result<std::uint64_t> send_explain(std::string session, std::string explain_id,
                                             std::vector<schema::Triple> triples,
                                             ExplainState state);
    // The same message, numbered now but encoded and sent right after the next call's request
    // has gone out, so the callee works while it is encoded and routed; or before the next
    // message of this request (partial, explain, reply, error), whichever comes first. The order
    // of everything this request sends is kept. A step's explain is still out before the next
    // step's reply is awaited.
    base::Result<std::uint64_t> defer_explain(ExplainStep step);
    // Sends the deferred explain messages now (in the order they were deferred).
    base::Result<void> flush_explains();
    // Terminal FINAL.
    base::Result<void> reply(const nlohmann::json& body);
    // The same, with the body already written as JSON text (schema/json_fast.hpp encoders).
    base::Result<void> reply_text(std::string body);
    // Terminal ERROR with this type and message.
    base::Result<void> fail(const base::Error& error);

    // Calls another service through the broker (GBC01, this thread's own client: an inline
    // request's is its I/O thread's, never shared with the handler thread), waiting for its
    // terminal. `deadline` 0 or beyond this request's remaining time is cut to the remaining time.
    // `on_reply` sees each PARTIAL as it arrives. The callee's typed error comes back as is; if
    // this request is cancelled meanwhile, the call is cancelled too (Cancelled).
    base::Result<CallResult> call(std::string_view service, const nlohmann::json& body,
                                  std::chrono::milliseconds deadline,
                                  const std::function<void(const bus::Reply&)>& on_reply = {},
                                  FinalBody final_body = FinalBody::kJson,
                                  ExplainBody explain_body = ExplainBody::kJson);
    // The same with the body already written as JSON text, put on the wire as is.
    base::Result<CallResult> call_text(std::string_view service, std::string_view body_text,
                                       std::chrono::milliseconds deadline,
                                       const std::function<void(const bus::Reply&)>& on_reply = {},
                                       FinalBody final_body = FinalBody::kJson,
                                       ExplainBody explain_body = ExplainBody::kJson);

    // Several calls at once: all are sent before any reply is awaited, so they overlap on the
    // bus and run side by side where the services have free workers. results[i] answers
    // calls[i]; the first error (in calls' order) is returned and the calls still open are
    // abandoned. Deadlines and cancel as for call().
    base::Result<std::vector<CallResult>> call_all(std::span<const CallSpec> calls);

    // Runtime-internal: ends the request with `error` if the handler did not; closes its open
    // explain sessions first unless the broker does (cancel, deadline: §5.3).
    void finish_if_open(const base::Error& error);

private:
    base::Result<void> send_terminal(char kind, std::vector<std::string> frames);
    void close_open_sessions(const base::Error& why);
    // The sending and the waiting halves of call(). The body is `body` dumped, or `body_text`
    // as is when `body` is null.
    base::Result<bus::RequestId> send_call(std::string_view service, const nlohmann::json* body,
                                           std::string_view body_text,
                                           std::chrono::milliseconds deadline);
    base::Result<CallResult> call_with(std::string_view service, const nlohmann::json* body,
                                       std::string_view body_text,
                                       std::chrono::milliseconds deadline,
                                       const std::function<void(const bus::Reply&)>& on_reply,
                                       FinalBody final_body, ExplainBody explain_body);
    base::Result<CallResult> await_call(const bus::RequestId& id, std::string_view service,
                                        const std::function<void(const bus::Reply&)>& on_reply,
                                        FinalBody final_body,
                                        ExplainBody explain_body = ExplainBody::kJson);

    RequestMeta meta_;
    nlohmann::json body_;
    std::string_view body_text_;
    std::string worker_id_;
    detail::HandlerChannel& channel_;
    std::function<bus::BusClient&()> bus_;
    schema::explain::RunUris run_;
    std::string otel_trace_id_;
    const text::Redactor* redactor_ = nullptr;
    bool finished_ = false;
    bool cancelled_ = false;
    bool deadline_passed_ = false;  // cancelled_ because the deadline passed, not by CANCEL
    std::uint64_t calls_ = 0;
    struct SessionState {
        std::uint64_t next_seq = 0;
        bool ended = false;
    };
    std::map<std::string, SessionState> sessions_;
    // Checks `step` and takes its seq; the session ends with a terminal state.
    base::Result<std::uint64_t> number_explain(const ExplainStep& step);
    base::Result<void> send_numbered(const ExplainStep& step, std::uint64_t seq);
    std::vector<std::pair<ExplainStep, std::uint64_t>> deferred_;
};

// What the runtime does with a request body it parses (protocol §1.1: InvalidJson before any of
// the service's logic): the tree, or InvalidJson "the request body: …", logged as
// event=invalid_json. For services that read their bodies as text (WorkerConfig::text_body) and
// parse the ones their readers do not take.
base::Result<nlohmann::json> parse_request_body(std::string_view text);

}  // namespace glassbox::runtime
