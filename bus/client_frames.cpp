// Decoders of the MDPC01 and GBC01 client frames (docs/protocol.md §3, §4), and a request's
// options frame (bus/request_options.hpp).
#include "bus/detail/client_frames.hpp"

#include "bus/request_options.hpp"
#include "schema/otel_ids.hpp"

namespace glassbox::bus {

namespace proto = schema::protocol;
using base::Result;

namespace {

constexpr std::size_t kMaxOptionPart = 32;

bool option_char(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// A name or a value: 1-32 of a-z 0-9 - _.
bool option_word(std::string_view word) noexcept {
    if (word.empty() || word.size() > kMaxOptionPart) return false;
    for (const char c : word)
        if (!option_char(c)) return false;
    return true;
}

base::Error options_error(const std::string& why) { return frame_error("request options: " + why); }

// Takes one option into `options`; `seen` counts the names already taken (bit 1 explain, 2 trace).
Result<void> take_option(RequestOptions& options, std::string_view name, std::string_view value,
                         unsigned& seen) {
    const unsigned bit = name == kExplainOption ? 1U : name == kTraceOption ? 2U : 0U;
    if (bit == 0) {
        return options_error("unknown option \"" + std::string{name} +
                             "\" (this broker knows: explain, trace)");
    }
    if ((seen & bit) != 0) return options_error(std::string{name} + " given twice");
    seen |= bit;
    if (bit == 2U) {
        if (!schema::otel::valid_trace_id(value)) {
            return options_error("trace=" + std::string{value} +
                                 " is not an OpenTelemetry trace id (32 lowercase hex digits)");
        }
        options.trace.assign(value);
        return {};
    }
    if (value == "stream") {
        options.explain = ExplainDelivery::kStream;
    } else if (value == "none") {
        options.explain = ExplainDelivery::kNone;
    } else {
        return options_error("explain=" + std::string{value} + " is not one of stream, none");
    }
    return {};
}

}  // namespace

std::string_view to_string(ExplainDelivery delivery) noexcept {
    return delivery == ExplainDelivery::kNone ? "none" : "stream";
}

std::string encode_request_options(const RequestOptions& options) {
    std::string out;
    if (options.explain != ExplainDelivery::kStream) {
        out.append(kExplainOption);
        out.push_back('=');
        out.append(to_string(options.explain));
    }
    if (!options.trace.empty()) {
        if (!out.empty()) out.push_back(',');
        out.append(kTraceOption);
        out.push_back('=');
        out.append(options.trace);
    }
    return out;
}

Result<RequestOptions> decode_request_options(std::string_view frame) {
    RequestOptions options;
    if (frame.size() > kMaxRequestOptionsBytes) {
        return options_error("the frame is " + std::to_string(frame.size()) +
                             " bytes, above the limit of " +
                             std::to_string(kMaxRequestOptionsBytes));
    }
    unsigned seen = 0;
    std::size_t at = 0;
    while (at < frame.size()) {
        const std::size_t comma = frame.find(',', at);
        const std::string_view option =
            frame.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
        const std::size_t equals = option.find('=');
        const std::string_view name = option.substr(0, equals);
        const std::string_view value =
            equals == std::string_view::npos ? std::string_view{} : option.substr(equals + 1);
        if (equals == std::string_view::npos || !option_word(name) || !option_word(value)) {
            return options_error("\"" + printable(option) +
                                 "\" is not name=value (each 1-32 of a-z 0-9 - _; options "
                                 "separated by ',')");
        }
        if (auto taken = take_option(options, name, value, seen); !taken) return taken.error();
        if (comma == std::string_view::npos) break;
        at = comma + 1;
        if (at == frame.size()) return options_error("a trailing ','");
    }
    return options;
}

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
    if (frames.size() != 7 && frames.size() != 8) {
        return frame_error("REQUEST needs 7 frames after the routing id (8 with options), got " +
                           std::to_string(frames.size()));
    }
    if (!proto::is_valid_service_name(request.value().service)) {
        return frame_error("invalid service name");
    }
    const auto deadline_ms = proto::parse_ascii_int(frames[5]);
    if (!deadline_ms) return frame_error("deadline-ms is not an ascii-int");
    request.value().deadline_ms = *deadline_ms;
    if (frames.size() == 8) {
        auto options = decode_request_options(frames[kClientRequestOptionsFrame]);
        if (!options) return std::move(options).error();
        request.value().options = options.value();
    }
    request.value().body_frame = frames.size() - 1;  // the body is always the last frame
    request.value().body = frames[request.value().body_frame];
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
