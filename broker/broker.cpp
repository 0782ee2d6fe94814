// The broker's poll loop: routing of GBC01/MDPC01 requests to MDPW01 workers, liveness, deadlines,
// and the explain path (spool, topic, GBE01 collectors). Frame layouts are those of docs/protocol.md.
#include "broker/broker.hpp"

#include <zmq.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <list>
#include <queue>
#include <random>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "broker/explain_spool.hpp"
#include "broker/service_queue.hpp"
#include "bus/frame_io.hpp"
#include "base/log.hpp"
#include "schema/protocol.hpp"

#ifndef GLASSBOX_VERSION
#define GLASSBOX_VERSION "0.0.0"
#endif

namespace glassbox::broker {
namespace detail {
namespace {

namespace proto = schema::protocol;
using base::Error;
using base::ErrorType;
using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using std::chrono::milliseconds;

constexpr std::size_t kErrorTypeCount = static_cast<std::size_t>(ErrorType::kInternal) + 1;
constexpr std::uint64_t kMaxWindow = 65536;
constexpr std::size_t kMaxSessionBytes = 2048;

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
        return std::hash<std::string_view>{}(text);
    }
};
template <typename T>
using StringMap = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

std::string_view view(const zmq::message_t& frame) noexcept {
    return {static_cast<const char*>(frame.data()), frame.size()};
}

bool is_command(const zmq::message_t& frame, char command) noexcept {
    return frame.size() == 1 && *static_cast<const char*>(frame.data()) == command;
}

// Printable form of a routing id or request id for logs (they are binary).
std::string printable(std::string_view bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x21 && byte <= 0x7E && c != '\\') {
            out.push_back(c);
        } else {
            out.push_back('\\');
            out.push_back(kHex[byte >> 4]);
            out.push_back(kHex[byte & 0xF]);
        }
    }
    return out;
}

bool valid_utf8(std::string_view text) noexcept {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        std::size_t extra = 0;
        if (c < 0x80) {
            ++i;
            continue;
        }
        if ((c & 0xE0) == 0xC0 && c >= 0xC2) {
            extra = 1;
        } else if ((c & 0xF0) == 0xE0) {
            extra = 2;
        } else if ((c & 0xF8) == 0xF0 && c <= 0xF4) {
            extra = 3;
        } else {
            return false;
        }
        if (i + extra >= text.size()) return false;
        for (std::size_t k = 1; k <= extra; ++k) {
            if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
        }
        i += extra + 1;
    }
    return true;
}

// Appends `text` as a JSON string. Bytes that are not UTF-8 become \u00XX, so the result is
// always valid JSON (request ids are opaque bytes).
void append_json_string(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    const bool utf8 = valid_utf8(text);
    out.push_back('"');
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(c);
        } else if (byte < 0x20 || (byte >= 0x80 && !utf8)) {
            out += "\\u00";
            out.push_back(kHex[byte >> 4]);
            out.push_back(kHex[byte & 0xF]);
        } else {
            out.push_back(c);
        }
    }
    out.push_back('"');
}

std::string error_json(const Error& error) {
    std::string out = "{\"error\":{\"type\":";
    append_json_string(out, base::to_string(error.type));
    out += ",\"message\":";
    append_json_string(out, error.message);
    out += "}}";
    return out;
}

enum class ClientKind : std::uint8_t { kMdp, kGb };

struct Service;
struct Worker;

// An explain session seen in a request's stream, so an abnormal end can close it (§5.3).
struct SessionTrack {
    std::string session;
    std::uint64_t next_seq = 0;
    bool ended = false;
};

struct Request {
    std::uint64_t id = 0;  // broker-assigned; the worker token
    ClientKind client_kind = ClientKind::kMdp;
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
};

struct Worker {
    std::string identity;
    Service* service = nullptr;
    bool extended = false;  // declared GBW01
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

struct Collector {
    std::string identity;
    std::uint64_t window = 1;
    std::unordered_set<std::uint64_t> in_flight;
    TimePoint expiry;
    TimePoint last_sent;
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
    std::array<std::uint64_t, kErrorTypeCount> errors{};
};

enum class Outlet : std::uint8_t { kRouter, kPublisher };

struct Deferred {
    Outlet outlet;
    std::vector<zmq::message_t> frames;
};

}  // namespace

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
    void drain_publisher();
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
    void send_mdp_reply(std::string_view identity, std::string_view service,
                        std::string_view body);
    void send_gb_error(std::string_view identity, std::string_view request_id, const Error& error);
    void reject(ClientKind kind, std::string_view identity, std::string_view service,
                std::string_view request_id, const Error& error);

    // ---- requests ----
    Request* find_client_request(std::string_view identity, std::string_view request_id);
    void schedule(Request& request, TimePoint at);
    void on_deadline(Request& request);
    void finish(Request& request, const Error& error, bool notify_client);
    void erase_request(Request& request);
    void dispatch(Service& service);
    bool send_request_to(Worker& worker, Request& request);
    void assign(Worker& worker, Request& request);
    void release(Worker& worker, Request& request);

    // ---- workers ----
    void on_worker(std::string_view identity);
    void on_worker_ready(std::string_view identity);
    void on_worker_result(Worker& worker, char command);
    void delete_worker(Worker& worker, bool send_disconnect, std::string_view reason);
    void send_worker_command(std::string_view identity, char command);
    void send_worker_cancel(Worker& worker, const Request& request);
    Service& service_for(std::string_view name);

    // ---- explain ----
    std::optional<Error> emit_explain(Request& request, std::string_view session,
                                      std::uint64_t seq, std::string_view state,
                                      zmq::message_t body, bool synthesised = false);
    void close_open_sessions(Request& request, const Error& error);
    void on_collector(std::string_view identity);
    void remove_collector(const std::string& identity, bool expired);
    void pump_deliveries();
    // Spooled EXPLAINs a collector could take now, and whether their turn has come: deliveries
    // go out in batches at most every delivery_interval, off the answers' path (§6.1).
    bool deliveries_waiting() const {
        return !collectors_.empty() && (!redeliver_.empty() || delivery_cursor_ < spool_->last_id());
    }
    bool deliveries_due() const { return deliveries_waiting() && now_ >= next_delivery_; }
    void send_collector_command(std::string_view identity, char command);

    // ---- sending ----
    void out(std::string_view text) { out_.emplace_back(text.data(), text.size()); }
    void out(zmq::message_t&& frame) { out_.push_back(std::move(frame)); }
    void out_command(char command) { out_.emplace_back(&command, 1); }
    void send_out(Outlet outlet = Outlet::kRouter);
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
    void count_error(ErrorType type) { ++counters_.errors[static_cast<std::size_t>(type)]; }
    milliseconds expiry_span() const { return config_.heartbeat * config_.liveness; }

    BrokerConfig config_;
    std::shared_ptr<spdlog::logger> log_;
    zmq::socket_t router_;
    zmq::socket_t publisher_;
    std::unique_ptr<ExplainSpool> spool_;
    BoundEndpoints bound_;
    std::string instance_;
    TimePoint started_;
    TimePoint now_;
    TimePoint next_tick_;
    TimePoint next_delivery_{};  // collectors get spooled EXPLAINs no earlier (delivery_interval)

    // The message being handled: frames_[0, frame_count_) with the routing id first.
    std::vector<zmq::message_t> frames_;
    std::size_t frame_count_ = 0;
    std::size_t message_bytes_ = 0;
    bool too_many_frames_ = false;
    std::vector<zmq::message_t> out_;

    std::uint64_t next_request_id_ = 1;
    std::unordered_map<std::uint64_t, std::unique_ptr<Request>> requests_;
    StringMap<std::uint64_t> by_client_;  // (routing id, request id) of live GBC01 requests
    StringMap<std::unique_ptr<Worker>> workers_;
    StringMap<std::unique_ptr<Service>> services_;
    std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<>> timers_;

    StringMap<std::unique_ptr<Collector>> collectors_;
    std::vector<std::string> collector_order_;  // round robin
    std::size_t collector_turn_ = 0;
    std::unordered_map<std::uint64_t, Collector*> delivery_owner_;
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

    Counters counters_;
};

namespace {

std::string client_key(std::string_view identity, std::string_view request_id) {
    std::string key;
    key.reserve(1 + identity.size() + request_id.size());
    key.push_back(static_cast<char>(identity.size()));
    key.append(identity);
    key.append(request_id);
    return key;
}

std::string random_instance() {
    std::random_device device;
    std::mt19937_64 generator{(static_cast<std::uint64_t>(device()) << 32) ^ device()};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id;
    std::uint64_t value = generator();
    for (int i = 0; i < 16; ++i) {
        id.push_back(kHex[value & 0xF]);
        value >>= 4;
    }
    return id;
}

}  // namespace

BrokerCore::BrokerCore(zmq::context_t& context, BrokerConfig config)
    : config_(std::move(config)),
      log_(base::component_logger("broker")),
      router_(context, zmq::socket_type::router),
      publisher_(context, zmq::socket_type::xpub),
      instance_(random_instance()),
      started_(Clock::now()),
      now_(started_),
      next_tick_(started_) {
    if (config_.heartbeat < milliseconds{1}) config_.heartbeat = milliseconds{1};
    if (config_.liveness < 1) config_.liveness = 1;
    if (config_.max_retries < 0) config_.max_retries = 0;
    if (config_.poll_interval < milliseconds{1}) config_.poll_interval = milliseconds{1};
    if (config_.max_drain == 0) config_.max_drain = 1;
    frames_.resize(8);
}

base::Result<BoundEndpoints> BrokerCore::bind() {
    auto spool = ExplainSpool::open(
        config_.spool_path, SpoolLimits{config_.spool_max_messages, config_.spool_max_bytes});
    if (!spool) return spool.error();
    spool_ = std::move(spool).value();
    if (spool_->messages() > 0) {
        log_->info("event=spool_open path={} pending={} bytes={} last_id={}",
                   config_.spool_path, spool_->messages(), spool_->bytes(), spool_->last_id());
    }

    // A frame far above the limit is refused by libzmq itself (the peer is disconnected);
    // anything up to that is read and answered with MessageTooLarge.
    const std::uint64_t hard_cap = 2ull * config_.max_message_bytes + (1u << 20);
    try {
        router_.set(zmq::sockopt::router_mandatory, 1);
        router_.set(zmq::sockopt::linger, static_cast<int>(config_.linger.count()));
        router_.set(zmq::sockopt::sndhwm, config_.send_hwm);
        router_.set(zmq::sockopt::rcvhwm, config_.receive_hwm);
        router_.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(
                                                  std::min<std::uint64_t>(hard_cap, INT64_MAX)));
        publisher_.set(zmq::sockopt::linger, static_cast<int>(config_.linger.count()));
        publisher_.set(zmq::sockopt::sndhwm, config_.send_hwm);
    } catch (const zmq::error_t& e) {
        return base::make_error(ErrorType::kInternal,
                                  std::string{"cannot configure sockets: "} + e.what());
    }
    try {
        router_.bind(config_.endpoint);
    } catch (const zmq::error_t& e) {
        return base::make_error(ErrorType::kInternal,
                                  "cannot bind " + config_.endpoint + ": " + e.what());
    }
    try {
        publisher_.bind(config_.pub_endpoint);
    } catch (const zmq::error_t& e) {
        return base::make_error(ErrorType::kInternal,
                                  "cannot bind " + config_.pub_endpoint + ": " + e.what());
    }
    bound_.endpoint = router_.get(zmq::sockopt::last_endpoint);
    bound_.pub_endpoint = publisher_.get(zmq::sockopt::last_endpoint);
    log_->info("event=bound endpoint={} pub_endpoint={} instance={} heartbeat_ms={} liveness={}",
               bound_.endpoint, bound_.pub_endpoint, instance_, config_.heartbeat.count(),
               config_.liveness);
    return bound_;
}

// ============================================================================ loop

void BrokerCore::run(const std::atomic<bool>& stop_flag, const std::stop_token* token) {
    if (!spool_) {
        log_->error("event=run_without_bind");
        return;
    }
    auto stopping = [&] {
        return stop_flag.load(std::memory_order_relaxed) ||
               (token != nullptr && token->stop_requested());
    };
    next_tick_ = Clock::now();
    while (!stopping()) {
        try {
            iterate();
        } catch (const std::exception& e) {
            ++counters_.loop_errors;
            log_->error("event=loop_error error=\"{}\"", e.what());
        } catch (...) {
            ++counters_.loop_errors;
            log_->error("event=loop_error error=unknown");
        }
    }
    try {
        shutdown();
    } catch (const std::exception& e) {
        log_->error("event=shutdown_error error=\"{}\"", e.what());
    }
}

void BrokerCore::iterate() {
    now_ = Clock::now();
    auto wait = config_.poll_interval;
    auto until = [&](TimePoint at) {
        const auto left = std::chrono::ceil<milliseconds>(at - now_);
        wait = std::clamp(left, milliseconds{0}, wait);
    };
    until(next_tick_);
    if (!timers_.empty()) until(timers_.top().at);
    if (deliveries_waiting()) until(next_delivery_);

    std::array<zmq::pollitem_t, 2> items{{
        {router_.handle(), 0, ZMQ_POLLIN, 0},
        {publisher_.handle(), 0, ZMQ_POLLIN, 0},
    }};
    try {
        zmq::poll(items, wait);
    } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw;
        return;
    }
    now_ = Clock::now();
    if ((items[0].revents & ZMQ_POLLIN) != 0) drain_router();
    if ((items[1].revents & ZMQ_POLLIN) != 0) drain_publisher();
    fire_timers();
    if (now_ >= next_tick_) tick();
    end_batch();
}

bool BrokerCore::receive(zmq::socket_t& socket) {
    frame_count_ = 0;
    message_bytes_ = 0;
    too_many_frames_ = false;
    zmq::message_t overflow;
    bool more = true;
    int flags = ZMQ_DONTWAIT;
    while (more) {
        zmq::message_t& frame =
            frame_count_ <= proto::kMaxFrames ? (frame_count_ < frames_.size()
                                                     ? frames_[frame_count_]
                                                     : frames_.emplace_back())
                                              : overflow;
        if (zmq_msg_recv(frame.handle(), socket.handle(), flags) < 0) {
            if (frame_count_ == 0 && (zmq_errno() == EAGAIN || zmq_errno() == EINTR)) return false;
            throw zmq::error_t();
        }
        flags = 0;  // the rest of a multipart message is already there
        message_bytes_ += frame.size();
        more = frame.more();
        if (frame_count_ <= proto::kMaxFrames) {
            ++frame_count_;
        } else {
            too_many_frames_ = true;
        }
    }
    // Frame 0 is the routing id: up to kMaxFrames of the peer's frames are kept, and a
    // message with more is flagged (and its surplus frames discarded) above.
    return true;
}

void BrokerCore::drain_router() {
    for (std::size_t handled = 0; handled < config_.max_drain; ++handled) {
        try {
            if (!receive(router_)) return;
        } catch (const zmq::error_t& e) {
            ++counters_.loop_errors;
            log_->error("event=receive_error error=\"{}\"", e.what());
            return;
        }
        now_ = Clock::now();
        try {
            handle_message();
        } catch (const std::exception& e) {
            ++counters_.loop_errors;
            log_->error("event=handler_error error=\"{}\"", e.what());
        }
        handle_unreachable();
    }
}

void BrokerCore::drain_publisher() {
    // Subscriptions arrive as messages on XPUB; read them so they do not pile up.
    for (std::size_t handled = 0; handled < config_.max_drain; ++handled) {
        zmq::message_t frame;
        if (zmq_msg_recv(frame.handle(), publisher_.handle(), ZMQ_DONTWAIT) < 0) return;
        if (frame.size() > 0) {
            const auto* bytes = static_cast<const char*>(frame.data());
            log_->debug("event=subscription subscribe={} topic={}", bytes[0] == 1,
                        printable(std::string_view{bytes + 1, frame.size() - 1}));
        }
    }
}

void BrokerCore::drop(std::string_view identity, std::string_view why) {
    ++counters_.dropped_frames;
    log_->warn("event=dropped peer={} frames={} bytes={} reason=\"{}\"", printable(identity),
               frame_count_ > 0 ? frame_count_ - 1 : 0, message_bytes_, why);
}

void BrokerCore::handle_message() {
    const std::string_view identity = view(frames_[0]);
    if (frame_count_ < 3 || frames_[1].size() != 0) {
        drop(identity, "no empty delimiter and header");
        return;
    }
    const std::string_view header = view(frames_[2]);
    if (header == proto::kMdpWorker) {
        on_worker(identity);
    } else if (header == proto::kGbClient) {
        on_gb_client(identity);
    } else if (header == proto::kMdpClient) {
        on_mdp_client(identity);
    } else if (header == proto::kGbCollector) {
        on_collector(identity);
    } else {
        drop(identity, "unknown protocol header '" + printable(header.substr(0, 16)) + "'");
    }
}

void BrokerCore::end_batch() {
    // Commit appended EXPLAINs, then send what waited for them; losing a peer on the way may
    // end requests, which may append more: repeat until quiet.
    for (int round = 0; round < 16 && (holding() || !deferred_.empty() || !unreachable_.empty());
         ++round) {
        if (auto committed = spool_->commit(); !committed) {
            ++counters_.spool_errors;
            log_->error("event=spool_commit_failed error=\"{}\"", committed.error().message);
        }
        release_held();
        auto batch = std::move(deferred_);
        deferred_.clear();
        for (auto& entry : batch) transmit(entry.outlet, entry.frames);
        handle_unreachable();
    }
    if (deliveries_due()) {
        pump_deliveries();
        next_delivery_ = now_ + config_.delivery_interval;
        handle_unreachable();
    }
    if (auto committed = spool_->commit(); !committed) {
        ++counters_.spool_errors;
        log_->error("event=spool_commit_failed error=\"{}\"", committed.error().message);
    }
    for (const auto& name : services_to_collect_) {
        const auto found = services_.find(name);
        if (found == services_.end()) continue;
        const Service& service = *found->second;
        if (!service.registered && service.workers == 0 && service.queue.empty()) {
            services_.erase(found);
        }
    }
    services_to_collect_.clear();
}

void BrokerCore::fire_timers() {
    while (!timers_.empty() && timers_.top().at <= now_) {
        const TimerEntry entry = timers_.top();
        timers_.pop();
        const auto found = requests_.find(entry.request);
        if (found == requests_.end()) continue;
        Request& request = *found->second;
        if (request.abandoned || request.timer_at != entry.at) continue;
        try {
            on_deadline(request);
        } catch (const std::exception& e) {
            ++counters_.loop_errors;
            log_->error("event=timer_error error=\"{}\"", e.what());
        }
        handle_unreachable();
    }
    // Entries of finished requests stay in the heap until due; rebuild when they dominate.
    if (timers_.size() > 2 * requests_.size() + 4096) {
        std::vector<TimerEntry> live;
        live.reserve(requests_.size());
        for (const auto& [id, request] : requests_) {
            if (!request->abandoned) live.push_back(TimerEntry{request->timer_at, id});
        }
        timers_ = decltype(timers_){std::greater<>{}, std::move(live)};
    }
}

void BrokerCore::tick() {
    next_tick_ = now_ + std::max(config_.heartbeat / 2, milliseconds{1});
    std::vector<Worker*> expired;
    for (auto& [identity, worker] : workers_) {
        if (now_ >= worker->expiry) {
            expired.push_back(worker.get());
        } else if (now_ - worker->last_sent >= config_.heartbeat) {
            send_worker_command(identity, proto::worker_cmd::kHeartbeat);
        }
    }
    for (Worker* worker : expired) {
        ++counters_.workers_expired;
        delete_worker(*worker, false, "expired");
    }
    std::vector<std::string> gone;
    for (auto& [identity, collector] : collectors_) {
        if (now_ >= collector->expiry) {
            gone.push_back(identity);
        } else if (now_ - collector->last_sent >= config_.heartbeat) {
            send_collector_command(identity, proto::collector_cmd::kHeartbeat);
            collector->last_sent = now_;
        }
    }
    for (const auto& identity : gone) {
        ++counters_.collectors_expired;
        remove_collector(identity, true);
    }
    handle_unreachable();
}

void BrokerCore::shutdown() {
    now_ = Clock::now();
    std::vector<std::string> identities;
    for (const auto& [identity, worker] : workers_) identities.push_back(identity);
    for (const auto& identity : identities) {
        send_worker_command(identity, proto::worker_cmd::kDisconnect);
    }
    release_held();
    for (auto& entry : deferred_) transmit(entry.outlet, entry.frames);
    deferred_.clear();
    if (auto committed = spool_->commit(); !committed) {
        log_->error("event=spool_commit_failed error=\"{}\"", committed.error().message);
    }
    log_->info("event=stopped requests={} replies={} in_flight={} spool_messages={}",
               counters_.requests, counters_.replies, requests_.size(), spool_->messages());
}

// ============================================================================ sending

bool BrokerCore::transmit(Outlet outlet, std::vector<zmq::message_t>& frames) {
    if (frames.empty()) return true;
    zmq::socket_t& socket = outlet == Outlet::kRouter ? router_ : publisher_;
    const std::size_t count = frames.size();
    for (std::size_t i = 0; i < count; ++i) {
        const int flags = ZMQ_DONTWAIT | (i + 1 < count ? ZMQ_SNDMORE : 0);
        if (zmq_msg_send(frames[i].handle(), socket.handle(), flags) >= 0) continue;
        const int error = zmq_errno();
        ++counters_.send_failures;
        if (outlet == Outlet::kRouter && i == 0) {
            // router_mandatory: EHOSTUNREACH for a peer that is gone, EAGAIN for one whose
            // queue is at the high-water mark. Either way its requests end (§9).
            std::string identity{view(frames[0])};
            log_->warn("event=send_failed peer={} error=\"{}\"", printable(identity),
                       zmq_strerror(error));
            unreachable_.push_back(std::move(identity));
        } else if (outlet == Outlet::kRouter) {
            log_->error("event=send_failed frame={} error=\"{}\"", i, zmq_strerror(error));
        }
        frames.clear();
        return false;
    }
    frames.clear();
    return true;
}

bool BrokerCore::held(Outlet outlet) const {
    if (outlet == Outlet::kPublisher) return hold_publisher_;
    if (held_peers_.empty() || out_.empty()) return false;
    const auto peer = view(out_[0]);
    return std::find(held_peers_.begin(), held_peers_.end(), peer) != held_peers_.end();
}

void BrokerCore::hold_until_commit(const Request& request) {
    hold_publisher_ = true;
    if (request.client_kind != ClientKind::kGb || request.abandoned) return;  // nothing forwarded
    if (std::find(held_peers_.begin(), held_peers_.end(), request.client) == held_peers_.end()) {
        held_peers_.push_back(request.client);
    }
}

void BrokerCore::send_out(Outlet outlet) {
    if (held(outlet)) {
        deferred_.push_back(Deferred{outlet, std::move(out_)});
        out_.clear();
        return;
    }
    transmit(outlet, out_);
}

void BrokerCore::handle_unreachable() {
    while (!unreachable_.empty()) {
        const std::string identity = std::move(unreachable_.back());
        unreachable_.pop_back();
        if (const auto worker = workers_.find(identity); worker != workers_.end()) {
            delete_worker(*worker->second, false, "unreachable");
        }
        if (collectors_.count(identity) != 0) remove_collector(identity, true);
        std::vector<Request*> orphaned;
        for (auto& [id, request] : requests_) {
            if (!request->abandoned && request->client == identity) orphaned.push_back(request.get());
        }
        for (Request* request : orphaned) {
            finish(*request,
                   base::make_error(ErrorType::kCancelled, "client unreachable"), false);
        }
    }
}

// ============================================================================ clients

void BrokerCore::send_mdp_reply(std::string_view identity, std::string_view service,
                                std::string_view body) {
    out(identity);
    out(std::string_view{});
    out(proto::kMdpClient);
    out(service);
    out(body);
    send_out();
}

void BrokerCore::send_gb_error(std::string_view identity, std::string_view request_id,
                               const Error& error) {
    out(identity);
    out(std::string_view{});
    out(proto::kGbClient);
    out_command(proto::client_cmd::kError);
    out(request_id);
    out(base::to_string(error.type));
    out(error.message);
    send_out();
}

void BrokerCore::reject(ClientKind kind, std::string_view identity, std::string_view service,
                        std::string_view request_id, const Error& error) {
    count_error(error.type);
    log_->info("event=rejected peer={} service={} request_id={} type={} message=\"{}\"",
               printable(identity), printable(service), printable(request_id),
               base::to_string(error.type), error.message);
    if (kind == ClientKind::kMdp) {
        send_mdp_reply(identity, service, error_json(error));
    } else {
        send_gb_error(identity, request_id, error);
    }
}

void BrokerCore::on_mdp_client(std::string_view identity) {
    // 7/MDP: [empty] ["MDPC01"] [service] [body]...
    if (frame_count_ < 4) {
        drop(identity, "MDPC01 request without a service frame");
        return;
    }
    const std::string service{view(frames_[3])};
    if (message_bytes_ - identity.size() > config_.max_message_bytes) {
        reject(ClientKind::kMdp, identity, service, {},
               base::make_error(ErrorType::kMessageTooLarge,
                                  "message of " + std::to_string(message_bytes_) +
                                      " bytes exceeds " +
                                      std::to_string(config_.max_message_bytes)));
        return;
    }
    if (too_many_frames_) {
        reject(ClientKind::kMdp, identity, service, {},
               base::make_error(ErrorType::kProtocolError, "more than 64 frames"));
        return;
    }
    if (!proto::is_valid_service_name(service)) {
        reject(ClientKind::kMdp, identity, service, {},
               base::make_error(ErrorType::kProtocolError, "invalid service name"));
        return;
    }
    if (service.starts_with(proto::kMmiPrefix)) {
        answer_mmi(ClientKind::kMdp, identity, service, {},
                   frame_count_ > 4 ? view(frames_[4]) : std::string_view{});
        return;
    }
    std::vector<zmq::message_t> body;
    body.reserve(frame_count_ - 4);
    for (std::size_t i = 4; i < frame_count_; ++i) body.push_back(std::move(frames_[i]));
    accept_request(ClientKind::kMdp, identity, service, {}, std::move(body),
                   config_.default_deadline);
}

void BrokerCore::on_gb_client(std::string_view identity) {
    namespace cmd = proto::client_cmd;
    if (frame_count_ < 4 || frames_[3].size() != 1) {
        reject(ClientKind::kGb, identity, {}, {},
               base::make_error(ErrorType::kProtocolError, "GBC01 message without a command"));
        return;
    }
    const zmq::message_t& command = frames_[3];
    if (is_command(command, cmd::kRequest)) {
        // [empty] ["GBC01"] [0x01] [service] [request-id] [deadline-ms] [body]
        if (frame_count_ < 6 || frames_[5].size() == 0 ||
            frames_[5].size() > proto::kMaxRequestId) {
            reject(ClientKind::kGb, identity, {}, {},
                   base::make_error(ErrorType::kProtocolError,
                                      "REQUEST without a valid request id (1-64 bytes)"));
            return;
        }
        const std::string service{view(frames_[4])};
        std::string request_id{view(frames_[5])};
        if (message_bytes_ - identity.size() > config_.max_message_bytes) {
            reject(ClientKind::kGb, identity, service, request_id,
                   base::make_error(ErrorType::kMessageTooLarge,
                                      "message of " + std::to_string(message_bytes_) +
                                          " bytes exceeds " +
                                          std::to_string(config_.max_message_bytes)));
            return;
        }
        if (frame_count_ != 8) {
            reject(ClientKind::kGb, identity, service, request_id,
                   base::make_error(ErrorType::kProtocolError,
                                      "REQUEST needs 7 frames after the routing id, got " +
                                          std::to_string(frame_count_ - 1)));
            return;
        }
        if (!proto::is_valid_service_name(service)) {
            reject(ClientKind::kGb, identity, service, request_id,
                   base::make_error(ErrorType::kProtocolError, "invalid service name"));
            return;
        }
        const auto deadline_ms = proto::parse_ascii_int(view(frames_[6]));
        if (!deadline_ms) {
            reject(ClientKind::kGb, identity, service, request_id,
                   base::make_error(ErrorType::kProtocolError,
                                      "deadline-ms is not an ascii-int"));
            return;
        }
        if (find_client_request(identity, request_id) != nullptr) {
            reject(ClientKind::kGb, identity, service, request_id,
                   base::make_error(ErrorType::kProtocolError,
                                      "request id already in flight"));
            return;
        }
        if (service.starts_with(proto::kMmiPrefix)) {
            answer_mmi(ClientKind::kGb, identity, service, request_id, view(frames_[7]));
            return;
        }
        milliseconds deadline = config_.default_deadline;
        if (*deadline_ms != 0) {
            const auto max_ms = static_cast<std::uint64_t>(config_.max_deadline.count());
            deadline = milliseconds{static_cast<milliseconds::rep>(std::min(*deadline_ms, max_ms))};
        }
        std::vector<zmq::message_t> body;
        body.push_back(std::move(frames_[7]));
        accept_request(ClientKind::kGb, identity, service, std::move(request_id), std::move(body),
                       deadline);
    } else if (is_command(command, cmd::kCancel)) {
        // [empty] ["GBC01"] [0x04] [request-id]; unknown or finished ids are ignored (§4.1).
        if (frame_count_ < 5) {
            reject(ClientKind::kGb, identity, {}, {},
                   base::make_error(ErrorType::kProtocolError, "CANCEL without a request id"));
            return;
        }
        if (Request* request = find_client_request(identity, view(frames_[4]))) {
            finish(*request, base::make_error(ErrorType::kCancelled, "cancelled by the client"),
                   true);
        }
    } else if (is_command(command, cmd::kHeartbeat)) {
        // [empty] ["GBC01"] [0x06] [request-id]...: unknown ids learn the broker restarted.
        for (std::size_t i = 4; i < frame_count_; ++i) {
            const std::string_view request_id = view(frames_[i]);
            if (request_id.empty() || find_client_request(identity, request_id) != nullptr) {
                continue;
            }
            const Error error = base::make_error(ErrorType::kBrokerRestarted,
                                                   "the broker has no record of this request");
            count_error(error.type);
            send_gb_error(identity, request_id, error);
        }
    } else {
        reject(ClientKind::kGb, identity, {}, {},
               base::make_error(ErrorType::kProtocolError,
                                  "unknown GBC01 command " +
                                      std::to_string(static_cast<int>(view(command)[0]))));
    }
}

void BrokerCore::answer_mmi(ClientKind kind, std::string_view identity, std::string_view service,
                            std::string_view request_id, std::string_view body) {
    ++counters_.requests;
    std::string answer;
    if (service == proto::kMmiService) {
        std::string_view name = body;
        // Over GBC01 the body is JSON: accept the name as a JSON string too.
        if (name.size() >= 2 && name.front() == '"' && name.back() == '"') {
            name = name.substr(1, name.size() - 2);
        }
        const auto found = services_.find(name);
        answer = found != services_.end() && found->second->workers > 0 ? "200" : "404";
    } else if (service == proto::kMmiStatus) {
        answer = status_json();
    } else if (kind == ClientKind::kMdp) {
        answer = "501";  // 7/MDP MMI (RFC 8): not implemented
    } else {
        count_error(ErrorType::kUnknownService);
        send_gb_error(identity, request_id,
                      base::make_error(ErrorType::kUnknownService,
                                         "no broker service '" + std::string{service} + "'"));
        return;
    }
    ++counters_.replies;
    if (kind == ClientKind::kMdp) {
        send_mdp_reply(identity, service, answer);
    } else {
        out(identity);
        out(std::string_view{});
        out(proto::kGbClient);
        out_command(proto::client_cmd::kFinal);
        out(request_id);
        out(answer);
        send_out();
    }
}

Service& BrokerCore::service_for(std::string_view name) {
    auto found = services_.find(name);
    if (found == services_.end()) {
        auto service = std::make_unique<Service>(std::string{name}, config_.max_queue,
                                                 config_.overflow);
        service->topic = std::string{proto::kExplainTopicPrefix} + std::string{name};
        found = services_.emplace(std::string{name}, std::move(service)).first;
    }
    return *found->second;
}

void BrokerCore::accept_request(ClientKind kind, std::string_view identity,
                                std::string_view service_name, std::string request_id,
                                std::vector<zmq::message_t> body, milliseconds deadline) {
    ++counters_.requests;
    Service& service = service_for(service_name);
    auto owned = std::make_unique<Request>();
    Request& request = *owned;
    request.id = next_request_id_++;
    request.client_kind = kind;
    request.client.assign(identity);
    request.request_id = std::move(request_id);
    request.service = &service;
    request.body = std::move(body);
    request.received = now_;
    request.deadline = now_ + deadline;

    const auto pushed = service.queue.push_back(request.id);
    if (!pushed.accepted) {
        reject(kind, identity, service.name, request.request_id,
               base::make_error(ErrorType::kQueueFull,
                                  "queue of '" + service.name + "' is full (" +
                                      std::to_string(service.queue.max_size()) + ")"));
        if (!service.registered) services_to_collect_.push_back(service.name);
        return;
    }
    requests_.emplace(request.id, std::move(owned));
    if (kind == ClientKind::kGb) {
        by_client_.emplace(client_key(request.client, request.request_id), request.id);
    }
    // A service nobody ever registered gets unknown_service_wait to show up (§9).
    schedule(request, service.registered
                          ? request.deadline
                          : std::min(request.deadline, now_ + config_.unknown_service_wait));
    if (pushed.evicted) {
        if (const auto evicted = requests_.find(*pushed.evicted); evicted != requests_.end()) {
            finish(*evicted->second,
                   base::make_error(ErrorType::kEvicted,
                                      "dropped from the full queue of '" + service.name +
                                          "' for a newer request"),
                   true);
        }
    }
    dispatch(service);
}

Request* BrokerCore::find_client_request(std::string_view identity, std::string_view request_id) {
    const auto found = by_client_.find(client_key(identity, request_id));
    if (found == by_client_.end()) return nullptr;
    const auto request = requests_.find(found->second);
    return request == requests_.end() ? nullptr : request->second.get();
}

void BrokerCore::schedule(Request& request, TimePoint at) {
    request.timer_at = at;
    timers_.push(TimerEntry{at, request.id});
}

void BrokerCore::on_deadline(Request& request) {
    Service& service = *request.service;
    const bool queued = request.worker == nullptr;
    if (now_ < request.deadline) {
        if (queued && !service.registered) {
            finish(request,
                   base::make_error(ErrorType::kUnknownService,
                                      "no worker has registered service '" + service.name + "'"),
                   true);
        } else {
            schedule(request, request.deadline);
        }
        return;
    }
    if (queued && !service.registered) {
        finish(request,
               base::make_error(ErrorType::kUnknownService,
                                  "no worker has registered service '" + service.name + "'"),
               true);
    } else if (queued && service.workers == 0) {
        finish(request,
               base::make_error(ErrorType::kServiceUnavailable,
                                  "no live worker for '" + service.name + "' before the deadline"),
               true);
    } else {
        const auto waited =
            std::chrono::duration_cast<milliseconds>(request.deadline - request.received);
        finish(request,
               base::make_error(ErrorType::kDeadlineExceeded,
                                  "no reply within " + std::to_string(waited.count()) + " ms"),
               true);
    }
}

void BrokerCore::finish(Request& request, const Error& error, bool notify_client) {
    count_error(error.type);
    log_->info("event=request_failed request={} request_id={} service={} type={} message=\"{}\"",
               request.id, printable(request.request_id), request.service->name,
               base::to_string(error.type), error.message);
    close_open_sessions(request, error);
    if (notify_client) {
        if (request.client_kind == ClientKind::kMdp) {
            send_mdp_reply(request.client, request.service->name, error_json(error));
        } else {
            send_gb_error(request.client, request.request_id, error);
        }
    }
    if (request.worker != nullptr) {
        // The worker still holds the request: it must end it before it is ready again (§5.3).
        if (request.client_kind == ClientKind::kGb) {
            by_client_.erase(client_key(request.client, request.request_id));
        }
        request.abandoned = true;
        request.body.clear();
        send_worker_cancel(*request.worker, request);
        return;
    }
    request.service->queue.remove(request.id);
    erase_request(request);
}

void BrokerCore::erase_request(Request& request) {
    if (request.client_kind == ClientKind::kGb && !request.abandoned) {
        by_client_.erase(client_key(request.client, request.request_id));
    }
    if (!request.service->registered) services_to_collect_.push_back(request.service->name);
    requests_.erase(request.id);
}

void BrokerCore::dispatch(Service& service) {
    // O(1) per request: the least recently used worker with spare credit takes the oldest.
    while (!service.available.empty() && !service.queue.empty()) {
        const auto id = service.queue.pop_front();
        const auto found = requests_.find(*id);
        if (found == requests_.end()) continue;
        Request& request = *found->second;
        Worker& worker = *service.available.front();
        if (worker.extended && request.body.size() != 1) {
            finish(request,
                   base::make_error(ErrorType::kProtocolError,
                                      "a GBW01 service takes exactly one body frame"),
                   true);
            continue;
        }
        assign(worker, request);
        ++request.attempts;
        send_request_to(worker, request);
    }
}

void BrokerCore::assign(Worker& worker, Request& request) {
    Service& service = *worker.service;
    if (worker.in_flight.empty()) --service.idle;
    worker.in_flight.emplace(request.id, &request);
    ++service.in_flight;
    request.worker = &worker;
    // Used just now: to the back of the available list, or out of it when its credit is spent.
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

// REPLY or ERROR for a token frees one unit of the worker's credit (§5.1).
void BrokerCore::release(Worker& worker, Request& request) {
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

bool BrokerCore::send_request_to(Worker& worker, Request& request) {
    // [empty] ["MDPW01"] [0x02] [token] [empty] [body]... (§5.1)
    out(worker.identity);
    out(std::string_view{});
    out(proto::kMdpWorker);
    out_command(proto::worker_cmd::kRequest);
    out(std::to_string(request.id));
    out(std::string_view{});
    if (worker.extended) {
        std::string meta = "{\"request_id\":";
        if (request.client_kind == ClientKind::kGb) {
            append_json_string(meta, request.request_id);
        } else {
            append_json_string(meta, std::to_string(request.id));
        }
        meta += ",\"service\":";
        append_json_string(meta, request.service->name);
        const auto left = std::max(
            milliseconds{0}, std::chrono::duration_cast<milliseconds>(request.deadline - now_));
        meta += ",\"deadline_ms\":" + std::to_string(left.count());
        meta += ",\"attempt\":" + std::to_string(request.attempts);
        meta += request.client_kind == ClientKind::kGb ? ",\"client\":\"GBC01\"}"
                                                       : ",\"client\":\"MDPC01\"}";
        out(meta);
    }
    // Copies share the payload (libzmq reference counts large messages): the body stays
    // available for a re-dispatch.
    for (auto& frame : request.body) {
        zmq::message_t copy;
        copy.copy(frame);
        out(std::move(copy));
    }
    worker.last_sent = now_;
    send_out();
    return true;
}

// ============================================================================ workers

void BrokerCore::send_worker_command(std::string_view identity, char command) {
    out(identity);
    out(std::string_view{});
    out(proto::kMdpWorker);
    out_command(command);
    if (const auto worker = workers_.find(identity); worker != workers_.end()) {
        worker->second->last_sent = now_;
    }
    send_out();
}

void BrokerCore::send_worker_cancel(Worker& worker, const Request& request) {
    if (!worker.extended) return;  // a plain 7/MDP worker has no CANCEL; its reply is discarded
    out(worker.identity);
    out(std::string_view{});
    out(proto::kMdpWorker);
    out_command(proto::worker_cmd::kCancel);
    out(std::to_string(request.id));
    worker.last_sent = now_;
    send_out();
}

void BrokerCore::on_worker(std::string_view identity) {
    namespace cmd = proto::worker_cmd;
    if (frame_count_ < 4 || frames_[3].size() != 1) {
        drop(identity, "MDPW01 message without a command");
        if (const auto found = workers_.find(identity); found != workers_.end()) {
            delete_worker(*found->second, true, "protocol error: no command");
        }
        return;
    }
    const zmq::message_t& command = frames_[3];
    if (is_command(command, cmd::kReady)) {
        on_worker_ready(identity);
        return;
    }
    const auto found = workers_.find(identity);
    if (found == workers_.end()) {
        // 7/MDP: any command but READY from an unknown worker is answered with DISCONNECT.
        if (!is_command(command, cmd::kDisconnect)) {
            log_->info("event=unknown_worker peer={} command={}", printable(identity),
                       static_cast<int>(view(command)[0]));
            send_worker_command(identity, cmd::kDisconnect);
        }
        return;
    }
    Worker& worker = *found->second;
    worker.expiry = now_ + expiry_span();
    const char code = view(command)[0];
    switch (code) {
        case cmd::kHeartbeat:
            return;
        case cmd::kDisconnect:
            delete_worker(worker, false, "disconnected");
            return;
        case cmd::kReply:
            on_worker_result(worker, code);
            return;
        case cmd::kPartial:
        case cmd::kExplain:
        case cmd::kError:
            if (worker.extended) {
                on_worker_result(worker, code);
                return;
            }
            break;
        default:
            break;
    }
    drop(identity, "unknown MDPW01 command " + std::to_string(static_cast<int>(code)));
    delete_worker(worker, true, "protocol error: unknown command");
}

void BrokerCore::on_worker_ready(std::string_view identity) {
    // [empty] ["MDPW01"] [0x01] [service] ["GBW01"]? [credit]?
    if (const auto known = workers_.find(identity); known != workers_.end()) {
        // 7/MDP: READY from a worker already known is a protocol error.
        delete_worker(*known->second, true, "protocol error: second READY");
        return;
    }
    const std::string_view service_name =
        frame_count_ >= 5 ? view(frames_[4]) : std::string_view{};
    std::string_view problem;
    std::uint64_t credit = 1;
    if (frame_count_ < 5 || frame_count_ > 7 || !proto::is_valid_service_name(service_name) ||
        service_name.starts_with(proto::kMmiPrefix)) {
        problem = "bad service or frame count";
    } else if (frame_count_ == 7) {
        // §5.1: only a GBW01 worker declares a credit, an ascii-int in 1-1024.
        const auto declared = proto::parse_ascii_int(view(frames_[6]));
        if (view(frames_[5]) != proto::kGbWorkerCapability) {
            problem = "credit frame without GBW01";
        } else if (!declared || *declared < 1 || *declared > proto::kMaxWorkerCredit) {
            problem = "credit is not an ascii-int in 1-1024";
        } else {
            credit = *declared;
        }
    }
    if (!problem.empty()) {
        log_->warn("event=bad_ready peer={} service={} reason=\"{}\"", printable(identity),
                   printable(service_name), problem);
        ++counters_.dropped_frames;
        send_worker_command(identity, proto::worker_cmd::kDisconnect);
        return;
    }
    Service& service = service_for(service_name);
    auto owned = std::make_unique<Worker>();
    Worker& worker = *owned;
    worker.identity.assign(identity);
    worker.service = &service;
    worker.extended = frame_count_ >= 6 && view(frames_[5]) == proto::kGbWorkerCapability;
    worker.credit = static_cast<std::size_t>(credit);
    worker.expiry = now_ + expiry_span();
    worker.last_sent = now_;
    workers_.emplace(worker.identity, std::move(owned));
    ++service.workers;
    ++service.idle;
    service.credit += worker.credit;
    service.registered = true;
    worker.available = true;
    worker.available_position = service.available.insert(service.available.end(), &worker);
    log_->info("event=worker_ready peer={} service={} extended={} credit={} workers={}",
               printable(identity), service.name, worker.extended, worker.credit,
               service.workers);
    dispatch(service);
}

void BrokerCore::delete_worker(Worker& worker, bool send_disconnect, std::string_view reason) {
    log_->info("event=worker_removed peer={} service={} reason={}", printable(worker.identity),
               worker.service->name, reason);
    if (send_disconnect) send_worker_command(worker.identity, proto::worker_cmd::kDisconnect);
    Service& service = *worker.service;
    if (worker.available) service.available.erase(worker.available_position);
    --service.workers;
    if (worker.in_flight.empty()) --service.idle;
    service.credit -= worker.credit;
    service.in_flight -= worker.in_flight.size();
    // Oldest first (ids grow with arrival), so re-queued requests keep their order at the front.
    std::vector<Request*> held;
    held.reserve(worker.in_flight.size());
    for (const auto& [token, request] : worker.in_flight) held.push_back(request);
    std::sort(held.begin(), held.end(),
              [](const Request* a, const Request* b) { return a->id < b->id; });
    const std::string identity = worker.identity;
    workers_.erase(identity);  // `worker` is gone from here on
    for (Request* request : held) request->worker = nullptr;

    // §2.2, for each request on its own: a stream is never replayed; a request the worker
    // sent nothing for goes back to the front of the queue while retries last.
    std::vector<std::uint64_t> requeue;
    for (Request* request : held) {
        if (request->abandoned) {
            erase_request(*request);
        } else if (request->streamed) {
            finish(*request,
                   base::make_error(ErrorType::kWorkerLost,
                                      "worker lost mid-stream (" + std::string{reason} + ")"),
                   true);
        } else if (request->attempts > config_.max_retries) {
            finish(*request,
                   base::make_error(ErrorType::kWorkerLost,
                                      "worker lost before replying, " +
                                          std::to_string(request->attempts) + " attempts"),
                   true);
        } else {
            ++counters_.retries;
            log_->info("event=redispatch request={} service={} attempt={}", request->id,
                       service.name, request->attempts + 1);
            requeue.push_back(request->id);
        }
    }
    if (requeue.empty()) return;
    for (auto id = requeue.rbegin(); id != requeue.rend(); ++id) service.queue.push_front(*id);
    dispatch(service);
}

void BrokerCore::on_worker_result(Worker& worker, char code) {
    namespace cmd = proto::worker_cmd;
    // [empty] ["MDPW01"] [command] [token] [empty] ...
    if (frame_count_ < 6 || frames_[5].size() != 0) {
        drop(worker.identity, "worker message without token and empty frame");
        return;
    }
    const auto token = proto::parse_ascii_int(view(frames_[4]));
    const auto held = token ? worker.in_flight.find(*token) : worker.in_flight.end();
    if (held == worker.in_flight.end()) {
        // A late answer for a request this worker no longer holds (re-dispatched, expired).
        log_->debug("event=stale_worker_message peer={} token={}", printable(worker.identity),
                    printable(view(frames_[4])));
        return;
    }
    Request* request = held->second;
    const bool terminal = code == cmd::kReply || code == cmd::kError;
    if (request->abandoned) {
        if (terminal) {
            release(worker, *request);
            erase_request(*request);
            dispatch(*worker.service);
        }
        return;
    }
    Service& service = *request->service;
    if (message_bytes_ - worker.identity.size() > config_.max_message_bytes || too_many_frames_) {
        const Error error = too_many_frames_
                                ? base::make_error(ErrorType::kProtocolError,
                                                     "worker message of more than 64 frames")
                                : base::make_error(ErrorType::kMessageTooLarge,
                                                     "worker message of " +
                                                         std::to_string(message_bytes_) +
                                                         " bytes exceeds " +
                                                         std::to_string(config_.max_message_bytes));
        if (terminal) {
            release(worker, *request);  // the worker is done with it: no CANCEL
            finish(*request, error, true);
            dispatch(*worker.service);
        } else {
            finish(*request, error, true);  // abandons the request and CANCELs the worker
        }
        return;
    }

    if (code == cmd::kReply) {
        ++counters_.replies;
        out(request->client);
        out(std::string_view{});
        if (request->client_kind == ClientKind::kMdp) {
            out(proto::kMdpClient);
            out(service.name);
        } else {
            out(proto::kGbClient);
            out_command(proto::client_cmd::kFinal);
            out(request->request_id);
        }
        for (std::size_t i = 6; i < frame_count_; ++i) out(std::move(frames_[i]));
        if (frame_count_ == 6) out(std::string_view{});
        send_out();
        release(worker, *request);
        erase_request(*request);
        dispatch(*worker.service);
        return;
    }
    if (code == cmd::kError) {
        // [type] [message]; an unknown type word is reported as Internal.
        Error error;
        const auto type = frame_count_ >= 7 ? base::error_type_from_string(view(frames_[6]))
                                            : std::nullopt;
        error.type = type.value_or(ErrorType::kInternal);
        error.message = frame_count_ >= 8 ? std::string{view(frames_[7])} : std::string{};
        if (!type && frame_count_ >= 7) {
            error.message = "worker sent error type '" + printable(view(frames_[6])) + "': " +
                            error.message;
        }
        release(worker, *request);  // ends normally from the worker's side: no CANCEL
        finish(*request, error, true);
        dispatch(*worker.service);
        return;
    }
    if (code == cmd::kPartial) {
        if (frame_count_ != 7) {
            drop(worker.identity, "PARTIAL needs one body frame");
            return;
        }
        ++counters_.partials;
        request->streamed = true;
        if (request->client_kind == ClientKind::kGb) {
            out(request->client);
            out(std::string_view{});
            out(proto::kGbClient);
            out_command(proto::client_cmd::kPartial);
            out(request->request_id);
            out(proto::kKindData);
            out(std::move(frames_[6]));
            send_out();
        }
        return;
    }
    // EXPLAIN [session] [seq] [state] [body]
    if (frame_count_ != 10) {
        drop(worker.identity, "EXPLAIN needs session, seq, state and body frames");
        return;
    }
    const std::string_view session = view(frames_[6]);
    const auto seq = proto::parse_ascii_int(view(frames_[7]));
    const std::string_view state = view(frames_[8]);
    if (session.empty() || session.size() > kMaxSessionBytes || !seq ||
        (state != proto::kStateOpen && state != proto::kStateComplete &&
         state != proto::kStateError)) {
        drop(worker.identity, "malformed EXPLAIN (session, seq or state)");
        return;
    }
    request->streamed = true;
    auto track = std::find_if(request->sessions.begin(), request->sessions.end(),
                              [&](const SessionTrack& t) { return t.session == session; });
    if (track == request->sessions.end()) {
        request->sessions.push_back(SessionTrack{std::string{session}, 0, false});
        track = std::prev(request->sessions.end());
    }
    ++counters_.explains;
    if (auto refused = emit_explain(*request, session, *seq, state, std::move(frames_[9]))) {
        finish(*request, *refused, true);  // the refused message does not count as sent
        return;
    }
    track->next_seq = std::max(track->next_seq, *seq + 1);
    track->ended = state != proto::kStateOpen;
}

// ============================================================================ explain

std::optional<Error> BrokerCore::emit_explain(Request& request, std::string_view session,
                                              std::uint64_t seq, std::string_view state,
                                              zmq::message_t body, bool synthesised) {
    Service& service = *request.service;
    SpoolRecord record;
    record.service = service.name;
    record.session.assign(session);
    record.seq = seq;
    record.state.assign(state);
    record.body.assign(view(body));
    if (spool_->has_room(record.bytes())) {
        if (auto appended = spool_->append(std::move(record)); appended) {
            hold_until_commit(request);  // forwarded after the batch commits (§2.3)
        } else {
            ++counters_.spool_errors;
            log_->error("event=spool_append_failed session={} seq={} error=\"{}\"",
                        printable(session), seq, appended.error().message);
        }
    } else if (config_.spool_policy == SpoolPolicy::kFailRequest && !synthesised) {
        return base::make_error(ErrorType::kSpoolFull,
                                  "explain spool full (" + std::to_string(spool_->messages()) +
                                      " messages, " + std::to_string(spool_->bytes()) +
                                      " bytes)");
    } else {
        // drop-newest, or the broker's own end of trace: forwarded even when it cannot be kept.
        ++counters_.spool_dropped;
        log_->warn("event=explain_not_spooled service={} session={} seq={} reason=spool_full",
                   service.name, printable(session), seq);
    }
    const std::string seq_text = std::to_string(seq);
    if (request.client_kind == ClientKind::kGb && !request.abandoned) {
        zmq::message_t copy;
        copy.copy(body);
        out(request.client);
        out(std::string_view{});
        out(proto::kGbClient);
        out_command(proto::client_cmd::kPartial);
        out(request.request_id);
        out(proto::kKindExplain);
        out(std::move(copy));
        send_out();
    }
    // §6.2: [topic] [session] [seq] [state] [body]
    out(service.topic);
    out(session);
    out(seq_text);
    out(state);
    out(std::move(body));
    send_out(Outlet::kPublisher);
    ++counters_.published;
    return std::nullopt;
}

void BrokerCore::close_open_sessions(Request& request, const Error& error) {
    for (auto& track : request.sessions) {
        if (track.ended) continue;
        track.ended = true;
        const nlohmann::json body = {
            {"message_type", "explain"},
            {"session", track.session},
            {"seq", track.next_seq},
            {"service", request.service->name},
            {"end_of_trace", true},
            {"trace_status", "error"},
            {"error", {{"type", base::to_string(error.type)}, {"message", error.message}}},
            {"explain_triples", nlohmann::json::array()},
        };
        const std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        ++counters_.explains_synthesised;
        (void)emit_explain(request, track.session, track.next_seq, proto::kStateError,
                           zmq::message_t{text.data(), text.size()}, true);
        ++track.next_seq;
    }
}

void BrokerCore::send_collector_command(std::string_view identity, char command) {
    out(identity);
    out(std::string_view{});
    out(proto::kGbCollector);
    out_command(command);
    send_out();
}

void BrokerCore::on_collector(std::string_view identity) {
    namespace cmd = proto::collector_cmd;
    if (frame_count_ < 4 || frames_[3].size() != 1) {
        drop(identity, "GBE01 message without a command");
        send_collector_command(identity, cmd::kDetach);
        return;
    }
    const char code = view(frames_[3])[0];
    if (code == cmd::kAck) {
        // [delivery-id]...; applied whether or not the sender is attached (§6.1).
        for (std::size_t i = 4; i < frame_count_; ++i) {
            const auto id = proto::parse_ascii_int(view(frames_[i]));
            if (!id) continue;
            if (auto removed = spool_->ack(*id); !removed) {
                ++counters_.spool_errors;
                log_->error("event=spool_ack_failed delivery_id={} error=\"{}\"", *id,
                            removed.error().message);
            } else if (removed.value()) {
                ++counters_.acks;
            }
            if (const auto owner = delivery_owner_.find(*id); owner != delivery_owner_.end()) {
                owner->second->in_flight.erase(*id);
                delivery_owner_.erase(owner);
            }
            redeliver_.erase(*id);
        }
        if (const auto found = collectors_.find(identity); found != collectors_.end()) {
            found->second->expiry = now_ + expiry_span();
        }
        return;
    }
    if (code == cmd::kAttach) {
        const auto window =
            frame_count_ == 5 ? proto::parse_ascii_int(view(frames_[4])) : std::nullopt;
        if (!window || *window < 1 || *window > kMaxWindow) {
            drop(identity, "ATTACH with a window outside 1-65536");
            send_collector_command(identity, cmd::kDetach);
            return;
        }
        auto found = collectors_.find(identity);
        if (found == collectors_.end()) {
            auto collector = std::make_unique<Collector>();
            collector->identity.assign(identity);
            collector->last_sent = now_;
            found = collectors_.emplace(collector->identity, std::move(collector)).first;
            collector_order_.push_back(found->first);
            log_->info("event=collector_attached peer={} window={} pending={}",
                       printable(identity), *window, spool_->messages());
        }
        found->second->window = *window;
        found->second->expiry = now_ + expiry_span();
        return;
    }
    const auto found = collectors_.find(identity);
    if (found == collectors_.end()) {
        if (code != cmd::kDetach) send_collector_command(identity, cmd::kDetach);
        return;
    }
    found->second->expiry = now_ + expiry_span();
    if (code == cmd::kHeartbeat) return;
    if (code == cmd::kDetach) {
        remove_collector(found->first, false);
        return;
    }
    drop(identity, "unknown GBE01 command " + std::to_string(static_cast<int>(code)));
    const std::string gone = found->first;
    remove_collector(gone, false);
    send_collector_command(gone, cmd::kDetach);
}

void BrokerCore::remove_collector(const std::string& identity, bool expired) {
    const auto found = collectors_.find(identity);
    if (found == collectors_.end()) return;
    Collector& collector = *found->second;
    log_->info("event=collector_removed peer={} reason={} returned={}", printable(identity),
               expired ? "expired" : "detached", collector.in_flight.size());
    for (const auto id : collector.in_flight) {
        delivery_owner_.erase(id);
        redeliver_.insert(id);
    }
    collector_order_.erase(
        std::remove(collector_order_.begin(), collector_order_.end(), identity),
        collector_order_.end());
    collectors_.erase(found);
}

void BrokerCore::pump_deliveries() {
    std::uint64_t capacity = 0;
    for (const auto& [identity, collector] : collectors_) {
        if (collector->in_flight.size() < collector->window) {
            capacity += collector->window - collector->in_flight.size();
        }
    }
    if (capacity == 0) return;
    std::vector<SpoolRecord> batch;
    while (batch.size() < capacity && !redeliver_.empty()) {
        const std::uint64_t id = *redeliver_.begin();
        redeliver_.erase(redeliver_.begin());
        auto record = spool_->read(id);
        if (!record) {
            ++counters_.spool_errors;
            log_->error("event=spool_read_failed error=\"{}\"", record.error().message);
            break;
        }
        if (record.value()) {
            ++counters_.redeliveries;
            batch.push_back(std::move(*record.value()));
        }
    }
    if (batch.size() < capacity && delivery_cursor_ < spool_->last_id()) {
        const std::size_t wanted = static_cast<std::size_t>(capacity - batch.size());
        auto taken = spool_->take_after(delivery_cursor_, wanted);  // moved out of the cache
        if (!taken) {
            ++counters_.spool_errors;
            log_->error("event=spool_read_failed error=\"{}\"", taken.error().message);
        } else {
            delivery_cursor_ = taken.value().through;
            for (auto& record : taken.value().records) batch.push_back(std::move(record));
        }
    }
    std::size_t turn = collector_turn_;
    for (auto& record : batch) {
        Collector* target = nullptr;
        for (std::size_t tried = 0; tried < collector_order_.size(); ++tried) {
            const auto& identity = collector_order_[turn++ % collector_order_.size()];
            Collector& candidate = *collectors_.find(identity)->second;
            if (candidate.in_flight.size() < candidate.window) {
                target = &candidate;
                break;
            }
        }
        if (target == nullptr) {  // cannot happen: capacity was counted above
            redeliver_.insert(record.delivery_id);
            continue;
        }
        // [empty] ["GBE01"] [0x02] [delivery-id] [service] [session] [seq] [state] [body]
        out(target->identity);
        out(std::string_view{});
        out(proto::kGbCollector);
        out_command(proto::collector_cmd::kDeliver);
        out(std::to_string(record.delivery_id));
        out(record.service);
        out(record.session);
        out(std::to_string(record.seq));
        out(record.state);
        out(bus::message_of(std::move(record.body)));  // the frame takes the body's buffer
        target->in_flight.insert(record.delivery_id);
        delivery_owner_[record.delivery_id] = target;
        target->last_sent = now_;
        ++counters_.deliveries;
        send_out();
    }
    collector_turn_ = collector_order_.empty() ? 0 : turn % collector_order_.size();
}

// ============================================================================ status

std::string BrokerCore::status_json() const {
    using nlohmann::json;
    const double uptime =
        std::chrono::duration<double>(Clock::now() - started_).count();
    json services = json::array();
    std::vector<const Service*> sorted;
    for (const auto& [name, service] : services_) sorted.push_back(service.get());
    std::sort(sorted.begin(), sorted.end(),
              [](const Service* a, const Service* b) { return a->name < b->name; });
    for (const Service* service : sorted) {
        services.push_back({{"name", service->name},
                            {"workers", service->workers},
                            {"idle", service->idle},
                            {"credit", service->credit},
                            {"in_flight", service->in_flight},
                            {"queued", service->queue.size()},
                            {"max_queue", service->queue.max_size()},
                            {"overflow", to_string(service->queue.policy())}});
    }
    json errors = json::object();
    for (std::size_t i = 0; i < kErrorTypeCount; ++i) {
        if (counters_.errors[i] != 0) {
            errors[std::string{base::to_string(static_cast<ErrorType>(i))}] =
                counters_.errors[i];
        }
    }
    const json status = {
        {"broker",
         {{"version", GLASSBOX_VERSION},
          {"instance", instance_},
          {"uptime_s", std::round(uptime * 1000.0) / 1000.0},
          {"endpoint", bound_.endpoint},
          {"pub_endpoint", bound_.pub_endpoint}}},
        {"services", services},
        {"spool",
         {{"messages", spool_->messages()},
          {"bytes", spool_->bytes()},
          {"max_messages", config_.spool_max_messages},
          {"max_bytes", config_.spool_max_bytes},
          {"policy", to_string(config_.spool_policy)},
          {"dropped", counters_.spool_dropped},
          {"collectors", collectors_.size()},
          {"in_flight", delivery_owner_.size()}}},
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
          {"errors", errors}}},
    };
    return status.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace detail

// ============================================================================ Broker

Broker::Broker(zmq::context_t& context, BrokerConfig config)
    : core_(std::make_unique<detail::BrokerCore>(context, std::move(config))) {}

Broker::~Broker() = default;

base::Result<BoundEndpoints> Broker::bind() { return core_->bind(); }

void Broker::run() { core_->run(stop_requested_, nullptr); }

void Broker::run(std::stop_token token) { core_->run(stop_requested_, &token); }

const BrokerConfig& Broker::config() const noexcept { return core_->config(); }

}  // namespace glassbox::broker
