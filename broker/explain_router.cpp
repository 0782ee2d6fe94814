// The broker's explain path (ExplainRouter): EXPLAINs to the spool, the client and the topic, the
// broker's own end of trace, the spool's commits, and the traces a restart finds open
// (docs/protocol.md §5.3, §6).
#include "broker/detail/explain_router.hpp"

#include <tuple>

#include "broker/detail/broker_state.hpp"
#include "broker/detail/client_side.hpp"
#include "bus/detail/client_frames.hpp"
#include "bus/detail/frame_io.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"

namespace glassbox::broker::detail {

std::optional<Error> ExplainRouter::spool_explain(Request* request, const Service& service,
                                                  SessionTrack& track, std::uint64_t seq,
                                                  std::string_view state,
                                                  const zmq::message_t& body, bool synthesised) {
    const std::string_view session = track.session;
    SpoolRecord record;
    record.service = service.name;
    record.session.assign(session);
    record.seq = seq;
    record.state.assign(state);
    record.body = SpoolBody{body};  // shared with the frames that forward it, not copied
    // While commits fail (a full disk) a worker's message cannot be made durable: it meets
    // the policy as at the bound. The broker's own ends are kept pending, in memory, and
    // written once a commit succeeds, so every trace that exists gets its end (§6.1).
    const bool writable = synthesised || !spool_failing_;
    if (writable && state_.spool->has_room(record.bytes())) {
        if (auto appended = state_.spool->append(std::move(record)); appended) {
            state_.pins.pin(session, appended.value(), state == proto::kStateOpen);
            // Forwarded after the batch commits (§2.3).
            state_.outbox.hold_publisher();
            if (request != nullptr) {
                // A client that gets no explains (7/MDP, GBC01 with explain=none) has its
                // partials and reply wait too: they keep their order with the explains (§5.3),
                // and a commit that fails under fail-request turns the reply into an error.
                if (!request->abandoned) state_.outbox.hold_peer(request->client);
                if (!synthesised) state_.batch.note(*request);
            }
        } else {
            ++state_.counters.spool_errors;
            state_.log->error("event=spool_append_failed session={} seq={} error=\"{}\"",
                              printable(session), seq, appended.error().message);
        }
    } else if (state_.config.spool_policy == SpoolPolicy::kFailRequest && !synthesised) {
        if (spool_failing_) {
            return base::make_error(ErrorType::kSpoolFull,
                                    "explain spool cannot be written: " + spool_error_);
        }
        return base::make_error(ErrorType::kSpoolFull,
                                "explain spool full (" + std::to_string(state_.spool->messages()) +
                                    " messages, " + std::to_string(state_.spool->bytes()) +
                                    " bytes)");
    } else {
        // drop-newest, or the broker's own end of trace: forwarded even when it cannot be
        // kept, and counted; the trace is marked by the broker's end (close_open_sessions).
        ++state_.counters.spool_dropped;
        if (!synthesised) ++track.not_spooled;
        state_.log->warn("event=explain_not_spooled service={} session={} seq={} reason={}",
                         service.name, printable(session), seq,
                         spool_failing_ ? "spool_unwritable" : "spool_full");
    }
    return std::nullopt;
}

std::optional<Error> ExplainRouter::emit_explain(Request* request, Service& service,
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
    // To the client only if it takes explain messages (GBC01, not explain=none, §4.1): the
    // spool above and the topic below get every one all the same.
    if (request != nullptr && request->explain_partials && !request->abandoned) {
        zmq::message_t copy;
        copy.copy(body);
        state_.outbox.out_to(request->client, request->packed);
        bus::put_client_partial(state_.outbox.sink(), request->request_id, proto::kKindExplain);
        state_.outbox.out(std::move(copy));
        state_.outbox.send(Outlet::kRouter, tag, carries);
    }
    // §6.2: [topic] [session] [seq] [state] [body]
    state_.outbox.out(service.topic);
    state_.outbox.out(session);
    state_.outbox.out(seq_text);
    state_.outbox.out(state);
    state_.outbox.out(std::move(body));
    state_.outbox.send(Outlet::kPublisher, tag, carries);
    ++state_.counters.published;
    return std::nullopt;
}

void ExplainRouter::emit_trace_end(Request* request, Service& service, SessionTrack& track,
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
    ++state_.counters.explains_synthesised;
    (void)emit_explain(request, service, track, track.next_seq, proto::kStateError,
                       zmq::message_t{text.data(), text.size()}, true);
    ++track.next_seq;
    track.ended = true;
    track.not_spooled = 0;
}

void ExplainRouter::close_open_sessions(Request& request, const Error* error) {
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

void ExplainRouter::commit_spool() {
    auto committed = state_.spool->commit();
    if (!committed) {
        on_commit_failed(committed.error());
        return;
    }
    if (spool_failing_) {
        spool_failing_ = false;
        state_.log->info("event=spool_commit_recovered messages={} bytes={}",
                         state_.spool->messages(), state_.spool->bytes());
    }
    (void)state_.batch.take(state_.requests);  // written: its requests no longer wait for it
    // Records superseded by a later record of their session, now written, may go.
    for (const auto id : state_.pins.take_released()) {
        if (auto removed = state_.spool->ack(id); !removed) {
            ++state_.counters.spool_errors;
            state_.log->error("event=spool_ack_failed delivery_id={} error=\"{}\"", id,
                              removed.error().message);
        }
    }
}

void ExplainRouter::release_pins(const Request& request) {
    // A session its request left without a spooled end (a worker that sent none, an end the
    // full spool could not keep) is not kept pinned for the broker's whole life.
    for (const auto& track : request.sessions) state_.pins.unpin(track.session);
}

void ExplainRouter::end_sessions(const Request& request) {
    release_pins(request);
    for (const auto& track : request.sessions)
        state_.session_owners.retire(track.session, request.id);
}

base::Result<std::size_t> ExplainRouter::close_recovered_sessions() {
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
        auto batch = state_.spool->read_after(after, 4096);
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
        state_.session_owners.remember_ended(session);
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
        if (!state_.spool->has_room(record.bytes())) {
            ++state_.counters.spool_dropped;
            state_.log->warn(
                "event=explain_not_spooled service={} session={} seq={} reason=spool_full",
                found.service, printable(session), end.seq);
            continue;
        }
        if (auto appended = state_.spool->append(std::move(record)); !appended)
            return appended.error();
        ++state_.counters.explains_synthesised;
        ++closed;
    }
    if (auto committed = state_.spool->commit(); !committed) return committed.error();
    return closed;
}

void ExplainRouter::on_commit_failed(const Error& error) {
    if (!spool_failing_) {
        spool_failing_ = true;
        ++state_.counters.spool_errors;
        state_.log->error("event=spool_commit_failed pending={} policy={} requests={} error=\"{}\"",
                          state_.spool->last_id() - state_.spool->committed_id(),
                          to_string(state_.config.spool_policy), state_.batch.size(),
                          error.message);
    }
    spool_error_ = error.message;
    const auto batch = state_.batch.take(state_.requests);
    // drop-newest: the batch stays pending and is written when the disk has room again; what
    // arrives meanwhile is counted as dropped (emit_explain).
    if (state_.config.spool_policy != SpoolPolicy::kFailRequest) return;

    // fail-request: none of these requests' explain messages is durable, so none goes out,
    // and each request ends with SpoolFull, its FINAL too if it was waiting for this commit.
    const Error refused =
        base::make_error(ErrorType::kSpoolFull,
                         "explain messages could not be written to the spool: " + error.message);
    for (auto& entry : batch) {
        const bool replaced = state_.outbox.withhold(entry.request);  // an ERROR follows, below
        Request* request = state_.requests.find(entry.request);
        if (request != nullptr && !request->abandoned) {
            // Every trace of the request ends with the error, even one its worker ended: the
            // end it sent was not written either.
            for (auto& track : request->sessions) track.ended = false;
            clients_.finish(*request, refused, true);
        } else if (replaced) {
            fail_ended_request(entry, refused);
        }
    }
}

void ExplainRouter::fail_ended_request(const BatchRequest& entry, const Error& refused) {
    state_.count_error(refused.type);
    clients_.log_request_failed(entry.client_kind, entry.request_id, entry.request, entry.sessions,
                                entry.service->name, refused);
    // The request is gone; its client still holds for this commit, so the ends and the ERROR
    // queue up behind what it already waits for, in order.
    Request ended;
    std::tie(ended.id, ended.client_kind, ended.packed, ended.explain_partials, ended.client,
             ended.request_id, ended.service) =
        std::tie(entry.request, entry.client_kind, entry.packed, entry.explain_partials,
                 entry.client, entry.request_id, entry.service);
    for (auto track : entry.sessions) emit_trace_end(&ended, *entry.service, track, refused);
    clients_.write_error(entry.client_kind, entry.client, entry.service->name, entry.request_id,
                         refused, entry.packed);
    state_.outbox.send();
}

}  // namespace glassbox::broker::detail
