// Decoders of the MDPC01 and GBC01 client frames (docs/protocol.md §3, §4).
#include "bus/detail/client_frames.hpp"

namespace glassbox::bus {

namespace proto = schema::protocol;
using base::Result;

Result<std::string_view> decode_mdp_request(const FrameViews& frames) {
    if (frames.size() < 3 || !frames[0].empty() || frames[1] != proto::kMdpClient) {
        return frame_error("MDPC01 request without a service frame");
    }
    return frames[2];
}

Result<char> decode_client_command(const FrameViews& frames) {
    return decode_command_head(frames, proto::kGbClient);
}

Result<ClientRequest> decode_client_request_id(const FrameViews& frames) {
    if (frames.size() < 5 || frames[4].empty() || frames[4].size() > proto::kMaxRequestId) {
        return frame_error("REQUEST without a valid request id (1-64 bytes)");
    }
    ClientRequest request;
    request.service = frames[3];
    request.request_id = frames[4];
    return request;
}

Result<ClientRequest> decode_client_request(const FrameViews& frames) {
    auto request = decode_client_request_id(frames);
    if (!request) return request;
    if (frames.size() != 7) {
        return frame_error("REQUEST needs 7 frames after the routing id, got " +
                           std::to_string(frames.size()));
    }
    if (!proto::is_valid_service_name(request.value().service)) {
        return frame_error("invalid service name");
    }
    const auto deadline_ms = proto::parse_ascii_int(frames[5]);
    if (!deadline_ms) return frame_error("deadline-ms is not an ascii-int");
    request.value().deadline_ms = *deadline_ms;
    request.value().body = frames[kClientRequestBodyFrame];
    return request;
}

Result<std::string_view> decode_client_cancel(const FrameViews& frames) {
    if (frames.size() < 4) return frame_error("CANCEL without a request id");
    return frames[3];
}

Result<ClientReply> decode_client_reply(const FrameViews& frames) {
    if (frames.size() < 4) return frame_error("GBC01 reply with fewer than 4 frames");
    if (frames.size() > proto::kMaxFrames) return frame_error("GBC01 reply with too many frames");
    if (!frames[0].empty()) return frame_error("GBC01 reply without an empty delimiter");
    if (frames[1] != proto::kGbClient) return frame_error("reply header is not GBC01");
    if (frames[2].size() != 1) return frame_error("GBC01 command frame is not one byte");
    if (frames[3].size() > proto::kMaxRequestId) return frame_error("request id above 64 bytes");
    ClientReply reply;
    reply.request_id = frames[3];
    switch (frames[2][0]) {
        case proto::client_cmd::kPartial:
            if (frames.size() != 6) return frame_error("PARTIAL must have 6 frames");
            if (frames[4] == proto::kKindData) {
                reply.kind = ClientReplyKind::kData;
            } else if (frames[4] == proto::kKindExplain) {
                reply.kind = ClientReplyKind::kExplain;
            } else {
                return frame_error("PARTIAL kind is neither data nor explain");
            }
            reply.body = 5;
            break;
        case proto::client_cmd::kFinal:
            if (frames.size() != 5) return frame_error("FINAL must have 5 frames");
            reply.kind = ClientReplyKind::kFinal;
            reply.body = 4;
            break;
        case proto::client_cmd::kError: {
            if (frames.size() != 6) return frame_error("ERROR must have 6 frames");
            // An unknown type word from a newer broker still ends the request; it reads as
            // Internal.
            const auto type = base::error_type_from_string(frames[4]);
            reply.kind = ClientReplyKind::kError;
            reply.error.type = type.value_or(base::ErrorType::kInternal);
            reply.error.message = type ? std::string{frames[5]}
                                       : std::string{frames[4]} + ": " + std::string{frames[5]};
            break;
        }
        default:
            return frame_error("unknown GBC01 command from broker");
    }
    if (reply.request_id.empty() && reply.kind != ClientReplyKind::kError) {
        return frame_error("GBC01 reply with an empty request id");
    }
    return reply;
}

}  // namespace glassbox::bus
