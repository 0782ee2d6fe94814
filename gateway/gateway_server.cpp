// The gateway's HTTP connection loop, and the socket stream whose reads keep a request's
// deadlines (gateway_server.hpp).
#include "gateway/gateway_server.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace glassbox::gateway {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kReadBufferBytes = 4096;
// How often a connection awaiting its next request checks that the server still runs.
constexpr milliseconds kStopCheck{100};
// What close() discards of a client's unread bytes at most (a close with unread data sends a
// reset, which may cost the client our answer).
constexpr std::size_t kDrainBytes = std::size_t{1} << 20;

milliseconds from_timeval(time_t sec, time_t usec) {
    return milliseconds{sec * 1000 + usec / 1000};
}

// poll() of one socket for `events`: > 0 ready, 0 not within `timeout`, < 0 an error.
int wait_for(socket_t sock, short events, milliseconds timeout) {
    pollfd ready{sock, events, 0};
    const auto until = Clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now()).count();
        const int n = ::poll(&ready, 1, static_cast<int>(std::max<milliseconds::rep>(left, 0)));
        if (n >= 0 || errno != EINTR) return n;
    }
}

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

}  // namespace

namespace detail {

// One connection's socket as httplib reads and writes it: reads buffered, each bounded by the
// read timeout and by the request's deadline (RequestDeadlines); writes by the write timeout.
class RequestStream final : public httplib::Stream {
public:
    // Why reading stopped before the request was whole.
    enum class Stall { kNone, kRead, kHead, kBody };

    RequestStream(socket_t sock, milliseconds read_timeout, milliseconds write_timeout,
                  RequestDeadlines deadlines)
        : sock_(sock),
          read_timeout_(read_timeout),
          write_timeout_(write_timeout),
          deadlines_(deadlines) {}

    // The request's first byte is here: its head's clock starts.
    void start_head() {
        phase_ = Phase::kHead;
        started_ = Clock::now();
        stall_ = Stall::kNone;
    }
    // The head is read (httplib's setup_request): the body's clock starts.
    void start_body() {
        phase_ = Phase::kBody;
        body_started_ = Clock::now();
        body_bytes_ = 0;
    }
    // The answer is written: no deadline until the next request.
    void end_request() { phase_ = Phase::kIdle; }

    Stall stall() const { return stall_; }
    Clock::time_point started() const { return started_; }
    bool buffered() const { return begin_ != end_; }
    void close_after_response() { close_after_ = true; }
    bool closing() const { return close_after_ || stall_ != Stall::kNone; }

    std::string describe_stall() const {
        switch (stall_) {
            case Stall::kNone:
                return {};
            case Stall::kRead:
                return "nothing of the request arrived for " +
                       std::to_string(read_timeout_.count()) + " ms";
            case Stall::kHead:
                return "the request head (request line and headers) did not arrive within " +
                       std::to_string(deadlines_.header_timeout.count()) + " ms";
            case Stall::kBody:
                if (deadlines_.body_min_rate == 0)
                    return "the request body did not arrive within " +
                           std::to_string(deadlines_.body_timeout.count()) + " ms";
                return "the request body arrived slower than " +
                       std::to_string(deadlines_.body_min_rate) +
                       " bytes a second (after the first " +
                       std::to_string(deadlines_.body_timeout.count()) + " ms)";
        }
        return {};
    }

    std::string remote() const {
        std::string ip;
        int port = 0;
        get_remote_ip_and_port(ip, port);
        return ip + ":" + std::to_string(port);
    }

    bool is_readable() const override {
        if (buffered()) return true;
        const auto [wait, by_deadline] = read_wait();
        return wait.count() > 0 && wait_for(sock_, POLLIN, wait) > 0;
    }

    bool is_writable() const override {
        return wait_for(sock_, POLLOUT, write_timeout_) > 0 && peer_alive();
    }

    ssize_t read(char* ptr, std::size_t size) override {
        if (stall_ != Stall::kNone) return stalled();
        if (!buffered()) {
            const auto [wait, by_deadline] = read_wait();
            const int ready = wait.count() > 0 ? wait_for(sock_, POLLIN, wait) : 0;
            if (ready == 0) {
                stall_ = !by_deadline             ? Stall::kRead
                         : phase_ == Phase::kHead ? Stall::kHead
                                                  : Stall::kBody;
                return stalled();
            }
            if (ready < 0) return -1;
            ssize_t n = 0;
            do {
                n = ::recv(sock_, buffer_.data(), buffer_.size(), 0);
            } while (n < 0 && errno == EINTR);
            if (n <= 0) return n;
            begin_ = 0;
            end_ = static_cast<std::size_t>(n);
        }
        const std::size_t n = std::min(size, end_ - begin_);
        std::memcpy(ptr, buffer_.data() + begin_, n);
        begin_ += n;
        if (phase_ == Phase::kBody) body_bytes_ += n;
        return static_cast<ssize_t>(n);
    }

    ssize_t write(const char* ptr, std::size_t size) override {
        if (!is_writable()) return -1;
        ssize_t n = 0;
        do {
            n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
        } while (n < 0 && errno == EINTR);
        return n;
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        sockaddr_storage address{};
        socklen_t length = sizeof address;
        if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&address), &length) == 0)
            ip_and_port(address, length, ip, port);
    }

    void get_local_ip_and_port(std::string& ip, int& port) const override {
        sockaddr_storage address{};
        socklen_t length = sizeof address;
        if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&address), &length) == 0)
            ip_and_port(address, length, ip, port);
    }

    socket_t socket() const override { return sock_; }

    // Reads and drops what the client already sent and we did not read (bounded, not waiting).
    void drain() {
        std::size_t dropped = 0;
        while (dropped < kDrainBytes) {
            const ssize_t n = ::recv(sock_, buffer_.data(), buffer_.size(), MSG_DONTWAIT);
            if (n <= 0) return;
            dropped += static_cast<std::size_t>(n);
        }
    }

private:
    enum class Phase { kIdle, kHead, kBody };

    // How long the next read may wait: the read timeout, or less when the request's deadline
    // comes first (then `by_deadline`).
    struct Wait {
        milliseconds wait;
        bool by_deadline;
    };
    Wait read_wait() const {
        Clock::time_point deadline;
        if (phase_ == Phase::kHead) {
            deadline = started_ + deadlines_.header_timeout;
        } else if (phase_ == Phase::kBody) {
            deadline = body_started_ + deadlines_.body_timeout;
            // mod_reqtimeout's MinRate: each body_min_rate bytes received earn a second more.
            if (deadlines_.body_min_rate > 0)
                deadline += milliseconds{
                    static_cast<milliseconds::rep>(body_bytes_ * 1000 / deadlines_.body_min_rate)};
        } else {
            return {read_timeout_, false};
        }
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
        if (left >= read_timeout_) return {read_timeout_, false};
        return {std::max(left, milliseconds{0}), true};
    }

    // What a read answers once the request could not be read in time. In the head, an end of
    // input: httplib then answers the partial head as malformed (400, made 408 by the error
    // handler), where a failed read of the request line would close without an answer. In the
    // body, a failure: an end would complete a body sent without Content-Length.
    ssize_t stalled() const { return phase_ == Phase::kHead ? 0 : -1; }

    // The client has not closed its side (as httplib's is_socket_alive): nothing to read, or
    // bytes rather than the end.
    bool peer_alive() const {
        if (buffered() || wait_for(sock_, POLLIN, milliseconds{0}) == 0) return true;
        char byte = 0;
        return ::recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
    }

    socket_t sock_;
    milliseconds read_timeout_;
    milliseconds write_timeout_;
    RequestDeadlines deadlines_;
    Phase phase_ = Phase::kIdle;
    Stall stall_ = Stall::kNone;
    Clock::time_point started_ = Clock::now();
    Clock::time_point body_started_;
    std::uint64_t body_bytes_ = 0;
    bool close_after_ = false;
    std::array<char, kReadBufferBytes> buffer_{};
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
};

}  // namespace detail

namespace {

// The connection this thread serves, for the request's handlers (set for the connection's life).
thread_local detail::RequestStream* t_stream = nullptr;

class ServingOnThisThread {
public:
    explicit ServingOnThisThread(detail::RequestStream& stream) { t_stream = &stream; }
    ~ServingOnThisThread() { t_stream = nullptr; }
    ServingOnThisThread(const ServingOnThisThread&) = delete;
    ServingOnThisThread& operator=(const ServingOnThisThread&) = delete;
};

}  // namespace

bool GatewayServer::process_and_close_socket(socket_t sock) {
    detail::RequestStream stream(sock, from_timeval(read_timeout_sec_, read_timeout_usec_),
                                 from_timeval(write_timeout_sec_, write_timeout_usec_), deadlines_);
    const ServingOnThisThread serving(stream);
    bool ok = false;
    for (std::size_t left = keep_alive_max_count_; left > 0 && await_request(stream); --left) {
        stream.start_head();
        bool connection_closed = false;
        // The last request a connection may carry is answered with Connection: close.
        ok = process_request(stream, left == 1, connection_closed,
                             [&stream](httplib::Request&) { stream.start_body(); });
        stream.end_request();
        if (!ok || connection_closed || stream.closing()) break;
    }
    // As httplib closes: both directions, then the descriptor; unread bytes dropped first.
    ::shutdown(sock, SHUT_WR);
    stream.drain();
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
}

bool GatewayServer::await_request(const detail::RequestStream& stream) const {
    if (svr_sock_ == INVALID_SOCKET) return false;
    if (stream.buffered()) return true;
    const auto until = Clock::now() + std::chrono::seconds{keep_alive_timeout_sec_};
    while (svr_sock_ != INVALID_SOCKET) {
        const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now());
        if (left.count() <= 0) return false;
        const int ready = wait_for(stream.socket(), POLLIN, std::min(left, kStopCheck));
        if (ready != 0) return ready > 0;
    }
    return false;
}

std::optional<ReadTimeout> request_read_timeout() {
    if (t_stream == nullptr || t_stream->stall() == detail::RequestStream::Stall::kNone)
        return std::nullopt;
    return ReadTimeout{t_stream->describe_stall(), t_stream->remote()};
}

std::chrono::steady_clock::time_point request_started() {
    return t_stream != nullptr ? t_stream->started() : std::chrono::steady_clock::now();
}

void close_connection_after_response() {
    if (t_stream != nullptr) t_stream->close_after_response();
}

}  // namespace glassbox::gateway
