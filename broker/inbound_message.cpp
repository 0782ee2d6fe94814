// The message the broker is handling: read whole from its router, viewed for the decoders, and
// a packed one (§1.4) unpacked into the classic frames it carries.
#include "broker/detail/inbound_message.hpp"

#include <cerrno>
#include <string>

#include "schema/protocol.hpp"

namespace glassbox::broker::detail {

namespace proto = schema::protocol;

bool InboundMessage::receive(zmq::socket_t& socket) {
    count_ = 0;
    bytes_ = 0;
    too_many_frames_ = false;
    zmq::message_t overflow;
    bool more = true;
    int flags = ZMQ_DONTWAIT;
    views_.clear();
    const zmq::message_t* const kept = frames_.data();  // a small frame's bytes live in its message
    while (more) {
        zmq::message_t& frame =
            count_ <= proto::kMaxFrames
                ? (count_ < frames_.size() ? frames_[count_] : frames_.emplace_back())
                : overflow;
        if (zmq_msg_recv(frame.handle(), socket.handle(), flags) < 0) {
            if (count_ == 0 && (zmq_errno() == EAGAIN || zmq_errno() == EINTR)) return false;
            throw zmq::error_t();
        }
        flags = 0;  // the rest of a multipart message is already there
        // views_[i] is frames_[i + 1]: the routing id is no part of the peer's message.
        const std::string_view bytes = bus::view_of(frame);
        bytes_ += bytes.size();
        more = frame.more();
        if (count_ <= proto::kMaxFrames) {
            if (count_ > 0) views_.push_back(bytes);
            ++count_;
        } else {
            too_many_frames_ = true;
        }
    }
    // Frame 0 is the routing id: up to kMaxFrames of the peer's frames are kept, and a
    // message with more is flagged (and its surplus frames discarded) above. If frames_ grew,
    // its messages moved, and with them the bytes of the small ones: view them again.
    if (frames_.data() != kept) bus::views_of(frames_, 1, count_ - 1, views_);
    unpack();
    return true;
}

void InboundMessage::unpack() {
    // The packed form (§1.4): the decoders read the classic frames it carries.
    packed_ = count_ >= 2 && bus::is_packed(views_[0]);
    error_.clear();
    if (!packed_) return;
    if (count_ != 3) {
        error_ = "packed message of " + std::to_string(count_ - 1) + " frames, not 2";
    } else if (auto unpacked =
                   bus::unpack_views(bus::view_of(frames_[1]), bus::view_of(frames_[2]), views_);
               !unpacked) {
        error_ = unpacked.error().message;
    }
    if (!error_.empty()) views_.clear();
}

}  // namespace glassbox::broker::detail
