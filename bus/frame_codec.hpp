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
    void operator()(std::string_view frame) const { messages.emplace_back(frame.data(), frame.size()); }
};

// Every malformed message decodes to this: a ProtocolError saying what is wrong.
inline base::Error frame_error(std::string message) {
    return base::make_error(base::ErrorType::kProtocolError, std::move(message));
}

// Printable form of binary frames (routing ids, tokens, request ids) for logs and messages:
// printable ASCII as is, every other byte (and '\') as \xx.
std::string printable(std::string_view bytes);

}  // namespace glassbox::bus
