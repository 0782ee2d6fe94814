// Internal to the broker: ClientSide, the MDPC01 and GBC01 clients' messages (requests, MMI,
// cancels, heartbeats), errors to clients, and the life of a request from its acceptance to its
// deadline or end (docs/protocol.md §3, §4). Defined in broker/client_side.cpp.
//
// Calls into the other parts: WorkerSide::dispatch and dispatch_to (an accepted request),
// WorkerSide::send_worker_cancel (a request ended while a worker holds it),
// ExplainRouter::close_open_sessions and end_sessions (a request's traces at its end), and
// ExplainRouter's spool health for mmi.status.
// Called by: the loop (messages, timers, peers gone), WorkerSide (finish, erase_request) and
// ExplainRouter (finish, log_request_failed and write_error when a commit fails).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "broker/detail/broker_records.hpp"

namespace glassbox::broker::detail {

struct BrokerState;
class WorkerSide;
class ExplainRouter;

class ClientSide {
public:
    ClientSide(BrokerState& state, WorkerSide& workers, ExplainRouter& explain)
        : state_(state), workers_(workers), explain_(explain) {}

    // A message with the MDPC01 or the GBC01 header, from the peer `identity`.
    void on_mdp_client(std::string_view identity);
    void on_gb_client(std::string_view identity);

    // The request's timer is due: its deadline, or the wait for its service's workers.
    void on_deadline(Request& request);
    // The request ends with `error`: its traces closed, its client told (`notify_client`), a
    // worker that holds it CANCELled (it stays, abandoned, until the worker ends it).
    void finish(Request& request, const Error& error, bool notify_client);
    // The request is gone: its sessions ended, its client's request id free again.
    void erase_request(Request& request);
    // `trace`: the request's option trace= when known (empty: a top-level run, whose OTel trace
    // id is its session's); null: not known, no otel_trace_id= field.
    void log_request_failed(ClientKind kind, std::string_view request_id, std::uint64_t token,
                            const std::vector<SessionTrack>& sessions, std::string_view service,
                            const Error& error, const std::string* trace = nullptr);
    // The terminal error message to a client, written into the outbox (not sent).
    void write_error(ClientKind kind, std::string_view identity, std::string_view service,
                     std::string_view request_id, const Error& error, bool packed);

private:
    void on_gb_request(std::string_view identity);
    void on_gb_cancel(std::string_view identity);
    void on_gb_heartbeat(std::string_view identity);
    // A GBC01 request's deadline-ms as the broker applies it.
    milliseconds request_deadline(std::uint64_t deadline_ms) const;
    // `explain_partials`: its explain messages go to the client too (GBC01 without
    // explain=none); `trace`: its option trace= (§4.1).
    void accept_request(ClientKind kind, std::string_view identity, std::string_view service_name,
                        std::string request_id, std::vector<zmq::message_t> body,
                        milliseconds deadline, bool explain_partials, std::string trace = {});
    void answer_mmi(ClientKind kind, std::string_view identity, std::string_view service,
                    std::string_view request_id, std::string_view body);
    // `packed`: the client's message (or request) came in the packed form (§1.4).
    void send_mdp_reply(std::string_view identity, std::string_view service, std::string_view body,
                        bool packed);
    void send_gb_error(std::string_view identity, std::string_view request_id, const Error& error,
                       bool packed);
    void reject(ClientKind kind, std::string_view identity, std::string_view service,
                std::string_view request_id, const Error& error);
    // A request from a key without the `client` role: Forbidden, logged and counted.
    void refuse_request(ClientKind kind, std::string_view identity, std::string_view service,
                        std::string_view request_id);
    // mmi.status, from the pieces' StatusSources.
    std::string status_json() const;

    BrokerState& state_;
    WorkerSide& workers_;
    ExplainRouter& explain_;
};

}  // namespace glassbox::broker::detail
