// The explain topic's XPUB socket: its bounds, the ZAP handler and monitor that name each
// subscriber connection, the per-subscriber counting, and cutting one off (docs/protocol.md §6.2).
#include "broker/detail/explain_topic.hpp"

#include <fcntl.h>
#include <linux/tcp.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/log.hpp"
#include "broker/detail/zap_handler.hpp"
#include "bus/frame_codec.hpp"

namespace glassbox::broker::detail {

using base::ErrorType;
using bus::printable;
using std::chrono::milliseconds;

namespace {

// The topic's own ZAP domain: libzmq asks the context's handler (kZapEndpoint) about every
// connection of a socket with a domain, even under the NULL mechanism (RFC 27).
constexpr const char* kZapDomain = "glassbox-explain-topic";
constexpr const char* kMonitorEndpoint = "inproc://glassbox-explain-topic-monitor";
// What CURVE adds to the largest frame the topic must take: its handshake and its boxes.
constexpr std::size_t kCurveFrameSlack = 1024;

// Whether a TCP socket is already being closed from this end (shut down by the count or by the
// byte watch, whichever came first): not shut down nor counted again. Not TCP: false.
bool closing_here(int fd) {
    tcp_info info{};
    socklen_t size = sizeof info;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) != 0 || size < 1) return false;
    // Linux's TCP states (include/net/tcp_states.h): 1 established, 8 close-wait (the peer's
    // FIN came, ours not yet sent); userspace has them only in a header that clashes with
    // <linux/tcp.h>'s tcp_info.
    constexpr std::uint8_t kEstablished = 1;
    constexpr std::uint8_t kCloseWait = 8;
    return info.tcpi_state != kEstablished && info.tcpi_state != kCloseWait;
}

// Everything left of one multipart message (a malformed one is read to its end).
void skip_rest(zmq::socket_t& socket, bool more) {
    while (more) {
        zmq::message_t frame;
        if (zmq_msg_recv(frame.handle(), socket.handle(), ZMQ_DONTWAIT) < 0) return;
        more = frame.more();
    }
}

}  // namespace

ExplainTopic::ExplainTopic(const BrokerConfig& config, std::shared_ptr<spdlog::logger> log,
                           const TimePoint& now)
    : config_(config),
      log_(std::move(log)),
      now_(now),
      publisher_(context_, zmq::socket_type::xpub),
      auth_(context_, zmq::socket_type::rep),
      monitor_(context_, zmq::socket_type::pair),
      ledger_(TopicLimits{config_.max_subscriptions_per_subscriber,
                          config_.max_subscribed_bytes_per_subscriber, config_.max_subscriptions,
                          config_.max_subscribed_bytes}) {}

ExplainTopic::~ExplainTopic() = default;

base::Result<bool> ExplainTopic::open(bool curve, Admit admit) {
    curve_ = curve;
    admit_ = std::move(admit);
    try {
        publisher_.set(zmq::sockopt::linger, static_cast<int>(config_.linger.count()));
        publisher_.set(zmq::sockopt::sndhwm, config_.send_hwm);
        // A subscription is held in libzmq's trie, one node per byte, before the broker sees
        // it: bound its size where it is read (a 10 MB one cost ~1 GB that was never freed).
        // Under CURVE libzmq applies the bound to the frames on the wire, the handshake's
        // INITIATE (~300 bytes) and each encrypted subscription (33 bytes more) among them:
        // room for those, and the subscription's own length is checked when it is read.
        publisher_.set(zmq::sockopt::maxmsgsize,
                       static_cast<std::int64_t>(std::min<std::uint64_t>(
                           std::max<std::size_t>(config_.max_subscription_bytes, 1) +
                               (curve_ ? kCurveFrameSlack : 0),
                           INT64_MAX)));
        // Every subscribe and unsubscribe of every subscriber is passed up, each with its
        // connection's metadata (the ZAP name, the fd): the broker counts per connection.
        publisher_.set(zmq::sockopt::xpub_verboser, 1);
        // At most this many of one connection's subscriptions wait unread in libzmq; the
        // broker cuts the connection soon after its bound, so what it stored is bounded too.
        publisher_.set(zmq::sockopt::rcvhwm,
                       static_cast<int>(std::clamp<std::size_t>(
                           config_.max_subscriptions_per_subscriber + 1, 16, 100'000)));
        publisher_.set(zmq::sockopt::zap_domain, kZapDomain);
        auth_.set(zmq::sockopt::linger, 0);
        auth_.bind(kZapEndpoint);
        if (zmq_socket_monitor(publisher_.handle(), kMonitorEndpoint,
                               ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0) {
            throw zmq::error_t();
        }
        // No bound on the monitor's queue: a lost event would let an fd's reuse go unseen.
        monitor_.set(zmq::sockopt::rcvhwm, 0);
        monitor_.set(zmq::sockopt::linger, 0);
        monitor_.connect(kMonitorEndpoint);
    } catch (const zmq::error_t& e) {
        return base::make_error(ErrorType::kInternal,
                                std::string{"cannot configure the explain topic: "} + e.what());
    }
    return true;
}

base::Result<std::string> ExplainTopic::bind(const std::string& endpoint) {
    try {
        publisher_.bind(endpoint);
    } catch (const zmq::error_t& e) {
        return base::make_error(ErrorType::kInternal, "cannot bind " + endpoint + ": " + e.what());
    }
    std::string bound = publisher_.get(zmq::sockopt::last_endpoint);
    if (bound.rfind("tcp://", 0) == 0) port_ = std::atoi(bound.c_str() + bound.rfind(':') + 1);
    watch_ = std::jthread([this](const std::stop_token& stop) { watch(stop); });
    return bound;
}

std::array<zmq::pollitem_t, 3> ExplainTopic::poll_items() {
    return {{
        {publisher_.handle(), 0, ZMQ_POLLIN, 0},
        {auth_.handle(), 0, ZMQ_POLLIN, 0},
        {monitor_.handle(), 0, ZMQ_POLLIN, 0},
    }};
}

void ExplainTopic::serve() {
    // Connections first, then names (admit() needs every event before it), then subscriptions.
    drain_monitor();
    serve_auth();
    drain_publisher();
    if (trim_wanted_.exchange(false)) {
        trim_at_ = std::min(trim_at_, now_ + milliseconds{200});
    }
    if (now_ >= trim_at_) {
        // libzmq freed a cut subscriber's trie nodes; give the pages back, or the broker's
        // resident size keeps its high-water mark after every offender.
        trim_at_ = TimePoint::max();
        ::malloc_trim(0);
    }
}

void ExplainTopic::drain_monitor() {
    // [event: u16, value: u32 (the fd), native order] [endpoint]
    for (;;) {
        zmq::message_t frame;
        if (zmq_msg_recv(frame.handle(), monitor_.handle(), ZMQ_DONTWAIT) < 0) return;
        const bool more = frame.more();
        if (frame.size() < 6) {
            skip_rest(monitor_, more);
            continue;
        }
        std::uint16_t event = 0;
        std::uint32_t value = 0;
        std::memcpy(&event, frame.data(), sizeof event);
        std::memcpy(&value, static_cast<const char*>(frame.data()) + sizeof event, sizeof value);
        skip_rest(monitor_, more);
        const int fd = static_cast<int>(value);
        if (event == ZMQ_EVENT_ACCEPTED) {
            ledger_.accepted(fd);
            {
                const std::lock_guard lock{fds_mutex_};
                fds_[fd] = now_;
            }
            fds_added_.notify_one();
        } else if (event == ZMQ_EVENT_DISCONNECTED) {
            {
                const std::lock_guard lock{fds_mutex_};
                fds_.erase(fd);
            }
            const auto departed = ledger_.disconnected(fd);
            if (departed && departed->dropped) {
                log_->info("event=explain_subscriber_left subscriber={} subscriptions={}",
                           departed->name, departed->subscriptions);
                trim_at_ = std::min(trim_at_, now_ + milliseconds{200});
            }
        }
    }
}

void ExplainTopic::serve_auth() {
    for (std::size_t handled = 0; handled < config_.max_drain; ++handled) {
        // A REP socket answers every request; only libzmq sends here (inproc, this context).
        auto request = receive_zap(auth_);
        if (!request) return;
        const bool valid = request->valid();
        // With CURVE, only an allowed key with the `subscriber` role reads the topic.
        const bool allowed = valid && (!curve_ || admit_(*request));
        drain_monitor();  // the connection's ACCEPTED is among these (TopicLedger)
        const std::string name = allowed ? ledger_.admit() : std::string{};
        if (!send_zap_reply(
                auth_, request->frame(1), allowed ? "200" : "400",
                allowed ? "OK" : (valid ? "key not allowed to subscribe" : "malformed ZAP request"),
                name)) {
            log_->error("event=auth_failed error=\"{}\"", zmq_strerror(zmq_errno()));
        }
    }
}

void ExplainTopic::drain_publisher() {
    // With XPUB_VERBOSER every (un)subscription of every subscriber arrives here, carrying its
    // connection's name (User-Id, from serve_topic_auth) and fd; the unsubscriptions libzmq
    // makes itself when a connection closes carry neither (the monitor's DISCONNECTED counts).
    for (std::size_t handled = 0; handled < config_.max_drain; ++handled) {
        zmq::message_t frame;
        if (zmq_msg_recv(frame.handle(), publisher_.handle(), ZMQ_DONTWAIT) < 0) return;
        if (frame.size() == 0) continue;
        const auto* bytes = static_cast<const char*>(frame.data());
        if (bytes[0] != 0 && bytes[0] != 1) continue;
        const std::string_view topic{bytes + 1, frame.size() - 1};
        const char* name = zmq_msg_gets(frame.handle(), "User-Id");
        const int fd = zmq_msg_get(frame.handle(), ZMQ_SRCFD);
        if (name == nullptr || fd < 0) continue;
        if (bytes[0] == 0) {
            ledger_.unsubscribe(name, topic);
            continue;
        }
        if (curve_ && frame.size() > config_.max_subscription_bytes) {
            // libzmq let it in (the bound has CURVE's slack): the broker's bound is the frame's.
            cut_subscriber(name, fd, TopicBound::kSubscriberBytes);
            continue;
        }
        const auto outcome = ledger_.subscribe(name, fd, topic);
        if (outcome.verdict == TopicLedger::Verdict::kOverLimit) {
            cut_subscriber(name, fd, outcome.bound);
        } else if (outcome.verdict == TopicLedger::Verdict::kUnnamed) {
            log_->debug("event=subscription_unnamed fd={} topic={}", fd, printable(topic));
        }
    }
}

void ExplainTopic::cut_subscriber(std::string_view name, int fd, TopicBound bound) {
    // libzmq 4.3 has no call to drop one connection of a socket, and keeps the connection's
    // subscriptions until it closes: shut its TCP (or IPC) socket down, and libzmq's I/O
    // thread sees the end, closes it and frees them. The fd is libzmq's and could be closed
    // and reused by another connection at any moment, so it is shut down through a dup taken
    // while the monitor shows it still open as `name` — checked before and after the dup (a
    // close is reported before it happens) — and the dup is closed at once.
    bool cut = false;
    drain_monitor();
    if (ledger_.holds(name, fd)) {
        const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (own >= 0) {
            drain_monitor();
            if (ledger_.holds(name, fd) && !closing_here(own)) {
                cut = ::shutdown(own, SHUT_RDWR) == 0;
            }
            ::close(own);
        }
    }
    if (!cut) return;  // gone already, or closed by the byte watch (counted there)
    ++cut_for_count_;
    log_subscriber_dropped(name, to_string(bound), ledger_.subscriptions_of(name), 0);
}

void ExplainTopic::log_subscriber_dropped(std::string_view name, std::string_view reason,
                                          std::size_t subscriptions, std::uint64_t inbound) {
    // A subscriber that keeps reconnecting is cut each time: one line a second says so.
    const std::lock_guard lock{drop_log_mutex_};
    ++drops_unlogged_;
    const auto now = Clock::now();
    if (now < next_drop_log_) return;
    next_drop_log_ = now + std::chrono::seconds{1};
    log_->warn(
        "event=explain_subscriber_dropped subscriber={} reason={} subscriptions={} "
        "inbound_bytes={} dropped_since_last_line={}",
        printable(name), reason, subscriptions, inbound, drops_unlogged_);
    drops_unlogged_ = 0;
}

void ExplainTopic::watch(const std::stop_token& stop) {
    // libzmq's XPUB reads a connection's subscriptions into its trie for as long as they keep
    // coming, inside one call on the broker's thread: a fast sender's whole stream is stored
    // before the broker sees its first subscription. The kernel counts what each connection
    // sent; this thread reads that count and closes a connection past its allowance, which
    // ends the stream mid-way. Only TCP connections of the topic's own port are looked at.
    if (port_ < 0) return;
    std::unordered_map<int, ino_t> cut;  // fd -> socket already shut down (not again)
    std::vector<std::pair<int, TimePoint>> open;
    while (!stop.stop_requested()) {
        {
            // No subscriber connection, nothing to judge: wait for one instead of waking up
            // every interval (false: stop was requested).
            std::unique_lock lock{fds_mutex_};
            if (!fds_added_.wait(lock, stop, [this] { return !fds_.empty(); })) break;
        }
        std::this_thread::sleep_for(config_.topic_watch_interval);
        open.clear();
        {
            const std::lock_guard lock{fds_mutex_};
            open.assign(fds_.begin(), fds_.end());
        }
        std::erase_if(cut, [&](const auto& entry) {
            return std::none_of(open.begin(), open.end(),
                                [&](const auto& fd) { return fd.first == entry.first; });
        });
        const auto now = Clock::now();
        for (const auto& [fd, since] : open) {
            // The fd may have been closed and reused since the monitor's report: the dup pins
            // whatever socket it is now, and only one of this port's TCP connections is judged.
            const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
            if (own < 0) continue;
            sockaddr_storage local{};
            socklen_t local_size = sizeof local;
            struct stat file {};
            tcp_info info{};
            socklen_t info_size = sizeof info;
            int port = -1;
            if (::getsockname(own, reinterpret_cast<sockaddr*>(&local), &local_size) == 0) {
                if (local.ss_family == AF_INET) {
                    port = ntohs(reinterpret_cast<const sockaddr_in*>(&local)->sin_port);
                } else if (local.ss_family == AF_INET6) {
                    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&local)->sin6_port);
                }
            }
            const bool judged = port == port_ && ::fstat(own, &file) == 0 &&
                                !(cut.count(fd) != 0 && cut[fd] == file.st_ino) &&
                                ::getsockopt(own, IPPROTO_TCP, TCP_INFO, &info, &info_size) == 0 &&
                                info_size >= offsetof(tcp_info, tcpi_bytes_received) +
                                                 sizeof info.tcpi_bytes_received;
            if (judged) {
                const auto age = std::chrono::duration_cast<std::chrono::seconds>(now - since);
                const std::uint64_t allowed =
                    config_.max_subscriber_inbound_bytes +
                    1024u * static_cast<std::uint64_t>(std::max<std::int64_t>(age.count(), 0));
                if (info.tcpi_bytes_received > allowed && !closing_here(own)) {
                    cut[fd] = file.st_ino;
                    if (::shutdown(own, SHUT_RDWR) == 0) {
                        ++cut_for_bytes_;
                        trim_wanted_ = true;
                        log_subscriber_dropped("fd:" + std::to_string(fd),
                                               "subscriber_inbound_bytes", 0,
                                               info.tcpi_bytes_received);
                    }
                }
            }
            ::close(own);
        }
    }
}

}  // namespace glassbox::broker::detail
