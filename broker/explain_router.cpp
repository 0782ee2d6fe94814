// The broker's explain path: EXPLAINs to the spool, the client and the topic, the broker's own
// end of trace, and the reliable feed to GBE01 collectors (docs/protocol.md §5.3, §6).
#include "broker/broker_core.hpp"

#include "bus/client_frames.hpp"
#include "bus/collector_frames.hpp"
#include "bus/frame_io.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"

namespace glassbox::broker::detail {

std::optional<Error> BrokerCore::emit_explain(Request& request, std::string_view session,
                                              std::uint64_t seq, std::string_view state,
                                              zmq::message_t body, bool synthesised) {
    Service& service = *request.service;
    SpoolRecord record;
    record.service = service.name;
    record.session.assign(session);
    record.seq = seq;
    record.state.assign(state);
    record.body.assign(view(body));
    if (spool_->has_room(record.bytes())) {
        if (auto appended = spool_->append(std::move(record)); appended) {
            hold_until_commit(request);  // forwarded after the batch commits (§2.3)
        } else {
            ++counters_.spool_errors;
            log_->error("event=spool_append_failed session={} seq={} error=\"{}\"",
                        printable(session), seq, appended.error().message);
        }
    } else if (config_.spool_policy == SpoolPolicy::kFailRequest && !synthesised) {
        return base::make_error(ErrorType::kSpoolFull,
                                  "explain spool full (" + std::to_string(spool_->messages()) +
                                      " messages, " + std::to_string(spool_->bytes()) +
                                      " bytes)");
    } else {
        // drop-newest, or the broker's own end of trace: forwarded even when it cannot be kept.
        ++counters_.spool_dropped;
        log_->warn("event=explain_not_spooled service={} session={} seq={} reason=spool_full",
                   service.name, printable(session), seq);
    }
    const std::string seq_text = std::to_string(seq);
    if (request.client_kind == ClientKind::kGb && !request.abandoned) {
        zmq::message_t copy;
        copy.copy(body);
        out(request.client);
        bus::put_client_partial(sink(), request.request_id, proto::kKindExplain);
        out(std::move(copy));
        send_out();
    }
    // §6.2: [topic] [session] [seq] [state] [body]
    out(service.topic);
    out(session);
    out(seq_text);
    out(state);
    out(std::move(body));
    send_out(Outlet::kPublisher);
    ++counters_.published;
    return std::nullopt;
}

void BrokerCore::close_open_sessions(Request& request, const Error& error) {
    for (auto& track : request.sessions) {
        if (track.ended) continue;
        track.ended = true;
        // The contract's explain encoder (schema/json_fast.hpp), as every worker's messages.
        schema::ExplainMessage end;
        end.session = track.session;
        end.seq = track.next_seq;
        end.service = request.service->name;
        end.end_of_trace = true;
        end.trace_status = schema::TraceStatus::kError;
        end.error = error;
        const std::string text = schema::encode_text(end);
        ++counters_.explains_synthesised;
        (void)emit_explain(request, track.session, track.next_seq, proto::kStateError,
                           zmq::message_t{text.data(), text.size()}, true);
        ++track.next_seq;
    }
}

void BrokerCore::send_collector_command(std::string_view identity, char command) {
    out(identity);
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
    if (code == cmd::kAck) {
        // [delivery-id]...; applied whether or not the sender is attached (§6.1).
        for (std::size_t i = bus::kCollectorAckIdFrame; i < views_.size(); ++i) {
            const auto id = proto::parse_ascii_int(views_[i]);
            if (!id) continue;
            if (auto removed = spool_->ack(*id); !removed) {
                ++counters_.spool_errors;
                log_->error("event=spool_ack_failed delivery_id={} error=\"{}\"", *id,
                            removed.error().message);
            } else if (removed.value()) {
                ++counters_.acks;
            }
            if (const auto owner = delivery_owner_.find(*id); owner != delivery_owner_.end()) {
                owner->second->in_flight.erase(*id);
                delivery_owner_.erase(owner);
            }
            redeliver_.erase(*id);
        }
        if (const auto found = collectors_.find(identity); found != collectors_.end()) {
            found->second->expiry = now_ + expiry_span();
        }
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
            log_->info("event=collector_attached peer={} window={} pending={}",
                       printable(identity), window.value(), spool_->messages());
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

void BrokerCore::remove_collector(const std::string& identity, bool expired) {
    const auto found = collectors_.find(identity);
    if (found == collectors_.end()) return;
    Collector& collector = *found->second;
    log_->info("event=collector_removed peer={} reason={} returned={}", printable(identity),
               expired ? "expired" : "detached", collector.in_flight.size());
    for (const auto id : collector.in_flight) {
        delivery_owner_.erase(id);
        redeliver_.insert(id);
    }
    collector_order_.erase(
        std::remove(collector_order_.begin(), collector_order_.end(), identity),
        collector_order_.end());
    collectors_.erase(found);
}

void BrokerCore::pump_deliveries() {
    std::uint64_t capacity = 0;
    for (const auto& [identity, collector] : collectors_) {
        if (collector->in_flight.size() < collector->window) {
            capacity += collector->window - collector->in_flight.size();
        }
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
    std::size_t turn = collector_turn_;
    for (auto& record : batch) {
        Collector* target = nullptr;
        for (std::size_t tried = 0; tried < collector_order_.size(); ++tried) {
            const auto& identity = collector_order_[turn++ % collector_order_.size()];
            Collector& candidate = *collectors_.find(identity)->second;
            if (candidate.in_flight.size() < candidate.window) {
                target = &candidate;
                break;
            }
        }
        if (target == nullptr) {  // cannot happen: capacity was counted above
            redeliver_.insert(record.delivery_id);
            continue;
        }
        // [empty] ["GBE01"] [0x02] [delivery-id] [service] [session] [seq] [state] [body]
        out(target->identity);
        bus::put_collector_deliver(sink(), record.delivery_id, record.service, record.session,
                                   record.seq, record.state);
        out(bus::message_of(std::move(record.body)));  // the frame takes the body's buffer
        target->in_flight.insert(record.delivery_id);
        delivery_owner_[record.delivery_id] = target;
        target->last_sent = now_;
        ++counters_.deliveries;
        send_out();
    }
    collector_turn_ = collector_order_.empty() ? 0 : turn % collector_order_.size();
}

}  // namespace glassbox::broker::detail
