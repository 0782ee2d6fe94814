// Internal to the broker: the reliable feed of spooled EXPLAINs to GBE01 trace collectors, each
// trace session to one collector while it stays attached, within each collector's window (§6.1).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "broker/detail/string_map.hpp"

namespace glassbox::broker {
class ExplainSpool;
struct SpoolRecord;
}  // namespace glassbox::broker

namespace glassbox::broker::detail {

class Outbox;
struct Counters;

struct Collector;

// Where the deliveries of one trace session go (§6.1, session-affine): every one to the same
// attached collector, while it stays attached.
struct SessionRoute {
    const std::string* session = nullptr;  // its key in CollectorFeed::routes_
    Collector* collector = nullptr;
    // Its records at the collector: delivered and not acknowledged, or waiting for its window.
    std::uint64_t outstanding = 0;
    bool ended = false;  // its last record (complete or error) went to the collector
};

struct Collector {
    using TimePoint = std::chrono::steady_clock::time_point;
    std::string identity;
    std::uint64_t window = 1;
    // It ATTACHed in the packed form (§1.4): the broker writes to it packed too, so a DELIVER
    // is two frames on the wire (one box and unbox each under CURVE), not nine.
    bool packed = false;
    // Delivered, not yet acknowledged: delivery id -> the route of its session. Only these ids
    // may this collector ACK.
    std::unordered_map<std::uint64_t, SessionRoute*> in_flight;
    // Records of its sessions waiting for room in its window, oldest first.
    std::deque<std::pair<std::uint64_t, SessionRoute*>> backlog;
    TimePoint expiry;
    TimePoint last_sent;
};

class CollectorFeed {
public:
    using TimePoint = std::chrono::steady_clock::time_point;

    // `now` is the poll loop's clock; deliveries go out at most every `interval`.
    CollectorFeed(Outbox& outbox, Counters& counters, std::shared_ptr<spdlog::logger> log,
                  const TimePoint& now, std::chrono::milliseconds interval);
    // The spool delivered from (opened by the broker's bind).
    void use_spool(ExplainSpool& spool) noexcept { spool_ = &spool; }

    // ATTACH: a new collector (logged) or a new window (and form, `packed`) for one attached.
    Collector& attach(std::string_view identity, std::uint64_t window, bool packed);
    Collector* find(std::string_view identity);
    // DETACH, expiry or a peer gone: its unacknowledged and waiting records are pending again.
    void remove(const std::string& identity, bool expired);
    // An ACK of one id: false if it was not delivered to this collector (or not an id).
    bool acknowledge(Collector& collector, std::optional<std::uint64_t> id);
    // HEARTBEAT to the collectors that heard nothing for `heartbeat`; the expired ones.
    std::vector<std::string> beat(std::chrono::milliseconds heartbeat);

    // Spooled EXPLAINs a collector could take now, and whether their turn has come: deliveries
    // go out in batches at most every interval, off the answers' path (§6.1).
    bool waiting() const;
    bool due() const { return waiting() && now_ >= next_delivery_; }
    TimePoint next_delivery() const noexcept { return next_delivery_; }
    // A batch of deliveries: backlogs first, then records to redeliver, then new ones.
    void pump();

    std::size_t size() const noexcept { return collectors_.size(); }
    std::size_t delivered() const;  // to collectors, not yet acknowledged
    std::uint64_t backlog_size() const noexcept { return backlog_size_; }

private:
    // The collector a session's deliveries go to: its route, made on its first delivery.
    SessionRoute& route_for(const std::string& session);
    void deliver(Collector& collector, SpoolRecord record, SessionRoute& route);
    // Records waiting for their session's collector, as its window allows.
    void deliver_backlogs();
    // One of the route's records is acknowledged or back in the pending set.
    void settle(SessionRoute& route);
    void forget_routes(const Collector& collector);

    Outbox& outbox_;
    Counters& counters_;
    std::shared_ptr<spdlog::logger> log_;
    const TimePoint& now_;
    std::chrono::milliseconds interval_;
    ExplainSpool* spool_ = nullptr;
    TimePoint next_delivery_{};  // collectors get spooled EXPLAINs no earlier
    StringMap<std::unique_ptr<Collector>> collectors_;
    std::vector<std::string> collector_order_;  // new sessions go round robin
    std::size_t collector_turn_ = 0;
    // Each session with records at a collector, and open sessions between their records (the
    // map's elements stay put: collectors point at them).
    StringMap<SessionRoute> routes_;
    std::size_t routes_swept_at_ = 0;  // routes_ size after the last sweep of idle routes
    std::uint64_t backlog_size_ = 0;   // records in all collectors' backlogs
    bool backlog_ready_ = false;       // an ACK made room for a collector with a backlog
    std::set<std::uint64_t> redeliver_;
    std::uint64_t delivery_cursor_ = 0;  // every id at or below was handed out once
};

}  // namespace glassbox::broker::detail
