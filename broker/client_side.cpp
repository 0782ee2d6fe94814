// The broker's client side (ClientSide): MDPC01 and GBC01 requests, MMI, errors to clients, and
// the life of a request from acceptance to its deadline or end (docs/protocol.md §3, §4).
#include "broker/detail/client_side.hpp"

#include <nlohmann/json.hpp>

#include "broker/detail/broker_state.hpp"
#include "broker/detail/broker_status.hpp"
#include "broker/detail/explain_router.hpp"
#include "broker/detail/worker_side.hpp"
#include "bus/detail/client_frames.hpp"
#include "schema/messages.hpp"
#include "schema/otel_ids.hpp"

namespace glassbox::broker::detail {

namespace {

// §3: the single body frame of a failed MDPC01 request, {"error": {"type": ..., "message": ...}},
// written by the contract's own Error encoder.
std::string mdp_error_body(const Error& error) {
    return schema::dump(nlohmann::json{{"error", schema::encode(error)}});
}

}  // namespace

void ClientSide::write_error(ClientKind kind, std::string_view identity, std::string_view service,
                             std::string_view request_id, const Error& error, bool packed) {
    state_.outbox.out_to(identity, packed);
    if (kind == ClientKind::kMdp) {
        bus::put_mdp_reply(state_.outbox.sink(), service);
        state_.outbox.out(mdp_error_body(error));
    } else {
        bus::put_client_error(state_.outbox.sink(), request_id, error);
    }
}

void ClientSide::send_mdp_reply(std::string_view identity, std::string_view service,
                                std::string_view body, bool packed) {
    state_.outbox.out_to(identity, packed);
    bus::put_mdp_reply(state_.outbox.sink(), service);
    state_.outbox.out(body);
    state_.outbox.send();
}

void ClientSide::send_gb_error(std::string_view identity, std::string_view request_id,
                               const Error& error, bool packed) {
    state_.outbox.out_to(identity, packed);
    bus::put_client_error(state_.outbox.sink(), request_id, error);
    state_.outbox.send();
}

void ClientSide::reject(ClientKind kind, std::string_view identity, std::string_view service,
                        std::string_view request_id, const Error& error) {
    state_.count_error(error.type);
    state_.log->info("event=rejected peer={} service={} request={} type={} message=\"{}\"",
                     printable(identity), printable(service), printable(request_id),
                     base::to_string(error.type), error.message);
    if (kind == ClientKind::kMdp) {
        send_mdp_reply(identity, service, mdp_error_body(error), state_.in.packed());
    } else {
        send_gb_error(identity, request_id, error, state_.in.packed());
    }
}

void ClientSide::refuse_request(ClientKind kind, std::string_view identity,
                                std::string_view service, std::string_view request_id) {
    state_.auth.refused("request_refused", identity,
                        "key=" + std::string{state_.auth.sender_name()} +
                            " service=" + printable(service) + " missing_role=client",
                        false);
    reject(kind, identity, service, request_id,
           base::make_error(ErrorType::kForbidden,
                            "the key '" + std::string{state_.auth.sender_name()} +
                                "' may not send requests (it has no `client` role)"));
}

void ClientSide::on_mdp_client(std::string_view identity) {
    // 7/MDP: [empty] ["MDPC01"] [service] [body]...
    const auto decoded = bus::decode_mdp_request(state_.in.views());
    if (!decoded) {
        state_.drop(identity, decoded.error().message);
        return;
    }
    const std::string service{decoded.value()};
    if (!state_.auth.sender_is_client()) {
        refuse_request(ClientKind::kMdp, identity, service, {});
        return;
    }
    if (const auto error = state_.too_large(identity, "message")) {
        reject(ClientKind::kMdp, identity, service, {}, *error);
        return;
    }
    if (state_.in.too_many_frames()) {
        reject(ClientKind::kMdp, identity, service, {},
               base::make_error(ErrorType::kProtocolError, "more than 64 frames"));
        return;
    }
    if (!proto::is_valid_service_name(service)) {
        reject(ClientKind::kMdp, identity, service, {},
               base::make_error(ErrorType::kProtocolError, "invalid service name"));
        return;
    }
    if (service.starts_with(proto::kMmiPrefix)) {
        answer_mmi(ClientKind::kMdp, identity, service, {},
                   state_.in.views().size() > bus::kMdpBodyFrame
                       ? state_.in.views()[bus::kMdpBodyFrame]
                       : std::string_view{});
        return;
    }
    std::vector<zmq::message_t> body;
    body.reserve(state_.in.views().size() - bus::kMdpBodyFrame);
    for (std::size_t i = bus::kMdpBodyFrame; i < state_.in.views().size(); ++i)
        body.push_back(state_.in.take(i));
    accept_request(ClientKind::kMdp, identity, service, {}, std::move(body),
                   state_.config.default_deadline, false);
}

void ClientSide::on_gb_client(std::string_view identity) {
    namespace cmd = proto::client_cmd;
    const auto command = bus::decode_client_command(state_.in.views());
    if (!command) {
        reject(ClientKind::kGb, identity, {}, {}, command.error());
        return;
    }
    if (!state_.auth.sender_is_client() && command.value() != cmd::kRequest) {
        state_.auth.refused(
            "message_refused", identity,
            "key=" + std::string{state_.auth.sender_name()} + " missing_role=client", false);
        return;
    }
    if (command.value() == cmd::kRequest) {
        on_gb_request(identity);
    } else if (command.value() == cmd::kCancel) {
        on_gb_cancel(identity);
    } else if (command.value() == cmd::kHeartbeat) {
        on_gb_heartbeat(identity);
    } else {
        reject(ClientKind::kGb, identity, {}, {},
               base::make_error(
                   ErrorType::kProtocolError,
                   "unknown GBC01 command " + std::to_string(static_cast<int>(command.value()))));
    }
}

void ClientSide::on_gb_request(std::string_view identity) {
    // [empty] ["GBC01"] [0x01] [service] [request-id] [deadline-ms] [options]? [body]
    const auto named = bus::decode_client_request_id(state_.in.views());
    if (!named) {
        reject(ClientKind::kGb, identity, {}, {}, named.error());
        return;
    }
    const std::string service{named.value().service};
    std::string request_id{named.value().request_id};
    if (!state_.auth.sender_is_client()) {
        refuse_request(ClientKind::kGb, identity, service, request_id);
        return;
    }
    if (const auto error = state_.too_large(identity, "message")) {
        reject(ClientKind::kGb, identity, service, request_id, *error);
        return;
    }
    const auto decoded = bus::decode_client_request(state_.in.views());
    if (!decoded) {
        reject(ClientKind::kGb, identity, service, request_id, decoded.error());
        return;
    }
    if (state_.requests.find_client(identity, request_id) != nullptr) {
        reject(ClientKind::kGb, identity, service, request_id,
               base::make_error(ErrorType::kProtocolError, "request id already in flight"));
        return;
    }
    if (service.starts_with(proto::kMmiPrefix)) {
        answer_mmi(ClientKind::kGb, identity, service, request_id, decoded.value().body);
        return;
    }
    std::vector<zmq::message_t> body;
    body.push_back(state_.in.take(decoded.value().body_frame));
    accept_request(ClientKind::kGb, identity, service, std::move(request_id), std::move(body),
                   request_deadline(decoded.value().deadline_ms),
                   decoded.value().options.explain == bus::ExplainDelivery::kStream,
                   decoded.value().options.trace);
}

milliseconds ClientSide::request_deadline(std::uint64_t deadline_ms) const {
    // 0: the default; larger than max_deadline: clamped.
    if (deadline_ms == 0) return state_.config.default_deadline;
    const auto max_ms = static_cast<std::uint64_t>(state_.config.max_deadline.count());
    return milliseconds{static_cast<milliseconds::rep>(std::min(deadline_ms, max_ms))};
}

void ClientSide::on_gb_cancel(std::string_view identity) {
    // [empty] ["GBC01"] [0x04] [request-id]; unknown or finished ids are ignored (§4.1).
    const auto request_id = bus::decode_client_cancel(state_.in.views());
    if (!request_id) {
        reject(ClientKind::kGb, identity, {}, {}, request_id.error());
        return;
    }
    if (Request* request = state_.requests.find_client(identity, request_id.value())) {
        finish(*request, base::make_error(ErrorType::kCancelled, "cancelled by the client"), true);
    }
}

void ClientSide::on_gb_heartbeat(std::string_view identity) {
    // [empty] ["GBC01"] [0x06] [request-id]...: unknown ids learn the broker restarted.
    for (std::size_t i = bus::kClientHeartbeatIdFrame; i < state_.in.views().size(); ++i) {
        const std::string_view request_id = state_.in.views()[i];
        if (request_id.empty() || state_.requests.find_client(identity, request_id) != nullptr)
            continue;
        const Error error = base::make_error(ErrorType::kBrokerRestarted,
                                             "the broker has no record of this request");
        state_.count_error(error.type);
        send_gb_error(identity, request_id, error, state_.in.packed());
    }
}

std::string ClientSide::status_json() const {
    return detail::status_json(
        StatusSources{state_.config, state_.instance, state_.started, state_.bound, state_.auth,
                      state_.services.all(), state_.workers.all(), *state_.spool,
                      explain_.spool_failing(), explain_.spool_error(), state_.feed.size(),
                      state_.feed.delivered(), state_.feed.backlog_size(), state_.topic,
                      state_.counters, state_.requests.size(), state_.outbox.send_failures()});
}

void ClientSide::answer_mmi(ClientKind kind, std::string_view identity, std::string_view service,
                            std::string_view request_id, std::string_view body) {
    ++state_.counters.requests;
    std::string answer;
    if (service == proto::kMmiService) {
        std::string_view name = body;
        // Over GBC01 the body is JSON: accept the name as a JSON string too.
        if (name.size() >= 2 && name.front() == '"' && name.back() == '"') {
            name = name.substr(1, name.size() - 2);
        }
        const Service* found = state_.services.find(name);
        answer = found != nullptr && found->workers > 0 ? "200" : "404";
    } else if (service == proto::kMmiStatus) {
        answer = status_json();
    } else if (kind == ClientKind::kMdp) {
        answer = "501";  // 7/MDP MMI (RFC 8): not implemented
    } else {
        state_.count_error(ErrorType::kUnknownService);
        send_gb_error(identity, request_id,
                      base::make_error(ErrorType::kUnknownService,
                                       "no broker service '" + std::string{service} + "'"),
                      state_.in.packed());
        return;
    }
    ++state_.counters.replies;
    if (kind == ClientKind::kMdp) {
        send_mdp_reply(identity, service, answer, state_.in.packed());
    } else {
        state_.outbox.out_to(identity, state_.in.packed());
        bus::put_client_final(state_.outbox.sink(), request_id);
        state_.outbox.out(answer);
        state_.outbox.send();
    }
}

void ClientSide::accept_request(ClientKind kind, std::string_view identity,
                                std::string_view service_name, std::string request_id,
                                std::vector<zmq::message_t> body, milliseconds deadline,
                                bool explain_partials, std::string trace) {
    ++state_.counters.requests;
    Service& service = state_.services.service_for(service_name);
    auto owned = state_.requests.make();
    Request& request = *owned;
    request.client_kind = kind;
    request.packed = state_.in.packed();
    request.explain_partials = explain_partials;
    request.trace = std::move(trace);
    request.client.assign(identity);
    request.request_id = std::move(request_id);
    request.service = &service;
    request.body = std::move(body);
    request.received = state_.now;
    request.deadline = state_.now + deadline;

    // Nobody waiting and a worker with spare credit: the request goes to it at once, without
    // the queue's bookkeeping (the queue would hand it over in the same call, in the same order).
    const bool direct = service.queue.empty() && !service.available.empty();
    const auto pushed = direct ? ServiceQueue::PushOutcome{true, std::nullopt}
                               : service.queue.push_back(request.id, request.client);
    if (!pushed.accepted) {
        reject(kind, identity, service.name, request.request_id,
               base::make_error(ErrorType::kQueueFull,
                                "queue of '" + service.name + "' is full (" +
                                    std::to_string(service.queue.max_size()) + ")"));
        state_.services.collect_later(service);
        return;
    }
    state_.requests.insert(std::move(owned));
    // A service nobody registered since the start gets unknown_service_wait to show up, one
    // registered before a restart until restart_grace ends (§9).
    state_.requests.schedule(
        request,
        service.registered
            ? request.deadline
            : std::min(request.deadline, std::max(state_.now + state_.config.unknown_service_wait,
                                                  state_.services.grace_end(service))));
    if (direct) {
        workers_.dispatch_to(*service.available.front(), request);
        return;
    }
    if (pushed.evicted) {
        if (Request* evicted = state_.requests.find(*pushed.evicted)) {
            finish(*evicted,
                   base::make_error(ErrorType::kEvicted,
                                    "dropped from the full queue of '" + service.name +
                                        "' for a newer request (the client with the most "
                                        "queued loses its oldest)"),
                   true);
        }
    }
    workers_.dispatch(service);
}

void ClientSide::on_deadline(Request& request) {
    Service& service = *request.service;
    const bool queued = request.worker == nullptr;
    if (state_.now < request.deadline) {
        if (queued && !service.registered && state_.now < state_.services.grace_end(service)) {
            state_.requests.schedule(
                request, std::min(request.deadline, state_.services.grace_end(service)));
        } else if (queued && !service.registered) {
            finish(request,
                   base::make_error(ErrorType::kUnknownService,
                                    "no worker has registered service '" + service.name + "'"),
                   true);
        } else {
            state_.requests.schedule(request, request.deadline);
        }
        return;
    }
    if (queued && !service.registered) {
        finish(request,
               base::make_error(ErrorType::kUnknownService,
                                "no worker has registered service '" + service.name + "'"),
               true);
    } else if (queued && service.workers == 0) {
        finish(request,
               base::make_error(ErrorType::kServiceUnavailable,
                                "no live worker for '" + service.name + "' before the deadline"),
               true);
    } else {
        const auto waited =
            std::chrono::duration_cast<milliseconds>(request.deadline - request.received);
        finish(request,
               base::make_error(ErrorType::kDeadlineExceeded,
                                "no reply within " + std::to_string(waited.count()) + " ms"),
               true);
    }
}

void ClientSide::log_request_failed(ClientKind kind, std::string_view request_id,
                                    std::uint64_t token, const std::vector<SessionTrack>& sessions,
                                    std::string_view service, const Error& error,
                                    const std::string* trace) {
    // request= is the id the worker's lines carry too: the client's (GBC01), else the token;
    // trace= its run's session, otel_trace_id= its top-level run's trace (docs/operations.md).
    const std::string session =
        sessions.empty() ? std::string("-") : printable(sessions.front().session);
    std::string otel;
    if (trace != nullptr && !trace->empty()) {
        otel = *trace;
    } else if (trace != nullptr && !sessions.empty()) {
        otel = schema::otel::trace_id_of(sessions.front().session).value_or("");
    }
    state_.log->info(
        "event=request_failed request={} session={} trace={} otel_trace_id={} token={} "
        "service={} type={} message=\"{}\"",
        kind == ClientKind::kGb ? printable(request_id) : std::to_string(token), session, session,
        otel.empty() ? std::string("-") : otel, token, service, base::to_string(error.type),
        error.message);
}

void ClientSide::finish(Request& request, const Error& error, bool notify_client) {
    state_.count_error(error.type);
    log_request_failed(request.client_kind, request.request_id, request.id, request.sessions,
                       request.service->name, error, &request.trace);
    explain_.close_open_sessions(request, &error);
    if (notify_client) {
        if (request.client_kind == ClientKind::kMdp) {
            send_mdp_reply(request.client, request.service->name, mdp_error_body(error),
                           request.packed);
        } else {
            send_gb_error(request.client, request.request_id, error, request.packed);
        }
    }
    if (request.worker != nullptr) {
        // The worker still holds the request: it must end it before it is ready again (§5.3).
        if (request.client_kind == ClientKind::kGb) state_.requests.forget_client(request);
        request.abandoned = true;
        request.body.clear();
        workers_.send_worker_cancel(*request.worker, request);
        return;
    }
    request.service->queue.remove(request.id);
    erase_request(request);
}

void ClientSide::erase_request(Request& request) {
    explain_.end_sessions(request);
    if (request.client_kind == ClientKind::kGb && !request.abandoned) {
        state_.requests.forget_client(request);
    }
    state_.services.collect_later(*request.service);
    state_.requests.erase(request);
}

}  // namespace glassbox::broker::detail
