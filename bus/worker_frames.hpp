// The worker sub-protocol's frames, MDPW01 and its glassbox extension (docs/protocol.md §5): every
// layout written and read here once, for the broker and the worker runtime alike.
//
// Decoders take a message from its empty delimiter on ([empty] ["MDPW01"] [command] ...) and
// answer a ProtocolError for anything malformed; they check shape, not policy (whether a token
// is known, whether a worker may send a command). Encoders write through a sink
// (bus/frame_codec.hpp); body frames, which callers often move rather than copy, follow.
//
// Two layouts carry a token (§5.1): the classic one of 7/MDP, [token] [empty] [payload]..., for
// plain 7/MDP workers and workers that declared GBW01; and the compact one, [token]
// [payload]..., for workers that declared GBW02 (the same commands one frame shorter).
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

// The sixth READY frame of a worker that speaks the glassbox extension in the compact layout.
inline constexpr std::string_view kGbWorkerCompactCapability = "GBW02";
// The sixth READY frame of a worker that speaks it in the compact layout and packed form (§1.4):
// the broker writes to it packed, [envelope] [last frame].
inline constexpr std::string_view kGbWorkerPackedCapability = "GBW03";

enum class WorkerLayout : std::uint8_t {
    kClassic,  // [token] [empty] [payload]...: 7/MDP workers and GBW01
    kCompact,  // [token] [payload]...: GBW02
};

// Frame positions after the empty delimiter, shared by every command with a token.
inline constexpr std::size_t kWorkerTokenFrame = 3;
// Where the payload starts: after [token] [empty] (classic) or [token] (compact).
constexpr std::size_t worker_payload_frame(WorkerLayout layout) noexcept {
    return layout == WorkerLayout::kCompact ? kWorkerTokenFrame + 1 : kWorkerTokenFrame + 2;
}
inline constexpr std::size_t kWorkerPayloadFrame = worker_payload_frame(WorkerLayout::kClassic);

// ---- encoders -------------------------------------------------------------------------------

// [empty] ["MDPW01"] [command]: HEARTBEAT and DISCONNECT, and the head of every other command.
template <typename Sink>
void put_worker_command(Sink&& sink, char command) {
    put_command_head(sink, schema::protocol::kMdpWorker, command);
}

// READY [service] ["GBW01" | "GBW02" | "GBW03"]? [credit]? (§5.1): no extension frame for a
// plain 7/MDP worker, GBW01 for the extension in the classic layout, GBW02 in the compact one,
// GBW03 in the compact one packed (`packed`, which implies compact). Credit 0 leaves the credit
// frame out.
template <typename Sink>
void put_worker_ready(Sink&& sink, std::string_view service, bool extended,
                      std::uint64_t credit = 0, WorkerLayout layout = WorkerLayout::kClassic,
                      bool packed = false) {
    put_worker_command(sink, schema::protocol::worker_cmd::kReady);
    sink(service);
    if (!extended) return;
    sink(packed                             ? kGbWorkerPackedCapability
         : layout == WorkerLayout::kCompact ? kGbWorkerCompactCapability
                                            : schema::protocol::kGbWorkerCapability);
    if (credit > 0) sink(std::to_string(credit));
}

// [empty] ["MDPW01"] [command] [token] [empty]? : the head of REQUEST, REPLY, PARTIAL, EXPLAIN and
// ERROR (the empty frame in the classic layout only); their payload frames follow.
template <typename Sink>
void put_worker_token_head(Sink&& sink, char command, std::string_view token,
                           WorkerLayout layout = WorkerLayout::kClassic) {
    put_worker_command(sink, command);
    sink(token);
    if (layout == WorkerLayout::kClassic) sink(std::string_view{});
}

// EXPLAIN's head and fields: [token] [empty]? [session] [seq] [state]; the body follows.
template <typename Sink>
void put_worker_explain(Sink&& sink, std::string_view token, std::string_view session,
                        std::uint64_t seq, std::string_view state,
                        WorkerLayout layout = WorkerLayout::kClassic) {
    put_worker_token_head(sink, schema::protocol::worker_cmd::kExplain, token, layout);
    sink(session);
    sink(std::to_string(seq));
    sink(state);
}

// ERROR [token] [empty]? [error-type] [message] (§5.3).
template <typename Sink>
void put_worker_error(Sink&& sink, std::string_view token, const base::Error& error,
                      WorkerLayout layout = WorkerLayout::kClassic) {
    put_worker_token_head(sink, schema::protocol::worker_cmd::kError, token, layout);
    sink(base::to_string(error.type));
    sink(error.message);
}

// CANCEL [token] (§5.3): no empty frame.
template <typename Sink>
void put_worker_cancel(Sink&& sink, std::string_view token) {
    put_worker_command(sink, schema::protocol::worker_cmd::kCancel);
    sink(token);
}

// ---- decoders -------------------------------------------------------------------------------

// The command byte of [empty] ["MDPW01"] [command] ...
base::Result<char> decode_worker_command(const FrameViews& frames);

struct WorkerReady {
    std::string_view service;
    bool gbw01 = false;                            // declared the extension, GBW01, GBW02 or GBW03
    WorkerLayout layout = WorkerLayout::kClassic;  // kCompact for GBW02 and GBW03
    bool packed = false;       // GBW03: the broker writes to it in the packed form
    std::uint64_t credit = 1;  // §5.1: 1 unless an extended worker declared more
};
// READY [service] ["GBW01" | "GBW02" | "GBW03"]? [credit]?: a valid, non-mmi service; a credit
// only after one of those, an ascii-int in 1-1024. A sixth frame other than those two without a
// seventh is ignored (7/MDP).
base::Result<WorkerReady> decode_worker_ready(const FrameViews& frames);

// [command] [token] [empty]? ...: the token of a worker's REPLY, PARTIAL, EXPLAIN or ERROR (its
// payload starts at worker_payload_frame(layout)).
base::Result<std::string_view> decode_worker_token(const FrameViews& frames,
                                                   WorkerLayout layout = WorkerLayout::kClassic);

// PARTIAL [token] [empty]? [body]: the body.
base::Result<std::string_view> decode_worker_partial(const FrameViews& frames,
                                                     WorkerLayout layout = WorkerLayout::kClassic);

struct WorkerExplain {
    std::string_view session;
    std::uint64_t seq = 0;
    std::string_view state;  // open, complete or error
    std::size_t body = 0;    // the body's frame index
};
// EXPLAIN [token] [empty]? [session] [seq] [state] [body]: a session of 1 to max_session bytes,
// an ascii-int seq and a known state.
base::Result<WorkerExplain> decode_worker_explain(const FrameViews& frames, std::size_t max_session,
                                                  WorkerLayout layout = WorkerLayout::kClassic);

// ERROR [token] [empty]? [error-type]? [message]?: the error it carries. An unknown type word
// reads as Internal with the word in the message (a newer worker's errors still end requests).
base::Error decode_worker_error(const FrameViews& frames,
                                WorkerLayout layout = WorkerLayout::kClassic);

struct WorkerRequest {
    std::string_view token;
    std::string_view meta;  // the meta JSON
    std::string_view body;
    WorkerLayout layout = WorkerLayout::kClassic;  // the layout it came in; answers use it too
};
// The token of a REQUEST, CANCEL or answer: 1 to 64 bytes at frame 3, or nullopt.
std::optional<std::string_view> worker_token_of(const FrameViews& frames);
// An extended REQUEST in either layout: [token] [empty] [meta] [body] (GBW01) or [token] [meta]
// [body] (GBW02) exactly. The two cannot be confused: a meta frame is never empty.
base::Result<WorkerRequest> decode_gbw_request(const FrameViews& frames);
// CANCEL [token]: the token.
base::Result<std::string_view> decode_worker_cancel(const FrameViews& frames);

// ---- the GBW01 meta frame (§5.1) ---------------------------------------------------------------

// The meta frame's explain value for a request whose client asked explain=none.
inline constexpr std::string_view kMetaExplainNone = "none";

struct RequestMetaFrame {
    std::string request_id;
    std::string service;
    std::uint64_t deadline_ms = 0;  // time left when dispatched
    std::uint64_t attempt = 1;      // counts from 1
    std::string client;             // "GBC01" or "MDPC01"; empty when absent
    // "none": the client asked not to receive the request's explain messages (§4.1
    // explain=none); empty when absent (the client takes them, or is MDPC01).
    std::string explain;
    // The OTel trace id of the top-level run the request works for (its client's request option
    // trace=, §4.1); empty when absent (the request starts a trace of its own).
    std::string trace{};
    bool operator==(const RequestMetaFrame&) const = default;
};
// {"request_id": ..., "service": ..., "deadline_ms": N, "attempt": N, "client": ...,
// "explain": ..., "trace": ...}; client, explain and trace only when not empty. Strings that are
// not UTF-8 (request ids are opaque bytes) are written with their ill-formed sequences replaced, so
// the frame is always valid JSON. The first form writes into `out` (cleared first), so a caller on
// a hot path can keep one buffer.
void encode_request_meta(std::string& out, std::string_view request_id, std::string_view service,
                         std::uint64_t deadline_ms, std::uint64_t attempt, std::string_view client,
                         std::string_view explain = {}, std::string_view trace = {});
std::string encode_request_meta(std::string_view request_id, std::string_view service,
                                std::uint64_t deadline_ms, std::uint64_t attempt,
                                std::string_view client, std::string_view explain = {},
                                std::string_view trace = {});
inline std::string encode_request_meta(const RequestMetaFrame& meta) {
    return encode_request_meta(meta.request_id, meta.service, meta.deadline_ms, meta.attempt,
                               meta.client, meta.explain, meta.trace);
}
// An object with request_id and service strings, deadline_ms and attempt non-negative
// integers, client, explain and trace optional strings (other keys ignored).
base::Result<RequestMetaFrame> decode_request_meta(std::string_view text);

}  // namespace glassbox::bus
