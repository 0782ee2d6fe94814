// The broker's poll loop: start-up (bind), one iteration (poll, drain, timers, heartbeats), each
// message to the part its header names, the end-of-batch commit of the spool, and shutdown.
#include "broker/detail/broker_core.hpp"

#include <poll.h>

#include <cerrno>
#include <system_error>

#include "schema/messages.hpp"

namespace glassbox::broker::detail {

BrokerCore::BrokerCore(zmq::context_t& context, BrokerConfig config)
    : state_(context, std::move(config)),
      client_side_(state_, worker_side_, explain_),
      worker_side_(state_, client_side_, explain_),
      explain_(state_, client_side_),
      collector_side_(state_),
      next_tick_(state_.started) {}

base::Result<BoundEndpoints> BrokerCore::bind() {
    auto spool = ExplainSpool::open(
        state_.config.spool_path,
        SpoolLimits{state_.config.spool_max_messages, state_.config.spool_max_bytes});
    if (!spool) return spool.error();
    state_.spool = std::move(spool).value();
    state_.feed.use_spool(*state_.spool);
    if (state_.spool->messages() > 0) {
        state_.log->info("event=spool_open path={} pending={} bytes={} last_id={}",
                         state_.config.spool_path, state_.spool->messages(), state_.spool->bytes(),
                         state_.spool->last_id());
        // §5.3 across a restart: every trace the spool shows open gets the broker's end.
        auto closed = explain_.close_recovered_sessions();
        if (!closed) return closed.error();
        if (closed.value() > 0) {
            state_.log->warn("event=traces_closed count={} reason=broker_restarted",
                             closed.value());
        }
    }
    state_.services.load_known();

    // A frame far above the limit is refused by libzmq itself (the peer is disconnected);
    // anything up to that is read and answered with MessageTooLarge.
    const std::uint64_t hard_cap = 2ull * state_.config.max_message_bytes + (1u << 20);
    try {
        state_.router.set(zmq::sockopt::router_mandatory, 1);
        state_.router.set(zmq::sockopt::linger, static_cast<int>(state_.config.linger.count()));
        state_.router.set(zmq::sockopt::sndhwm, state_.config.send_hwm);
        state_.router.set(zmq::sockopt::rcvhwm, state_.config.receive_hwm);
        state_.router.set(zmq::sockopt::maxmsgsize,
                          static_cast<std::int64_t>(std::min<std::uint64_t>(hard_cap, INT64_MAX)));
    } catch (const zmq::error_t& e) {
        return base::make_error(ErrorType::kInternal,
                                std::string{"cannot configure sockets: "} + e.what());
    }
    if (auto secured = state_.auth.open(state_.router, state_.topic.publisher()); !secured)
        return secured.error();
    auto opened = state_.topic.open(state_.auth.curve(), [this](const ZapRequest& request) {
        return state_.auth.subscriber_allowed(request);
    });
    if (!opened) return opened.error();
    try {
        state_.router.bind(state_.config.endpoint);
    } catch (const zmq::error_t& e) {
        return base::make_error(ErrorType::kInternal,
                                "cannot bind " + state_.config.endpoint + ": " + e.what());
    }
    auto published = state_.topic.bind(state_.config.pub_endpoint);
    if (!published) return published.error();
    state_.bound.endpoint = state_.router.get(zmq::sockopt::last_endpoint);
    router_fd_ = state_.router.get(zmq::sockopt::fd);
    zap_fd_ = state_.auth.poll_fd();
    state_.bound.pub_endpoint = std::move(published).value();
    state_.log->info(
        "event=bound endpoint={} pub_endpoint={} instance={} heartbeat_ms={} liveness={} "
        "security={}",
        state_.bound.endpoint, state_.bound.pub_endpoint, state_.instance,
        state_.config.heartbeat.count(), state_.config.liveness,
        state_.auth.curve() ? "curve" : "plain");
    if (!state_.auth.curve()) {
        state_.log->warn(
            "event=insecure reason=\"plain TCP: no CURVE key, every process that reaches "
            "{} is trusted\"",
            state_.bound.endpoint);
    }
    return state_.bound;
}

void BrokerCore::run(const std::atomic<bool>& stop_flag, const std::stop_token* token) {
    if (!state_.spool) {
        state_.log->error("event=run_without_bind");
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
            ++state_.counters.loop_errors;
            state_.log->error("event=loop_error error=\"{}\"", e.what());
        } catch (...) {
            ++state_.counters.loop_errors;
            state_.log->error("event=loop_error error=unknown");
        }
    }
    try {
        shutdown();
    } catch (const std::exception& e) {
        state_.log->error("event=shutdown_error error=\"{}\"", e.what());
    }
}

void BrokerCore::iterate() {
    state_.now = Clock::now();
    auto wait = state_.config.poll_interval;
    auto until = [&](TimePoint at) {
        const auto left = std::chrono::ceil<milliseconds>(at - state_.now);
        wait = std::clamp(left, milliseconds{0}, wait);
    };
    until(next_tick_);
    if (const auto timer = state_.requests.next_timer()) until(*timer);
    if (state_.feed.waiting()) until(state_.feed.next_delivery());

    // The topic's socket only brings subscriptions, which nothing waits for (libzmq applies
    // them when the broker publishes, too): it is polled every topic_poll_interval, not on
    // every pass of a busy loop.
    const bool topic_due = state_.now >= next_topic_poll_;
    const auto input = topic_due ? poll_all(wait) : wait_for_input(wait);
    if (!input) return;  // EINTR
    state_.now = Clock::now();
    // The ZAP handler is served on every pass it has input: a handshake waits for its answer.
    if (input->zap) zap_backlog_ = !state_.auth.serve();
    if (input->router) drain_router();
    if (topic_due) {
        next_topic_poll_ = state_.now + state_.config.topic_poll_interval;
        state_.topic.serve();
    }
    fire_timers();
    state_.auth.check_allow_list();
    if (state_.now >= next_tick_) tick();
    end_batch();
}

std::optional<BrokerCore::Input> BrokerCore::poll_all(milliseconds wait) {
    const auto topic_items = state_.topic.poll_items();
    std::array<zmq::pollitem_t, 5> items{{
        {state_.router.handle(), 0, ZMQ_POLLIN, 0},
        state_.auth.poll_item(),
        topic_items[0],
        topic_items[1],
        topic_items[2],
    }};
    try {
        zmq::poll(items.data(), items.size(), zap_backlog_ ? milliseconds{0} : wait);
    } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw;
        return std::nullopt;
    }
    return Input{(items[0].revents & ZMQ_POLLIN) != 0,
                 zap_backlog_ || (items[1].revents & ZMQ_POLLIN) != 0};
}

std::optional<BrokerCore::Input> BrokerCore::wait_for_input(milliseconds wait) {
    // zmq_poll asks each socket's ZMQ_EVENTS before and after its poll(2), and each ask costs a
    // getpid and a poll(2) of the socket's mailbox: most of the loop's syscalls. A socket's
    // ZMQ_FD is edge-triggered (readable once its state may have changed since ZMQ_EVENTS or a
    // read last looked), so a sleep on the FDs alone is enough for a socket whose last call
    // was a read that found nothing: the ZAP handler's, which only serve() reads and writes,
    // ending with such a read (zap_backlog_ when it stopped early). The router sent since its
    // drain, which may have taken in commands: its ZMQ_EVENTS is asked once before sleeping.
    if ((state_.router.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0) {
        return Input{true, zap_backlog_};
    }
    std::array<pollfd, 2> fds{{{router_fd_, POLLIN, 0}, {zap_fd_, POLLIN, 0}}};
    const int timeout = zap_backlog_ ? 0 : static_cast<int>(wait.count());
    if (::poll(fds.data(), fds.size(), timeout) < 0) {
        if (errno == EINTR) return std::nullopt;
        throw std::system_error(errno, std::system_category(), "poll");
    }
    // A readable FD may mean commands only: a read that finds nothing then is cheap.
    return Input{(fds[0].revents & POLLIN) != 0, zap_backlog_ || (fds[1].revents & POLLIN) != 0};
}

void BrokerCore::drain_router() {
    for (std::size_t handled = 0; handled < state_.config.max_drain; ++handled) {
        try {
            if (!state_.in.receive(state_.router)) return;
        } catch (const zmq::error_t& e) {
            ++state_.counters.loop_errors;
            state_.log->error("event=receive_error error=\"{}\"", e.what());
            return;
        }
        state_.now = Clock::now();
        try {
            handle_message();
        } catch (const std::exception& e) {
            ++state_.counters.loop_errors;
            state_.log->error("event=handler_error error=\"{}\"", e.what());
        }
        handle_unreachable();
    }
}

void BrokerCore::handle_message() {
    const std::string_view identity = state_.in.identity();
    if (!state_.in.error().empty()) {
        state_.drop(identity, state_.in.error());
        return;
    }
    if (state_.in.views().size() < 2 || !state_.in.views()[0].empty()) {
        state_.drop(identity, "no empty delimiter and header");
        return;
    }
    const std::string_view header = state_.in.views()[1];
    state_.auth.read_sender(state_.in.first_frame());
    if (header == proto::kMdpWorker) {
        worker_side_.on_worker(identity);
    } else if (header == proto::kGbClient) {
        client_side_.on_gb_client(identity);
    } else if (header == proto::kMdpClient) {
        client_side_.on_mdp_client(identity);
    } else if (header == proto::kGbCollector) {
        collector_side_.on_collector(identity);
    } else {
        state_.drop(identity, "unknown protocol header '" + printable(header.substr(0, 16)) + "'");
    }
}

void BrokerCore::end_batch() {
    // Commit appended EXPLAINs, then send what waited for them; losing a peer on the way may
    // end requests, which may append more: repeat until quiet.
    for (int round = 0; round < 16 && state_.outbox.busy(); ++round) {
        explain_.commit_spool();
        state_.outbox.flush();
        handle_unreachable();
    }
    if (state_.feed.due()) {
        state_.feed.pump();
        handle_unreachable();
    }
    explain_.commit_spool();
    state_.services.collect();
}

void BrokerCore::fire_timers() {
    while (Request* request = state_.requests.next_due(state_.now)) {
        try {
            client_side_.on_deadline(*request);
        } catch (const std::exception& e) {
            ++state_.counters.loop_errors;
            state_.log->error("event=timer_error error=\"{}\"", e.what());
        }
        handle_unreachable();
    }
    state_.requests.compact_timers();
}

void BrokerCore::tick() {
    next_tick_ = state_.now + std::max(state_.config.heartbeat / 2, milliseconds{1});
    std::vector<Worker*> expired;
    for (auto& [identity, worker] : state_.workers.all()) {
        if (state_.now >= worker->expiry) {
            expired.push_back(worker.get());
        } else if (state_.now - worker->last_sent >= state_.config.heartbeat) {
            worker_side_.send_worker_command(identity, proto::worker_cmd::kHeartbeat);
        }
    }
    for (Worker* worker : expired) {
        ++state_.counters.workers_expired;
        worker_side_.delete_worker(*worker, false, "expired");
    }
    for (const auto& identity : state_.feed.beat(state_.config.heartbeat)) {
        ++state_.counters.collectors_expired;
        state_.feed.remove(identity, true);
    }
    handle_unreachable();
}

void BrokerCore::shutdown() {
    state_.now = Clock::now();
    std::vector<std::string> identities;
    for (const auto& [identity, worker] : state_.workers.all()) identities.push_back(identity);
    for (const auto& identity : identities) {
        worker_side_.send_worker_command(identity, proto::worker_cmd::kDisconnect);
    }
    state_.outbox.flush();
    if (auto committed = state_.spool->commit(); !committed) {
        state_.log->error("event=spool_commit_failed pending={} error=\"{}\" action=lost_at_stop",
                          state_.spool->last_id() - state_.spool->committed_id(),
                          committed.error().message);
    }
    state_.log->info("event=stopped requests={} replies={} in_flight={} spool_messages={}",
                     state_.counters.requests, state_.counters.replies, state_.requests.size(),
                     state_.spool->messages());
}

void BrokerCore::handle_unreachable() {
    while (auto gone = state_.outbox.next_unreachable()) {
        const std::string identity = std::move(*gone);
        if (Worker* worker = state_.workers.find(identity)) {
            worker_side_.delete_worker(*worker, false, "unreachable");
        }
        state_.feed.remove(identity, true);
        for (Request* request : state_.requests.of_client(identity)) {
            client_side_.finish(
                *request, base::make_error(ErrorType::kCancelled, "client unreachable"), false);
        }
    }
}

}  // namespace glassbox::broker::detail
