// The broker's feed of spooled EXPLAINs to GBE01 trace collectors: attach, windows, ACKs,
// session-affine routes, backlogs and redelivery (docs/protocol.md §6.1).
#include "broker/detail/collector_feed.hpp"

#include <algorithm>

#include "base/log.hpp"
#include "broker/detail/broker_records.hpp"
#include "broker/detail/explain_spool.hpp"
#include "broker/detail/outbox.hpp"
#include "bus/collector_frames.hpp"
#include "bus/detail/frame_io.hpp"
#include "schema/protocol.hpp"

namespace glassbox::broker::detail {

CollectorFeed::CollectorFeed(Outbox& outbox, Counters& counters,
                             std::shared_ptr<spdlog::logger> log, const TimePoint& now,
                             std::chrono::milliseconds interval)
    : outbox_(outbox), counters_(counters), log_(std::move(log)), now_(now), interval_(interval) {}

Collector& CollectorFeed::attach(std::string_view identity, std::uint64_t window, bool packed) {
    auto found = collectors_.find(identity);
    if (found == collectors_.end()) {
        auto collector = std::make_unique<Collector>();
        collector->identity.assign(identity);
        collector->last_sent = now_;
        found = collectors_.emplace(collector->identity, std::move(collector)).first;
        collector_order_.push_back(found->first);
        log_->info("event=collector_attached peer={} window={} packed={} pending={}",
                   printable(identity), window, packed, spool_->messages());
    }
    found->second->window = window;
    found->second->packed = packed;
    return *found->second;
}

Collector* CollectorFeed::find(std::string_view identity) {
    const auto found = collectors_.find(identity);
    return found == collectors_.end() ? nullptr : found->second.get();
}

bool CollectorFeed::acknowledge(Collector& collector, std::optional<std::uint64_t> id) {
    const auto held = id ? collector.in_flight.find(*id) : collector.in_flight.end();
    if (held == collector.in_flight.end()) return false;
    SessionRoute& route = *held->second;
    collector.in_flight.erase(held);
    if (!collector.backlog.empty()) backlog_ready_ = true;
    settle(route);
    return true;
}

std::vector<std::string> CollectorFeed::beat(std::chrono::milliseconds heartbeat) {
    std::vector<std::string> gone;
    for (auto& [identity, collector] : collectors_) {
        if (now_ >= collector->expiry) {
            gone.push_back(identity);
        } else if (now_ - collector->last_sent >= heartbeat) {
            outbox_.out_to(identity, collector->packed);
            bus::put_collector_command(outbox_.sink(), proto::collector_cmd::kHeartbeat);
            outbox_.send();
            collector->last_sent = now_;
        }
    }
    return gone;
}

bool CollectorFeed::waiting() const {
    return !collectors_.empty() &&
           (!redeliver_.empty() || backlog_ready_ || delivery_cursor_ < spool_->last_id());
}

std::size_t CollectorFeed::delivered() const {
    std::size_t delivered = 0;
    for (const auto& [identity, collector] : collectors_) delivered += collector->in_flight.size();
    return delivered;
}

void CollectorFeed::remove(const std::string& identity, bool expired) {
    const auto found = collectors_.find(identity);
    if (found == collectors_.end()) return;
    Collector& collector = *found->second;
    log_->info("event=collector_removed peer={} reason={} returned={} waiting={}",
               printable(identity), expired ? "expired" : "detached", collector.in_flight.size(),
               collector.backlog.size());
    // Its unacknowledged and waiting records are pending again; their sessions find a new
    // collector with the first of them, and keep it (§6.1).
    for (const auto& [id, route] : collector.in_flight) redeliver_.insert(id);
    for (const auto& [id, route] : collector.backlog) redeliver_.insert(id);
    backlog_size_ -= collector.backlog.size();
    forget_routes(collector);
    collector_order_.erase(std::remove(collector_order_.begin(), collector_order_.end(), identity),
                           collector_order_.end());
    collectors_.erase(found);
}

void CollectorFeed::pump() {
    next_delivery_ = now_ + interval_;
    backlog_ready_ = false;
    // Records waiting for their session's collector go first, as its window allows.
    if (backlog_size_ > 0) deliver_backlogs();
    // Room for new records: the windows' free slots not spoken for by a backlog.
    std::uint64_t capacity = 0;
    for (const auto& [identity, collector] : collectors_) {
        const std::uint64_t taken = collector->in_flight.size() + collector->backlog.size();
        if (taken < collector->window) capacity += collector->window - taken;
    }
    if (capacity == 0) return;
    std::vector<SpoolRecord> batch;
    while (batch.size() < capacity && !redeliver_.empty()) {
        const std::uint64_t id = *redeliver_.begin();
        redeliver_.erase(redeliver_.begin());
        auto record = spool_->read(id);
        if (!record) {
            ++counters_.spool_errors;
            log_->error("event=spool_read_failed error=\"{}\"", record.error().message);
            break;
        }
        if (record.value()) {
            ++counters_.redeliveries;
            batch.push_back(std::move(*record.value()));
        }
    }
    if (batch.size() < capacity && delivery_cursor_ < spool_->last_id()) {
        const std::size_t wanted = static_cast<std::size_t>(capacity - batch.size());
        auto taken = spool_->take_after(delivery_cursor_, wanted);  // moved out of the cache
        if (!taken) {
            ++counters_.spool_errors;
            log_->error("event=spool_read_failed error=\"{}\"", taken.error().message);
        } else {
            delivery_cursor_ = taken.value().through;
            for (auto& record : taken.value().records) batch.push_back(std::move(record));
        }
    }
    for (auto& record : batch) {
        SessionRoute& route = route_for(record.session);
        Collector& collector = *route.collector;
        ++route.outstanding;
        if (record.state != proto::kStateOpen) route.ended = true;
        if (collector.in_flight.size() < collector.window) {
            deliver(collector, std::move(record), route);
            continue;
        }
        // Its session's collector has no room: the record waits for it (read again then).
        collector.backlog.emplace_back(record.delivery_id, &route);
        ++backlog_size_;
    }
}

void CollectorFeed::deliver_backlogs() {
    for (const auto& identity : collector_order_) {
        Collector& collector = *collectors_.find(identity)->second;
        while (!collector.backlog.empty() && collector.in_flight.size() < collector.window) {
            const auto [id, route] = collector.backlog.front();
            auto record = spool_->read(id);
            if (!record) {
                ++counters_.spool_errors;
                log_->error("event=spool_read_failed error=\"{}\"", record.error().message);
                break;
            }
            collector.backlog.pop_front();
            --backlog_size_;
            if (!record.value()) {  // gone from the spool (cannot happen: never delivered)
                settle(*route);
                continue;
            }
            deliver(collector, std::move(*record.value()), *route);
        }
    }
}

SessionRoute& CollectorFeed::route_for(const std::string& session) {
    if (const auto found = routes_.find(session); found != routes_.end()) return found->second;
    // A new session goes to the next collector in turn with room to spare (any, if none has).
    Collector* chosen = nullptr;
    for (std::size_t tried = 0; tried < collector_order_.size() && chosen == nullptr; ++tried) {
        Collector& candidate =
            *collectors_.find(collector_order_[collector_turn_ % collector_order_.size()])->second;
        collector_turn_ = (collector_turn_ + 1) % collector_order_.size();
        if (candidate.in_flight.size() + candidate.backlog.size() < candidate.window) {
            chosen = &candidate;
        }
    }
    if (chosen == nullptr) {
        chosen = collectors_.find(collector_order_[collector_turn_ % collector_order_.size()])
                     ->second.get();
    }
    // Routes of open sessions with nothing at their collector stay for their next record; if
    // such routes pile up (traces whose end never came), the idle ones are dropped now and then.
    if (routes_.size() >= std::max<std::size_t>(65'536, 2 * routes_swept_at_)) {
        std::erase_if(routes_, [](const auto& entry) { return entry.second.outstanding == 0; });
        routes_swept_at_ = routes_.size();
    }
    const auto made = routes_.emplace(session, SessionRoute{}).first;
    made->second.session = &made->first;
    made->second.collector = chosen;
    return made->second;
}

void CollectorFeed::deliver(Collector& collector, SpoolRecord record, SessionRoute& route) {
    // [empty] ["GBE01"] [0x02] [delivery-id] [service] [session] [seq] [state] [body], or packed
    // [envelope] [body]
    outbox_.out_to(collector.identity, collector.packed);
    bus::put_collector_deliver(outbox_.sink(), record.delivery_id, record.service, record.session,
                               record.seq, record.state);
    outbox_.out(record.body.message());  // the frame shares the body's buffer
    collector.in_flight.emplace(record.delivery_id, &route);
    collector.last_sent = now_;
    ++counters_.deliveries;
    outbox_.send();
}

void CollectorFeed::settle(SessionRoute& route) {
    if (route.outstanding > 0) --route.outstanding;
    if (route.outstanding > 0 || !route.ended) return;
    // The session's end is acknowledged: its route is no longer needed.
    routes_.erase(routes_.find(*route.session));
}

void CollectorFeed::forget_routes(const Collector& collector) {
    std::erase_if(routes_,
                  [&collector](const auto& entry) { return entry.second.collector == &collector; });
}

}  // namespace glassbox::broker::detail
