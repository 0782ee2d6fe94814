// Internal to the broker: the services it knows (made on a first request or READY, collected
// once idle and never registered), and the services registered before a restart (restart_grace).
#pragma once

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.hpp"
#include "broker/broker_config.hpp"
#include "broker/detail/broker_records.hpp"
#include "broker/detail/string_map.hpp"

namespace glassbox::broker::detail {

class ServiceDirectory {
public:
    // `started`: when the broker started (restart_grace counts from it).
    ServiceDirectory(const BrokerConfig& config, std::shared_ptr<spdlog::logger> log,
                     const TimePoint& started)
        : config_(config), log_(std::move(log)), started_(started) {}

    // The service of that name, made (with its queue and topic) on first use.
    Service& service_for(std::string_view name);
    Service* find(std::string_view name);
    const StringMap<std::unique_ptr<Service>>& all() const noexcept { return services_; }

    // A service nobody registered, left with no request, goes at the end of the batch.
    void collect_later(const Service& service);
    void collect();

    // The spool folder's list of services registered there, read at start; a service that
    // registers for the first time is added to it.
    void load_known();
    void remember(const Service& service);
    // A service registered before this start may wait for its workers until then.
    TimePoint grace_end(const Service& service) const;

private:
    const BrokerConfig& config_;
    std::shared_ptr<spdlog::logger> log_;
    const TimePoint& started_;
    StringMap<std::unique_ptr<Service>> services_;
    std::vector<std::string> to_collect_;
    std::set<std::string, std::less<>> known_;  // the spool's `services` list
};

}  // namespace glassbox::broker::detail
