// The broker's poll loop: start-up (bind), one iteration (poll, drain, timers, heartbeats), the
// end-of-batch commit of the spool, shutdown, and sending with the §2.3 holds.
#include "broker/broker_core.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include "schema/messages.hpp"

namespace glassbox::broker::detail {

namespace {

// The spool directory's list of services registered there, one name a line (restart_grace).
constexpr const char* kServicesFile = "services";
constexpr std::size_t kMaxKnownServices = 4096;

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
      auth_(context, zmq::socket_type::rep),
      publisher_(topic_context_, zmq::socket_type::xpub),
      topic_auth_(topic_context_, zmq::socket_type::rep),
      topic_monitor_(topic_context_, zmq::socket_type::pair),
      topic_ledger_(TopicLimits{config_.max_subscriptions_per_subscriber,
                                config_.max_subscribed_bytes_per_subscriber,
                                config_.max_subscriptions, config_.max_subscribed_bytes}),
      instance_(random_instance()),
      started_(Clock::now()),
      now_(started_),
      next_tick_(started_) {
    if (config_.heartbeat < milliseconds{1}) config_.heartbeat = milliseconds{1};
    if (config_.liveness < 1) config_.liveness = 1;
    if (config_.max_retries < 0) config_.max_retries = 0;
    if (config_.poll_interval < milliseconds{1}) config_.poll_interval = milliseconds{1};
    if (config_.max_drain == 0) config_.max_drain = 1;
    if (config_.topic_watch_interval < milliseconds{1})
        config_.topic_watch_interval = milliseconds{1};
    frames_.resize(8);
}

base::Result<BoundEndpoints> BrokerCore::bind() {
    auto spool = ExplainSpool::open(
        config_.spool_path, SpoolLimits{config_.spool_max_messages, config_.spool_max_bytes});
    if (!spool) return spool.error();
    spool_ = std::move(spool).value();
    if (spool_->messages() > 0) {
        log_->info("event=spool_open path={} pending={} bytes={} last_id={}", config_.spool_path,
                   spool_->messages(), spool_->bytes(), spool_->last_id());
        // §5.3 across a restart: every trace the spool shows open gets the broker's end.
        auto closed = close_recovered_sessions();
        if (!closed) return closed.error();
        if (closed.value() > 0) {
            log_->warn("event=traces_closed count={} reason=broker_restarted", closed.value());
        }
    }
    load_known_services();

    // A frame far above the limit is refused by libzmq itself (the peer is disconnected);
    // anything up to that is read and answered with MessageTooLarge.
    const std::uint64_t hard_cap = 2ull * config_.max_message_bytes + (1u << 20);
    try {
        router_.set(zmq::sockopt::router_mandatory, 1);
        router_.set(zmq::sockopt::linger, static_cast<int>(config_.linger.count()));
        router_.set(zmq::sockopt::sndhwm, config_.send_hwm);
        router_.set(zmq::sockopt::rcvhwm, config_.receive_hwm);
        router_.set(zmq::sockopt::maxmsgsize,
                    static_cast<std::int64_t>(std::min<std::uint64_t>(hard_cap, INT64_MAX)));
    } catch (const zmq::error_t& e) {
        return base::make_error(ErrorType::kInternal,
                                std::string{"cannot configure sockets: "} + e.what());
    }
    if (auto secured = open_auth(); !secured) return secured.error();
    if (auto opened = open_topic(); !opened) return opened.error();
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
    if (bound_.pub_endpoint.rfind("tcp://", 0) == 0) {
        topic_port_ = std::atoi(bound_.pub_endpoint.c_str() + bound_.pub_endpoint.rfind(':') + 1);
    }
    topic_watch_ = std::jthread([this](std::stop_token stop) { watch_topic(stop); });
    log_->info(
        "event=bound endpoint={} pub_endpoint={} instance={} heartbeat_ms={} liveness={} "
        "security={}",
        bound_.endpoint, bound_.pub_endpoint, instance_, config_.heartbeat.count(),
        config_.liveness, curve() ? "curve" : "plain");
    if (!curve()) {
        log_->warn(
            "event=insecure reason=\"plain TCP: no CURVE key, every process that reaches "
            "{} is trusted\"",
            bound_.endpoint);
    }
    return bound_;
}

void BrokerCore::load_known_services() {
    if (config_.spool_path.empty()) return;
    std::ifstream in(config_.spool_path + "/" + kServicesFile);
    std::string name;
    while (known_services_.size() < kMaxKnownServices && std::getline(in, name)) {
        if (proto::is_valid_service_name(name)) known_services_.insert(name);
    }
    if (!known_services_.empty()) {
        log_->info("event=known_services count={} grace_ms={}", known_services_.size(),
                   config_.restart_grace.count());
    }
}

void BrokerCore::remember_service(const Service& service) {
    if (config_.spool_path.empty() || known_services_.count(service.name) != 0 ||
        known_services_.size() >= kMaxKnownServices) {
        return;
    }
    known_services_.insert(service.name);
    // Rewritten whole and renamed into place: a crash leaves the old list or the new one.
    std::string text;
    for (const auto& name : known_services_) text.append(name).push_back('\n');
    const std::string path = config_.spool_path + "/" + kServicesFile;
    const std::string temporary = path + ".tmp";
    const int fd =
        ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool written = fd >= 0;
    if (written) {
        written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
        written = ::close(fd) == 0 && written;
    }
    if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) {
        // Only restart_grace depends on it: the service is unknown for a while after a restart.
        log_->warn("event=services_list_not_written path={} error=\"{}\"", path,
                   std::strerror(errno));
        ::unlink(temporary.c_str());
    }
}

TimePoint BrokerCore::grace_end(const Service& service) const {
    if (known_services_.count(service.name) == 0) return TimePoint::min();
    return started_ + config_.restart_grace;
}

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

    // The topic's socket only brings subscriptions, which nothing waits for (libzmq applies
    // them when the broker publishes, too): it is polled every topic_poll_interval, not on
    // every pass of a busy loop.
    const bool topic_due = now_ >= next_topic_poll_;
    // The ZAP handler is polled on every pass: a handshake waits for its answer.
    std::array<zmq::pollitem_t, 5> items{{
        {router_.handle(), 0, ZMQ_POLLIN, 0},
        {auth_.handle(), 0, ZMQ_POLLIN, 0},
        {publisher_.handle(), 0, ZMQ_POLLIN, 0},
        {topic_auth_.handle(), 0, ZMQ_POLLIN, 0},
        {topic_monitor_.handle(), 0, ZMQ_POLLIN, 0},
    }};
    try {
        zmq::poll(items.data(), topic_due ? items.size() : 2, wait);
    } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw;
        return;
    }
    now_ = Clock::now();
    if ((items[1].revents & ZMQ_POLLIN) != 0) serve_auth();
    if ((items[0].revents & ZMQ_POLLIN) != 0) drain_router();
    if (topic_due) {
        next_topic_poll_ = now_ + config_.topic_poll_interval;
        serve_topic();
    }
    fire_timers();
    check_allow_list();
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
    views_.clear();
    const zmq::message_t* const kept = frames_.data();  // a small frame's bytes live in its message
    while (more) {
        zmq::message_t& frame =
            frame_count_ <= proto::kMaxFrames
                ? (frame_count_ < frames_.size() ? frames_[frame_count_] : frames_.emplace_back())
                : overflow;
        if (zmq_msg_recv(frame.handle(), socket.handle(), flags) < 0) {
            if (frame_count_ == 0 && (zmq_errno() == EAGAIN || zmq_errno() == EINTR)) return false;
            throw zmq::error_t();
        }
        flags = 0;  // the rest of a multipart message is already there
        // views_[i] is frames_[i + 1]: the routing id is no part of the peer's message.
        const std::string_view bytes = view(frame);
        message_bytes_ += bytes.size();
        more = frame.more();
        if (frame_count_ <= proto::kMaxFrames) {
            if (frame_count_ > 0) views_.push_back(bytes);
            ++frame_count_;
        } else {
            too_many_frames_ = true;
        }
    }
    // Frame 0 is the routing id: up to kMaxFrames of the peer's frames are kept, and a
    // message with more is flagged (and its surplus frames discarded) above. If frames_ grew,
    // its messages moved, and with them the bytes of the small ones: view them again.
    if (frames_.data() != kept) bus::views_of(frames_, 1, frame_count_ - 1, views_);
    // The packed form (§1.4): the decoders read the classic frames it carries.
    packed_in_ = frame_count_ >= 2 && bus::is_packed(views_[0]);
    packed_error_.clear();
    if (packed_in_) {
        if (frame_count_ != 3) {
            packed_error_ =
                "packed message of " + std::to_string(frame_count_ - 1) + " frames, not 2";
        } else if (auto unpacked = bus::unpack_views(view(frames_[1]), view(frames_[2]), views_);
                   !unpacked) {
            packed_error_ = unpacked.error().message;
        }
        if (!packed_error_.empty()) views_.clear();
    }
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

void BrokerCore::drop(std::string_view identity, std::string_view why) {
    ++counters_.dropped_frames;
    log_->warn("event=dropped peer={} frames={} bytes={} reason=\"{}\"", printable(identity),
               frame_count_ > 0 ? frame_count_ - 1 : 0, message_bytes_, why);
}

void BrokerCore::handle_message() {
    const std::string_view identity = view(frames_[0]);
    if (!packed_error_.empty()) {
        drop(identity, packed_error_);
        return;
    }
    if (views_.size() < 2 || !views_[0].empty()) {
        drop(identity, "no empty delimiter and header");
        return;
    }
    const std::string_view header = views_[1];
    read_sender();
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
        commit_spool();
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
    commit_spool();
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
        log_->error("event=spool_commit_failed pending={} error=\"{}\" action=lost_at_stop",
                    spool_->last_id() - spool_->committed_id(), committed.error().message);
    }
    log_->info("event=stopped requests={} replies={} in_flight={} spool_messages={}",
               counters_.requests, counters_.replies, requests_.size(), spool_->messages());
}

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
    // A 7/MDP client gets no explains, but its reply waits too: a commit that fails under
    // fail-request turns it into an error.
    if (request.abandoned) return;
    if (std::find(held_peers_.begin(), held_peers_.end(), request.client) == held_peers_.end()) {
        held_peers_.push_back(request.client);
    }
}

void BrokerCore::send_out(Outlet outlet, std::uint64_t request, Carries carries) {
    if (out_packed_) {
        out_packed_ = false;
        if (outlet == Outlet::kRouter) bus::pack_messages(out_, 1);  // after the routing id
    }
    if (held(outlet)) {
        deferred_.push_back(Deferred{outlet, std::move(out_), request, carries});
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
            if (!request->abandoned && request->client == identity)
                orphaned.push_back(request.get());
        }
        for (Request* request : orphaned) {
            finish(*request, base::make_error(ErrorType::kCancelled, "client unreachable"), false);
        }
    }
}

}  // namespace glassbox::broker::detail
