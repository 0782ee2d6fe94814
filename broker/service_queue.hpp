// The bounded per-service request queue: one FIFO per client served in turn, with the named
// overflow policy (protocol.md §9).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "broker/broker_config.hpp"

namespace glassbox::broker {

// Request ids of one service, each queued under its client (the routing id). pop_front takes
// from the clients in turn (round robin), oldest first within a client, so one client with a
// thousand queued requests delays another client's request by about one of its own, not by a
// thousand. The bound counts all clients together. push_back honours it; push_front (a
// re-dispatch of a request that was already accepted) does not, so a retry is never refused,
// and its client is served next. Under `drop-oldest` a full queue evicts the oldest request of
// the client with the most queued (ties: the client whose oldest request is oldest), so a
// flooding client pays for its own flood. remove() of a cancelled or expired request is O(1);
// push and pop are O(log clients).
class ServiceQueue {
public:
    using Id = std::uint64_t;

    ServiceQueue(std::size_t max_size, OverflowPolicy policy);
    ServiceQueue(const ServiceQueue&) = delete;
    ServiceQueue& operator=(const ServiceQueue&) = delete;

    struct PushOutcome {
        bool accepted = false;      // false: policy `reject` refused the new id
        std::optional<Id> evicted;  // policy `drop-oldest`: the id pushed out to make room
    };
    PushOutcome push_back(Id id, std::string_view client);
    void push_front(Id id, std::string_view client);

    std::optional<Id> pop_front();
    bool remove(Id id);  // false if the id is not queued
    bool contains(Id id) const { return index_.count(id) != 0; }

    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    std::size_t max_size() const noexcept { return max_size_; }
    OverflowPolicy policy() const noexcept { return policy_; }

    // Clients with at least one queued request.
    std::size_t clients() const noexcept { return lanes_.size(); }
    std::size_t queued_by(std::string_view client) const;
    // Up to `limit` clients with the most queued requests, most first.
    struct ClientDepth {
        std::string_view client;
        std::size_t queued = 0;
    };
    std::vector<ClientDepth> deepest(std::size_t limit) const;

private:
    struct Lane;
    // Orders lanes by depth, then by their oldest id (older last): the last one is the lane
    // drop-oldest takes from, and the first ones from the end are the deepest for status.
    struct DepthKey {
        std::size_t depth;
        Id front;
        Lane* lane;
        bool operator<(const DepthKey& other) const noexcept {
            if (depth != other.depth) return depth < other.depth;
            return front > other.front;
        }
    };
    struct Lane {
        std::string_view client;  // the lanes_ key it is stored under
        std::list<Id> ids;
        std::list<Lane*>::iterator turn;        // position in turns_
        std::set<DepthKey>::iterator by_depth;  // position in by_depth_
    };
    struct Position {
        Lane* lane;
        std::list<Id>::iterator at;
    };
    struct ClientHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view text) const noexcept {
            return std::hash<std::string_view>{}(text);
        }
    };

    Lane& lane_for(std::string_view client);
    void reindex(Lane& lane);  // after its ids changed; drops the lane once empty
    void drop_lane(Lane& lane);

    std::size_t max_size_;
    OverflowPolicy policy_;
    std::size_t size_ = 0;
    std::unordered_map<std::string, Lane, ClientHash, std::equal_to<>> lanes_;
    std::list<Lane*> turns_;  // lanes with queued ids; the front one is served next
    std::set<DepthKey> by_depth_;
    std::unordered_map<Id, Position> index_;
};

}  // namespace glassbox::broker
