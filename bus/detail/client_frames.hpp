// The client sub-protocols' frames, 7/MDP's MDPC01 and glassbox's GBC01 (docs/protocol.md §3,
// §4): every layout written and read here once, for the broker and the BusClient alike.
//
// Decoders take a message from its empty delimiter on and answer a ProtocolError for anything
// malformed; encoders write through a sink (bus/frame_codec.hpp), body frames last.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "bus/frame_codec.hpp"
#include "bus/request_options.hpp"
#include "schema/protocol.hpp"

namespace glassbox::bus {

// ---- client to broker (§3, §4.1) ----------------------------------------------------------------

// MDPC01 REQUEST [empty] ["MDPC01"] [service] [body]...
template <typename Sink>
void put_mdp_request(Sink&& sink, std::string_view service) {
    sink(std::string_view{});
    sink(schema::protocol::kMdpClient);
    sink(service);
}

// [empty] ["GBC01"] [command]: the head of every GBC01 message.
template <typename Sink>
void put_client_command(Sink&& sink, char command) {
    put_command_head(sink, schema::protocol::kGbClient, command);
}

// REQUEST [service] [request-id] [deadline-ms] [options]? [body]; a deadline of 0 asks for the
// broker's default. `options` is the options frame's text (encode_request_options): written
// only when not empty, so a request with the default options is the 7-frame REQUEST every
// broker reads. The body stays the last frame, so the packed form (§1.4) keeps it a frame of
// its own.
template <typename Sink>
void put_client_request(Sink&& sink, std::string_view service, std::string_view request_id,
                        std::chrono::milliseconds deadline, std::string_view body,
                        std::string_view options = {}) {
    put_client_command(sink, schema::protocol::client_cmd::kRequest);
    sink(service);
    sink(request_id);
    sink(std::to_string(deadline.count() > 0 ? deadline.count() : 0));
    if (!options.empty()) sink(options);
    sink(body);
}

template <typename Sink>
void put_client_cancel(Sink&& sink, std::string_view request_id) {
    put_client_command(sink, schema::protocol::client_cmd::kCancel);
    sink(request_id);
}

template <typename Sink, typename Ids>
void put_client_heartbeat(Sink&& sink, const Ids& request_ids) {
    put_client_command(sink, schema::protocol::client_cmd::kHeartbeat);
    for (const auto& id : request_ids) sink(std::string_view{id});
}

// The service of an MDPC01 REQUEST; its body frames start at frame 3.
inline constexpr std::size_t kMdpBodyFrame = 3;
base::Result<std::string_view> decode_mdp_request(const FrameViews& frames);

// The command byte of [empty] ["GBC01"] [command] ...
base::Result<char> decode_client_command(const FrameViews& frames);

// Where the body is in a REQUEST without an options frame; with one, the options frame is here
// and the body follows it (the body is always the last frame).
inline constexpr std::size_t kClientRequestBodyFrame = 6;
inline constexpr std::size_t kClientRequestOptionsFrame = 6;

struct ClientRequest {
    std::string_view service;
    std::string_view request_id;
    std::uint64_t deadline_ms = 0;  // 0: the broker's default
    RequestOptions options;         // the defaults when the REQUEST has no options frame
    std::string_view body;
    std::size_t body_frame = kClientRequestBodyFrame;  // 7 after an options frame
};
// The request id of a REQUEST (1-64 bytes) and its service, read before anything else is
// checked so that every later error can name them.
base::Result<ClientRequest> decode_client_request_id(const FrameViews& frames);
// A whole REQUEST: exactly [service] [request-id] [deadline-ms] [options]? [body], a valid
// service name, an ascii-int deadline and, if present, well-formed known options
// (decode_request_options: its ProtocolError says what is wrong).
base::Result<ClientRequest> decode_client_request(const FrameViews& frames);
// CANCEL [request-id].
base::Result<std::string_view> decode_client_cancel(const FrameViews& frames);
// HEARTBEAT [request-id]...: the ids start at frame 3.
inline constexpr std::size_t kClientHeartbeatIdFrame = 3;

// ---- broker to client (§3, §4.2) ---------------------------------------------------------------

// MDPC01 REPLY [empty] ["MDPC01"] [service]; the body frames follow.
template <typename Sink>
void put_mdp_reply(Sink&& sink, std::string_view service) {
    put_mdp_request(sink, service);  // the same layout both ways (7/MDP)
}

// PARTIAL [request-id] [kind]; the body follows.
template <typename Sink>
void put_client_partial(Sink&& sink, std::string_view request_id, std::string_view kind) {
    put_client_command(sink, schema::protocol::client_cmd::kPartial);
    sink(request_id);
    sink(kind);
}

// FINAL [request-id]; the body follows.
template <typename Sink>
void put_client_final(Sink&& sink, std::string_view request_id) {
    put_client_command(sink, schema::protocol::client_cmd::kFinal);
    sink(request_id);
}

// ERROR [request-id] [error-type] [message].
template <typename Sink>
void put_client_error(Sink&& sink, std::string_view request_id, const base::Error& error) {
    put_client_command(sink, schema::protocol::client_cmd::kError);
    sink(request_id);
    sink(base::to_string(error.type));
    sink(error.message);
}

enum class ClientReplyKind { kData, kExplain, kFinal, kError };

struct ClientReply {
    ClientReplyKind kind = ClientReplyKind::kFinal;
    std::string_view request_id;
    std::size_t body = 0;  // frame index of the body (data, explain, final)
    base::Error error;     // kError: an unknown type word reads as Internal, the word kept
};
// PARTIAL, FINAL or ERROR as a client receives it. An empty request id is allowed only on an
// ERROR (§4.3).
base::Result<ClientReply> decode_client_reply(const FrameViews& frames);

}  // namespace glassbox::bus
