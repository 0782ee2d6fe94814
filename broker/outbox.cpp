// The broker's sends: the message being written, the §2.3 holds until a commit, and the peers a
// send found gone.
#include "broker/detail/outbox.hpp"

#include <algorithm>

#include "base/log.hpp"
#include "bus/detail/frame_io.hpp"
#include "bus/frame_codec.hpp"

namespace glassbox::broker::detail {

void Outbox::send(Outlet outlet, std::uint64_t request, Carries carries) {
    if (out_packed_) {
        out_packed_ = false;
        if (outlet == Outlet::kRouter) bus::pack_messages(out_, 1);  // after the routing id
    }
    if (held(outlet)) {
        deferred_.push_back(Deferred{outlet, std::move(out_), request, carries});
        out_.clear();
        return;
    }
    transmit(outlet, out_);
}

void Outbox::hold_peer(std::string_view identity) {
    if (std::find(held_peers_.begin(), held_peers_.end(), identity) == held_peers_.end()) {
        held_peers_.emplace_back(identity);
    }
}

void Outbox::flush() {
    hold_publisher_ = false;
    held_peers_.clear();
    auto batch = std::move(deferred_);
    deferred_.clear();
    for (auto& entry : batch) transmit(entry.outlet, entry.frames);
}

bool Outbox::withhold(std::uint64_t request) {
    bool replaced = false;
    for (auto& deferred : deferred_) {
        if (deferred.request != request) continue;
        if (deferred.carries == Carries::kExplain) {
            deferred.frames.clear();  // transmit() skips it
        } else if (deferred.carries == Carries::kFinal) {
            deferred.frames.clear();  // an ERROR follows the traces' ends
            replaced = true;
        }
    }
    return replaced;
}

std::optional<std::string> Outbox::next_unreachable() {
    if (unreachable_.empty()) return std::nullopt;
    std::string identity = std::move(unreachable_.back());
    unreachable_.pop_back();
    return identity;
}

bool Outbox::held(Outlet outlet) const {
    if (outlet == Outlet::kPublisher) return hold_publisher_;
    if (held_peers_.empty() || out_.empty()) return false;
    const auto peer = bus::view_of(out_[0]);
    return std::find(held_peers_.begin(), held_peers_.end(), peer) != held_peers_.end();
}

bool Outbox::transmit(Outlet outlet, std::vector<zmq::message_t>& frames) {
    if (frames.empty()) return true;
    zmq::socket_t& socket = outlet == Outlet::kRouter ? router_ : publisher_;
    const std::size_t count = frames.size();
    for (std::size_t i = 0; i < count; ++i) {
        const int flags = ZMQ_DONTWAIT | (i + 1 < count ? ZMQ_SNDMORE : 0);
        if (zmq_msg_send(frames[i].handle(), socket.handle(), flags) >= 0) continue;
        const int error = zmq_errno();
        ++send_failures_;
        if (outlet == Outlet::kRouter && i == 0) {
            // router_mandatory: EHOSTUNREACH for a peer that is gone, EAGAIN for one whose
            // queue is at the high-water mark. Either way its requests end (§9).
            std::string identity{bus::view_of(frames[0])};
            log_->warn("event=send_failed peer={} error=\"{}\"", bus::printable(identity),
                       zmq_strerror(error));
            unreachable_.push_back(std::move(identity));
        } else if (outlet == Outlet::kRouter) {
            log_->error("event=send_failed frame={} error=\"{}\"", i, zmq_strerror(error));
        }
        frames.clear();
        return false;
    }
    frames.clear();
    return true;
}

}  // namespace glassbox::broker::detail
