// The broker's registered workers and the credit accounting of their services (§5.1).
#include "broker/detail/worker_roster.hpp"

#include <algorithm>

namespace glassbox::broker::detail {

Worker* WorkerRoster::find(std::string_view identity) {
    const auto found = workers_.find(identity);
    return found == workers_.end() ? nullptr : found->second.get();
}

Worker& WorkerRoster::add(std::unique_ptr<Worker> owned) {
    Worker& worker = *owned;
    Service& service = *worker.service;
    workers_.emplace(worker.identity, std::move(owned));
    ++service.workers;
    ++service.idle;
    service.credit += worker.credit;
    service.registered = true;
    worker.available = true;
    worker.available_position = service.available.insert(service.available.end(), &worker);
    return worker;
}

std::vector<Request*> WorkerRoster::remove(Worker& worker) {
    Service& service = *worker.service;
    if (worker.available) service.available.erase(worker.available_position);
    --service.workers;
    if (worker.in_flight.empty()) --service.idle;
    service.credit -= worker.credit;
    service.in_flight -= worker.in_flight.size();
    std::vector<Request*> held;
    held.reserve(worker.in_flight.size());
    for (const auto& [token, request] : worker.in_flight) held.push_back(request);
    std::sort(held.begin(), held.end(),
              [](const Request* a, const Request* b) { return a->id < b->id; });
    const std::string identity = worker.identity;
    workers_.erase(identity);  // `worker` is gone from here on
    for (Request* request : held) request->worker = nullptr;
    return held;
}

void WorkerRoster::assign(Worker& worker, Request& request) {
    Service& service = *worker.service;
    if (worker.in_flight.empty()) --service.idle;
    worker.in_flight.emplace(request.id, &request);
    ++service.in_flight;
    request.worker = &worker;
    if (worker.available) {
        if (worker.in_flight.size() < worker.credit) {
            service.available.splice(service.available.end(), service.available,
                                     worker.available_position);
        } else {
            service.available.erase(worker.available_position);
            worker.available = false;
        }
    }
}

void WorkerRoster::release(Worker& worker, Request& request) {
    Service& service = *worker.service;
    if (worker.in_flight.erase(request.id) == 0) return;
    --service.in_flight;
    request.worker = nullptr;
    if (worker.in_flight.empty()) ++service.idle;
    if (!worker.available && worker.in_flight.size() < worker.credit) {
        worker.available = true;
        worker.available_position = service.available.insert(service.available.end(), &worker);
    }
}

}  // namespace glassbox::broker::detail
