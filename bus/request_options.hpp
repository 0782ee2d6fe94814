// A GBC01 request's options (docs/protocol.md §4.1): what a client asks of the broker about one
// request beyond its service, deadline and body. Today one option, whether the request's explain
// messages come to the client as `PARTIAL explain` at all. Written and read here once, for the
// BusClient and the broker alike. Two options: `explain` and `trace` (the OpenTelemetry trace id
// of the top-level run a request works for, which the broker hands to the worker).
//
// On the wire an optional frame between the deadline and the body, ASCII:
//   options = option *( "," option )        e.g. "explain=none"
//   option  = name "=" value                name, value: 1-32 of a-z 0-9 "-" "_"
// at most 256 bytes, each name at most once. A request without the frame (every client before
// it) takes the defaults; an empty frame is the same. An unknown name or value, or anything not
// of this form, is a ProtocolError for that request.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace glassbox::bus {

// Whether the client receives the request's explain messages (§4.2 `PARTIAL explain`). With
// kNone they still reach the spool, the trace collectors and the explain topic as for any
// request (§5.3, §6): only the copy to this client is left out.
enum class ExplainDelivery : unsigned char { kStream, kNone };
std::string_view to_string(ExplainDelivery delivery) noexcept;  // "stream", "none"

struct RequestOptions {
    ExplainDelivery explain = ExplainDelivery::kStream;  // the default: as before options existed
    // `trace=<32 lowercase hex>`: the OTel trace id of the top-level run this request is made
    // for (a worker calling another service on behalf of a run, docs/protocol.md §4.1): the
    // callee's run logs it and nests in that trace. Empty: none (the callee's run is top-level).
    std::string trace{};
    bool operator==(const RequestOptions&) const = default;
    bool defaults() const noexcept { return explain == ExplainDelivery::kStream && trace.empty(); }
};

inline constexpr std::string_view kExplainOption = "explain";
inline constexpr std::string_view kTraceOption = "trace";
inline constexpr std::size_t kMaxRequestOptionsBytes = 256;

// The options frame's text: only the options that differ from their defaults ("" for all
// defaults: such a request needs no frame).
std::string encode_request_options(const RequestOptions& options);
// The options a frame holds; a ProtocolError naming what is wrong for anything else.
base::Result<RequestOptions> decode_request_options(std::string_view frame);

}  // namespace glassbox::bus
