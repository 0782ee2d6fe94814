// The broker's side of GBE01 trace collectors: ATTACH, ACK, HEARTBEAT and DETACH, each ACK checked
// against what was delivered to that collector (docs/protocol.md §6.1).
#include "broker/detail/collector_side.hpp"

#include "broker/detail/broker_state.hpp"
#include "bus/collector_frames.hpp"

namespace glassbox::broker::detail {

void CollectorSide::send_collector_command(std::string_view identity, char command) {
    // In the form of the collector's ATTACH if it is attached, else of the message answered.
    const Collector* collector = state_.feed.find(identity);
    state_.outbox.out_to(identity, collector != nullptr ? collector->packed : state_.in.packed());
    bus::put_collector_command(state_.outbox.sink(), command);
    state_.outbox.send();
}

void CollectorSide::on_collector(std::string_view identity) {
    namespace cmd = proto::collector_cmd;
    const auto command = bus::decode_collector_command(state_.in.views());
    if (!command) {
        state_.drop(identity, command.error().message);
        send_collector_command(identity, cmd::kDetach);
        return;
    }
    const char code = command.value();
    if (!state_.auth.sender_is_collector()) {
        // Only a key with the `collector` role may take or acknowledge the spool's messages.
        state_.auth.refused(
            "collector_refused", identity,
            "key=" + std::string{state_.auth.sender_name()} + " missing_role=collector", false);
        if (code != cmd::kDetach) send_collector_command(identity, cmd::kDetach);
        return;
    }
    if (code == cmd::kAck) {
        on_ack(identity);
        return;
    }
    if (code == cmd::kAttach) {
        const auto window = bus::decode_collector_attach(state_.in.views(), kMaxWindow);
        if (!window) {
            state_.drop(identity, window.error().message);
            send_collector_command(identity, cmd::kDetach);
            return;
        }
        state_.feed.attach(identity, window.value(), state_.in.packed()).expiry =
            state_.now + state_.expiry_span();
        return;
    }
    Collector* collector = state_.feed.find(identity);
    if (collector == nullptr) {
        if (code != cmd::kDetach) send_collector_command(identity, cmd::kDetach);
        return;
    }
    collector->expiry = state_.now + state_.expiry_span();
    if (code == cmd::kHeartbeat) return;
    const bool known = code == cmd::kDetach;
    if (!known)
        state_.drop(identity, "unknown GBE01 command " + std::to_string(static_cast<int>(code)));
    const std::string gone = collector->identity;
    state_.feed.remove(gone, false);
    if (!known) send_collector_command(gone, cmd::kDetach);
}

void CollectorSide::remove_acknowledged(std::uint64_t delivery_id) {
    // A pinned record counts now and is removed once a later record of its session is written.
    bool acknowledged = state_.pins.acknowledge(delivery_id);
    if (!acknowledged) {
        auto removed = state_.spool->ack(delivery_id);
        if (!removed) {
            ++state_.counters.spool_errors;
            state_.log->error("event=spool_ack_failed delivery_id={} error=\"{}\"", delivery_id,
                              removed.error().message);
            return;
        }
        acknowledged = removed.value();
    }
    if (acknowledged) ++state_.counters.acks;
}

void CollectorSide::on_ack(std::string_view identity) {
    // [delivery-id]... (§6.1): applied only from an attached collector, and only for the ids
    // delivered to it and not yet acknowledged. Anything else would let any peer empty the
    // spool, or one collector take what was handed to another.
    const std::size_t named = state_.in.views().size() - bus::kCollectorAckIdFrame;
    Collector* collector = state_.feed.find(identity);
    if (collector == nullptr) {
        state_.counters.acks_refused += named;
        state_.warn_refused("ack_refused", "peer={} ids={} reason=not_attached",
                            printable(identity), named);
        // A collector the broker expired learns that it must ATTACH again.
        send_collector_command(identity, proto::collector_cmd::kDetach);
        return;
    }
    collector->expiry = state_.now + state_.expiry_span();
    std::size_t refused = 0;
    std::string_view first_refused;
    for (std::size_t i = bus::kCollectorAckIdFrame; i < state_.in.views().size(); ++i) {
        const auto id = proto::parse_ascii_int(state_.in.views()[i]);
        if (!state_.feed.acknowledge(*collector, id)) {
            if (refused++ == 0) first_refused = state_.in.views()[i];
            continue;
        }
        remove_acknowledged(*id);
    }
    if (refused > 0) {
        state_.counters.acks_refused += refused;
        state_.warn_refused("ack_refused", "peer={} ids={} first={} reason=not_delivered_to_it",
                            printable(identity), refused, printable(first_refused.substr(0, 24)));
    }
}

}  // namespace glassbox::broker::detail
