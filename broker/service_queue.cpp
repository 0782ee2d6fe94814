// The per-service queue (a FIFO per client, served in turn) and the broker's policy names.
#include "broker/service_queue.hpp"

#include <algorithm>
#include <iterator>

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

ServiceQueue::Lane& ServiceQueue::lane_for(std::string_view client) {
    auto found = lanes_.find(client);
    if (found == lanes_.end()) {
        found = lanes_.emplace(std::string{client}, Lane{}).first;
        Lane& lane = found->second;
        lane.client = found->first;
        lane.turn = turns_.insert(turns_.end(), &lane);
        lane.by_depth = by_depth_.end();
    }
    return found->second;
}

void ServiceQueue::reindex(Lane& lane) {
    if (lane.ids.empty()) {
        drop_lane(lane);
        return;
    }
    const DepthKey key{lane.ids.size(), lane.ids.front(), &lane};
    if (lane.by_depth == by_depth_.end()) {
        lane.by_depth = by_depth_.insert(key).first;
        return;
    }
    // Re-keyed in place: the set node is reused, nothing is allocated.
    auto node = by_depth_.extract(lane.by_depth);
    node.value() = key;
    lane.by_depth = by_depth_.insert(std::move(node)).position;
}

void ServiceQueue::drop_lane(Lane& lane) {
    turns_.erase(lane.turn);
    if (lane.by_depth != by_depth_.end()) by_depth_.erase(lane.by_depth);
    lanes_.erase(lanes_.find(lane.client));
}

ServiceQueue::PushOutcome ServiceQueue::push_back(Id id, std::string_view client) {
    PushOutcome outcome;
    if (size_ >= max_size_) {
        if (policy_ == OverflowPolicy::kReject || by_depth_.empty()) return outcome;
        // drop-oldest: the deepest client pays, with its oldest request.
        const Id victim = by_depth_.rbegin()->lane->ids.front();
        remove(victim);
        outcome.evicted = victim;
    }
    Lane& lane = lane_for(client);
    lane.ids.push_back(id);
    index_[id] = Position{&lane, std::prev(lane.ids.end())};
    ++size_;
    reindex(lane);
    outcome.accepted = true;
    return outcome;
}

void ServiceQueue::push_front(Id id, std::string_view client) {
    Lane& lane = lane_for(client);
    turns_.splice(turns_.begin(), turns_, lane.turn);  // a retry is served next
    lane.ids.push_front(id);
    index_[id] = Position{&lane, lane.ids.begin()};
    ++size_;
    reindex(lane);
}

std::optional<ServiceQueue::Id> ServiceQueue::pop_front() {
    if (turns_.empty()) return std::nullopt;
    Lane& lane = *turns_.front();
    const Id id = lane.ids.front();
    lane.ids.pop_front();
    index_.erase(id);
    --size_;
    turns_.splice(turns_.end(), turns_, lane.turn);  // its turn is over
    reindex(lane);
    return id;
}

bool ServiceQueue::remove(Id id) {
    const auto found = index_.find(id);
    if (found == index_.end()) return false;
    Lane& lane = *found->second.lane;
    lane.ids.erase(found->second.at);
    index_.erase(found);
    --size_;
    reindex(lane);
    return true;
}

std::size_t ServiceQueue::queued_by(std::string_view client) const {
    const auto found = lanes_.find(client);
    return found == lanes_.end() ? 0 : found->second.ids.size();
}

std::vector<ServiceQueue::ClientDepth> ServiceQueue::deepest(std::size_t limit) const {
    std::vector<ClientDepth> result;
    result.reserve(std::min(limit, by_depth_.size()));
    for (auto key = by_depth_.rbegin(); key != by_depth_.rend() && result.size() < limit; ++key) {
        result.push_back(ClientDepth{key->lane->client, key->depth});
    }
    return result;
}

}  // namespace glassbox::broker
