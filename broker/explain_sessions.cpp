// The owners of explain sessions (§5.3) and the spool records pinned for open sessions.
#include "broker/detail/explain_sessions.hpp"

namespace glassbox::broker::detail {

const SessionOwner* SessionOwners::find(std::string_view session) const {
    const auto found = owners_.find(session);
    return found == owners_.end() ? nullptr : &found->second;
}

void SessionOwners::open(std::string_view session, std::uint64_t request) {
    owners_.emplace(std::string{session}, SessionOwner{request});
}

void SessionOwners::retire(std::string_view session, std::uint64_t request) {
    const auto owner = owners_.find(session);
    if (owner == owners_.end() || owner->second.request != request) return;
    owner->second.request = 0;
    keep_ended(owner->first);
}

void SessionOwners::remember_ended(const std::string& session) {
    const auto [owner, inserted] = owners_.emplace(session, SessionOwner{0});
    if (inserted) keep_ended(owner->first);
}

void SessionOwners::keep_ended(const std::string& session) {
    ended_.push_back(&session);
    while (ended_.size() > ended_kept_) {
        owners_.erase(owners_.find(*ended_.front()));
        ended_.pop_front();
    }
}

void SpoolPins::pin(std::string_view session, std::uint64_t delivery_id, bool open) {
    const auto found = pinned_.find(session);
    if (found != pinned_.end()) {
        unpin_after_commit_.push_back(found->second);
        if (open) {
            found->second = delivery_id;
        } else {
            pinned_.erase(found);
        }
    } else if (open) {
        pinned_.emplace(std::string{session}, delivery_id);
    }
    if (open) pinned_ids_.emplace(delivery_id, false);
}

void SpoolPins::unpin(std::string_view session) {
    const auto found = pinned_.find(session);
    if (found == pinned_.end()) return;
    unpin_after_commit_.push_back(found->second);
    pinned_.erase(found);
}

bool SpoolPins::acknowledge(std::uint64_t delivery_id) {
    const auto pinned = pinned_ids_.find(delivery_id);
    if (pinned == pinned_ids_.end()) return false;
    pinned->second = true;
    return true;
}

std::vector<std::uint64_t> SpoolPins::take_released() {
    std::vector<std::uint64_t> released;
    for (const auto id : unpin_after_commit_) {
        const auto found = pinned_ids_.find(id);
        if (found == pinned_ids_.end()) continue;
        const bool acked = found->second;
        pinned_ids_.erase(found);
        if (acked) released.push_back(id);
    }
    unpin_after_commit_.clear();
    return released;
}

}  // namespace glassbox::broker::detail
