// The gateway's connection loop (connection_loop.hpp): accept, read whole requests on one epoll
// thread, answer them on a pool of threads, keep-alive and pipelining, deadlines, and the
// per-client and global bounds.
#include "gateway/connection_loop.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "base/log.hpp"
#include "gateway/problem.hpp"

namespace glassbox::gateway {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// One recv() into this; at most kReadRound bytes from one connection per wake-up, so one fast
// sender cannot keep the loop from the others.
constexpr std::size_t kReadChunk = std::size_t{64} * 1024;
constexpr std::size_t kReadRound = std::size_t{256} * 1024;
// How often deadlines are checked (and the longest epoll wait).
constexpr milliseconds kSweep{100};
// A closing connection is read and dropped for this long (or until the client closes), so the
// refusal written before the close is not lost to a reset (RFC 9112 §9.6, "lingering close").
constexpr milliseconds kLinger{2'000};
constexpr std::size_t kLingerBytes = std::size_t{4} << 20;
// On stop, answers in progress get this long before their sockets are shut.
constexpr milliseconds kStopGrace{3'000};

thread_local Clock::time_point t_request_started = Clock::now();
thread_local bool t_close_after_answer = false;

void ip_and_port(const sockaddr_storage& address, socklen_t length, std::string& ip, int& port) {
    if (address.ss_family == AF_INET) {
        port = ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
    } else if (address.ss_family == AF_INET6) {
        port = ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
    } else {
        return;
    }
    std::array<char, NI_MAXHOST> host{};
    if (::getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, host.data(),
                      static_cast<socklen_t>(host.size()), nullptr, 0, NI_NUMERICHOST) == 0)
        ip = host.data();
}

Peer peer_of(int fd) {
    Peer peer;
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
        ip_and_port(address, length, peer.ip, peer.port);
    length = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
        ip_and_port(address, length, peer.local_ip, peer.local_port);
    return peer;
}

// poll() of one socket: > 0 ready, 0 not within `timeout`, < 0 an error.
int wait_for(int fd, short events, milliseconds timeout) {
    pollfd ready{fd, events, 0};
    const auto until = Clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now()).count();
        const int n = ::poll(&ready, 1, static_cast<int>(std::max<milliseconds::rep>(left, 0)));
        if (n >= 0 || errno != EINTR) return n;
    }
}

std::string serialize(const Refusal& refusal, bool keep) {
    std::string out = "HTTP/1.1 " + std::to_string(refusal.status) + " " +
                      std::string(reason_phrase(refusal.status)) + "\r\n";
    for (const auto& [name, value] : refusal.headers)
        out.append(name).append(": ").append(value).append("\r\n");
    if (!refusal.content_type.empty()) out += "Content-Type: " + refusal.content_type + "\r\n";
    out += "Content-Length: " + std::to_string(refusal.body.size()) + "\r\n";
    out += keep ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    out += refusal.body;
    return out;
}

// Lets the gateway hold as many descriptors as the system allows it (the soft limit is often
// 1,024 where the hard one is far higher).
void raise_descriptor_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

}  // namespace

struct ConnectionLoop::Connection {
    int fd = -1;
    Peer peer;
    RequestReader reader;
    Clock::time_point since;       // accepted, or its last answer written: waiting for a request
    Clock::time_point head_start;  // the current request's first byte
    Clock::time_point body_start;  // the current request's head read
    Clock::time_point last_read;
    std::size_t served = 0;
    std::size_t reserved = 0;  // bytes of max_buffered_bytes this request holds
    bool admitted = false;
    bool continue_sent = false;
    bool peer_closed = false;
    bool lingering = false;
    Clock::time_point linger_until;
    std::size_t discarded = 0;
    // While a thread answers it.
    std::string request;
    bool close_after = false;
    bool keep = false;

    explicit Connection(RequestLimits limits) : reader(limits) {}
    void start_waiting(Clock::time_point now) {
        since = now;
        head_start = {};
        admitted = false;
        continue_sent = false;
    }
};

// ---- AnswerStream ---------------------------------------------------------------------------

AnswerStream::AnswerStream(int fd, const std::string& request, const Peer& peer,
                           milliseconds write_timeout, bool half_closed)
    : fd_(fd),
      request_(request),
      peer_(peer),
      write_timeout_(write_timeout),
      half_closed_(half_closed) {}

bool AnswerStream::is_writable() const {
    if (failed_ || wait_for(fd_, POLLOUT, write_timeout_) <= 0) return false;
    if (half_closed_) return true;
    // An end of input means the client is gone; bytes (a next request) mean it is there.
    if (wait_for(fd_, POLLIN, milliseconds{0}) == 0) return true;
    char byte = 0;
    return ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

ssize_t AnswerStream::read(char* ptr, std::size_t size) {
    const std::size_t n = std::min(size, request_.size() - offset_);
    std::memcpy(ptr, request_.data() + offset_, n);
    offset_ += n;
    return static_cast<ssize_t>(n);
}

ssize_t AnswerStream::write(const char* ptr, std::size_t size) {
    if (failed_) return -1;
    for (;;) {
        const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_for(fd_, POLLOUT, write_timeout_) > 0)
            continue;
        failed_ = true;
        return -1;
    }
}

void AnswerStream::get_remote_ip_and_port(std::string& ip, int& port) const {
    ip = peer_.ip;
    port = peer_.port;
}

void AnswerStream::get_local_ip_and_port(std::string& ip, int& port) const {
    ip = peer_.local_ip;
    port = peer_.local_port;
}

// ---- ConnectionLoop -------------------------------------------------------------------------

ConnectionLoop::ConnectionLoop(RequestLimits request_limits, ConnectionLimits limits,
                               ConnectionTimeouts timeouts, std::size_t threads, Hooks hooks)
    : request_limits_(request_limits),
      limits_(limits),
      timeouts_(timeouts),
      threads_(std::max<std::size_t>(threads, 1)),
      hooks_(std::move(hooks)),
      epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      spare_fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

ConnectionLoop::~ConnectionLoop() {
    stop();
    for (auto& t : workers_)
        if (t.joinable()) t.join();
    for (int fd : {listen_fd_, epoll_fd_, wake_fd_, spare_fd_})
        if (fd >= 0) ::close(fd);
}

base::Result<int> ConnectionLoop::bind(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    const std::string where = host + ":" + service;
    if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || found == nullptr)
        return base::make_error(base::ErrorType::kInvalidRequest,
                                "cannot listen on " + where + ": unknown address");
    std::string why = "no address";
    for (auto* a = found; a != nullptr; a = a->ai_next) {
        const int fd =
            ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        const int yes = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
            listen_fd_ = fd;
            break;
        }
        why = std::strerror(errno);
        ::close(fd);
    }
    ::freeaddrinfo(found);
    if (listen_fd_ < 0)
        return base::make_error(base::ErrorType::kInvalidRequest,
                                "cannot listen on " + where + ": " + why);
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    std::string ip;
    int bound = 0;
    ip_and_port(address, length, ip, bound);
    raise_descriptor_limit();
    return bound;
}

bool ConnectionLoop::run() {
    if (listen_fd_ < 0 || epoll_fd_ < 0 || wake_fd_ < 0) return false;
    for (int fd : {listen_fd_, wake_fd_}) {
        epoll_event e{};
        e.events = EPOLLIN;
        e.data.fd = fd;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
    }
    running_ = true;
    for (std::size_t i = 0; i < threads_; ++i) workers_.emplace_back([this] { worker(); });
    std::array<epoll_event, 256> events{};
    auto next_sweep = Clock::now() + kSweep;
    while (!stopping_) {
        const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                                   static_cast<int>(kSweep.count()));
        if (n < 0 && errno != EINTR) break;
        for (int i = 0; i < n; ++i) {
            const int fd = events[static_cast<std::size_t>(i)].data.fd;
            if (fd == listen_fd_) {
                accept_all();
            } else if (fd == wake_fd_) {
                std::uint64_t count = 0;
                [[maybe_unused]] const auto r = ::read(wake_fd_, &count, sizeof count);
                take_returned();
            } else if (auto it = connections_.find(fd); it != connections_.end()) {
                on_readable(it->second);
                if (!it->second) connections_.erase(it);
            }
        }
        if (Clock::now() >= next_sweep) {
            sweep();
            next_sweep = Clock::now() + kSweep;
        }
    }
    drain_on_stop();
    return true;
}

std::size_t ConnectionLoop::free_threads_locked() const {
    const std::size_t taken = answering_.size() - tasks_.size();
    return taken < threads_ ? threads_ - taken : 0;
}

std::size_t ConnectionLoop::queued() {
    std::lock_guard lock(mutex_);
    const std::size_t free = free_threads_locked();
    return tasks_.size() > free ? tasks_.size() - free : 0;
}

void ConnectionLoop::stop() {
    if (stopping_.exchange(true)) return;
    if (wake_fd_ >= 0) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto r = ::write(wake_fd_, &one, sizeof one);
    }
}

void ConnectionLoop::drain_on_stop() {
    ::close(listen_fd_);
    listen_fd_ = -1;
    for (auto& [fd, c] : connections_) ::close(fd);
    connections_.clear();
    // Answers in progress get a grace period, then their sockets are shut so they end.
    const auto until = Clock::now() + kStopGrace;
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (answering_.empty() && tasks_.empty()) break;
            if (Clock::now() >= until) {
                for (int fd : answering_) ::shutdown(fd, SHUT_RDWR);
            }
        }
        std::this_thread::sleep_for(milliseconds{20});
    }
    {
        std::lock_guard lock(mutex_);
        running_ = false;
    }
    work_ready_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
    for (auto& c : returned_) ::close(c->fd);
    returned_.clear();
}

void ConnectionLoop::accept_all() {
    for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if ((errno == EMFILE || errno == ENFILE) && spare_fd_ >= 0) {
                // Out of descriptors: the pending connection would keep the listening socket
                // readable (a busy loop). The spare descriptor makes room to take it and close it.
                base::component_logger("gateway")->warn("event=accept_failed error=\"{}\"",
                                                        std::strerror(errno));
                ::close(spare_fd_);
                const int dropped = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
                if (dropped >= 0) ::close(dropped);
                spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
            }
            return;
        }
        const int yes = 1;
        // httplib writes an answer's head and body apart: without this Nagle's algorithm holds
        // the body back for the client's delayed ACK (40 ms a request on loopback).
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
        auto c = std::make_unique<Connection>(request_limits_);
        c->fd = fd;
        c->peer = peer_of(fd);
        c->start_waiting(Clock::now());
        std::size_t& from_client = per_client_[c->peer.ip];
        ++open_;
        ++from_client;
        epoll_event e{};
        e.events = EPOLLIN | EPOLLRDHUP;
        e.data.fd = fd;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
        std::string over;
        if (open_ > limits_.max_connections)
            over =
                "the gateway has " + std::to_string(limits_.max_connections) + " connections open";
        else if (from_client > limits_.max_connections_per_client)
            over = "the client " + c->peer.ip + " has " +
                   std::to_string(limits_.max_connections_per_client) + " connections open";
        // Answered at once, without reading: the connection holds nothing while it lingers.
        if (!over.empty()) refuse(*c, 503, over + "; retry later");
        connections_.emplace(fd, std::move(c));
    }
}

void ConnectionLoop::on_readable(std::unique_ptr<Connection>& c) {
    std::array<char, kReadChunk> buffer{};
    std::size_t got = 0;
    while (got < kReadRound) {
        const ssize_t n = ::recv(c->fd, buffer.data(), buffer.size(), 0);
        if (n > 0) {
            got += static_cast<std::size_t>(n);
            if (c->lingering) {
                c->discarded += static_cast<std::size_t>(n);
                if (c->discarded > kLingerBytes) break;
            } else {
                c->reader.append(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
            }
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        // 0: the peer closed its end; an error but "nothing more for now" ends it too.
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) c->peer_closed = true;
        break;
    }
    if (c->lingering) {
        if (c->peer_closed || c->discarded > kLingerBytes) {
            close_now(c->fd);
            c.reset();
        }
        return;
    }
    const auto now = Clock::now();
    if (got > 0) c->last_read = now;
    advance(c);
    // An end of input before a whole request: nothing to answer.
    if (c && c->peer_closed && !c->lingering) {
        close_now(c->fd);
        c.reset();
    }
}

void ConnectionLoop::advance(std::unique_ptr<Connection>& c) {
    const auto now = Clock::now();
    const bool was_started = c->reader.started();
    const auto progress = c->reader.advance();
    if (!was_started && c->reader.started()) {
        c->head_start = now;
        c->last_read = now;
    }
    if (progress == RequestReader::Progress::kFailed) {
        const auto& error = c->reader.error();
        refuse(*c, error.status, error.detail);
        return;
    }
    if (!c->reader.head_done()) return;
    if (!c->admitted) {
        c->body_start = now;
        if (!admit(*c)) return;
    }
    if (progress == RequestReader::Progress::kComplete) {
        dispatch(c);
        return;
    }
    // A chunked body's size is known as it arrives: it holds the budget as it grows.
    if (c->reader.head().chunked && c->reader.body_bytes() > c->reserved) {
        const std::size_t more = c->reader.body_bytes() - c->reserved;
        if (buffered_ + more > limits_.max_buffered_bytes) {
            refuse(*c, 503, "the gateway holds as many request bodies as it may; retry later");
            return;
        }
        buffered_ += more;
        c->reserved += more;
    }
}

// The head is read: the gateway's admission (rate, token, route bound), the buffered-bytes
// budget, and 100 Continue for a client that waits for it. False when the request was refused.
bool ConnectionLoop::admit(Connection& c) {
    c.admitted = true;
    const RequestHead& head = c.reader.head();
    if (hooks_.admit) {
        if (auto refusal = hooks_.admit(head, c.peer)) {
            write_refusal(c, *refusal, false);
            return false;
        }
    }
    if (!head.chunked && head.content_length > 0) {
        if (buffered_ + head.content_length > limits_.max_buffered_bytes) {
            refuse(c, 503, "the gateway holds as many request bodies as it may; retry later");
            return false;
        }
        buffered_ += head.content_length;
        c.reserved = head.content_length;
    }
    if (head.expect_continue && c.reader.body_bytes() == 0 && !c.continue_sent) {
        constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        [[maybe_unused]] const auto n =
            ::send(c.fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        c.continue_sent = true;
    }
    return true;
}

void ConnectionLoop::dispatch(std::unique_ptr<Connection>& c) {
    {
        std::lock_guard lock(mutex_);
        // Requests a free thread is about to take do not wait: only those beyond the free threads
        // count (answering_ holds the requests taken and those queued).
        if (tasks_.size() >= limits_.max_queued_requests + free_threads_locked()) {
            // Not answered in order with what is queued: refused and closed.
        } else {
            c->close_after = !c->reader.head().keep_alive || c->peer_closed ||
                             c->served + 1 >= limits_.max_requests_per_connection || stopping_;
            c->request = c->reader.take();
            ++c->served;
            answering_.insert(c->fd);
            ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
            auto* raw = c.release();
            tasks_.emplace_back([this, raw] { answer(std::unique_ptr<Connection>(raw)); });
            work_ready_.notify_one();
            return;
        }
    }
    refuse(*c, 503,
           "every gateway thread is busy and " + std::to_string(limits_.max_queued_requests) +
               " requests wait; retry later");
}

// On a pool thread: the router answers the request; the connection goes back to the loop.
void ConnectionLoop::answer(std::unique_ptr<Connection> c) {
    t_request_started = c->head_start;
    t_close_after_answer = false;
    AnswerStream stream(c->fd, c->request, c->peer, timeouts_.write_timeout, c->peer_closed);
    bool connection_closed = false;
    bool ok = false;
    try {
        ok = hooks_.answer(stream, c->close_after, connection_closed);
    } catch (const std::exception& e) {
        base::component_logger("gateway")->error("event=answer_failed remote={} error=\"{}\"",
                                                 c->peer.remote(), e.what());
    }
    c->keep =
        ok && !connection_closed && !c->close_after && !stream.failed() && !t_close_after_answer;
    c->request.clear();
    c->request.shrink_to_fit();
    {
        std::lock_guard lock(mutex_);
        answering_.erase(c->fd);
        returned_.push_back(std::move(c));
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto r = ::write(wake_fd_, &one, sizeof one);
}

void ConnectionLoop::take_returned() {
    std::vector<std::unique_ptr<Connection>> back;
    {
        std::lock_guard lock(mutex_);
        back.swap(returned_);
    }
    for (auto& c : back) resume(std::move(c));
}

void ConnectionLoop::resume(std::unique_ptr<Connection> c) {
    buffered_ -= c->reserved;
    c->reserved = 0;
    const int fd = c->fd;
    epoll_event e{};
    e.events = EPOLLIN | EPOLLRDHUP;
    e.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
    auto& slot = connections_[fd] = std::move(c);
    if (!slot->keep) {
        linger(*slot);
        return;
    }
    slot->start_waiting(Clock::now());
    // A request the client sent ahead (pipelining) is read now.
    if (slot->reader.has_more()) advance(slot);
    if (!slot) connections_.erase(fd);
}

void ConnectionLoop::refuse(Connection& c, int status, const std::string& detail, bool keep) {
    const std::string path(
        c.reader.head_done() || !c.reader.head().target.empty() ? c.reader.head().path() : "");
    Refusal refusal =
        hooks_.refuse ? hooks_.refuse(status, path, detail, c.peer) : Refusal{status, {}, "", ""};
    write_refusal(c, refusal, keep);
}

void ConnectionLoop::write_refusal(Connection& c, const Refusal& refusal, bool keep) {
    const std::string bytes = serialize(refusal, keep);
    // Best effort and never waiting: a small answer fits the socket's buffer.
    [[maybe_unused]] const auto n =
        ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    buffered_ -= c.reserved;
    c.reserved = 0;
    linger(c);
}

void ConnectionLoop::linger(Connection& c) {
    ::shutdown(c.fd, SHUT_WR);
    c.lingering = true;
    c.linger_until = Clock::now() + kLinger;
    c.reader = RequestReader(request_limits_);
    c.request.clear();
}

void ConnectionLoop::close_now(int fd) {
    auto it = connections_.find(fd);
    if (it != connections_.end() && it->second) {
        buffered_ -= it->second->reserved;
        auto count = per_client_.find(it->second->peer.ip);
        if (count != per_client_.end() && --count->second == 0) per_client_.erase(count);
    }
    --open_;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
}

// Each connection's deadline: the wait for a request, its head, its body, any read; a closing
// connection's linger.
void ConnectionLoop::sweep() {
    const auto now = Clock::now();
    std::vector<int> expired;
    for (auto& [fd, c] : connections_) {
        if (!c) continue;
        if (c->lingering) {
            if (now >= c->linger_until) expired.push_back(fd);
            continue;
        }
        const auto& t = timeouts_;
        if (!c->reader.started()) {
            // Nothing of a request yet: a new connection gets the head's time, a kept-alive one
            // the keep-alive wait; either is closed without an answer.
            if (now - c->since >= (c->served == 0 ? t.header_timeout : t.keep_alive))
                expired.push_back(fd);
            continue;
        }
        std::string detail;
        if (!c->reader.head_done()) {
            const auto from = c->served == 0 ? std::min(c->since, c->head_start) : c->head_start;
            if (now - from >= t.header_timeout)
                detail = "the request head (request line and headers) did not arrive within " +
                         std::to_string(t.header_timeout.count()) + " ms";
        } else {
            auto deadline = c->body_start + t.body_timeout;
            if (t.body_min_rate > 0)
                deadline += milliseconds{static_cast<milliseconds::rep>(c->reader.body_bytes() *
                                                                        1000 / t.body_min_rate)};
            if (now >= deadline)
                detail = t.body_min_rate == 0 ? "the request body did not arrive within " +
                                                    std::to_string(t.body_timeout.count()) + " ms"
                                              : "the request body arrived slower than " +
                                                    std::to_string(t.body_min_rate) +
                                                    " bytes a second (after the first " +
                                                    std::to_string(t.body_timeout.count()) + " ms)";
        }
        if (detail.empty() && now - c->last_read >= t.read_timeout)
            detail = "nothing of the request arrived for " +
                     std::to_string(t.read_timeout.count()) + " ms";
        if (!detail.empty()) {
            base::component_logger("gateway")->warn("event=request_timeout remote={} detail=\"{}\"",
                                                    c->peer.remote(), detail);
            refuse(*c, 408, detail);
        }
    }
    for (int fd : expired) {
        close_now(fd);
        connections_.erase(fd);
    }
}

void ConnectionLoop::worker() {
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock lock(mutex_);
            work_ready_.wait(lock, [this] { return !tasks_.empty() || !running_; });
            if (tasks_.empty()) return;
            task = std::move(tasks_.front());
            tasks_.pop_front();
        }
        task();
    }
}

std::chrono::steady_clock::time_point request_started() { return t_request_started; }

void close_connection_after_answer() { t_close_after_answer = true; }

}  // namespace glassbox::gateway
