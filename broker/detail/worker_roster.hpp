// Internal to the broker: the registered workers by routing id, and the credit accounting that
// keeps each service's counts (workers, idle, credit, in flight) and available list true (§5.1).
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

#include "broker/detail/broker_records.hpp"
#include "broker/detail/string_map.hpp"

namespace glassbox::broker::detail {

class WorkerRoster {
public:
    Worker* find(std::string_view identity);
    const StringMap<std::unique_ptr<Worker>>& all() const noexcept { return workers_; }
    std::size_t size() const noexcept { return workers_.size(); }

    // A READY worker: counted in its service (which is now registered) and available.
    Worker& add(std::unique_ptr<Worker> worker);
    // The worker leaves its service's counts and is destroyed; the requests it held, oldest
    // first (ids grow with arrival), no longer held by any worker.
    std::vector<Request*> remove(Worker& worker);

    // A request to the worker: one unit of its credit taken (§5.1); used just now, it goes to
    // the back of the available list, or out of it when its credit is spent.
    static void assign(Worker& worker, Request& request);
    // REPLY or ERROR for a token frees one unit of the worker's credit (§5.1).
    static void release(Worker& worker, Request& request);

private:
    StringMap<std::unique_ptr<Worker>> workers_;
};

}  // namespace glassbox::broker::detail
