// What the three frame codecs (client_frames, worker_frames, collector_frames) share: frames
// read as string views, frames written through a sink, and the typed error of a bad message. No
// socket here: frames as libzmq messages, and their I/O, are in bus/detail/frame_io.hpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace glassbox::bus {

// A message as owned byte strings, one a frame.
using Frames = std::vector<std::string>;

// A received message as views of its frames, from the peer's empty delimiter on (a ROUTER's
// routing id is not part of it). Decoders only read; the views point into the caller's frames.
using FrameViews = std::vector<std::string_view>;

// Views of frames [first, first + count) of `frames` (for libzmq messages:
// bus/detail/frame_io.hpp).
inline void views_of(const Frames& frames, std::size_t first, std::size_t count, FrameViews& out) {
    out.assign(frames.begin() + static_cast<std::ptrdiff_t>(first),
               frames.begin() + static_cast<std::ptrdiff_t>(first + count));
}
inline FrameViews views_of(const Frames& frames) { return {frames.begin(), frames.end()}; }

// Encoders write frame by frame into a sink: any callable taking std::string_view, such as
// this one (a message of owned strings; of libzmq messages: bus/detail/frame_io.hpp).
struct AppendFrames {
    std::vector<std::string>& frames;
    void operator()(std::string_view frame) const { frames.emplace_back(frame); }
};

// Every malformed message decodes to this: a ProtocolError saying what is wrong.
inline base::Error frame_error(std::string message) {
    return base::make_error(base::ErrorType::kProtocolError, std::move(message));
}

// [empty] [protocol] [command]: the head of every classic message of a sub-protocol.
template <typename Sink>
void put_command_head(Sink&& sink, std::string_view protocol, char command) {
    sink(std::string_view{});
    sink(protocol);
    sink(std::string_view{&command, 1});
}
// The command of such a message; a ProtocolError "<protocol> message without a command" for
// any other.
base::Result<char> decode_command_head(const FrameViews& frames, std::string_view protocol);

// ---- the packed form (docs/protocol.md §1.4) ------------------------------------------------
// Any message of the classic layouts, [empty] [f1] ... [fn] (n >= 2), can travel as two frames:
// [envelope] [fn], the envelope holding f1 ... f(n-1) as length-prefixed fields behind a version
// byte, and the last frame (the body, for the messages that carry one) as it is. A classic
// message starts with its empty delimiter, so a non-empty first frame marks the packed form.
// Each frame costs the broker and the peer a receive or a send (and, with CURVE, a box and an
// unbox): packing a GBC01 round trip moves 12 frames through the broker instead of 27.
inline constexpr char kPackedVersion = '\x01';
inline bool is_packed(std::string_view first_frame) noexcept { return !first_frame.empty(); }
// Appends one field (a LEB128 length, then the bytes) to an envelope.
void append_packed_field(std::string& envelope, std::string_view field);
// Rewrites the classic message in `frames` (its empty delimiter at `first`; frames before it,
// such as a routing id, stay) into the packed form, in place. A message of fewer than three
// frames from `first` on (nothing to pack) is left as it is. (pack_messages, the same for
// libzmq messages: bus/detail/frame_io.hpp.)
void pack_frames(std::vector<std::string>& frames, std::size_t first = 0);
// The classic views of a packed message: "" (the empty delimiter), the envelope's fields, the
// last frame; views into `envelope` and `last`. A ProtocolError for an envelope that is not
// version 1, whose fields do not fill it exactly, or that holds no field or more than
// kMaxFrames - 2.
base::Result<void> unpack_views(std::string_view envelope, std::string_view last, FrameViews& out);
// As unpack_views for a message held as owned strings: [envelope] [last] becomes the classic
// [empty] [f1] ... [fn]. A message not in the packed form (first frame empty) is left as it is;
// a packed one of other than two frames, or with a bad envelope, is a ProtocolError.
base::Result<void> unpack_frames(std::vector<std::string>& frames);

// Printable form of binary frames (routing ids, tokens, request ids) for logs and messages:
// printable ASCII as is, every other byte (and '\') as \xx.
std::string printable(std::string_view bytes);

}  // namespace glassbox::bus
