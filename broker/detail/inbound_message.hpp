// Internal to the broker: the message being handled, read from the router whole (at most
// kMaxFrames of the peer's frames kept), its frames viewed for the bus/ decoders, and a packed
// message (§1.4) seen as the classic frames it carries.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "bus/detail/frame_io.hpp"
#include "bus/frame_codec.hpp"

namespace glassbox::broker::detail {

class InboundMessage {
public:
    InboundMessage() { frames_.resize(8); }

    // The next message waiting on `socket`: false if none is. Throws zmq::error_t when a read
    // fails mid-message.
    bool receive(zmq::socket_t& socket);

    // The routing id (frame 0, no part of the peer's message).
    std::string_view identity() const noexcept { return bus::view_of(frames_[0]); }
    // The peer's frames (classic, unpacked from a packed message): views()[i] is frame i + 1.
    const bus::FrameViews& views() const noexcept { return views_; }
    // The peer's first frame as it came, for its metadata (User-Id, Peer-Address); null if none.
    const zmq::message_t* first_frame() const noexcept {
        return count_ > 1 ? &frames_[1] : nullptr;
    }
    std::size_t frames() const noexcept { return count_ > 0 ? count_ - 1 : 0; }
    std::size_t bytes() const noexcept { return bytes_; }  // all frames, the routing id too
    bool too_many_frames() const noexcept { return too_many_frames_; }
    // The message came in the packed form (answered so too); error(): why it could not be
    // unpacked, if it could not (then views() is empty).
    bool packed() const noexcept { return packed_; }
    const std::string& error() const noexcept { return error_; }

    // The message of views()[i]: moved out when it is a frame of its own (every frame of a
    // classic message; the last of a packed one), else a copy of its bytes in the envelope.
    zmq::message_t take(std::size_t i) {
        if (!packed_) return std::move(frames_[i + 1]);
        if (i + 1 == views_.size()) return std::move(frames_[2]);
        return zmq::message_t(views_[i].data(), views_[i].size());
    }

private:
    // A packed message: views_ become the classic frames it carries, or error_ says why not.
    void unpack();

    // frames_[0, count_) with the routing id first; views_ of frames_[1, count_).
    std::vector<zmq::message_t> frames_;
    std::size_t count_ = 0;
    bus::FrameViews views_;
    std::size_t bytes_ = 0;
    bool too_many_frames_ = false;
    bool packed_ = false;
    std::string error_;
};

}  // namespace glassbox::broker::detail
