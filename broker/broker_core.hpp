// Internal to the broker: the BrokerCore class (one poll loop's state) and the records it keeps
// (requests, workers, services, collectors). Its members are defined by job in broker_loop.cpp,
// client_side.cpp, worker_side.cpp, explain_router.cpp, explain_topic.cpp and status.cpp.
#pragma once

#include <zmq.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "base/log.hpp"
#include "base/result.hpp"
#include "broker/allow_list.hpp"
#include "broker/broker.hpp"
#include "broker/explain_spool.hpp"
#include "broker/service_queue.hpp"
#include "broker/topic_ledger.hpp"
#include "bus/frame_codec.hpp"
#include "bus/worker_frames.hpp"
#include "schema/protocol.hpp"

namespace glassbox::broker::detail {

struct ZapRequest;  // broker/zap_handler.hpp

namespace proto = schema::protocol;
using base::Error;
using base::ErrorType;
using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using std::chrono::milliseconds;

constexpr std::size_t kErrorTypeCount = static_cast<std::size_t>(ErrorType::kInternal) + 1;
constexpr std::uint64_t kMaxWindow = 65536;
constexpr std::size_t kMaxSessionBytes = 2048;
// Sessions one request may open (§5.3): its own trace, normally one. Bounds what a worker can
// make the broker remember for one request.
constexpr std::size_t kMaxSessionsPerRequest = 1024;

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
        return std::hash<std::string_view>{}(text);
    }
};
template <typename T>
using StringMap = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

using bus::printable;

inline std::string_view view(const zmq::message_t& frame) noexcept { return bus::view_of(frame); }

enum class ClientKind : std::uint8_t { kMdp, kGb };

struct Service;
struct Worker;

// An explain session seen in a request's stream, so an abnormal end can close it (§5.3).
struct SessionTrack {
    std::string session;
    std::uint64_t next_seq = 0;
    bool ended = false;
    // Its messages the spool did not keep (drop-newest): the broker's end marks the trace.
    std::uint64_t not_spooled = 0;
};

struct Request {
    std::uint64_t id = 0;  // broker-assigned; the worker token
    ClientKind client_kind = ClientKind::kMdp;
    bool packed = false;     // the client sent it in the packed form (§1.4): answered so too
    std::string client;      // routing id
    std::string request_id;  // GBC01 request id
    Service* service = nullptr;
    std::vector<zmq::message_t> body;
    TimePoint received;
    TimePoint deadline;
    TimePoint timer_at;
    int attempts = 0;
    bool streamed = false;   // a PARTIAL or EXPLAIN reached the broker: never re-dispatched
    bool abandoned = false;  // the client has its terminal message; the worker still holds it
    Worker* worker = nullptr;
    std::vector<SessionTrack> sessions;
    // 1 + its index in BrokerCore::batch_requests_ while its EXPLAINs wait for the commit.
    std::size_t batch_slot = 0;
};

// A request with EXPLAINs in the spool's open batch, as end_batch needs it if the batch
// cannot be written: the request may have ended (and been erased) within the batch.
struct BatchRequest {
    std::uint64_t request = 0;
    ClientKind client_kind = ClientKind::kMdp;
    bool packed = false;
    std::string client;
    std::string request_id;
    Service* service = nullptr;          // a service with workers is never collected
    std::vector<SessionTrack> sessions;  // moved here when the request ends within the batch
};

struct Worker {
    std::string identity;
    Service* service = nullptr;
    std::string host;       // the peer's address (libzmq's Peer-Address), for status by host
    bool extended = false;  // declared GBW01 or GBW02
    bus::WorkerLayout layout = bus::WorkerLayout::kClassic;  // kCompact: declared GBW02 or GBW03
    bool packed = false;  // declared GBW03: written to in the packed form (§1.4)
    // Requests it may hold at once (§5.1: the READY credit frame; 1 for 7/MDP workers) and
    // the ones it holds, by token. Abandoned requests count until their REPLY or ERROR.
    std::size_t credit = 1;
    std::unordered_map<std::uint64_t, Request*> in_flight;
    TimePoint expiry;
    TimePoint last_sent;
    bool available = false;  // in_flight < credit: in its service's available list
    std::list<Worker*>::iterator available_position;
};

struct Service {
    Service(std::string service_name, std::size_t max_queue, OverflowPolicy policy)
        : name(std::move(service_name)), queue(max_queue, policy) {}
    std::string name;
    std::string topic;  // explain.<name>
    ServiceQueue queue;
    // Workers with spare credit, least recently used at the front. A worker given a request
    // moves to the back if it has credit left, so requests spread round robin.
    std::list<Worker*> available;
    std::size_t workers = 0;
    std::size_t idle = 0;       // workers holding no request
    std::size_t credit = 0;     // sum of the workers' credit
    std::size_t in_flight = 0;  // requests held by workers (abandoned ones included)
    bool registered = false;    // a worker has registered since the broker started
};

struct Collector;

// Where the deliveries of one trace session go (§6.1, session-affine): every one to the same
// attached collector, while it stays attached.
struct SessionRoute {
    const std::string* session = nullptr;  // its key in BrokerCore::routes_
    Collector* collector = nullptr;
    // Its records at the collector: delivered and not acknowledged, or waiting for its window.
    std::uint64_t outstanding = 0;
    bool ended = false;  // its last record (complete or error) went to the collector
};

struct Collector {
    std::string identity;
    std::uint64_t window = 1;
    // Delivered, not yet acknowledged: delivery id -> the route of its session. Only these ids
    // may this collector ACK.
    std::unordered_map<std::uint64_t, SessionRoute*> in_flight;
    // Records of its sessions waiting for room in its window, oldest first.
    std::deque<std::pair<std::uint64_t, SessionRoute*>> backlog;
    TimePoint expiry;
    TimePoint last_sent;
};

// Who may write into an explain session (§5.3): the live request whose worker opened it, or
// nobody once that request ended (request 0).
struct SessionOwner {
    std::uint64_t request = 0;
};

// Rate limit of the warnings a peer can provoke at will (forged answers, foreign sessions,
// refused ACKs): at most kBurst lines a second, the rest counted and reported with the next.
class WarningBudget {
public:
    static constexpr std::uint32_t kBurst = 20;
    // Whether a line may be logged now; if so, `unlogged` is set to the lines suppressed since
    // the last one that was.
    bool take(TimePoint now, std::uint64_t& unlogged) noexcept {
        if (now - window_ >= std::chrono::seconds{1}) {
            window_ = now;
            used_ = 0;
        }
        if (used_ >= kBurst) {
            ++suppressed_;
            return false;
        }
        ++used_;
        unlogged = suppressed_;
        suppressed_ = 0;
        return true;
    }

private:
    TimePoint window_{};
    std::uint32_t used_ = 0;
    std::uint64_t suppressed_ = 0;
};

struct TimerEntry {
    TimePoint at;
    std::uint64_t request;
    bool operator>(const TimerEntry& other) const noexcept { return at > other.at; }
};

struct Counters {
    std::uint64_t requests = 0;
    std::uint64_t replies = 0;
    std::uint64_t partials = 0;
    std::uint64_t explains = 0;
    std::uint64_t explains_synthesised = 0;
    std::uint64_t published = 0;
    std::uint64_t deliveries = 0;
    std::uint64_t redeliveries = 0;
    std::uint64_t acks = 0;
    std::uint64_t retries = 0;
    std::uint64_t workers_expired = 0;
    std::uint64_t collectors_expired = 0;
    std::uint64_t dropped_frames = 0;
    std::uint64_t spool_dropped = 0;
    std::uint64_t spool_errors = 0;
    std::uint64_t send_failures = 0;
    std::uint64_t loop_errors = 0;
    std::uint64_t peers_refused = 0;     // CURVE handshakes the ZAP handler refused
    std::uint64_t messages_refused = 0;  // messages a key's roles did not allow
    // Integrity (§5.1, §5.3, §6.1): worker messages for a token the worker does not hold,
    // EXPLAINs into another request's session, EXPLAINs whose seq does not grow or that follow
    // the session's end, and ACK ids refused (not attached, not delivered to that collector).
    std::uint64_t foreign_tokens = 0;
    std::uint64_t foreign_sessions = 0;
    std::uint64_t explains_out_of_order = 0;
    std::uint64_t acks_refused = 0;
    std::array<std::uint64_t, kErrorTypeCount> errors{};
};

enum class Outlet : std::uint8_t { kRouter, kPublisher };

// What a held message carries for its request: a commit that fails under fail-request
// withholds the request's explains and turns its FINAL into an error.
enum class Carries : std::uint8_t { kOther, kExplain, kFinal };

struct Deferred {
    Outlet outlet;
    std::vector<zmq::message_t> frames;
    std::uint64_t request = 0;
    Carries carries = Carries::kOther;
};

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
    // ---- explain topic (explain_topic.cpp) ----
    base::Result<bool> open_topic();
    void serve_topic();
    void drain_publisher();
    void drain_topic_monitor();
    void serve_topic_auth();
    void cut_subscriber(std::string_view name, int fd, TopicBound bound);
    void log_subscriber_dropped(std::string_view name, std::string_view reason,
                                std::size_t subscriptions, std::uint64_t inbound);
    // The topic's watch thread: every topic_watch_interval, each subscriber connection's bytes
    // received (TCP_INFO) against max_subscriber_inbound_bytes.
    void watch_topic(std::stop_token stop);
    bool receive(zmq::socket_t& socket);
    void handle_message();
    void end_batch();
    void fire_timers();
    void tick();
    void shutdown();

    // ---- clients ----
    void on_mdp_client(std::string_view identity);
    void on_gb_client(std::string_view identity);
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
    Request* find_client_request(std::string_view identity, std::string_view request_id);
    void forget_client_request(const Request& request);  // its by_client_ entry
    void schedule(Request& request, TimePoint at);
    void on_deadline(Request& request);
    void finish(Request& request, const Error& error, bool notify_client);
    void erase_request(Request& request);
    void dispatch(Service& service);
    // One request to one worker with spare credit (the worker at the front of the available list).
    void dispatch_to(Worker& worker, Request& request);
    bool send_request_to(Worker& worker, Request& request);
    void assign(Worker& worker, Request& request);
    void release(Worker& worker, Request& request);

    // ---- workers ----
    void on_worker(std::string_view identity);
    void on_worker_ready(std::string_view identity);
    void on_worker_result(Worker& worker, char command);
    // The EXPLAIN's track in the request (new for a session the request opens), or null when
    // it is refused (§5.3): another request's session, a seq that does not grow, after the end.
    SessionTrack* admit_explain(const Worker& worker, Request& request, std::string_view session,
                                std::uint64_t seq);
    void delete_worker(Worker& worker, bool send_disconnect, std::string_view reason);
    void send_worker_command(std::string_view identity, char command);
    void send_worker_cancel(Worker& worker, const Request& request);
    Service& service_for(std::string_view name);

    // ---- explain ----
    // One explain message to the spool, the request's client (request null: none) and the
    // topic. A refused worker message (fail-request) returns the error and goes nowhere.
    std::optional<Error> emit_explain(Request* request, Service& service, SessionTrack& track,
                                      std::uint64_t seq, std::string_view state,
                                      zmq::message_t body, bool synthesised = false);
    // The broker's end of trace (§5.3) for each session of the request still open, and for
    // each one whose messages the spool did not all keep; `error` null: only the latter.
    void close_open_sessions(Request& request, const Error* error);
    void emit_trace_end(Request* request, Service& service, SessionTrack& track,
                        const Error& error);
    void note_batch(Request& request);
    void keep_batch_sessions(Request& request);
    void on_commit_failed(const Error& error);
    void commit_spool();
    // The latest spooled record of each open session stays in the spool (its ACK waits) until
    // a later record of the session is written, so a restart finds every trace left open.
    void pin(std::string_view session, std::uint64_t delivery_id, bool open);
    void unpin_session(std::string_view session);
    void release_pins(const Request& request);
    // The request's sessions are done with: unpinned, and closed to every writer (§5.3).
    void end_sessions(const Request& request);
    void retire_session(std::string_view session, std::uint64_t request);
    void remember_ended(const std::string& session);
    void keep_ended(const std::string& session);  // a key of session_owners_
    // At start: ends the traces the spool shows open (the broker stopped or died mid-trace).
    base::Result<std::size_t> close_recovered_sessions();
    // Services registered before this start (restart_grace) and the list's upkeep.
    void load_known_services();
    void remember_service(const Service& service);
    TimePoint grace_end(const Service& service) const;
    void on_collector(std::string_view identity);
    void remove_collector(const std::string& identity, bool expired);
    void pump_deliveries();
    void on_ack(std::string_view identity);
    // The collector a session's deliveries go to: its route, made on its first delivery.
    SessionRoute& route_for(const std::string& session);
    void deliver(Collector& collector, SpoolRecord record, SessionRoute& route);
    // One of the route's records is acknowledged or back in the pending set.
    void settle(SessionRoute& route);
    void forget_routes(const Collector& collector);
    // Spooled EXPLAINs a collector could take now, and whether their turn has come: deliveries
    // go out in batches at most every delivery_interval, off the answers' path (§6.1).
    bool deliveries_waiting() const {
        return !collectors_.empty() &&
               (!redeliver_.empty() || backlog_ready_ || delivery_cursor_ < spool_->last_id());
    }
    bool deliveries_due() const { return deliveries_waiting() && now_ >= next_delivery_; }
    void send_collector_command(std::string_view identity, char command);

    // ---- authentication (broker_auth.cpp, docs/security.md) ----
    // With CURVE: the allow-list, the router's CURVE options and its ZAP handler; the topic's
    // CURVE options. Called by bind() before either endpoint is bound.
    base::Result<void> open_auth();
    bool curve() const noexcept { return allow_ != nullptr; }
    // The router's ZAP requests: an allowed key is admitted, named by its public key.
    void serve_auth();
    // The topic's: an allowed key with the `subscriber` role; `name` is the ledger's.
    bool topic_peer_allowed(const ZapRequest& request);
    // The roles of the message being handled (set by handle_message): nullptr without CURVE
    // (everything is allowed); kNoRoles for a key no longer allowed.
    void read_sender();
    bool sender_is_client() const noexcept { return sender_ == nullptr || sender_->roles.client; }
    bool sender_is_collector() const noexcept {
        return sender_ == nullptr || sender_->roles.collector;
    }
    bool sender_may_serve(std::string_view service) const noexcept {
        return sender_ == nullptr || sender_->roles.may_serve(service);
    }
    std::string_view sender_name() const noexcept;
    // Counts and logs (at most once a second, with the count of those not logged) a message or
    // a connection the keys did not allow.
    void refused(std::string_view event, std::string_view peer, std::string_view detail,
                 bool connection);
    void check_allow_list();

    // ---- sending ----
    void out(std::string_view text) { out_.emplace_back(text.data(), text.size()); }
    void out(zmq::message_t&& frame) { out_.push_back(std::move(frame)); }
    // The first frame of a message to a ROUTER peer, and whether it goes in the packed form
    // (§1.4): send_out packs it then.
    void out_to(std::string_view identity, bool packed) {
        out(identity);
        out_packed_ = packed;
    }
    void out_command(char command) { out_.emplace_back(&command, 1); }
    // The sink the bus/ frame encoders write out_ through.
    auto sink() {
        return [this](std::string_view frame) { out(frame); };
    }
    void send_out(Outlet outlet = Outlet::kRouter, std::uint64_t request = 0,
                  Carries carries = Carries::kOther);
    // §2.3 holding (held_peers_): whether out_ waits for the batch's commit; what to hold.
    bool holding() const noexcept { return hold_publisher_ || !held_peers_.empty(); }
    bool held(Outlet outlet) const;
    void hold_until_commit(const Request& request);
    void release_held() noexcept {
        hold_publisher_ = false;
        held_peers_.clear();
    }
    bool transmit(Outlet outlet, std::vector<zmq::message_t>& frames);
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
    // With CURVE: the keys allowed to connect and the ZAP handler of the router's context.
    std::unique_ptr<AllowList> allow_;
    zmq::socket_t auth_;  // REP at inproc://zeromq.zap.01 (bound only with CURVE)
    const AllowedPeer* sender_ = nullptr;
    TimePoint next_allow_check_{};
    TimePoint next_refusal_log_{};
    std::uint64_t refusals_unlogged_ = 0;
    // The explain topic lives in a context of its own: one I/O thread (the order of its monitor
    // events and ZAP requests that TopicLedger relies on) and its own ZAP endpoint.
    zmq::context_t topic_context_{1};
    zmq::socket_t publisher_;
    zmq::socket_t topic_auth_;     // REP: the ZAP handler naming each subscriber connection
    zmq::socket_t topic_monitor_;  // PAIR: the XPUB's monitor (connections accepted, closed)
    TopicLedger topic_ledger_;
    TimePoint topic_trim_at_ = TimePoint::max();  // heap given back after a cut subscriber left
    // explain_subscriber_dropped is logged at most once a second (both threads log it).
    std::mutex drop_log_mutex_;
    TimePoint next_drop_log_{};
    std::uint64_t drops_unlogged_ = 0;
    // Open subscriber connections by fd (from the monitor) for the watch thread, and the
    // topic's local port (its connections are told from any other fd by it).
    std::mutex topic_fds_mutex_;
    std::unordered_map<int, TimePoint> topic_fds_;
    // Signalled when topic_fds_ gains a connection: the watch thread sleeps on it while there
    // is none, so an idle broker (or one without subscribers) does not wake up for it.
    std::condition_variable_any topic_fds_added_;
    int topic_port_ = -1;
    std::uint64_t topic_cut_for_count_ = 0;  // closed by cut_subscriber (a ledger bound)
    std::atomic<std::uint64_t> topic_cut_for_bytes_{0};  // closed by the watch thread
    std::atomic<bool> topic_trim_wanted_{false};
    std::unique_ptr<ExplainSpool> spool_;
    BoundEndpoints bound_;
    std::string instance_;
    TimePoint started_;
    TimePoint now_;
    TimePoint next_tick_;
    TimePoint next_topic_poll_{};  // the XPUB socket is polled no earlier (topic_poll_interval)
    TimePoint next_delivery_{};    // collectors get spooled EXPLAINs no earlier (delivery_interval)

    // The message being handled: frames_[0, frame_count_) with the routing id first, and views_
    // of the peer's frames (frames_[1, frame_count_)) for the bus/ decoders: views_[i] is
    // frames_[i + 1].
    std::vector<zmq::message_t> frames_;
    std::size_t frame_count_ = 0;
    bus::FrameViews views_;
    std::size_t message_bytes_ = 0;
    bool too_many_frames_ = false;
    // The message came in the packed form (§1.4): views_ are its classic frames, unpacked;
    // packed_error_ says why it could not be, if it could not.
    bool packed_in_ = false;
    std::string packed_error_;
    // The message of views_[i]: moved out of frames_ when it is a frame of its own (every frame
    // of a classic message; the last of a packed one), else a copy of its bytes in the envelope.
    zmq::message_t take_view(std::size_t i) {
        if (!packed_in_) return std::move(frames_[i + 1]);
        if (i + 1 == views_.size()) return std::move(frames_[2]);
        return zmq::message_t(views_[i].data(), views_[i].size());
    }
    std::vector<zmq::message_t> out_;
    bool out_packed_ = false;  // out_ goes in the packed form (out_to)
    std::string meta_;         // the GBW01 meta frame being written, kept for its capacity

    std::uint64_t next_request_id_ = 1;
    std::unordered_map<std::uint64_t, std::unique_ptr<Request>> requests_;
    StringMap<std::uint64_t> by_client_;  // (routing id, request id) of live GBC01 requests
    std::string key_;                     // client_key()'s buffer
    StringMap<std::unique_ptr<Worker>> workers_;
    StringMap<std::unique_ptr<Service>> services_;
    std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<>> timers_;

    StringMap<std::unique_ptr<Collector>> collectors_;
    std::vector<std::string> collector_order_;  // new sessions go round robin
    std::size_t collector_turn_ = 0;
    // Each session with records at a collector, and open sessions between their records (the
    // map's elements stay put: collectors point at them).
    StringMap<SessionRoute> routes_;
    std::size_t routes_swept_at_ = 0;  // routes_ size after the last sweep of idle routes
    std::uint64_t backlog_size_ = 0;   // records in all collectors' backlogs
    bool backlog_ready_ = false;       // an ACK made room for a collector with a backlog
    std::set<std::uint64_t> redeliver_;
    std::uint64_t delivery_cursor_ = 0;  // every id at or below was handed out once

    // An EXPLAIN appended in this batch is committed before it is forwarded (§2.3): until the
    // batch commits, the topic and each client it goes to hold their sends (in order), and
    // everything else — dispatches, other clients' replies — goes out at once.
    bool hold_publisher_ = false;
    std::vector<std::string> held_peers_;
    std::vector<Deferred> deferred_;
    std::vector<std::string> unreachable_;
    std::vector<std::string> services_to_collect_;
    std::vector<BatchRequest> batch_requests_;
    // The last commit failed (a full disk): worker EXPLAINs meet the spool policy until a
    // commit succeeds; spool_error_ says why.
    bool spool_failing_ = false;
    std::string spool_error_;

    StringMap<std::uint64_t> pinned_;                     // session -> its latest record
    std::unordered_map<std::uint64_t, bool> pinned_ids_;  // record -> ACKed while pinned
    std::vector<std::uint64_t> unpin_after_commit_;       // superseded, once written
    std::set<std::string, std::less<>> known_services_;   // the spool's `services` list

    // §5.3: the owner of every session of a live request, and of the last
    // config_.ended_sessions_kept sessions that ended (oldest first in ended_sessions_, which
    // points at the map's keys).
    StringMap<SessionOwner> session_owners_;
    std::deque<const std::string*> ended_sessions_;
    WarningBudget refusal_warnings_;

    Counters counters_;
    // Last: stopped and joined before anything it reads is destroyed.
    std::jthread topic_watch_;
};

// The worker token of a request: its id in decimal, written into `digits`.
inline std::string_view token_of(std::uint64_t id, char (&digits)[24]) noexcept {
    const auto end = std::to_chars(digits, digits + sizeof digits, id).ptr;
    return {digits, static_cast<std::size_t>(end - digits)};
}

// The by_client_ key of a GBC01 request: (routing id, request id), length-prefixed, written
// into `into` (a buffer kept for its capacity: a lookup allocates nothing).
inline std::string_view client_key(std::string_view identity, std::string_view request_id,
                                   std::string& into) {
    into.clear();
    into.push_back(static_cast<char>(identity.size()));
    into.append(identity);
    into.append(request_id);
    return into;
}

}  // namespace glassbox::broker::detail
