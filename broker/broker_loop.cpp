// The broker's poll loop: start-up (bind), one iteration (poll, drain, timers, heartbeats), the
// end-of-batch commit of the spool, shutdown, and sending with the §2.3 holds.
#include "broker/detail/broker_core.hpp"

#include <cerrno>
#include <random>

#include "schema/messages.hpp"

namespace glassbox::broker::detail {

namespace {

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
      auth_(context, config_, log_, now_),
      topic_(config_, log_, now_),
      outbox_(router_, topic_.publisher(), log_),
      instance_(random_instance()),
      started_(Clock::now()),
      now_(started_),
      next_tick_(started_),
      services_(config_, log_, started_),
      session_owners_(config_.ended_sessions_kept),
      feed_(outbox_, counters_, log_, now_, config_.delivery_interval) {
    if (config_.heartbeat < milliseconds{1}) config_.heartbeat = milliseconds{1};
    if (config_.liveness < 1) config_.liveness = 1;
    if (config_.max_retries < 0) config_.max_retries = 0;
    if (config_.poll_interval < milliseconds{1}) config_.poll_interval = milliseconds{1};
    if (config_.max_drain == 0) config_.max_drain = 1;
    if (config_.topic_watch_interval < milliseconds{1})
        config_.topic_watch_interval = milliseconds{1};
}

base::Result<BoundEndpoints> BrokerCore::bind() {
    auto spool = ExplainSpool::open(
        config_.spool_path, SpoolLimits{config_.spool_max_messages, config_.spool_max_bytes});
    if (!spool) return spool.error();
    spool_ = std::move(spool).value();
    feed_.use_spool(*spool_);
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
    services_.load_known();

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
    if (auto secured = auth_.open(router_, topic_.publisher()); !secured) return secured.error();
    auto opened = topic_.open(auth_.curve(), [this](const ZapRequest& request) {
        return auth_.subscriber_allowed(request);
    });
    if (!opened) return opened.error();
    try {
        router_.bind(config_.endpoint);
    } catch (const zmq::error_t& e) {
        return base::make_error(ErrorType::kInternal,
                                "cannot bind " + config_.endpoint + ": " + e.what());
    }
    auto published = topic_.bind(config_.pub_endpoint);
    if (!published) return published.error();
    bound_.endpoint = router_.get(zmq::sockopt::last_endpoint);
    bound_.pub_endpoint = std::move(published).value();
    log_->info(
        "event=bound endpoint={} pub_endpoint={} instance={} heartbeat_ms={} liveness={} "
        "security={}",
        bound_.endpoint, bound_.pub_endpoint, instance_, config_.heartbeat.count(),
        config_.liveness, auth_.curve() ? "curve" : "plain");
    if (!auth_.curve()) {
        log_->warn(
            "event=insecure reason=\"plain TCP: no CURVE key, every process that reaches "
            "{} is trusted\"",
            bound_.endpoint);
    }
    return bound_;
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
    if (const auto timer = requests_.next_timer()) until(*timer);
    if (feed_.waiting()) until(feed_.next_delivery());

    // The topic's socket only brings subscriptions, which nothing waits for (libzmq applies
    // them when the broker publishes, too): it is polled every topic_poll_interval, not on
    // every pass of a busy loop.
    const bool topic_due = now_ >= next_topic_poll_;
    // The ZAP handler is polled on every pass: a handshake waits for its answer.
    const auto topic_items = topic_.poll_items();
    std::array<zmq::pollitem_t, 5> items{{
        {router_.handle(), 0, ZMQ_POLLIN, 0},
        auth_.poll_item(),
        topic_items[0],
        topic_items[1],
        topic_items[2],
    }};
    try {
        zmq::poll(items.data(), topic_due ? items.size() : 2, wait);
    } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw;
        return;
    }
    now_ = Clock::now();
    if ((items[1].revents & ZMQ_POLLIN) != 0) auth_.serve();
    if ((items[0].revents & ZMQ_POLLIN) != 0) drain_router();
    if (topic_due) {
        next_topic_poll_ = now_ + config_.topic_poll_interval;
        topic_.serve();
    }
    fire_timers();
    auth_.check_allow_list();
    if (now_ >= next_tick_) tick();
    end_batch();
}

void BrokerCore::drain_router() {
    for (std::size_t handled = 0; handled < config_.max_drain; ++handled) {
        try {
            if (!in_.receive(router_)) return;
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
               in_.frames(), in_.bytes(), why);
}

void BrokerCore::handle_message() {
    const std::string_view identity = in_.identity();
    if (!in_.error().empty()) {
        drop(identity, in_.error());
        return;
    }
    if (in_.views().size() < 2 || !in_.views()[0].empty()) {
        drop(identity, "no empty delimiter and header");
        return;
    }
    const std::string_view header = in_.views()[1];
    auth_.read_sender(in_.first_frame());
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
    for (int round = 0; round < 16 && outbox_.busy(); ++round) {
        commit_spool();
        outbox_.flush();
        handle_unreachable();
    }
    if (feed_.due()) {
        feed_.pump();
        handle_unreachable();
    }
    commit_spool();
    services_.collect();
}

void BrokerCore::fire_timers() {
    while (Request* request = requests_.next_due(now_)) {
        try {
            on_deadline(*request);
        } catch (const std::exception& e) {
            ++counters_.loop_errors;
            log_->error("event=timer_error error=\"{}\"", e.what());
        }
        handle_unreachable();
    }
    requests_.compact_timers();
}

void BrokerCore::tick() {
    next_tick_ = now_ + std::max(config_.heartbeat / 2, milliseconds{1});
    std::vector<Worker*> expired;
    for (auto& [identity, worker] : workers_.all()) {
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
    for (const auto& identity : feed_.beat(config_.heartbeat)) {
        ++counters_.collectors_expired;
        feed_.remove(identity, true);
    }
    handle_unreachable();
}

void BrokerCore::shutdown() {
    now_ = Clock::now();
    std::vector<std::string> identities;
    for (const auto& [identity, worker] : workers_.all()) identities.push_back(identity);
    for (const auto& identity : identities) {
        send_worker_command(identity, proto::worker_cmd::kDisconnect);
    }
    outbox_.flush();
    if (auto committed = spool_->commit(); !committed) {
        log_->error("event=spool_commit_failed pending={} error=\"{}\" action=lost_at_stop",
                    spool_->last_id() - spool_->committed_id(), committed.error().message);
    }
    log_->info("event=stopped requests={} replies={} in_flight={} spool_messages={}",
               counters_.requests, counters_.replies, requests_.size(), spool_->messages());
}

void BrokerCore::handle_unreachable() {
    while (auto gone = outbox_.next_unreachable()) {
        const std::string identity = std::move(*gone);
        if (Worker* worker = workers_.find(identity)) {
            delete_worker(*worker, false, "unreachable");
        }
        feed_.remove(identity, true);
        for (Request* request : requests_.of_client(identity)) {
            finish(*request, base::make_error(ErrorType::kCancelled, "client unreachable"), false);
        }
    }
}

}  // namespace glassbox::broker::detail
