// Internal to the broker: BrokerCore, the poll loop and the protocol handlers that compose the
// broker's pieces (broker/detail/: the inbound message, the outbox, requests, services, workers,
// explain sessions, the spool batch, the collector feed, the topic, authentication). Its members
// are defined by job in broker_loop.cpp, client_side.cpp, worker_side.cpp and explain_router.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "base/log.hpp"
#include "base/result.hpp"
#include "broker/broker.hpp"
#include "broker/detail/broker_auth.hpp"
#include "broker/detail/broker_records.hpp"
#include "broker/detail/collector_feed.hpp"
#include "broker/detail/explain_sessions.hpp"
#include "broker/detail/explain_topic.hpp"
#include "broker/detail/inbound_message.hpp"
#include "broker/detail/outbox.hpp"
#include "broker/detail/request_table.hpp"
#include "broker/detail/service_directory.hpp"
#include "broker/detail/spool_batch.hpp"
#include "broker/detail/worker_roster.hpp"
#include "broker/explain_spool.hpp"

namespace glassbox::broker::detail {

struct ZapRequest;  // broker/detail/zap_handler.hpp

class BrokerCore {
public:
    BrokerCore(zmq::context_t& context, BrokerConfig config);

    base::Result<BoundEndpoints> bind();
    void run(const std::atomic<bool>& stop_flag, const std::stop_token* token);
    const BrokerConfig& config() const noexcept { return config_; }

private:
    // ---- loop ----
    void iterate();
    void drain_router();
    void handle_message();
    void end_batch();
    void fire_timers();
    void tick();
    void shutdown();

    // ---- clients ----
    void on_mdp_client(std::string_view identity);
    void on_gb_client(std::string_view identity);
    void on_gb_request(std::string_view identity);
    void on_gb_cancel(std::string_view identity);
    void on_gb_heartbeat(std::string_view identity);
    // A GBC01 request's deadline-ms as the broker applies it.
    milliseconds request_deadline(std::uint64_t deadline_ms) const;
    // MessageTooLarge if the message being handled is over max_message_bytes; `what` names it.
    std::optional<Error> too_large(std::string_view identity, std::string_view what) const;
    void accept_request(ClientKind kind, std::string_view identity, std::string_view service_name,
                        std::string request_id, std::vector<zmq::message_t> body,
                        milliseconds deadline);
    void answer_mmi(ClientKind kind, std::string_view identity, std::string_view service,
                    std::string_view request_id, std::string_view body);
    // `packed`: the client's message (or request) came in the packed form (§1.4).
    void send_mdp_reply(std::string_view identity, std::string_view service, std::string_view body,
                        bool packed);
    void send_gb_error(std::string_view identity, std::string_view request_id, const Error& error,
                       bool packed);
    void reject(ClientKind kind, std::string_view identity, std::string_view service,
                std::string_view request_id, const Error& error);
    // A request from a key without the `client` role: Forbidden, logged and counted.
    void refuse_request(ClientKind kind, std::string_view identity, std::string_view service,
                        std::string_view request_id);
    // The terminal error message to a client, written into out_ (not sent).
    void write_error(ClientKind kind, std::string_view identity, std::string_view service,
                     std::string_view request_id, const Error& error, bool packed);

    // ---- requests ----
    void on_deadline(Request& request);
    void finish(Request& request, const Error& error, bool notify_client);
    void log_request_failed(ClientKind kind, std::string_view request_id, std::uint64_t token,
                            const std::vector<SessionTrack>& sessions, std::string_view service,
                            const Error& error);
    void erase_request(Request& request);
    void dispatch(Service& service);
    // One request to one worker with spare credit (the worker at the front of the available list).
    void dispatch_to(Worker& worker, Request& request);
    bool send_request_to(Worker& worker, Request& request);

    // ---- workers ----
    void on_worker(std::string_view identity);
    void on_worker_ready(std::string_view identity);
    void on_worker_result(Worker& worker, char command);
    // The request a REPLY, ERROR, PARTIAL or EXPLAIN names by its token, if the worker holds it
    // (§5.1); else the message is dropped or counted as forged, and null.
    Request* held_request(Worker& worker, char command);
    void forward_reply(Worker& worker, Request& request);
    void forward_partial(const Worker& worker, Request& request);
    void forward_explain(const Worker& worker, Request& request);
    // The EXPLAIN's track in the request (new for a session the request opens), or null when
    // it is refused (§5.3): another request's session, a seq that does not grow, after the end.
    SessionTrack* admit_explain(const Worker& worker, Request& request, std::string_view session,
                                std::uint64_t seq);
    void delete_worker(Worker& worker, bool send_disconnect, std::string_view reason);
    void send_worker_command(std::string_view identity, char command);
    void send_worker_cancel(Worker& worker, const Request& request);

    // ---- explain ----
    // One explain message to the spool, the request's client (request null: none) and the
    // topic. A refused worker message (fail-request) returns the error and goes nowhere.
    // The spool's part: the message appended (its sends held for the commit), dropped and
    // counted, or refused under fail-request (the error).
    std::optional<Error> spool_explain(Request* request, const Service& service,
                                       SessionTrack& track, std::uint64_t seq,
                                       std::string_view state, const zmq::message_t& body,
                                       bool synthesised);
    std::optional<Error> emit_explain(Request* request, Service& service, SessionTrack& track,
                                      std::uint64_t seq, std::string_view state,
                                      zmq::message_t body, bool synthesised = false);
    // The broker's end of trace (§5.3) for each session of the request still open, and for
    // each one whose messages the spool did not all keep; `error` null: only the latter.
    void close_open_sessions(Request& request, const Error* error);
    void emit_trace_end(Request* request, Service& service, SessionTrack& track,
                        const Error& error);
    void on_commit_failed(const Error& error);
    // Under fail-request, a request that ended within the failed batch: its traces' ends and
    // an ERROR in place of the FINAL its client was held for.
    void fail_ended_request(const BatchRequest& entry, const Error& refused);
    void commit_spool();
    void release_pins(const Request& request);
    // The request's sessions are done with: unpinned, and closed to every writer (§5.3).
    void end_sessions(const Request& request);
    // At start: ends the traces the spool shows open (the broker stopped or died mid-trace).
    base::Result<std::size_t> close_recovered_sessions();
    void on_collector(std::string_view identity);
    void on_ack(std::string_view identity);
    // An ACKed record leaves the spool, unless pinned (then once superseded and written).
    void remove_acknowledged(std::uint64_t delivery_id);
    void send_collector_command(std::string_view identity, char command);

    // Requests, workers and collectors of the peers sends found gone end (§9).
    void handle_unreachable();
    std::string status_json() const;
    void drop(std::string_view identity, std::string_view why);
    // A peer's message refused for integrity: a warning, rate limited (a peer can send them
    // at will); `fields` formats the event's key=value pairs, only for a line that is logged.
    template <typename... Args>
    void warn_refused(std::string_view event, fmt::format_string<Args...> fields, Args&&... args) {
        std::uint64_t unlogged = 0;
        if (!refusal_warnings_.take(now_, unlogged)) return;
        const std::string text = fmt::format(fields, std::forward<Args>(args)...);
        if (unlogged == 0) {
            log_->warn("event={} {}", event, text);
        } else {
            log_->warn("event={} {} unlogged={}", event, text, unlogged);
        }
    }
    void count_error(ErrorType type) { ++counters_.errors[static_cast<std::size_t>(type)]; }
    milliseconds expiry_span() const { return config_.heartbeat * config_.liveness; }

    BrokerConfig config_;
    std::shared_ptr<spdlog::logger> log_;
    zmq::socket_t router_;
    BrokerAuth auth_;     // CURVE, the ZAP handler and the roles of the message being handled
    ExplainTopic topic_;  // the XPUB socket, its subscribers and their bounds
    Outbox outbox_;       // sending, with the §2.3 holds
    std::unique_ptr<ExplainSpool> spool_;
    BoundEndpoints bound_;
    std::string instance_;
    TimePoint started_;
    TimePoint now_;
    TimePoint next_tick_;
    ServiceDirectory services_;
    TimePoint next_topic_poll_{};  // the XPUB socket is polled no earlier (topic_poll_interval)

    InboundMessage in_;  // the message being handled
    std::string meta_;   // the GBW01 meta frame being written, kept for its capacity

    RequestTable requests_;
    WorkerRoster workers_;

    SpoolBatch batch_;  // the requests with EXPLAINs in the spool's open batch
    // The last commit failed (a full disk): worker EXPLAINs meet the spool policy until a
    // commit succeeds; spool_error_ says why.
    bool spool_failing_ = false;
    std::string spool_error_;

    SessionOwners session_owners_;  // §5.3: who may write into each session
    SpoolPins pins_;                // each open session's latest record stays in the spool
    WarningBudget refusal_warnings_;

    Counters counters_;
    CollectorFeed feed_;  // spooled EXPLAINs to the attached collectors (§6.1)
};

}  // namespace glassbox::broker::detail
