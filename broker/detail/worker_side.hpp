// Internal to the broker: WorkerSide, the workers and the service queues: dispatch by credit,
// REQUEST to workers, READY, heartbeats, worker loss and re-dispatch, and the answers a worker
// sends (REPLY, ERROR, PARTIAL, EXPLAIN; docs/protocol.md §5). Defined in broker/worker_side.cpp.
//
// Calls into the other parts: ClientSide::finish and erase_request (a request a worker ends,
// loses or breaks), ExplainRouter::emit_explain (a worker's EXPLAIN, once admitted) and
// ExplainRouter::close_open_sessions and end_sessions (a REPLY ends the request's traces).
// Called by: the loop (messages, heartbeats, expiry, peers gone, shutdown) and ClientSide
// (dispatch, dispatch_to, send_worker_cancel).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "broker/detail/broker_records.hpp"

namespace glassbox::broker::detail {

struct BrokerState;
class ClientSide;
class ExplainRouter;

class WorkerSide {
public:
    WorkerSide(BrokerState& state, ClientSide& clients, ExplainRouter& explain)
        : state_(state), clients_(clients), explain_(explain) {}

    // A message with the MDPW01 header, from the peer `identity`.
    void on_worker(std::string_view identity);
    // The service's queued requests to its workers with spare credit, oldest first.
    void dispatch(Service& service);
    // One request to one worker with spare credit (the worker at the front of the available list).
    void dispatch_to(Worker& worker, Request& request);
    void send_worker_command(std::string_view identity, char command);
    // CANCEL of a request the worker holds (a GBW01 worker; a 7/MDP one has none).
    void send_worker_cancel(Worker& worker, const Request& request);
    // The worker is gone (DISCONNECTed first if `send_disconnect`); its requests are
    // re-queued, ended or erased (§2.2).
    void delete_worker(Worker& worker, bool send_disconnect, std::string_view reason);

private:
    bool send_request_to(Worker& worker, Request& request);
    void on_worker_ready(std::string_view identity);
    void on_worker_result(Worker& worker, char command);
    // The request a REPLY, ERROR, PARTIAL or EXPLAIN names by its token, if the worker holds it
    // (§5.1); else the message is dropped or counted as forged, and null.
    Request* held_request(Worker& worker, char command);
    void forward_reply(Worker& worker, Request& request);
    void forward_partial(const Worker& worker, Request& request);
    void forward_explain(const Worker& worker, Request& request);
    // The EXPLAIN's track in the request (new for a session the request opens), or null when
    // it is refused (§5.3): another request's session, a seq that does not grow, after the end.
    SessionTrack* admit_explain(const Worker& worker, Request& request, std::string_view session,
                                std::uint64_t seq);

    BrokerState& state_;
    ClientSide& clients_;
    ExplainRouter& explain_;
    std::string meta_;  // the GBW01 meta frame being written, kept for its capacity
};

}  // namespace glassbox::broker::detail
