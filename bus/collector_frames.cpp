// Decoders of the GBE01 collector frames (docs/protocol.md §6.1).
#include "bus/collector_frames.hpp"

namespace glassbox::bus {

namespace proto = schema::protocol;
using base::Result;

Result<char> decode_collector_command(const FrameViews& frames) {
    return decode_command_head(frames, proto::kGbCollector);
}

Result<std::uint64_t> decode_collector_attach(const FrameViews& frames, std::uint64_t max_window) {
    const auto window = frames.size() == 4 ? proto::parse_ascii_int(frames[3]) : std::nullopt;
    if (!window || *window < 1 || *window > max_window) {
        return frame_error("ATTACH with a window outside 1-" + std::to_string(max_window));
    }
    return *window;
}

std::optional<std::uint64_t> collector_delivery_id(const FrameViews& frames) {
    return frames.size() >= 4 ? proto::parse_ascii_int(frames[3]) : std::nullopt;
}

Result<CollectorDelivery> decode_collector_deliver(const FrameViews& frames) {
    const auto id = collector_delivery_id(frames);
    if (!id) return frame_error("DELIVER without a delivery id");
    if (frames.size() != 9) {
        return frame_error("DELIVER needs 9 frames, got " + std::to_string(frames.size()));
    }
    return CollectorDelivery{*id, frames[4], frames[5], frames[6], frames[7], frames[8]};
}

}  // namespace glassbox::bus
