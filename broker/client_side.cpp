// The broker's client side: MDPC01 and GBC01 requests, MMI, errors to clients, and the life of a
// request from acceptance to its deadline or end (docs/protocol.md §3, §4).
#include "broker/broker_core.hpp"

#include <nlohmann/json.hpp>

#include "bus/client_frames.hpp"
#include "schema/messages.hpp"

namespace glassbox::broker::detail {

namespace {

// §3: the single body frame of a failed MDPC01 request, {"error": {"type": ..., "message": ...}},
// written by the contract's own Error encoder.
std::string mdp_error_body(const Error& error) {
    return schema::dump(nlohmann::json{{"error", schema::encode(error)}});
}

}  // namespace

void BrokerCore::write_error(ClientKind kind, std::string_view identity, std::string_view service,
                             std::string_view request_id, const Error& error, bool packed) {
    out_to(identity, packed);
    if (kind == ClientKind::kMdp) {
        bus::put_mdp_reply(sink(), service);
        out(mdp_error_body(error));
    } else {
        bus::put_client_error(sink(), request_id, error);
    }
}

void BrokerCore::send_mdp_reply(std::string_view identity, std::string_view service,
                                std::string_view body, bool packed) {
    out_to(identity, packed);
    bus::put_mdp_reply(sink(), service);
    out(body);
    send_out();
}

void BrokerCore::send_gb_error(std::string_view identity, std::string_view request_id,
                               const Error& error, bool packed) {
    out_to(identity, packed);
    bus::put_client_error(sink(), request_id, error);
    send_out();
}

void BrokerCore::reject(ClientKind kind, std::string_view identity, std::string_view service,
                        std::string_view request_id, const Error& error) {
    count_error(error.type);
    log_->info("event=rejected peer={} service={} request={} type={} message=\"{}\"",
               printable(identity), printable(service), printable(request_id),
               base::to_string(error.type), error.message);
    if (kind == ClientKind::kMdp) {
        send_mdp_reply(identity, service, mdp_error_body(error), packed_in_);
    } else {
        send_gb_error(identity, request_id, error, packed_in_);
    }
}

void BrokerCore::refuse_request(ClientKind kind, std::string_view identity,
                                std::string_view service, std::string_view request_id) {
    refused("request_refused", identity,
            "key=" + std::string{sender_name()} + " service=" + printable(service) +
                " missing_role=client",
            false);
    reject(kind, identity, service, request_id,
           base::make_error(ErrorType::kForbidden,
                            "the key '" + std::string{sender_name()} +
                                "' may not send requests (it has no `client` role)"));
}

void BrokerCore::on_mdp_client(std::string_view identity) {
    // 7/MDP: [empty] ["MDPC01"] [service] [body]...
    const auto decoded = bus::decode_mdp_request(views_);
    if (!decoded) {
        drop(identity, decoded.error().message);
        return;
    }
    const std::string service{decoded.value()};
    if (!sender_is_client()) {
        refuse_request(ClientKind::kMdp, identity, service, {});
        return;
    }
    if (message_bytes_ - identity.size() > config_.max_message_bytes) {
        reject(ClientKind::kMdp, identity, service, {},
               base::make_error(ErrorType::kMessageTooLarge,
                                "message of " + std::to_string(message_bytes_) + " bytes exceeds " +
                                    std::to_string(config_.max_message_bytes)));
        return;
    }
    if (too_many_frames_) {
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
        answer_mmi(
            ClientKind::kMdp, identity, service, {},
            views_.size() > bus::kMdpBodyFrame ? views_[bus::kMdpBodyFrame] : std::string_view{});
        return;
    }
    std::vector<zmq::message_t> body;
    body.reserve(views_.size() - bus::kMdpBodyFrame);
    for (std::size_t i = bus::kMdpBodyFrame; i < views_.size(); ++i) body.push_back(take_view(i));
    accept_request(ClientKind::kMdp, identity, service, {}, std::move(body),
                   config_.default_deadline);
}

void BrokerCore::on_gb_client(std::string_view identity) {
    namespace cmd = proto::client_cmd;
    const auto command = bus::decode_client_command(views_);
    if (!command) {
        reject(ClientKind::kGb, identity, {}, {}, command.error());
        return;
    }
    if (!sender_is_client() && command.value() != cmd::kRequest) {
        refused("message_refused", identity,
                "key=" + std::string{sender_name()} + " missing_role=client", false);
        return;
    }
    if (command.value() == cmd::kRequest) {
        // [empty] ["GBC01"] [0x01] [service] [request-id] [deadline-ms] [body]
        const auto named = bus::decode_client_request_id(views_);
        if (!named) {
            reject(ClientKind::kGb, identity, {}, {}, named.error());
            return;
        }
        const std::string service{named.value().service};
        std::string request_id{named.value().request_id};
        if (!sender_is_client()) {
            refuse_request(ClientKind::kGb, identity, service, request_id);
            return;
        }
        if (message_bytes_ - identity.size() > config_.max_message_bytes) {
            reject(ClientKind::kGb, identity, service, request_id,
                   base::make_error(ErrorType::kMessageTooLarge,
                                    "message of " + std::to_string(message_bytes_) +
                                        " bytes exceeds " +
                                        std::to_string(config_.max_message_bytes)));
            return;
        }
        const auto decoded = bus::decode_client_request(views_);
        if (!decoded) {
            reject(ClientKind::kGb, identity, service, request_id, decoded.error());
            return;
        }
        if (find_client_request(identity, request_id) != nullptr) {
            reject(ClientKind::kGb, identity, service, request_id,
                   base::make_error(ErrorType::kProtocolError, "request id already in flight"));
            return;
        }
        if (service.starts_with(proto::kMmiPrefix)) {
            answer_mmi(ClientKind::kGb, identity, service, request_id, decoded.value().body);
            return;
        }
        milliseconds deadline = config_.default_deadline;
        if (decoded.value().deadline_ms != 0) {
            const auto max_ms = static_cast<std::uint64_t>(config_.max_deadline.count());
            deadline = milliseconds{
                static_cast<milliseconds::rep>(std::min(decoded.value().deadline_ms, max_ms))};
        }
        std::vector<zmq::message_t> body;
        body.push_back(take_view(bus::kClientRequestBodyFrame));
        accept_request(ClientKind::kGb, identity, service, std::move(request_id), std::move(body),
                       deadline);
    } else if (command.value() == cmd::kCancel) {
        // [empty] ["GBC01"] [0x04] [request-id]; unknown or finished ids are ignored (§4.1).
        const auto request_id = bus::decode_client_cancel(views_);
        if (!request_id) {
            reject(ClientKind::kGb, identity, {}, {}, request_id.error());
            return;
        }
        if (Request* request = find_client_request(identity, request_id.value())) {
            finish(*request, base::make_error(ErrorType::kCancelled, "cancelled by the client"),
                   true);
        }
    } else if (command.value() == cmd::kHeartbeat) {
        // [empty] ["GBC01"] [0x06] [request-id]...: unknown ids learn the broker restarted.
        for (std::size_t i = bus::kClientHeartbeatIdFrame; i < views_.size(); ++i) {
            const std::string_view request_id = views_[i];
            if (request_id.empty() || find_client_request(identity, request_id) != nullptr) {
                continue;
            }
            const Error error = base::make_error(ErrorType::kBrokerRestarted,
                                                 "the broker has no record of this request");
            count_error(error.type);
            send_gb_error(identity, request_id, error, packed_in_);
        }
    } else {
        reject(ClientKind::kGb, identity, {}, {},
               base::make_error(
                   ErrorType::kProtocolError,
                   "unknown GBC01 command " + std::to_string(static_cast<int>(command.value()))));
    }
}

void BrokerCore::answer_mmi(ClientKind kind, std::string_view identity, std::string_view service,
                            std::string_view request_id, std::string_view body) {
    ++counters_.requests;
    std::string answer;
    if (service == proto::kMmiService) {
        std::string_view name = body;
        // Over GBC01 the body is JSON: accept the name as a JSON string too.
        if (name.size() >= 2 && name.front() == '"' && name.back() == '"') {
            name = name.substr(1, name.size() - 2);
        }
        const auto found = services_.find(name);
        answer = found != services_.end() && found->second->workers > 0 ? "200" : "404";
    } else if (service == proto::kMmiStatus) {
        answer = status_json();
    } else if (kind == ClientKind::kMdp) {
        answer = "501";  // 7/MDP MMI (RFC 8): not implemented
    } else {
        count_error(ErrorType::kUnknownService);
        send_gb_error(identity, request_id,
                      base::make_error(ErrorType::kUnknownService,
                                       "no broker service '" + std::string{service} + "'"),
                      packed_in_);
        return;
    }
    ++counters_.replies;
    if (kind == ClientKind::kMdp) {
        send_mdp_reply(identity, service, answer, packed_in_);
    } else {
        out_to(identity, packed_in_);
        bus::put_client_final(sink(), request_id);
        out(answer);
        send_out();
    }
}

Service& BrokerCore::service_for(std::string_view name) {
    auto found = services_.find(name);
    if (found == services_.end()) {
        auto service =
            std::make_unique<Service>(std::string{name}, config_.max_queue, config_.overflow);
        service->topic = std::string{proto::kExplainTopicPrefix} + std::string{name};
        found = services_.emplace(std::string{name}, std::move(service)).first;
    }
    return *found->second;
}

void BrokerCore::accept_request(ClientKind kind, std::string_view identity,
                                std::string_view service_name, std::string request_id,
                                std::vector<zmq::message_t> body, milliseconds deadline) {
    ++counters_.requests;
    Service& service = service_for(service_name);
    auto owned = std::make_unique<Request>();
    Request& request = *owned;
    request.id = next_request_id_++;
    request.client_kind = kind;
    request.packed = packed_in_;
    request.client.assign(identity);
    request.request_id = std::move(request_id);
    request.service = &service;
    request.body = std::move(body);
    request.received = now_;
    request.deadline = now_ + deadline;

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
        if (!service.registered) services_to_collect_.push_back(service.name);
        return;
    }
    requests_.emplace(request.id, std::move(owned));
    if (kind == ClientKind::kGb) {
        by_client_.emplace(client_key(request.client, request.request_id, key_), request.id);
    }
    // A service nobody registered since the start gets unknown_service_wait to show up, one
    // registered before a restart until restart_grace ends (§9).
    schedule(request, service.registered
                          ? request.deadline
                          : std::min(request.deadline, std::max(now_ + config_.unknown_service_wait,
                                                                grace_end(service))));
    if (direct) {
        dispatch_to(*service.available.front(), request);
        return;
    }
    if (pushed.evicted) {
        if (const auto evicted = requests_.find(*pushed.evicted); evicted != requests_.end()) {
            finish(*evicted->second,
                   base::make_error(ErrorType::kEvicted,
                                    "dropped from the full queue of '" + service.name +
                                        "' for a newer request (the client with the most "
                                        "queued loses its oldest)"),
                   true);
        }
    }
    dispatch(service);
}

Request* BrokerCore::find_client_request(std::string_view identity, std::string_view request_id) {
    const auto found = by_client_.find(client_key(identity, request_id, key_));
    if (found == by_client_.end()) return nullptr;
    const auto request = requests_.find(found->second);
    return request == requests_.end() ? nullptr : request->second.get();
}

void BrokerCore::forget_client_request(const Request& request) {
    const auto found = by_client_.find(client_key(request.client, request.request_id, key_));
    if (found != by_client_.end()) by_client_.erase(found);
}

void BrokerCore::schedule(Request& request, TimePoint at) {
    request.timer_at = at;
    timers_.push(TimerEntry{at, request.id});
}

void BrokerCore::on_deadline(Request& request) {
    Service& service = *request.service;
    const bool queued = request.worker == nullptr;
    if (now_ < request.deadline) {
        if (queued && !service.registered && now_ < grace_end(service)) {
            schedule(request, std::min(request.deadline, grace_end(service)));
        } else if (queued && !service.registered) {
            finish(request,
                   base::make_error(ErrorType::kUnknownService,
                                    "no worker has registered service '" + service.name + "'"),
                   true);
        } else {
            schedule(request, request.deadline);
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

void BrokerCore::finish(Request& request, const Error& error, bool notify_client) {
    count_error(error.type);
    // request= is the id the worker's lines carry too: the client's (GBC01), else the token.
    log_->info(
        "event=request_failed request={} session={} token={} service={} type={} message=\"{}\"",
        request.client_kind == ClientKind::kGb ? printable(request.request_id)
                                               : std::to_string(request.id),
        request.sessions.empty() ? std::string("-") : printable(request.sessions.front().session),
        request.id, request.service->name, base::to_string(error.type), error.message);
    close_open_sessions(request, &error);
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
        if (request.client_kind == ClientKind::kGb) forget_client_request(request);
        request.abandoned = true;
        request.body.clear();
        send_worker_cancel(*request.worker, request);
        return;
    }
    request.service->queue.remove(request.id);
    erase_request(request);
}

void BrokerCore::erase_request(Request& request) {
    end_sessions(request);
    if (request.client_kind == ClientKind::kGb && !request.abandoned) {
        forget_client_request(request);
    }
    if (!request.service->registered) services_to_collect_.push_back(request.service->name);
    requests_.erase(request.id);
}

}  // namespace glassbox::broker::detail
