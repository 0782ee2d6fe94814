// The trace collectors' frames, GBE01 (docs/protocol.md §6.1): every layout written and read
// here once, for the broker and the trace collector alike. Decoders take a message from its
// empty delimiter on; encoders write through a sink (bus/frame_codec.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "bus/frame_codec.hpp"
#include "schema/protocol.hpp"

namespace glassbox::bus {

// [empty] ["GBE01"] [command]: HEARTBEAT and DETACH, and the head of the others.
template <typename Sink>
void put_collector_command(Sink&& sink, char command) {
    put_command_head(sink, schema::protocol::kGbCollector, command);
}

// ATTACH [window].
template <typename Sink>
void put_collector_attach(Sink&& sink, std::uint64_t window) {
    put_collector_command(sink, schema::protocol::collector_cmd::kAttach);
    sink(std::to_string(window));
}

// ACK [delivery-id]... (§1.1: at most 64 frames, 3 of them the head).
template <typename Sink, typename Ids>
void put_collector_ack(Sink&& sink, const Ids& delivery_ids) {
    put_collector_command(sink, schema::protocol::collector_cmd::kAck);
    for (const std::uint64_t id : delivery_ids) sink(std::to_string(id));
}

// DELIVER [delivery-id] [service] [session] [seq] [state]; the body follows.
template <typename Sink>
void put_collector_deliver(Sink&& sink, std::uint64_t delivery_id, std::string_view service,
                           std::string_view session, std::uint64_t seq, std::string_view state) {
    put_collector_command(sink, schema::protocol::collector_cmd::kDeliver);
    sink(std::to_string(delivery_id));
    sink(service);
    sink(session);
    sink(std::to_string(seq));
    sink(state);
}

// The command byte of [empty] ["GBE01"] [command] ...
base::Result<char> decode_collector_command(const FrameViews& frames);

// ATTACH [window]: an ascii-int in 1-max_window.
base::Result<std::uint64_t> decode_collector_attach(const FrameViews& frames,
                                                    std::uint64_t max_window);

// ACK's ids start at frame 3; each is an ascii-int (others are skipped by the reader).
inline constexpr std::size_t kCollectorAckIdFrame = 3;

struct CollectorDelivery {
    std::uint64_t delivery_id = 0;
    std::string_view service;
    std::string_view session;
    std::string_view seq;  // as sent: the collector validates and quarantines it itself
    std::string_view state;
    std::string_view body;
};
// The delivery id of a DELIVER, readable even when the rest is malformed (so it can be
// acknowledged into quarantine), or nullopt.
std::optional<std::uint64_t> collector_delivery_id(const FrameViews& frames);
// A whole DELIVER: exactly [delivery-id] [service] [session] [seq] [state] [body].
base::Result<CollectorDelivery> decode_collector_deliver(const FrameViews& frames);

}  // namespace glassbox::bus
