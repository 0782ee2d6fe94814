// The broker's worker side (WorkerSide): dispatch by credit, REQUEST to workers, READY,
// heartbeats, worker loss and re-dispatch, and the answers a worker sends (docs/protocol.md §5).
#include "broker/detail/worker_side.hpp"

#include "broker/detail/broker_state.hpp"
#include "broker/detail/client_side.hpp"
#include "broker/detail/explain_router.hpp"
#include "bus/detail/client_frames.hpp"
#include "bus/worker_frames.hpp"

namespace glassbox::broker::detail {

void WorkerSide::dispatch(Service& service) {
    // O(1) per request: the least recently used worker with spare credit takes the oldest.
    while (!service.available.empty() && !service.queue.empty()) {
        const auto id = service.queue.pop_front();
        if (Request* request = state_.requests.find(*id))
            dispatch_to(*service.available.front(), *request);
    }
}

void WorkerSide::dispatch_to(Worker& worker, Request& request) {
    if (worker.extended && request.body.size() != 1) {
        clients_.finish(request,
                        base::make_error(ErrorType::kProtocolError,
                                         "a GBW01 service takes exactly one body frame"),
                        true);
        return;
    }
    WorkerRoster::assign(worker, request);
    ++request.attempts;
    send_request_to(worker, request);
}

bool WorkerSide::send_request_to(Worker& worker, Request& request) {
    // [empty] ["MDPW01"] [0x02] [token] [empty]? [body]... (§5.1; GBW02: no empty frame)
    char token_digits[24];
    const std::string_view token = token_of(request.id, token_digits);
    state_.outbox.out_to(worker.identity, worker.packed);
    bus::put_worker_token_head(state_.outbox.sink(), proto::worker_cmd::kRequest, token,
                               worker.layout);
    if (worker.extended) {
        const bool gb = request.client_kind == ClientKind::kGb;
        const auto left =
            std::max(milliseconds{0},
                     std::chrono::duration_cast<milliseconds>(request.deadline - state_.now));
        bus::encode_request_meta(
            meta_, gb ? std::string_view{request.request_id} : token, request.service->name,
            static_cast<std::uint64_t>(left.count()), static_cast<std::uint64_t>(request.attempts),
            gb ? proto::kGbClient : proto::kMdpClient,
            gb && !request.explain_partials ? bus::kMetaExplainNone : std::string_view{},
            request.trace);
        state_.outbox.out(meta_);
    }
    // Copies share the payload (libzmq reference counts large messages): the body stays
    // available for a re-dispatch.
    for (auto& frame : request.body) {
        zmq::message_t copy;
        copy.copy(frame);
        state_.outbox.out(std::move(copy));
    }
    worker.last_sent = state_.now;
    state_.outbox.send();
    return true;
}

void WorkerSide::send_worker_command(std::string_view identity, char command) {
    Worker* worker = state_.workers.find(identity);
    state_.outbox.out_to(identity, worker != nullptr && worker->packed);
    bus::put_worker_command(state_.outbox.sink(), command);
    if (worker != nullptr) worker->last_sent = state_.now;
    state_.outbox.send();
}

void WorkerSide::send_worker_cancel(Worker& worker, const Request& request) {
    if (!worker.extended) return;  // a plain 7/MDP worker has no CANCEL; its reply is discarded
    state_.outbox.out_to(worker.identity, worker.packed);
    char token_digits[24];
    bus::put_worker_cancel(state_.outbox.sink(), token_of(request.id, token_digits));
    worker.last_sent = state_.now;
    state_.outbox.send();
}

void WorkerSide::on_worker(std::string_view identity) {
    namespace cmd = proto::worker_cmd;
    const auto decoded = bus::decode_worker_command(state_.in.views());
    if (!decoded) {
        state_.drop(identity, decoded.error().message);
        if (Worker* found = state_.workers.find(identity)) {
            delete_worker(*found, true, "protocol error: no command");
        }
        return;
    }
    const char code = decoded.value();
    if (code == cmd::kReady) {
        on_worker_ready(identity);
        return;
    }
    Worker* found = state_.workers.find(identity);
    if (found == nullptr) {
        // 7/MDP: any command but READY from an unknown worker is answered with DISCONNECT.
        if (code != cmd::kDisconnect) {
            state_.log->info("event=unknown_worker peer={} command={}", printable(identity),
                             static_cast<int>(code));
            send_worker_command(identity, cmd::kDisconnect);
        }
        return;
    }
    Worker& worker = *found;
    worker.expiry = state_.now + state_.expiry_span();
    switch (code) {
        case cmd::kHeartbeat:
            return;
        case cmd::kDisconnect:
            delete_worker(worker, false, "disconnected");
            return;
        case cmd::kReply:
            on_worker_result(worker, code);
            return;
        case cmd::kPartial:
        case cmd::kExplain:
        case cmd::kError:
            if (worker.extended) {
                on_worker_result(worker, code);
                return;
            }
            break;
        default:
            break;
    }
    state_.drop(identity, "unknown MDPW01 command " + std::to_string(static_cast<int>(code)));
    delete_worker(worker, true, "protocol error: unknown command");
}

void WorkerSide::on_worker_ready(std::string_view identity) {
    // [empty] ["MDPW01"] [0x01] [service] ["GBW01"]? [credit]?
    if (Worker* known = state_.workers.find(identity)) {
        // 7/MDP: READY from a worker already known is a protocol error.
        delete_worker(*known, true, "protocol error: second READY");
        return;
    }
    const auto ready = bus::decode_worker_ready(state_.in.views());
    if (!ready) {
        state_.log->warn(
            "event=bad_ready peer={} service={} reason=\"{}\"", printable(identity),
            printable(state_.in.views().size() > 3 ? state_.in.views()[3] : std::string_view{}),
            ready.error().message);
        ++state_.counters.dropped_frames;
        send_worker_command(identity, proto::worker_cmd::kDisconnect);
        return;
    }
    const std::string_view service_name = ready.value().service;
    if (!state_.auth.sender_may_serve(service_name)) {
        // 7/MDP DISCONNECT: its key may not register this service (docs/security.md).
        state_.auth.refused("worker_refused", identity,
                            "key=" + std::string{state_.auth.sender_name()} +
                                " service=" + printable(service_name) +
                                " missing_role=worker:" + printable(service_name),
                            false);
        send_worker_command(identity, proto::worker_cmd::kDisconnect);
        return;
    }
    Service& service = state_.services.service_for(service_name);
    auto owned = std::make_unique<Worker>();
    Worker& worker = *owned;
    worker.identity.assign(identity);
    worker.service = &service;
    // Where it runs, as the broker sees it: status counts a service's workers by host.
    if (const char* address = zmq_msg_gets(state_.in.first_frame()->handle(), "Peer-Address"))
        worker.host = address;
    worker.extended = ready.value().gbw01;
    worker.layout = ready.value().layout;
    worker.packed = ready.value().packed;
    worker.credit = static_cast<std::size_t>(ready.value().credit);
    worker.expiry = state_.now + state_.expiry_span();
    worker.last_sent = state_.now;
    state_.workers.add(std::move(owned));
    state_.services.remember(service);
    state_.log->info(
        "event=worker_ready peer={} service={} extended={} compact={} packed={} credit={} "
        "workers={}",
        printable(identity), service.name, worker.extended,
        worker.layout == bus::WorkerLayout::kCompact, worker.packed, worker.credit,
        service.workers);
    dispatch(service);
}

void WorkerSide::delete_worker(Worker& worker, bool send_disconnect, std::string_view reason) {
    state_.log->info("event=worker_removed peer={} service={} reason={}",
                     printable(worker.identity), worker.service->name, reason);
    if (send_disconnect) send_worker_command(worker.identity, proto::worker_cmd::kDisconnect);
    Service& service = *worker.service;
    // Oldest first, so re-queued requests keep their order at the front.
    const std::vector<Request*> held =
        state_.workers.remove(worker);  // `worker` is gone from here on

    // §2.2, for each request on its own: a stream is never replayed; a request the worker
    // sent nothing for goes back to the front of the queue while retries last.
    std::vector<std::uint64_t> requeue;
    for (Request* request : held) {
        if (request->abandoned) {
            clients_.erase_request(*request);
        } else if (request->streamed) {
            clients_.finish(*request,
                            base::make_error(ErrorType::kWorkerLost, "worker lost mid-stream (" +
                                                                         std::string{reason} + ")"),
                            true);
        } else if (request->attempts > state_.config.max_retries) {
            clients_.finish(*request,
                            base::make_error(ErrorType::kWorkerLost,
                                             "worker lost before replying, " +
                                                 std::to_string(request->attempts) + " attempts"),
                            true);
        } else {
            ++state_.counters.retries;
            // The broker knows a request's trace only from its option trace= (a worker's call);
            // the worker's own lines name the run (docs/operations.md, "Logs").
            state_.log->info("event=redispatch request={} token={} service={} attempt={}{}{}",
                             request->client_kind == ClientKind::kGb
                                 ? printable(request->request_id)
                                 : std::to_string(request->id),
                             request->id, service.name, request->attempts + 1,
                             request->trace.empty() ? "" : " otel_trace_id=", request->trace);
            requeue.push_back(request->id);
        }
    }
    if (requeue.empty()) return;
    for (auto id = requeue.rbegin(); id != requeue.rend(); ++id) {
        service.queue.push_front(*id, state_.requests.find(*id)->client);
    }
    dispatch(service);
}

void WorkerSide::on_worker_result(Worker& worker, char code) {
    namespace cmd = proto::worker_cmd;
    Request* request = held_request(worker, code);
    if (request == nullptr) return;
    const bool terminal = code == cmd::kReply || code == cmd::kError;
    if (request->abandoned) {
        if (terminal) {
            WorkerRoster::release(worker, *request);
            clients_.erase_request(*request);
            dispatch(*worker.service);
        }
        return;
    }
    const auto error =
        state_.in.too_many_frames()
            ? std::optional{base::make_error(ErrorType::kProtocolError,
                                             "worker message of more than 64 frames")}
            : state_.too_large(worker.identity, "worker message");
    if (error) {
        if (terminal) {
            WorkerRoster::release(worker, *request);  // the worker is done with it: no CANCEL
            clients_.finish(*request, *error, true);
            dispatch(*worker.service);
        } else {
            clients_.finish(*request, *error, true);  // abandons the request and CANCELs the worker
        }
        return;
    }
    if (code == cmd::kReply) {
        forward_reply(worker, *request);
    } else if (code == cmd::kError) {
        // [type] [message]; an unknown type word is reported as Internal.
        const Error error = bus::decode_worker_error(state_.in.views(), worker.layout);
        WorkerRoster::release(worker, *request);  // ends normally from the worker's side: no CANCEL
        clients_.finish(*request, error, true);
        dispatch(*worker.service);
    } else if (code == cmd::kPartial) {
        forward_partial(worker, *request);
    } else {
        forward_explain(worker, *request);
    }
}

Request* WorkerSide::held_request(Worker& worker, char code) {
    // [empty] ["MDPW01"] [command] [token] [empty]? ... (GBW02: no empty frame)
    const auto token_frame = bus::decode_worker_token(state_.in.views(), worker.layout);
    if (!token_frame) {
        state_.drop(worker.identity, token_frame.error().message);
        return nullptr;
    }
    const auto token = proto::parse_ascii_int(token_frame.value());
    const auto held = token ? worker.in_flight.find(*token) : worker.in_flight.end();
    if (held != worker.in_flight.end()) return held->second;
    // §5.1: a worker answers, streams and explains only for the requests it holds. A worker
    // the broker forgot (expired) is unknown and gets DISCONNECT before this; one it knows
    // holds every token it was given until it ends it: anything else is forged.
    ++state_.counters.foreign_tokens;
    state_.warn_refused("foreign_token", "peer={} service={} command={} token={}",
                        printable(worker.identity), worker.service->name, static_cast<int>(code),
                        printable(token_frame.value()));
    return nullptr;
}

void WorkerSide::forward_reply(Worker& worker, Request& request) {
    ++state_.counters.replies;
    explain_.close_open_sessions(request, nullptr);  // marks traces the spool did not all keep
    state_.outbox.out_to(request.client, request.packed);
    if (request.client_kind == ClientKind::kMdp) {
        bus::put_mdp_reply(state_.outbox.sink(), request.service->name);
    } else {
        bus::put_client_final(state_.outbox.sink(), request.request_id);
    }
    // The body frames move on as they came (a packed message's last frame too).
    const std::size_t body = bus::worker_payload_frame(worker.layout);
    for (std::size_t i = body; i < state_.in.views().size(); ++i)
        state_.outbox.out(state_.in.take(i));
    if (state_.in.views().size() <= body) state_.outbox.out(std::string_view{});
    state_.outbox.send(Outlet::kRouter, request.id, Carries::kFinal);
    explain_.end_sessions(request);
    state_.batch.keep_sessions(request);  // for its traces' ends if the batch cannot be written
    WorkerRoster::release(worker, request);
    clients_.erase_request(request);
    dispatch(*worker.service);
}

void WorkerSide::forward_partial(const Worker& worker, Request& request) {
    if (const auto partial = bus::decode_worker_partial(state_.in.views(), worker.layout);
        !partial) {
        state_.drop(worker.identity, partial.error().message);
        return;
    }
    ++state_.counters.partials;
    request.streamed = true;
    if (request.client_kind == ClientKind::kGb) {
        state_.outbox.out_to(request.client, request.packed);
        bus::put_client_partial(state_.outbox.sink(), request.request_id, proto::kKindData);
        state_.outbox.out(state_.in.take(bus::worker_payload_frame(worker.layout)));
        state_.outbox.send();
    }
}

void WorkerSide::forward_explain(const Worker& worker, Request& request) {
    // EXPLAIN [session] [seq] [state] [body]
    const auto explain =
        bus::decode_worker_explain(state_.in.views(), kMaxSessionBytes, worker.layout);
    if (!explain) {
        state_.drop(worker.identity, explain.error().message);
        return;
    }
    const std::string_view session = explain.value().session;
    const std::uint64_t seq = explain.value().seq;
    const std::string_view state = explain.value().state;
    SessionTrack* track = admit_explain(worker, request, session, seq);
    if (track == nullptr) return;
    request.streamed = true;
    ++state_.counters.explains;
    if (auto refused = explain_.emit_explain(&request, *request.service, *track, seq, state,
                                             state_.in.take(explain.value().body))) {
        clients_.finish(request, *refused, true);  // the refused message does not count as sent
        return;
    }
    track->next_seq = std::max(track->next_seq, seq + 1);
    track->ended = state != proto::kStateOpen;
}

SessionTrack* WorkerSide::admit_explain(const Worker& worker, Request& request,
                                        std::string_view session, std::uint64_t seq) {
    // §5.3: a request's sessions are the ones its worker opens while holding it.
    const auto mine = std::find_if(request.sessions.begin(), request.sessions.end(),
                                   [&](const SessionTrack& t) { return t.session == session; });
    if (mine != request.sessions.end()) {
        if (!mine->ended && seq >= mine->next_seq) return &*mine;
        ++state_.counters.explains_out_of_order;
        state_.warn_refused("explain_out_of_order",
                            "peer={} session={} request={} seq={} expected={} reason={}",
                            printable(worker.identity), printable(session), request.id, seq,
                            mine->next_seq, mine->ended ? "after_end" : "seq_not_growing");
        return nullptr;
    }
    if (const SessionOwner* owner = state_.session_owners.find(session)) {
        // Another request's session, live or ended: a worker writing into a trace not its own.
        ++state_.counters.foreign_sessions;
        state_.warn_refused(
            "forged_explain", "peer={} service={} session={} request={} seq={} owner={}",
            printable(worker.identity), worker.service->name, printable(session), request.id, seq,
            owner->request == 0 ? std::string{"ended"} : std::to_string(owner->request));
        return nullptr;
    }
    if (request.sessions.size() >= kMaxSessionsPerRequest) {
        ++state_.counters.explains_out_of_order;
        state_.warn_refused(
            "explain_out_of_order", "peer={} session={} request={} seq={} reason={}",
            printable(worker.identity), printable(session), request.id, seq, "too_many_sessions");
        return nullptr;
    }
    state_.session_owners.open(session, request.id);
    request.sessions.push_back(SessionTrack{std::string{session}, 0, false});
    return &request.sessions.back();
}

}  // namespace glassbox::broker::detail
