// The broker's worker side: dispatch by credit, REQUEST to workers, READY, heartbeats, worker
// loss and re-dispatch, and the answers a worker sends (docs/protocol.md §5).
#include "broker/broker_core.hpp"

#include "bus/client_frames.hpp"
#include "bus/worker_frames.hpp"

namespace glassbox::broker::detail {

void BrokerCore::dispatch(Service& service) {
    // O(1) per request: the least recently used worker with spare credit takes the oldest.
    while (!service.available.empty() && !service.queue.empty()) {
        const auto id = service.queue.pop_front();
        const auto found = requests_.find(*id);
        if (found == requests_.end()) continue;
        dispatch_to(*service.available.front(), *found->second);
    }
}

void BrokerCore::dispatch_to(Worker& worker, Request& request) {
    if (worker.extended && request.body.size() != 1) {
        finish(request,
               base::make_error(ErrorType::kProtocolError,
                                "a GBW01 service takes exactly one body frame"),
               true);
        return;
    }
    assign(worker, request);
    ++request.attempts;
    send_request_to(worker, request);
}

void BrokerCore::assign(Worker& worker, Request& request) {
    Service& service = *worker.service;
    if (worker.in_flight.empty()) --service.idle;
    worker.in_flight.emplace(request.id, &request);
    ++service.in_flight;
    request.worker = &worker;
    // Used just now: to the back of the available list, or out of it when its credit is spent.
    if (worker.available) {
        if (worker.in_flight.size() < worker.credit) {
            service.available.splice(service.available.end(), service.available,
                                     worker.available_position);
        } else {
            service.available.erase(worker.available_position);
            worker.available = false;
        }
    }
}

// REPLY or ERROR for a token frees one unit of the worker's credit (§5.1).
void BrokerCore::release(Worker& worker, Request& request) {
    Service& service = *worker.service;
    if (worker.in_flight.erase(request.id) == 0) return;
    --service.in_flight;
    request.worker = nullptr;
    if (worker.in_flight.empty()) ++service.idle;
    if (!worker.available && worker.in_flight.size() < worker.credit) {
        worker.available = true;
        worker.available_position = service.available.insert(service.available.end(), &worker);
    }
}

bool BrokerCore::send_request_to(Worker& worker, Request& request) {
    // [empty] ["MDPW01"] [0x02] [token] [empty]? [body]... (§5.1; GBW02: no empty frame)
    char token_digits[24];
    const std::string_view token = token_of(request.id, token_digits);
    out_to(worker.identity, worker.packed);
    bus::put_worker_token_head(sink(), proto::worker_cmd::kRequest, token, worker.layout);
    if (worker.extended) {
        const bool gb = request.client_kind == ClientKind::kGb;
        const auto left = std::max(
            milliseconds{0}, std::chrono::duration_cast<milliseconds>(request.deadline - now_));
        bus::encode_request_meta(meta_, gb ? std::string_view{request.request_id} : token,
                                 request.service->name, static_cast<std::uint64_t>(left.count()),
                                 static_cast<std::uint64_t>(request.attempts),
                                 gb ? proto::kGbClient : proto::kMdpClient);
        out(meta_);
    }
    // Copies share the payload (libzmq reference counts large messages): the body stays
    // available for a re-dispatch.
    for (auto& frame : request.body) {
        zmq::message_t copy;
        copy.copy(frame);
        out(std::move(copy));
    }
    worker.last_sent = now_;
    send_out();
    return true;
}

void BrokerCore::send_worker_command(std::string_view identity, char command) {
    const auto worker = workers_.find(identity);
    out_to(identity, worker != workers_.end() && worker->second->packed);
    bus::put_worker_command(sink(), command);
    if (worker != workers_.end()) worker->second->last_sent = now_;
    send_out();
}

void BrokerCore::send_worker_cancel(Worker& worker, const Request& request) {
    if (!worker.extended) return;  // a plain 7/MDP worker has no CANCEL; its reply is discarded
    out_to(worker.identity, worker.packed);
    char token_digits[24];
    bus::put_worker_cancel(sink(), token_of(request.id, token_digits));
    worker.last_sent = now_;
    send_out();
}

void BrokerCore::on_worker(std::string_view identity) {
    namespace cmd = proto::worker_cmd;
    const auto decoded = bus::decode_worker_command(views_);
    if (!decoded) {
        drop(identity, decoded.error().message);
        if (const auto found = workers_.find(identity); found != workers_.end()) {
            delete_worker(*found->second, true, "protocol error: no command");
        }
        return;
    }
    const char code = decoded.value();
    if (code == cmd::kReady) {
        on_worker_ready(identity);
        return;
    }
    const auto found = workers_.find(identity);
    if (found == workers_.end()) {
        // 7/MDP: any command but READY from an unknown worker is answered with DISCONNECT.
        if (code != cmd::kDisconnect) {
            log_->info("event=unknown_worker peer={} command={}", printable(identity),
                       static_cast<int>(code));
            send_worker_command(identity, cmd::kDisconnect);
        }
        return;
    }
    Worker& worker = *found->second;
    worker.expiry = now_ + expiry_span();
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
    drop(identity, "unknown MDPW01 command " + std::to_string(static_cast<int>(code)));
    delete_worker(worker, true, "protocol error: unknown command");
}

void BrokerCore::on_worker_ready(std::string_view identity) {
    // [empty] ["MDPW01"] [0x01] [service] ["GBW01"]? [credit]?
    if (const auto known = workers_.find(identity); known != workers_.end()) {
        // 7/MDP: READY from a worker already known is a protocol error.
        delete_worker(*known->second, true, "protocol error: second READY");
        return;
    }
    const auto ready = bus::decode_worker_ready(views_);
    if (!ready) {
        log_->warn("event=bad_ready peer={} service={} reason=\"{}\"", printable(identity),
                   printable(views_.size() > 3 ? views_[3] : std::string_view{}),
                   ready.error().message);
        ++counters_.dropped_frames;
        send_worker_command(identity, proto::worker_cmd::kDisconnect);
        return;
    }
    const std::string_view service_name = ready.value().service;
    if (!sender_may_serve(service_name)) {
        // 7/MDP DISCONNECT: its key may not register this service (docs/security.md).
        refused("worker_refused", identity,
                "key=" + std::string{sender_name()} + " service=" + printable(service_name) +
                    " missing_role=worker:" + printable(service_name),
                false);
        send_worker_command(identity, proto::worker_cmd::kDisconnect);
        return;
    }
    Service& service = service_for(service_name);
    auto owned = std::make_unique<Worker>();
    Worker& worker = *owned;
    worker.identity.assign(identity);
    worker.service = &service;
    // Where it runs, as the broker sees it: status counts a service's workers by host.
    if (const char* address = zmq_msg_gets(frames_[1].handle(), "Peer-Address"))
        worker.host = address;
    worker.extended = ready.value().gbw01;
    worker.layout = ready.value().layout;
    worker.packed = ready.value().packed;
    worker.credit = static_cast<std::size_t>(ready.value().credit);
    worker.expiry = now_ + expiry_span();
    worker.last_sent = now_;
    workers_.emplace(worker.identity, std::move(owned));
    ++service.workers;
    ++service.idle;
    service.credit += worker.credit;
    service.registered = true;
    remember_service(service);
    worker.available = true;
    worker.available_position = service.available.insert(service.available.end(), &worker);
    log_->info(
        "event=worker_ready peer={} service={} extended={} compact={} packed={} credit={} "
        "workers={}",
        printable(identity), service.name, worker.extended,
        worker.layout == bus::WorkerLayout::kCompact, worker.packed, worker.credit,
        service.workers);
    dispatch(service);
}

void BrokerCore::delete_worker(Worker& worker, bool send_disconnect, std::string_view reason) {
    log_->info("event=worker_removed peer={} service={} reason={}", printable(worker.identity),
               worker.service->name, reason);
    if (send_disconnect) send_worker_command(worker.identity, proto::worker_cmd::kDisconnect);
    Service& service = *worker.service;
    if (worker.available) service.available.erase(worker.available_position);
    --service.workers;
    if (worker.in_flight.empty()) --service.idle;
    service.credit -= worker.credit;
    service.in_flight -= worker.in_flight.size();
    // Oldest first (ids grow with arrival), so re-queued requests keep their order at the front.
    std::vector<Request*> held;
    held.reserve(worker.in_flight.size());
    for (const auto& [token, request] : worker.in_flight) held.push_back(request);
    std::sort(held.begin(), held.end(),
              [](const Request* a, const Request* b) { return a->id < b->id; });
    const std::string identity = worker.identity;
    workers_.erase(identity);  // `worker` is gone from here on
    for (Request* request : held) request->worker = nullptr;

    // §2.2, for each request on its own: a stream is never replayed; a request the worker
    // sent nothing for goes back to the front of the queue while retries last.
    std::vector<std::uint64_t> requeue;
    for (Request* request : held) {
        if (request->abandoned) {
            erase_request(*request);
        } else if (request->streamed) {
            finish(*request,
                   base::make_error(ErrorType::kWorkerLost,
                                    "worker lost mid-stream (" + std::string{reason} + ")"),
                   true);
        } else if (request->attempts > config_.max_retries) {
            finish(*request,
                   base::make_error(ErrorType::kWorkerLost, "worker lost before replying, " +
                                                                std::to_string(request->attempts) +
                                                                " attempts"),
                   true);
        } else {
            ++counters_.retries;
            log_->info("event=redispatch request={} token={} service={} attempt={}",
                       request->client_kind == ClientKind::kGb ? printable(request->request_id)
                                                               : std::to_string(request->id),
                       request->id, service.name, request->attempts + 1);
            requeue.push_back(request->id);
        }
    }
    if (requeue.empty()) return;
    for (auto id = requeue.rbegin(); id != requeue.rend(); ++id) {
        service.queue.push_front(*id, requests_.at(*id)->client);
    }
    dispatch(service);
}

void BrokerCore::on_worker_result(Worker& worker, char code) {
    namespace cmd = proto::worker_cmd;
    // [empty] ["MDPW01"] [command] [token] [empty]? ... (GBW02: no empty frame)
    const auto token_frame = bus::decode_worker_token(views_, worker.layout);
    if (!token_frame) {
        drop(worker.identity, token_frame.error().message);
        return;
    }
    const auto token = proto::parse_ascii_int(token_frame.value());
    const auto held = token ? worker.in_flight.find(*token) : worker.in_flight.end();
    if (held == worker.in_flight.end()) {
        // §5.1: a worker answers, streams and explains only for the requests it holds. A
        // worker the broker forgot (expired) is unknown and gets DISCONNECT before this; one
        // it knows holds every token it was given until it ends it: anything else is forged.
        ++counters_.foreign_tokens;
        warn_refused("foreign_token", "peer={} service={} command={} token={}",
                     printable(worker.identity), worker.service->name, static_cast<int>(code),
                     printable(token_frame.value()));
        return;
    }
    Request* request = held->second;
    const bool terminal = code == cmd::kReply || code == cmd::kError;
    if (request->abandoned) {
        if (terminal) {
            release(worker, *request);
            erase_request(*request);
            dispatch(*worker.service);
        }
        return;
    }
    Service& service = *request->service;
    if (message_bytes_ - worker.identity.size() > config_.max_message_bytes || too_many_frames_) {
        const Error error =
            too_many_frames_
                ? base::make_error(ErrorType::kProtocolError,
                                   "worker message of more than 64 frames")
                : base::make_error(ErrorType::kMessageTooLarge,
                                   "worker message of " + std::to_string(message_bytes_) +
                                       " bytes exceeds " +
                                       std::to_string(config_.max_message_bytes));
        if (terminal) {
            release(worker, *request);  // the worker is done with it: no CANCEL
            finish(*request, error, true);
            dispatch(*worker.service);
        } else {
            finish(*request, error, true);  // abandons the request and CANCELs the worker
        }
        return;
    }

    if (code == cmd::kReply) {
        ++counters_.replies;
        close_open_sessions(*request, nullptr);  // marks traces the spool did not all keep
        out_to(request->client, request->packed);
        if (request->client_kind == ClientKind::kMdp) {
            bus::put_mdp_reply(sink(), service.name);
        } else {
            bus::put_client_final(sink(), request->request_id);
        }
        // The body frames move on as they came (a packed message's last frame too).
        const std::size_t body = bus::worker_payload_frame(worker.layout);
        for (std::size_t i = body; i < views_.size(); ++i) out(take_view(i));
        if (views_.size() <= body) out(std::string_view{});
        send_out(Outlet::kRouter, request->id, Carries::kFinal);
        end_sessions(*request);
        keep_batch_sessions(*request);  // for its traces' ends if the batch cannot be written
        release(worker, *request);
        erase_request(*request);
        dispatch(*worker.service);
        return;
    }
    if (code == cmd::kError) {
        // [type] [message]; an unknown type word is reported as Internal.
        const Error error = bus::decode_worker_error(views_, worker.layout);
        release(worker, *request);  // ends normally from the worker's side: no CANCEL
        finish(*request, error, true);
        dispatch(*worker.service);
        return;
    }
    if (code == cmd::kPartial) {
        if (const auto partial = bus::decode_worker_partial(views_, worker.layout); !partial) {
            drop(worker.identity, partial.error().message);
            return;
        }
        ++counters_.partials;
        request->streamed = true;
        if (request->client_kind == ClientKind::kGb) {
            out_to(request->client, request->packed);
            bus::put_client_partial(sink(), request->request_id, proto::kKindData);
            out(take_view(bus::worker_payload_frame(worker.layout)));
            send_out();
        }
        return;
    }
    // EXPLAIN [session] [seq] [state] [body]
    const auto explain = bus::decode_worker_explain(views_, kMaxSessionBytes, worker.layout);
    if (!explain) {
        drop(worker.identity, explain.error().message);
        return;
    }
    const std::string_view session = explain.value().session;
    const std::uint64_t seq = explain.value().seq;
    const std::string_view state = explain.value().state;
    SessionTrack* track = admit_explain(worker, *request, session, seq);
    if (track == nullptr) return;
    request->streamed = true;
    ++counters_.explains;
    if (auto refused =
            emit_explain(request, service, *track, seq, state, take_view(explain.value().body))) {
        finish(*request, *refused, true);  // the refused message does not count as sent
        return;
    }
    track->next_seq = std::max(track->next_seq, seq + 1);
    track->ended = state != proto::kStateOpen;
}

SessionTrack* BrokerCore::admit_explain(const Worker& worker, Request& request,
                                        std::string_view session, std::uint64_t seq) {
    // §5.3: a request's sessions are the ones its worker opens while holding it.
    const auto mine = std::find_if(request.sessions.begin(), request.sessions.end(),
                                   [&](const SessionTrack& t) { return t.session == session; });
    if (mine != request.sessions.end()) {
        if (!mine->ended && seq >= mine->next_seq) return &*mine;
        ++counters_.explains_out_of_order;
        warn_refused("explain_out_of_order",
                     "peer={} session={} request={} seq={} expected={} reason={}",
                     printable(worker.identity), printable(session), request.id, seq,
                     mine->next_seq, mine->ended ? "after_end" : "seq_not_growing");
        return nullptr;
    }
    if (const auto owner = session_owners_.find(session); owner != session_owners_.end()) {
        // Another request's session, live or ended: a worker writing into a trace not its own.
        ++counters_.foreign_sessions;
        warn_refused("forged_explain", "peer={} service={} session={} request={} seq={} owner={}",
                     printable(worker.identity), worker.service->name, printable(session),
                     request.id, seq,
                     owner->second.request == 0 ? std::string{"ended"}
                                                : std::to_string(owner->second.request));
        return nullptr;
    }
    if (request.sessions.size() >= kMaxSessionsPerRequest) {
        ++counters_.explains_out_of_order;
        warn_refused("explain_out_of_order", "peer={} session={} request={} seq={} reason={}",
                     printable(worker.identity), printable(session), request.id, seq,
                     "too_many_sessions");
        return nullptr;
    }
    session_owners_.emplace(std::string{session}, SessionOwner{request.id});
    request.sessions.push_back(SessionTrack{std::string{session}, 0, false});
    return &request.sessions.back();
}

}  // namespace glassbox::broker::detail
