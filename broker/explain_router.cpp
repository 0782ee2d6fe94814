// The broker's explain path: EXPLAINs to the spool, the client and the topic, the broker's own
// end of trace, the spool's commits, and GBE01 collectors' messages (docs/protocol.md §5.3, §6).
#include "broker/detail/broker_core.hpp"

#include <tuple>

#include "bus/collector_frames.hpp"
#include "bus/detail/client_frames.hpp"
#include "bus/detail/frame_io.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"

namespace glassbox::broker::detail {

std::optional<Error> BrokerCore::spool_explain(Request* request, const Service& service,
                                               SessionTrack& track, std::uint64_t seq,
                                               std::string_view state, const zmq::message_t& body,
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
            pins_.pin(session, appended.value(), state == proto::kStateOpen);
            // Forwarded after the batch commits (§2.3).
            outbox_.hold_publisher();
            if (request != nullptr) {
                // A 7/MDP client gets no explains, but its reply waits too: a commit that
                // fails under fail-request turns it into an error.
                if (!request->abandoned) outbox_.hold_peer(request->client);
                if (!synthesised) batch_.note(*request);
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
    return std::nullopt;
}

std::optional<Error> BrokerCore::emit_explain(Request* request, Service& service,
                                              SessionTrack& track, std::uint64_t seq,
                                              std::string_view state, zmq::message_t body,
                                              bool synthesised) {
    if (auto refused = spool_explain(request, service, track, seq, state, body, synthesised)) {
        return refused;
    }
    const std::string_view session = track.session;
    const std::uint64_t tag = request != nullptr ? request->id : 0;
    const Carries carries = synthesised ? Carries::kOther : Carries::kExplain;
    const std::string seq_text = std::to_string(seq);
    if (request != nullptr && request->client_kind == ClientKind::kGb && !request->abandoned) {
        zmq::message_t copy;
        copy.copy(body);
        outbox_.out_to(request->client, request->packed);
        bus::put_client_partial(outbox_.sink(), request->request_id, proto::kKindExplain);
        outbox_.out(std::move(copy));
        outbox_.send(Outlet::kRouter, tag, carries);
    }
    // §6.2: [topic] [session] [seq] [state] [body]
    outbox_.out(service.topic);
    outbox_.out(session);
    outbox_.out(seq_text);
    outbox_.out(state);
    outbox_.out(std::move(body));
    outbox_.send(Outlet::kPublisher, tag, carries);
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
    (void)batch_.take(requests_);  // written: its requests no longer wait for it
    // Records superseded by a later record of their session, now written, may go.
    for (const auto id : pins_.take_released()) {
        if (auto removed = spool_->ack(id); !removed) {
            ++counters_.spool_errors;
            log_->error("event=spool_ack_failed delivery_id={} error=\"{}\"", id,
                        removed.error().message);
        }
    }
}

void BrokerCore::release_pins(const Request& request) {
    // A session its request left without a spooled end (a worker that sent none, an end the
    // full spool could not keep) is not kept pinned for the broker's whole life.
    for (const auto& track : request.sessions) pins_.unpin(track.session);
}

void BrokerCore::end_sessions(const Request& request) {
    release_pins(request);
    for (const auto& track : request.sessions) session_owners_.retire(track.session, request.id);
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
        session_owners_.remember_ended(session);
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
                    batch_.size(), error.message);
    }
    spool_error_ = error.message;
    const auto batch = batch_.take(requests_);
    // drop-newest: the batch stays pending and is written when the disk has room again; what
    // arrives meanwhile is counted as dropped (emit_explain).
    if (config_.spool_policy != SpoolPolicy::kFailRequest) return;

    // fail-request: none of these requests' explain messages is durable, so none goes out,
    // and each request ends with SpoolFull, its FINAL too if it was waiting for this commit.
    const Error refused =
        base::make_error(ErrorType::kSpoolFull,
                         "explain messages could not be written to the spool: " + error.message);
    for (auto& entry : batch) {
        const bool replaced = outbox_.withhold(entry.request);  // an ERROR follows, below
        Request* request = requests_.find(entry.request);
        if (request != nullptr && !request->abandoned) {
            // Every trace of the request ends with the error, even one its worker ended: the
            // end it sent was not written either.
            for (auto& track : request->sessions) track.ended = false;
            finish(*request, refused, true);
        } else if (replaced) {
            fail_ended_request(entry, refused);
        }
    }
}

void BrokerCore::fail_ended_request(const BatchRequest& entry, const Error& refused) {
    count_error(refused.type);
    log_request_failed(entry.client_kind, entry.request_id, entry.request, entry.sessions,
                       entry.service->name, refused);
    // The request is gone; its client still holds for this commit, so the ends and the ERROR
    // queue up behind what it already waits for, in order.
    Request ended;
    std::tie(ended.id, ended.client_kind, ended.packed, ended.client, ended.request_id,
             ended.service) = std::tie(entry.request, entry.client_kind, entry.packed, entry.client,
                                       entry.request_id, entry.service);
    for (auto track : entry.sessions) emit_trace_end(&ended, *entry.service, track, refused);
    write_error(entry.client_kind, entry.client, entry.service->name, entry.request_id, refused,
                entry.packed);
    outbox_.send();
}

void BrokerCore::send_collector_command(std::string_view identity, char command) {
    outbox_.out_to(identity, false);
    bus::put_collector_command(outbox_.sink(), command);
    outbox_.send();
}

void BrokerCore::on_collector(std::string_view identity) {
    namespace cmd = proto::collector_cmd;
    const auto command = bus::decode_collector_command(in_.views());
    if (!command) {
        drop(identity, command.error().message);
        send_collector_command(identity, cmd::kDetach);
        return;
    }
    const char code = command.value();
    if (!auth_.sender_is_collector()) {
        // Only a key with the `collector` role may take or acknowledge the spool's messages.
        auth_.refused("collector_refused", identity,
                      "key=" + std::string{auth_.sender_name()} + " missing_role=collector", false);
        if (code != cmd::kDetach) send_collector_command(identity, cmd::kDetach);
        return;
    }
    if (code == cmd::kAck) {
        on_ack(identity);
        return;
    }
    if (code == cmd::kAttach) {
        const auto window = bus::decode_collector_attach(in_.views(), kMaxWindow);
        if (!window) {
            drop(identity, window.error().message);
            send_collector_command(identity, cmd::kDetach);
            return;
        }
        feed_.attach(identity, window.value()).expiry = now_ + expiry_span();
        return;
    }
    Collector* collector = feed_.find(identity);
    if (collector == nullptr) {
        if (code != cmd::kDetach) send_collector_command(identity, cmd::kDetach);
        return;
    }
    collector->expiry = now_ + expiry_span();
    if (code == cmd::kHeartbeat) return;
    const bool known = code == cmd::kDetach;
    if (!known) drop(identity, "unknown GBE01 command " + std::to_string(static_cast<int>(code)));
    const std::string gone = collector->identity;
    feed_.remove(gone, false);
    if (!known) send_collector_command(gone, cmd::kDetach);
}

void BrokerCore::remove_acknowledged(std::uint64_t delivery_id) {
    if (pins_.acknowledge(delivery_id)) {  // removed once a later record of its session is written
        ++counters_.acks;
    } else if (auto removed = spool_->ack(delivery_id); !removed) {
        ++counters_.spool_errors;
        log_->error("event=spool_ack_failed delivery_id={} error=\"{}\"", delivery_id,
                    removed.error().message);
    } else if (removed.value()) {
        ++counters_.acks;
    }
}

void BrokerCore::on_ack(std::string_view identity) {
    // [delivery-id]... (§6.1): applied only from an attached collector, and only for the ids
    // delivered to it and not yet acknowledged. Anything else would let any peer empty the
    // spool, or one collector take what was handed to another.
    const std::size_t named = in_.views().size() - bus::kCollectorAckIdFrame;
    Collector* collector = feed_.find(identity);
    if (collector == nullptr) {
        counters_.acks_refused += named;
        warn_refused("ack_refused", "peer={} ids={} reason=not_attached", printable(identity),
                     named);
        // A collector the broker expired learns that it must ATTACH again.
        send_collector_command(identity, proto::collector_cmd::kDetach);
        return;
    }
    collector->expiry = now_ + expiry_span();
    std::size_t refused = 0;
    std::string_view first_refused;
    for (std::size_t i = bus::kCollectorAckIdFrame; i < in_.views().size(); ++i) {
        const auto id = proto::parse_ascii_int(in_.views()[i]);
        if (!feed_.acknowledge(*collector, id)) {
            if (refused++ == 0) first_refused = in_.views()[i];
            continue;
        }
        remove_acknowledged(*id);
    }
    if (refused > 0) {
        counters_.acks_refused += refused;
        warn_refused("ack_refused", "peer={} ids={} first={} reason=not_delivered_to_it",
                     printable(identity), refused, printable(first_refused.substr(0, 24)));
    }
}

}  // namespace glassbox::broker::detail
