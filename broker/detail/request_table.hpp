// Internal to the broker: the live requests by id and by (client, GBC01 request id), and their
// timers (deadlines and the wait for an unknown service's workers).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "broker/detail/broker_records.hpp"
#include "broker/detail/string_map.hpp"

namespace glassbox::broker::detail {

class RequestTable {
public:
    // A new request with the next id (ids grow with arrival, also for one refused later).
    std::unique_ptr<Request> make() {
        auto request = std::make_unique<Request>();
        request->id = next_id_++;
        return request;
    }
    // The request is live: found by id and, a GBC01 one, by its client's request id.
    Request& insert(std::unique_ptr<Request> request);
    Request* find(std::uint64_t id);
    Request* find_client(std::string_view identity, std::string_view request_id);
    // Its client's request id may be used again (the client has its terminal message).
    void forget_client(const Request& request);
    void erase(const Request& request);
    std::size_t size() const noexcept { return requests_.size(); }
    // The live requests of a client (abandoned ones excepted).
    std::vector<Request*> of_client(std::string_view identity);

    // The request's timer is `at` (one timer a request: an earlier entry is stale).
    void schedule(Request& request, TimePoint at);
    std::optional<TimePoint> next_timer() const;
    // The next request whose timer is due by `now`, or null; each is handed out once.
    Request* next_due(TimePoint now);
    // Entries of finished requests stay in the heap until due; rebuilt when they dominate.
    void compact_timers();

private:
    std::uint64_t next_id_ = 1;
    std::unordered_map<std::uint64_t, std::unique_ptr<Request>> requests_;
    StringMap<std::uint64_t> by_client_;  // (routing id, request id) of live GBC01 requests
    std::string key_;                     // client_key()'s buffer
    std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<>> timers_;
};

}  // namespace glassbox::broker::detail
