// Internal to the broker: CollectorSide, the GBE01 trace collectors' messages: ATTACH, ACK (a
// record leaves the spool), HEARTBEAT and DETACH (docs/protocol.md §6.1). The deliveries
// themselves are CollectorFeed's. Defined in broker/collector_side.cpp.
//
// Calls into no other part (only the shared pieces: the feed, the spool and its pins).
// Called by: the loop (messages with the GBE01 header).
#pragma once

#include <cstdint>
#include <string_view>

namespace glassbox::broker::detail {

struct BrokerState;

class CollectorSide {
public:
    explicit CollectorSide(BrokerState& state) : state_(state) {}

    // A message with the GBE01 header, from the peer `identity`.
    void on_collector(std::string_view identity);

private:
    void on_ack(std::string_view identity);
    // An ACKed record leaves the spool, unless pinned (then once superseded and written).
    void remove_acknowledged(std::uint64_t delivery_id);
    void send_collector_command(std::string_view identity, char command);

    BrokerState& state_;
};

}  // namespace glassbox::broker::detail
