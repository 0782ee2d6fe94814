// Internal to the broker: ExplainRouter, the explain path: each EXPLAIN to the spool, the
// request's client and the topic, the broker's own end of trace, the spool's commits (a failed
// one under its policy), the pins and owners of sessions at a request's end, and the traces a
// restart finds open (docs/protocol.md §2.3, §5.3, §6). Defined in broker/explain_router.cpp.
//
// Calls into the other parts: ClientSide::finish, log_request_failed and write_error, only when
// a commit fails under fail-request (the batch's requests end with SpoolFull).
// Called by: WorkerSide (emit_explain, close_open_sessions, end_sessions), ClientSide
// (close_open_sessions, end_sessions; the spool's health for mmi.status) and the loop
// (commit_spool at the end of a batch, close_recovered_sessions at start).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <zmq.hpp>

#include "base/result.hpp"
#include "broker/detail/broker_records.hpp"

namespace glassbox::broker::detail {

struct BrokerState;
class ClientSide;

class ExplainRouter {
public:
    ExplainRouter(BrokerState& state, ClientSide& clients) : state_(state), clients_(clients) {}

    // One explain message to the spool, the request's client (request null: none) and the
    // topic. A refused worker message (fail-request) returns the error and goes nowhere.
    std::optional<Error> emit_explain(Request* request, Service& service, SessionTrack& track,
                                      std::uint64_t seq, std::string_view state,
                                      zmq::message_t body, bool synthesised = false);
    // The broker's end of trace (§5.3) for each session of the request still open, and for
    // each one whose messages the spool did not all keep; `error` null: only the latter.
    void close_open_sessions(Request& request, const Error* error);
    // The request's sessions are done with: unpinned, and closed to every writer (§5.3).
    void end_sessions(const Request& request);
    // The batch's appended EXPLAINs made durable (the end of each loop pass), or the failure
    // met under the spool policy.
    void commit_spool();
    // At start: ends the traces the spool shows open (the broker stopped or died mid-trace).
    base::Result<std::size_t> close_recovered_sessions();

    // The last commit failed (a full disk): worker EXPLAINs meet the spool policy until a
    // commit succeeds; spool_error() says why.
    bool spool_failing() const noexcept { return spool_failing_; }
    const std::string& spool_error() const noexcept { return spool_error_; }

private:
    // The spool's part: the message appended (its sends held for the commit), dropped and
    // counted, or refused under fail-request (the error).
    std::optional<Error> spool_explain(Request* request, const Service& service,
                                       SessionTrack& track, std::uint64_t seq,
                                       std::string_view state, const zmq::message_t& body,
                                       bool synthesised);
    void emit_trace_end(Request* request, Service& service, SessionTrack& track,
                        const Error& error);
    void on_commit_failed(const Error& error);
    // Under fail-request, a request that ended within the failed batch: its traces' ends and
    // an ERROR in place of the FINAL its client was held for.
    void fail_ended_request(const BatchRequest& entry, const Error& refused);
    void release_pins(const Request& request);

    BrokerState& state_;
    ClientSide& clients_;
    bool spool_failing_ = false;
    std::string spool_error_;
};

}  // namespace glassbox::broker::detail
