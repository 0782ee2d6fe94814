// Internal to the broker: the mmi.status answer (services, security, spool, topic, counters as
// one JSON object) from what the poll loop's pieces report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "broker/broker.hpp"
#include "broker/detail/broker_records.hpp"
#include "broker/detail/string_map.hpp"

namespace glassbox::broker {
class ExplainSpool;
}

namespace glassbox::broker::detail {

class BrokerAuth;
class ExplainTopic;

// Everything mmi.status reads, borrowed for one answer.
struct StatusSources {
    const BrokerConfig& config;
    std::string_view instance;
    TimePoint started;
    const BoundEndpoints& bound;
    const BrokerAuth& auth;
    const StringMap<std::unique_ptr<Service>>& services;
    const StringMap<std::unique_ptr<Worker>>& workers;
    const ExplainSpool& spool;
    bool spool_failing;
    std::string_view spool_error;
    std::size_t collectors;
    std::size_t delivered;  // to collectors, not yet acknowledged
    std::uint64_t waiting;  // in the collectors' backlogs
    const ExplainTopic& topic;
    const Counters& counters;
    std::size_t in_flight;  // live requests
    std::uint64_t send_failures;
};

std::string status_json(const StatusSources& sources);

}  // namespace glassbox::broker::detail
