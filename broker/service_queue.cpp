// Bounded per-service queue and the policy names of the broker configuration.
#include "broker/service_queue.hpp"

namespace glassbox::broker {

std::string_view to_string(OverflowPolicy policy) noexcept {
    return policy == OverflowPolicy::kReject ? "reject" : "drop-oldest";
}

std::string_view to_string(SpoolPolicy policy) noexcept {
    return policy == SpoolPolicy::kFailRequest ? "fail-request" : "drop-newest";
}

std::optional<OverflowPolicy> overflow_policy_from_string(std::string_view name) noexcept {
    if (name == "reject") return OverflowPolicy::kReject;
    if (name == "drop-oldest" || name == "drop_oldest") return OverflowPolicy::kDropOldest;
    return std::nullopt;
}

std::optional<SpoolPolicy> spool_policy_from_string(std::string_view name) noexcept {
    if (name == "fail-request" || name == "fail_request") return SpoolPolicy::kFailRequest;
    if (name == "drop-newest" || name == "drop_newest") return SpoolPolicy::kDropNewest;
    return std::nullopt;
}

ServiceQueue::ServiceQueue(std::size_t max_size, OverflowPolicy policy)
    : max_size_(max_size), policy_(policy) {}

ServiceQueue::PushOutcome ServiceQueue::push_back(Id id) {
    PushOutcome outcome;
    if (order_.size() >= max_size_) {
        if (policy_ == OverflowPolicy::kReject || order_.empty()) return outcome;
        outcome.evicted = order_.front();
        index_.erase(order_.front());
        order_.pop_front();
    }
    order_.push_back(id);
    index_[id] = std::prev(order_.end());
    outcome.accepted = true;
    return outcome;
}

void ServiceQueue::push_front(Id id) {
    order_.push_front(id);
    index_[id] = order_.begin();
}

std::optional<ServiceQueue::Id> ServiceQueue::pop_front() {
    if (order_.empty()) return std::nullopt;
    const Id id = order_.front();
    order_.pop_front();
    index_.erase(id);
    return id;
}

bool ServiceQueue::remove(Id id) {
    const auto found = index_.find(id);
    if (found == index_.end()) return false;
    order_.erase(found->second);
    index_.erase(found);
    return true;
}

}  // namespace glassbox::broker
