// The broker's mmi.status answer: services, spool and counters as one JSON object.
#include "broker/detail/broker_status.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "broker/detail/broker_auth.hpp"
#include "broker/detail/explain_spool.hpp"
#include "broker/detail/explain_topic.hpp"

#ifndef GLASSBOX_VERSION
#define GLASSBOX_VERSION "0.0.0"
#endif

namespace glassbox::broker::detail {

namespace {

using nlohmann::json;

// Each service, by name, with its workers counted by the address they connect from: which
// host runs what.
json services_status(const StatusSources& from) {
    std::vector<const Service*> sorted;
    for (const auto& [name, service] : from.services) sorted.push_back(service.get());
    std::sort(sorted.begin(), sorted.end(),
              [](const Service* a, const Service* b) { return a->name < b->name; });
    std::unordered_map<const Service*, std::map<std::string, std::size_t>> hosts;
    for (const auto& [identity, worker] : from.workers) {
        ++hosts[worker->service][worker->host.empty() ? std::string{"local"} : worker->host];
    }
    json services = json::array();
    for (const Service* service : sorted) {
        json queued_by = json::array();
        for (const auto& depth : service->queue.deepest(from.config.status_top_clients)) {
            queued_by.push_back({{"client", printable(depth.client)}, {"queued", depth.queued}});
        }
        services.push_back(
            {{"name", service->name},
             {"workers", service->workers},
             {"idle", service->idle},
             {"credit", service->credit},
             {"in_flight", service->in_flight},
             {"queued", service->queue.size()},
             {"max_queue", service->queue.max_size()},
             {"overflow", to_string(service->queue.policy())},
             {"queued_clients", service->queue.clients()},
             {"queued_by", std::move(queued_by)},
             {"hosts", hosts.count(service) != 0 ? json(hosts.at(service)) : json::object()}});
    }
    return services;
}

json security_status(const StatusSources& from) {
    const bool curve = from.auth.curve();
    return {{"mode", curve ? "curve" : "plain"},
            {"public_key", curve ? from.config.curve_public_key : std::string{}},
            {"allowed_keys", curve ? from.auth.allowed_keys() : 0},
            {"peers_refused", from.auth.peers_refused()},
            {"messages_refused", from.auth.messages_refused()}};
}

json spool_status(const StatusSources& from) {
    const ExplainSpool& spool = from.spool;
    return {{"messages", spool.messages()},
            {"bytes", spool.bytes()},
            {"max_messages", from.config.spool_max_messages},
            {"max_bytes", from.config.spool_max_bytes},
            {"policy", to_string(from.config.spool_policy)},
            {"dropped", from.counters.spool_dropped},
            {"writable", !from.spool_failing},
            {"unwritten", spool.last_id() - spool.committed_id()},
            {"error", from.spool_failing ? std::string{from.spool_error} : std::string{}},
            {"collectors", from.collectors},
            {"in_flight", from.delivered},
            {"waiting", from.waiting}};
}

json topic_status(const StatusSources& from) {
    const TopicLedger& ledger = from.topic.ledger();
    const BrokerConfig& config = from.config;
    return {{"subscribers", ledger.subscribers()},
            {"connections", ledger.open_connections()},
            {"subscriptions", ledger.subscriptions()},
            {"subscribed_bytes", ledger.bytes()},
            {"dropped_subscribers", from.topic.dropped_subscribers()},
            {"max_subscription_bytes", config.max_subscription_bytes},
            {"max_subscriptions_per_subscriber", config.max_subscriptions_per_subscriber},
            {"max_subscribed_bytes_per_subscriber", config.max_subscribed_bytes_per_subscriber},
            {"max_subscriptions", config.max_subscriptions},
            {"max_subscribed_bytes", config.max_subscribed_bytes},
            {"max_subscriber_inbound_bytes", config.max_subscriber_inbound_bytes}};
}

json counters_status(const StatusSources& from) {
    const Counters& counters = from.counters;
    json errors = json::object();
    for (std::size_t i = 0; i < kErrorTypeCount; ++i) {
        if (counters.errors[i] != 0) {
            errors[std::string{base::to_string(static_cast<ErrorType>(i))}] = counters.errors[i];
        }
    }
    return {{"requests", counters.requests},
            {"replies", counters.replies},
            {"in_flight", from.in_flight},
            {"workers", from.workers.size()},
            {"partials", counters.partials},
            {"explains", counters.explains},
            {"explains_synthesised", counters.explains_synthesised},
            {"published", counters.published},
            {"deliveries", counters.deliveries},
            {"redeliveries", counters.redeliveries},
            {"acks", counters.acks},
            {"retries", counters.retries},
            {"workers_expired", counters.workers_expired},
            {"collectors_expired", counters.collectors_expired},
            {"dropped_frames", counters.dropped_frames},
            {"send_failures", from.send_failures},
            {"spool_errors", counters.spool_errors},
            {"loop_errors", counters.loop_errors},
            {"foreign_tokens", counters.foreign_tokens},
            {"foreign_sessions", counters.foreign_sessions},
            {"explains_out_of_order", counters.explains_out_of_order},
            {"acks_refused", counters.acks_refused},
            {"errors", errors}};
}

}  // namespace

std::string status_json(const StatusSources& sources) {
    const double uptime = std::chrono::duration<double>(Clock::now() - sources.started).count();
    const json status = {
        {"broker",
         {{"version", GLASSBOX_VERSION},
          {"instance", sources.instance},
          {"uptime_s", std::round(uptime * 1000.0) / 1000.0},
          {"endpoint", sources.bound.endpoint},
          {"pub_endpoint", sources.bound.pub_endpoint}}},
        {"security", security_status(sources)},
        {"services", services_status(sources)},
        {"spool", spool_status(sources)},
        {"topic", topic_status(sources)},
        {"counters", counters_status(sources)},
    };
    return status.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace glassbox::broker::detail
