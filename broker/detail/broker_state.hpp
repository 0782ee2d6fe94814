// Internal to the broker: BrokerState, what the parts of one poll loop share (the config, the
// clock, the sockets and the pieces: requests, services, workers, outbox, spool, feed, topic,
// authentication, the message being handled, counters), and the few checks and logs every part
// uses. The parts (ClientSide, WorkerSide, ExplainRouter, CollectorSide) and the loop
// (BrokerCore) each get it by reference; BrokerCore owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <zmq.hpp>

#include "base/log.hpp"
#include "broker/broker.hpp"
#include "broker/detail/broker_auth.hpp"
#include "broker/detail/broker_records.hpp"
#include "broker/detail/collector_feed.hpp"
#include "broker/detail/explain_sessions.hpp"
#include "broker/detail/explain_spool.hpp"
#include "broker/detail/explain_topic.hpp"
#include "broker/detail/inbound_message.hpp"
#include "broker/detail/outbox.hpp"
#include "broker/detail/request_table.hpp"
#include "broker/detail/service_directory.hpp"
#include "broker/detail/spool_batch.hpp"
#include "broker/detail/worker_roster.hpp"

namespace glassbox::broker::detail {

// Members are built (and destroyed, in reverse) in the order written: the pieces take
// references to the ones above them.
struct BrokerState {
    // `context`: the router's; `config` is normalised (a heartbeat of at least 1 ms, ...).
    BrokerState(zmq::context_t& context, BrokerConfig config);
    BrokerState(const BrokerState&) = delete;
    BrokerState& operator=(const BrokerState&) = delete;

    // The message being handled is dropped: counted and logged with `why`.
    void drop(std::string_view identity, std::string_view why);
    // MessageTooLarge if the message being handled is over max_message_bytes; `what` names it.
    std::optional<Error> too_large(std::string_view identity, std::string_view what) const;
    // A peer's message refused for integrity: a warning, rate limited (a peer can send them
    // at will); `fields` formats the event's key=value pairs, only for a line that is logged.
    template <typename... Args>
    void warn_refused(std::string_view event, fmt::format_string<Args...> fields, Args&&... args) {
        std::uint64_t unlogged = 0;
        if (!refusal_warnings.take(now, unlogged)) return;
        const std::string text = fmt::format(fields, std::forward<Args>(args)...);
        if (unlogged == 0) {
            log->warn("event={} {}", event, text);
        } else {
            log->warn("event={} {} unlogged={}", event, text, unlogged);
        }
    }
    void count_error(ErrorType type) { ++counters.errors[static_cast<std::size_t>(type)]; }
    // A worker or collector heard from now expires after this.
    milliseconds expiry_span() const { return config.heartbeat * config.liveness; }

    BrokerConfig config;
    std::shared_ptr<spdlog::logger> log;
    zmq::socket_t router;
    BrokerAuth auth;     // CURVE, the ZAP handler and the roles of the message being handled
    ExplainTopic topic;  // the XPUB socket, its subscribers and their bounds
    Outbox outbox;       // sending, with the §2.3 holds
    std::unique_ptr<ExplainSpool> spool;  // opened by BrokerCore::bind
    BoundEndpoints bound;
    std::string instance;
    TimePoint started;
    TimePoint now;  // the loop's clock, read once per message, timer and pass
    ServiceDirectory services;

    InboundMessage in;  // the message being handled

    RequestTable requests;
    WorkerRoster workers;

    SpoolBatch batch;  // the requests with EXPLAINs in the spool's open batch

    SessionOwners session_owners;  // §5.3: who may write into each session
    SpoolPins pins;                // each open session's latest record stays in the spool
    WarningBudget refusal_warnings;

    Counters counters;
    CollectorFeed feed;  // spooled EXPLAINs to the attached collectors (§6.1)
};

}  // namespace glassbox::broker::detail
