// The bounded per-service request queue with its named overflow policy (protocol.md §9).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>

#include "broker/broker_config.hpp"

namespace glassbox::broker {

// Request ids in arrival order. push_back honours the bound; push_front (a re-dispatch of a
// request that was already accepted) does not, so a retry is never refused. Every operation,
// including remove() of a cancelled or expired request, is O(1).
class ServiceQueue {
public:
    using Id = std::uint64_t;

    ServiceQueue(std::size_t max_size, OverflowPolicy policy);

    struct PushOutcome {
        bool accepted = false;       // false: policy `reject` refused the new id
        std::optional<Id> evicted;   // policy `drop-oldest`: the id pushed out to make room
    };
    PushOutcome push_back(Id id);
    void push_front(Id id);

    std::optional<Id> pop_front();
    bool remove(Id id);  // false if the id is not queued
    bool contains(Id id) const { return index_.count(id) != 0; }

    std::size_t size() const noexcept { return order_.size(); }
    bool empty() const noexcept { return order_.empty(); }
    std::size_t max_size() const noexcept { return max_size_; }
    OverflowPolicy policy() const noexcept { return policy_; }

private:
    std::size_t max_size_;
    OverflowPolicy policy_;
    std::list<Id> order_;
    std::unordered_map<Id, std::list<Id>::iterator> index_;
};

}  // namespace glassbox::broker
