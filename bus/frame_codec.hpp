// What the three frame codecs (client_frames, worker_frames, collector_frames) share: frames
// read as string views, frames written through a sink, and the typed error of a bad message.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "base/result.hpp"

namespace glassbox::bus {

// A received message as views of its frames, from the peer's empty delimiter on (a ROUTER's
// routing id is not part of it). Decoders only read; the views point into the caller's frames.
using FrameViews = std::vector<std::string_view>;

inline std::string_view view_of(const zmq::message_t& frame) noexcept {
    return {static_cast<const char*>(frame.data()), frame.size()};
}
// Views of frames [first, first + count) of `frames` (any container of strings or messages).
template <typename Container>
void views_of(const Container& frames, std::size_t first, std::size_t count, FrameViews& out) {
    out.clear();
    for (std::size_t i = first; i < first + count; ++i) {
        if constexpr (std::is_same_v<typename Container::value_type, zmq::message_t>) {
            out.push_back(view_of(frames[i]));
        } else {
            out.emplace_back(frames[i]);
        }
    }
}
template <typename Container>
FrameViews views_of(const Container& frames) {
    FrameViews out;
    views_of(frames, 0, frames.size(), out);
    return out;
}

// Encoders write frame by frame into a sink: any callable taking std::string_view, such as
// these two (a message of owned strings, or of libzmq messages).
struct AppendFrames {
    std::vector<std::string>& frames;
    void operator()(std::string_view frame) const { frames.emplace_back(frame); }
};
struct AppendMessages {
    std::vector<zmq::message_t>& messages;
    void operator()(std::string_view frame) const {
        messages.emplace_back(frame.data(), frame.size());
    }
};

// Every malformed message decodes to this: a ProtocolError saying what is wrong.
inline base::Error frame_error(std::string message) {
    return base::make_error(base::ErrorType::kProtocolError, std::move(message));
}

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
// frames from `first` on (nothing to pack) is left as it is.
void pack_messages(std::vector<zmq::message_t>& frames, std::size_t first = 0);
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
