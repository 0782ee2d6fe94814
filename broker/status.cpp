// The broker's mmi.status answer: services, spool and counters as one JSON object.
#include "broker/broker_core.hpp"

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#ifndef GLASSBOX_VERSION
#define GLASSBOX_VERSION "0.0.0"
#endif

namespace glassbox::broker::detail {

std::string BrokerCore::status_json() const {
    using nlohmann::json;
    const double uptime = std::chrono::duration<double>(Clock::now() - started_).count();
    json services = json::array();
    std::vector<const Service*> sorted;
    for (const auto& [name, service] : services_) sorted.push_back(service.get());
    std::sort(sorted.begin(), sorted.end(),
              [](const Service* a, const Service* b) { return a->name < b->name; });
    // Each service's workers by the address they connect from: which host runs what.
    std::unordered_map<const Service*, std::map<std::string, std::size_t>> hosts;
    for (const auto& [identity, worker] : workers_) {
        ++hosts[worker->service][worker->host.empty() ? std::string{"local"} : worker->host];
    }
    for (const Service* service : sorted) {
        json queued_by = json::array();
        for (const auto& depth : service->queue.deepest(config_.status_top_clients)) {
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
    json errors = json::object();
    for (std::size_t i = 0; i < kErrorTypeCount; ++i) {
        if (counters_.errors[i] != 0) {
            errors[std::string{base::to_string(static_cast<ErrorType>(i))}] = counters_.errors[i];
        }
    }
    std::size_t delivered = 0;  // to collectors, not yet acknowledged
    for (const auto& [identity, collector] : collectors_) delivered += collector->in_flight.size();
    const json status = {
        {"broker",
         {{"version", GLASSBOX_VERSION},
          {"instance", instance_},
          {"uptime_s", std::round(uptime * 1000.0) / 1000.0},
          {"endpoint", bound_.endpoint},
          {"pub_endpoint", bound_.pub_endpoint}}},
        {"security",
         {{"mode", curve() ? "curve" : "plain"},
          {"public_key", curve() ? config_.curve_public_key : std::string{}},
          {"allowed_keys", curve() ? allow_->size() : 0},
          {"peers_refused", counters_.peers_refused},
          {"messages_refused", counters_.messages_refused}}},
        {"services", services},
        {"spool",
         {{"messages", spool_->messages()},
          {"bytes", spool_->bytes()},
          {"max_messages", config_.spool_max_messages},
          {"max_bytes", config_.spool_max_bytes},
          {"policy", to_string(config_.spool_policy)},
          {"dropped", counters_.spool_dropped},
          {"writable", !spool_failing_},
          {"unwritten", spool_->last_id() - spool_->committed_id()},
          {"error", spool_failing_ ? spool_error_ : std::string{}},
          {"collectors", collectors_.size()},
          {"in_flight", delivered},
          {"waiting", backlog_size_}}},
        {"topic",
         {{"subscribers", topic_ledger_.subscribers()},
          {"connections", topic_ledger_.open_connections()},
          {"subscriptions", topic_ledger_.subscriptions()},
          {"subscribed_bytes", topic_ledger_.bytes()},
          {"dropped_subscribers", topic_cut_for_count_ + topic_cut_for_bytes_.load()},
          {"max_subscription_bytes", config_.max_subscription_bytes},
          {"max_subscriptions_per_subscriber", config_.max_subscriptions_per_subscriber},
          {"max_subscribed_bytes_per_subscriber", config_.max_subscribed_bytes_per_subscriber},
          {"max_subscriptions", config_.max_subscriptions},
          {"max_subscribed_bytes", config_.max_subscribed_bytes},
          {"max_subscriber_inbound_bytes", config_.max_subscriber_inbound_bytes}}},
        {"counters",
         {{"requests", counters_.requests},
          {"replies", counters_.replies},
          {"in_flight", requests_.size()},
          {"workers", workers_.size()},
          {"partials", counters_.partials},
          {"explains", counters_.explains},
          {"explains_synthesised", counters_.explains_synthesised},
          {"published", counters_.published},
          {"deliveries", counters_.deliveries},
          {"redeliveries", counters_.redeliveries},
          {"acks", counters_.acks},
          {"retries", counters_.retries},
          {"workers_expired", counters_.workers_expired},
          {"collectors_expired", counters_.collectors_expired},
          {"dropped_frames", counters_.dropped_frames},
          {"send_failures", counters_.send_failures},
          {"spool_errors", counters_.spool_errors},
          {"loop_errors", counters_.loop_errors},
          {"foreign_tokens", counters_.foreign_tokens},
          {"foreign_sessions", counters_.foreign_sessions},
          {"explains_out_of_order", counters_.explains_out_of_order},
          {"acks_refused", counters_.acks_refused},
          {"errors", errors}}},
    };
    return status.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace glassbox::broker::detail
