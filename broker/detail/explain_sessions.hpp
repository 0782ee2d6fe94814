// Internal to the broker: who may write into each explain session (§5.3), and the spool records
// kept pinned so a restart finds every trace left open.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "broker/detail/string_map.hpp"

namespace glassbox::broker::detail {

// Who may write into an explain session (§5.3): the live request whose worker opened it, or
// nobody once that request ended (request 0).
struct SessionOwner {
    std::uint64_t request = 0;
};

// The owner of every session of a live request, and of the last `ended_kept` sessions that
// ended; older ones are forgotten (the trace collector guards them).
class SessionOwners {
public:
    explicit SessionOwners(std::size_t ended_kept) : ended_kept_(ended_kept) {}

    // The session's owner; null for a session never seen (or ended and forgotten).
    const SessionOwner* find(std::string_view session) const;
    // A session the request's worker opens.
    void open(std::string_view session, std::uint64_t request);
    // The request ended: its session is closed to every writer.
    void retire(std::string_view session, std::uint64_t request);
    // A session that ended with no live request (one recovered from the spool).
    void remember_ended(const std::string& session);

private:
    void keep_ended(const std::string& session);  // a key of owners_

    std::size_t ended_kept_;
    StringMap<SessionOwner> owners_;
    std::deque<const std::string*> ended_;  // oldest first; points at owners_'s keys
};

// The latest spooled record of each open session stays in the spool (its ACK waits) until a
// later record of the session is written.
class SpoolPins {
public:
    // A record appended for the session; `open`: the session goes on after it.
    void pin(std::string_view session, std::uint64_t delivery_id, bool open);
    // The session's pinned record may go once written (its session has no end coming).
    void unpin(std::string_view session);
    // An ACK of a record: true if it is pinned (removed once superseded and written).
    bool acknowledge(std::uint64_t delivery_id);
    // After a commit: the superseded records that were acknowledged, now free to remove.
    std::vector<std::uint64_t> take_released();

private:
    StringMap<std::uint64_t> pinned_;                     // session -> its latest record
    std::unordered_map<std::uint64_t, bool> pinned_ids_;  // record -> ACKed while pinned
    std::vector<std::uint64_t> unpin_after_commit_;       // superseded, once written
};

}  // namespace glassbox::broker::detail
