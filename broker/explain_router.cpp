// The broker's explain path: EXPLAINs to the spool, the client and the topic, the broker's own
// end of trace, and the reliable feed to GBE01 collectors (docs/protocol.md §5.3, §6).
#include "broker/broker_core.hpp"

#include "bus/client_frames.hpp"
#include "bus/collector_frames.hpp"
#include "bus/frame_io.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"

namespace glassbox::broker::detail {

std::optional<Error> BrokerCore::emit_explain(Request* request, Service& service,
                                              SessionTrack& track, std::uint64_t seq,
                                              std::string_view state, zmq::message_t body,
                                              bool synthesised) {
    const std::string_view session = track.session;
    SpoolRecord record;
    record.service = service.name;
    record.session.assign(session);
    record.seq = seq;
    record.state.assign(state);
    record.body.assign(view(body));
    // While commits fail (a full disk) a worker's message cannot be made durable: it meets
    // the policy as at the bound. The broker's own ends are kept pending, in memory, and
    // written once a commit succeeds, so every trace that exists gets its end (§6.1).
    const bool writable = synthesised || !spool_failing_;
    if (writable && spool_->has_room(record.bytes())) {
        if (auto appended = spool_->append(std::move(record)); appended) {
            pin(session, appended.value(), state == proto::kStateOpen);
            // Forwarded after the batch commits (§2.3).
            hold_publisher_ = true;
            if (request != nullptr) {
                hold_until_commit(*request);
                if (!synthesised) note_batch(*request);
            }
        } else {
            ++counters_.spool_errors;
            log_->error("event=spool_append_failed session={} seq={} error=\"{}\"",
                        printable(session), seq, appended.error().message);
        }
    } else if (config_.spool_policy == SpoolPolicy::kFailRequest && !synthesised) {
        if (spool_failing_) {
            return base::make_error(ErrorType::kSpoolFull,
                                    "explain spool cannot be written: " + spool_error_);
        }
        return base::make_error(ErrorType::kSpoolFull,
                                "explain spool full (" + std::to_string(spool_->messages()) +
                                    " messages, " + std::to_string(spool_->bytes()) + " bytes)");
    } else {
        // drop-newest, or the broker's own end of trace: forwarded even when it cannot be
        // kept, and counted; the trace is marked by the broker's end (close_open_sessions).
        ++counters_.spool_dropped;
        if (!synthesised) ++track.not_spooled;
        log_->warn("event=explain_not_spooled service={} session={} seq={} reason={}", service.name,
                   printable(session), seq, spool_failing_ ? "spool_unwritable" : "spool_full");
    }
    const std::uint64_t tag = request != nullptr ? request->id : 0;
    const Carries carries = synthesised ? Carries::kOther : Carries::kExplain;
    const std::string seq_text = std::to_string(seq);
    if (request != nullptr && request->client_kind == ClientKind::kGb && !request->abandoned) {
        zmq::message_t copy;
        copy.copy(body);
        out_to(request->client, request->packed);
        bus::put_client_partial(sink(), request->request_id, proto::kKindExplain);
        out(std::move(copy));
        send_out(Outlet::kRouter, tag, carries);
    }
    // §6.2: [topic] [session] [seq] [state] [body]
    out(service.topic);
    out(session);
    out(seq_text);
    out(state);
    out(std::move(body));
    send_out(Outlet::kPublisher, tag, carries);
    ++counters_.published;
    return std::nullopt;
}

void BrokerCore::emit_trace_end(Request* request, Service& service, SessionTrack& track,
                                const Error& error) {
    // The contract's explain encoder (schema/json_fast.hpp), as every worker's messages.
    schema::ExplainMessage end;
    end.session = track.session;
    end.seq = track.next_seq;
    end.service = service.name;
    end.end_of_trace = true;
    end.trace_status = schema::TraceStatus::kError;
    end.error = error;
    const std::string text = schema::encode_text(end);
    ++counters_.explains_synthesised;
    (void)emit_explain(request, service, track, track.next_seq, proto::kStateError,
                       zmq::message_t{text.data(), text.size()}, true);
    ++track.next_seq;
    track.ended = true;
    track.not_spooled = 0;
}

void BrokerCore::close_open_sessions(Request& request, const Error* error) {
    for (auto& track : request.sessions) {
        if (!track.ended && error != nullptr) {
            emit_trace_end(&request, *request.service, track, *error);
        } else if (track.not_spooled > 0) {
            emit_trace_end(&request, *request.service, track,
                           base::make_error(ErrorType::kSpoolFull,
                                            std::to_string(track.not_spooled) +
                                                " explain messages of this trace were not "
                                                "spooled (spool policy drop-newest)"));
        }
    }
}

void BrokerCore::note_batch(Request& request) {
    if (request.batch_slot != 0) return;
    batch_requests_.push_back(BatchRequest{request.id,
                                           request.client_kind,
                                           request.packed,
                                           request.client,
                                           request.request_id,
                                           request.service,
                                           {}});
    request.batch_slot = batch_requests_.size();
}

void BrokerCore::keep_batch_sessions(Request& request) {
    if (request.batch_slot == 0) return;
    batch_requests_[request.batch_slot - 1].sessions = std::move(request.sessions);
    request.sessions.clear();
    request.batch_slot = 0;
}

void BrokerCore::commit_spool() {
    auto committed = spool_->commit();
    if (!committed) {
        on_commit_failed(committed.error());
        return;
    }
    if (spool_failing_) {
        spool_failing_ = false;
        log_->info("event=spool_commit_recovered messages={} bytes={}", spool_->messages(),
                   spool_->bytes());
    }
    for (const auto& entry : batch_requests_) {
        if (const auto found = requests_.find(entry.request); found != requests_.end()) {
            found->second->batch_slot = 0;
        }
    }
    batch_requests_.clear();
    // Records superseded by a later record of their session, now written, may go.
    for (const auto id : unpin_after_commit_) {
        const auto found = pinned_ids_.find(id);
        if (found == pinned_ids_.end()) continue;
        const bool acked = found->second;
        pinned_ids_.erase(found);
        if (!acked) continue;
        if (auto removed = spool_->ack(id); !removed) {
            ++counters_.spool_errors;
            log_->error("event=spool_ack_failed delivery_id={} error=\"{}\"", id,
                        removed.error().message);
        }
    }
    unpin_after_commit_.clear();
}

void BrokerCore::pin(std::string_view session, std::uint64_t delivery_id, bool open) {
    const auto found = pinned_.find(session);
    if (found != pinned_.end()) {
        unpin_after_commit_.push_back(found->second);
        if (open) {
            found->second = delivery_id;
        } else {
            pinned_.erase(found);
        }
    } else if (open) {
        pinned_.emplace(std::string{session}, delivery_id);
    }
    if (open) pinned_ids_.emplace(delivery_id, false);
}

void BrokerCore::unpin_session(std::string_view session) {
    const auto found = pinned_.find(session);
    if (found == pinned_.end()) return;
    unpin_after_commit_.push_back(found->second);
    pinned_.erase(found);
}

void BrokerCore::release_pins(const Request& request) {
    // A session its request left without a spooled end (a worker that sent none, an end the
    // full spool could not keep) is not kept pinned for the broker's whole life.
    for (const auto& track : request.sessions) unpin_session(track.session);
}

void BrokerCore::end_sessions(const Request& request) {
    release_pins(request);
    for (const auto& track : request.sessions) retire_session(track.session, request.id);
}

void BrokerCore::retire_session(std::string_view session, std::uint64_t request) {
    const auto owner = session_owners_.find(session);
    if (owner == session_owners_.end() || owner->second.request != request) return;
    owner->second.request = 0;
    keep_ended(owner->first);
}

void BrokerCore::remember_ended(const std::string& session) {
    const auto [owner, inserted] = session_owners_.emplace(session, SessionOwner{0});
    if (inserted) keep_ended(owner->first);
}

void BrokerCore::keep_ended(const std::string& session) {
    ended_sessions_.push_back(&session);
    while (ended_sessions_.size() > config_.ended_sessions_kept) {
        session_owners_.erase(session_owners_.find(*ended_sessions_.front()));
        ended_sessions_.pop_front();
    }
}

base::Result<std::size_t> BrokerCore::close_recovered_sessions() {
    // The last record of each session the spool holds. A session whose last record is
    // `open` lost its request with the previous broker: no worker can end it any more.
    struct Last {
        std::string service;
        std::uint64_t seq = 0;
        bool open = false;
    };
    StringMap<Last> last;
    std::uint64_t after = 0;
    for (;;) {
        auto batch = spool_->read_after(after, 4096);
        if (!batch) return batch.error();
        if (batch.value().empty()) break;
        for (auto& record : batch.value()) {
            after = record.delivery_id;
            const bool open = record.state == proto::kStateOpen;
            const auto [at, inserted] =
                last.try_emplace(record.session, Last{record.service, record.seq, open});
            if (!inserted && record.seq >= at->second.seq) {
                at->second = Last{std::move(record.service), record.seq, open};
            }
        }
    }
    std::size_t closed = 0;
    for (const auto& [session, found] : last) {
        // Their requests went with the previous broker: no worker may write into them (§5.3).
        remember_ended(session);
        if (!found.open) continue;
        schema::ExplainMessage end;
        end.session = session;
        end.seq = found.seq + 1;
        end.service = found.service;
        end.end_of_trace = true;
        end.trace_status = schema::TraceStatus::kError;
        end.error = base::make_error(ErrorType::kBrokerRestarted,
                                     "broker restarted: the trace's request ended with it");
        SpoolRecord record;
        record.service = found.service;
        record.session = session;
        record.seq = end.seq;
        record.state = std::string{proto::kStateError};
        record.body = schema::encode_text(end);
        if (!spool_->has_room(record.bytes())) {
            ++counters_.spool_dropped;
            log_->warn("event=explain_not_spooled service={} session={} seq={} reason=spool_full",
                       found.service, printable(session), end.seq);
            continue;
        }
        if (auto appended = spool_->append(std::move(record)); !appended) return appended.error();
        ++counters_.explains_synthesised;
        ++closed;
    }
    if (auto committed = spool_->commit(); !committed) return committed.error();
    return closed;
}

void BrokerCore::on_commit_failed(const Error& error) {
    if (!spool_failing_) {
        spool_failing_ = true;
        ++counters_.spool_errors;
        log_->error("event=spool_commit_failed pending={} policy={} requests={} error=\"{}\"",
                    spool_->last_id() - spool_->committed_id(), to_string(config_.spool_policy),
                    batch_requests_.size(), error.message);
    }
    spool_error_ = error.message;
    auto batch = std::move(batch_requests_);
    batch_requests_.clear();
    for (const auto& entry : batch) {
        if (const auto found = requests_.find(entry.request); found != requests_.end()) {
            found->second->batch_slot = 0;
        }
    }
    // drop-newest: the batch stays pending and is written when the disk has room again; what
    // arrives meanwhile is counted as dropped (emit_explain).
    if (config_.spool_policy != SpoolPolicy::kFailRequest) return;

    // fail-request: none of these requests' explain messages is durable, so none goes out,
    // and each request ends with SpoolFull, its FINAL too if it was waiting for this commit.
    const Error refused =
        base::make_error(ErrorType::kSpoolFull,
                         "explain messages could not be written to the spool: " + error.message);
    for (auto& entry : batch) {
        bool replaced = false;
        for (auto& deferred : deferred_) {
            if (deferred.request != entry.request) continue;
            if (deferred.carries == Carries::kExplain) {
                deferred.frames.clear();  // transmit() skips it
            } else if (deferred.carries == Carries::kFinal) {
                deferred.frames.clear();  // an ERROR follows the traces' ends, below
                replaced = true;
            }
        }
        const auto found = requests_.find(entry.request);
        if (found != requests_.end() && !found->second->abandoned) {
            // Every trace of the request ends with the error, even one its worker ended: the
            // end it sent was not written either.
            for (auto& track : found->second->sessions) track.ended = false;
            finish(*found->second, refused, true);
        } else if (replaced) {
            count_error(refused.type);
            log_->info(
                "event=request_failed request={} session={} token={} service={} type={} "
                "message=\"{}\"",
                entry.client_kind == ClientKind::kGb ? printable(entry.request_id)
                                                     : std::to_string(entry.request),
                entry.sessions.empty() ? std::string("-")
                                       : printable(entry.sessions.front().session),
                entry.request, entry.service->name, base::to_string(refused.type), refused.message);
            // The request is gone; its client still holds for this commit, so the ends
            // and the ERROR queue up behind what it already waits for, in order.
            Request ended;
            ended.id = entry.request;
            ended.client_kind = entry.client_kind;
            ended.packed = entry.packed;
            ended.client = entry.client;
            ended.request_id = entry.request_id;
            ended.service = entry.service;
            for (auto track : entry.sessions)
                emit_trace_end(&ended, *entry.service, track, refused);
            write_error(entry.client_kind, entry.client, entry.service->name, entry.request_id,
                        refused, entry.packed);
            send_out();
        }
    }
}

void BrokerCore::send_collector_command(std::string_view identity, char command) {
    out_to(identity, false);
    bus::put_collector_command(sink(), command);
    send_out();
}

void BrokerCore::on_collector(std::string_view identity) {
    namespace cmd = proto::collector_cmd;
    const auto command = bus::decode_collector_command(views_);
    if (!command) {
        drop(identity, command.error().message);
        send_collector_command(identity, cmd::kDetach);
        return;
    }
    const char code = command.value();
    if (!sender_is_collector()) {
        // Only a key with the `collector` role may take or acknowledge the spool's messages.
        refused("collector_refused", identity,
                "key=" + std::string{sender_name()} + " missing_role=collector", false);
        if (code != cmd::kDetach) send_collector_command(identity, cmd::kDetach);
        return;
    }
    if (code == cmd::kAck) {
        on_ack(identity);
        return;
    }
    if (code == cmd::kAttach) {
        const auto window = bus::decode_collector_attach(views_, kMaxWindow);
        if (!window) {
            drop(identity, window.error().message);
            send_collector_command(identity, cmd::kDetach);
            return;
        }
        auto found = collectors_.find(identity);
        if (found == collectors_.end()) {
            auto collector = std::make_unique<Collector>();
            collector->identity.assign(identity);
            collector->last_sent = now_;
            found = collectors_.emplace(collector->identity, std::move(collector)).first;
            collector_order_.push_back(found->first);
            log_->info("event=collector_attached peer={} window={} pending={}", printable(identity),
                       window.value(), spool_->messages());
        }
        found->second->window = window.value();
        found->second->expiry = now_ + expiry_span();
        return;
    }
    const auto found = collectors_.find(identity);
    if (found == collectors_.end()) {
        if (code != cmd::kDetach) send_collector_command(identity, cmd::kDetach);
        return;
    }
    found->second->expiry = now_ + expiry_span();
    if (code == cmd::kHeartbeat) return;
    if (code == cmd::kDetach) {
        remove_collector(found->first, false);
        return;
    }
    drop(identity, "unknown GBE01 command " + std::to_string(static_cast<int>(code)));
    const std::string gone = found->first;
    remove_collector(gone, false);
    send_collector_command(gone, cmd::kDetach);
}

void BrokerCore::on_ack(std::string_view identity) {
    // [delivery-id]... (§6.1): applied only from an attached collector, and only for the ids
    // delivered to it and not yet acknowledged. Anything else would let any peer empty the
    // spool, or one collector take what was handed to another.
    const std::size_t named = views_.size() - bus::kCollectorAckIdFrame;
    const auto found = collectors_.find(identity);
    if (found == collectors_.end()) {
        counters_.acks_refused += named;
        warn_refused("ack_refused", "peer={} ids={} reason=not_attached", printable(identity),
                     named);
        // A collector the broker expired learns that it must ATTACH again.
        send_collector_command(identity, proto::collector_cmd::kDetach);
        return;
    }
    Collector& collector = *found->second;
    collector.expiry = now_ + expiry_span();
    std::size_t refused = 0;
    std::string_view first_refused;
    for (std::size_t i = bus::kCollectorAckIdFrame; i < views_.size(); ++i) {
        const auto id = proto::parse_ascii_int(views_[i]);
        const auto held = id ? collector.in_flight.find(*id) : collector.in_flight.end();
        if (held == collector.in_flight.end()) {
            if (refused++ == 0) first_refused = views_[i];
            continue;
        }
        SessionRoute& route = *held->second;
        collector.in_flight.erase(held);
        if (!collector.backlog.empty()) backlog_ready_ = true;
        settle(route);
        if (const auto pinned = pinned_ids_.find(*id); pinned != pinned_ids_.end()) {
            pinned->second = true;  // removed once a later record of its session is written
            ++counters_.acks;
        } else if (auto removed = spool_->ack(*id); !removed) {
            ++counters_.spool_errors;
            log_->error("event=spool_ack_failed delivery_id={} error=\"{}\"", *id,
                        removed.error().message);
        } else if (removed.value()) {
            ++counters_.acks;
        }
    }
    if (refused > 0) {
        counters_.acks_refused += refused;
        warn_refused("ack_refused", "peer={} ids={} first={} reason=not_delivered_to_it",
                     printable(identity), refused, printable(first_refused.substr(0, 24)));
    }
}

void BrokerCore::remove_collector(const std::string& identity, bool expired) {
    const auto found = collectors_.find(identity);
    if (found == collectors_.end()) return;
    Collector& collector = *found->second;
    log_->info("event=collector_removed peer={} reason={} returned={} waiting={}",
               printable(identity), expired ? "expired" : "detached", collector.in_flight.size(),
               collector.backlog.size());
    // Its unacknowledged and waiting records are pending again; their sessions find a new
    // collector with the first of them, and keep it (§6.1).
    for (const auto& [id, route] : collector.in_flight) redeliver_.insert(id);
    for (const auto& [id, route] : collector.backlog) redeliver_.insert(id);
    backlog_size_ -= collector.backlog.size();
    forget_routes(collector);
    collector_order_.erase(std::remove(collector_order_.begin(), collector_order_.end(), identity),
                           collector_order_.end());
    collectors_.erase(found);
}

void BrokerCore::pump_deliveries() {
    backlog_ready_ = false;
    // Records waiting for their session's collector go first, as its window allows.
    if (backlog_size_ > 0) {
        for (const auto& identity : collector_order_) {
            Collector& collector = *collectors_.find(identity)->second;
            while (!collector.backlog.empty() && collector.in_flight.size() < collector.window) {
                const auto [id, route] = collector.backlog.front();
                auto record = spool_->read(id);
                if (!record) {
                    ++counters_.spool_errors;
                    log_->error("event=spool_read_failed error=\"{}\"", record.error().message);
                    break;
                }
                collector.backlog.pop_front();
                --backlog_size_;
                if (!record.value()) {  // gone from the spool (cannot happen: never delivered)
                    settle(*route);
                    continue;
                }
                deliver(collector, std::move(*record.value()), *route);
            }
        }
    }
    // Room for new records: the windows' free slots not spoken for by a backlog.
    std::uint64_t capacity = 0;
    for (const auto& [identity, collector] : collectors_) {
        const std::uint64_t taken = collector->in_flight.size() + collector->backlog.size();
        if (taken < collector->window) capacity += collector->window - taken;
    }
    if (capacity == 0) return;
    std::vector<SpoolRecord> batch;
    while (batch.size() < capacity && !redeliver_.empty()) {
        const std::uint64_t id = *redeliver_.begin();
        redeliver_.erase(redeliver_.begin());
        auto record = spool_->read(id);
        if (!record) {
            ++counters_.spool_errors;
            log_->error("event=spool_read_failed error=\"{}\"", record.error().message);
            break;
        }
        if (record.value()) {
            ++counters_.redeliveries;
            batch.push_back(std::move(*record.value()));
        }
    }
    if (batch.size() < capacity && delivery_cursor_ < spool_->last_id()) {
        const std::size_t wanted = static_cast<std::size_t>(capacity - batch.size());
        auto taken = spool_->take_after(delivery_cursor_, wanted);  // moved out of the cache
        if (!taken) {
            ++counters_.spool_errors;
            log_->error("event=spool_read_failed error=\"{}\"", taken.error().message);
        } else {
            delivery_cursor_ = taken.value().through;
            for (auto& record : taken.value().records) batch.push_back(std::move(record));
        }
    }
    for (auto& record : batch) {
        SessionRoute& route = route_for(record.session);
        Collector& collector = *route.collector;
        ++route.outstanding;
        if (record.state != proto::kStateOpen) route.ended = true;
        if (collector.in_flight.size() < collector.window) {
            deliver(collector, std::move(record), route);
            continue;
        }
        // Its session's collector has no room: the record waits for it (read again then).
        collector.backlog.emplace_back(record.delivery_id, &route);
        ++backlog_size_;
    }
}

SessionRoute& BrokerCore::route_for(const std::string& session) {
    if (const auto found = routes_.find(session); found != routes_.end()) return found->second;
    // A new session goes to the next collector in turn with room to spare (any, if none has).
    Collector* chosen = nullptr;
    for (std::size_t tried = 0; tried < collector_order_.size() && chosen == nullptr; ++tried) {
        Collector& candidate =
            *collectors_.find(collector_order_[collector_turn_ % collector_order_.size()])->second;
        collector_turn_ = (collector_turn_ + 1) % collector_order_.size();
        if (candidate.in_flight.size() + candidate.backlog.size() < candidate.window) {
            chosen = &candidate;
        }
    }
    if (chosen == nullptr) {
        chosen = collectors_.find(collector_order_[collector_turn_ % collector_order_.size()])
                     ->second.get();
    }
    // Routes of open sessions with nothing at their collector stay for their next record; if
    // such routes pile up (traces whose end never came), the idle ones are dropped now and then.
    if (routes_.size() >= std::max<std::size_t>(65'536, 2 * routes_swept_at_)) {
        std::erase_if(routes_, [](const auto& entry) { return entry.second.outstanding == 0; });
        routes_swept_at_ = routes_.size();
    }
    const auto made = routes_.emplace(session, SessionRoute{}).first;
    made->second.session = &made->first;
    made->second.collector = chosen;
    return made->second;
}

void BrokerCore::deliver(Collector& collector, SpoolRecord record, SessionRoute& route) {
    // [empty] ["GBE01"] [0x02] [delivery-id] [service] [session] [seq] [state] [body]
    out_to(collector.identity, false);
    bus::put_collector_deliver(sink(), record.delivery_id, record.service, record.session,
                               record.seq, record.state);
    out(bus::message_of(std::move(record.body)));  // the frame takes the body's buffer
    collector.in_flight.emplace(record.delivery_id, &route);
    collector.last_sent = now_;
    ++counters_.deliveries;
    send_out();
}

void BrokerCore::settle(SessionRoute& route) {
    if (route.outstanding > 0) --route.outstanding;
    if (route.outstanding > 0 || !route.ended) return;
    // The session's end is acknowledged: its route is no longer needed.
    routes_.erase(routes_.find(*route.session));
}

void BrokerCore::forget_routes(const Collector& collector) {
    std::erase_if(routes_,
                  [&collector](const auto& entry) { return entry.second.collector == &collector; });
}

}  // namespace glassbox::broker::detail
