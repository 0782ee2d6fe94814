// The gateway's connections: one event loop reads every request whole (request_reader.hpp) and
// only then gives it to a thread, so slow, idle or hostile clients hold a few kilobytes each and
// never a thread (docs/http.md §4).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "gateway/request_reader.hpp"

namespace glassbox::gateway {

// How many connections, requests and buffered bytes the loop holds at once.
struct ConnectionLimits {
    // Open connections; one more is answered 503 and closed.
    std::size_t max_connections = 1024;
    // Open connections from one client address; one more is answered 503 and closed.
    std::size_t max_connections_per_client = 64;
    // Whole requests waiting for a thread; one more is answered 503 (Retry-After: 1).
    std::size_t max_queued_requests = 256;
    // Request bodies held in memory at once, all connections together; a request whose body
    // would go past it is answered 503 (Retry-After: 1).
    std::size_t max_buffered_bytes = std::size_t{256} << 20;
    // Requests one connection carries; the last is answered with Connection: close.
    std::size_t max_requests_per_connection = 100;
};

// How long each part of a connection's life may take (GatewayConfig has the defaults).
struct ConnectionTimeouts {
    // A request's head, from its first byte (a new connection's first request: from the accept).
    std::chrono::milliseconds header_timeout{10'000};
    // A request's body, from the head's end, plus a second for every body_min_rate bytes.
    std::chrono::milliseconds body_timeout{10'000};
    std::size_t body_min_rate = 500;
    // Nothing of a started request arriving for this long.
    std::chrono::milliseconds read_timeout{10'000};
    // One write of an answer waiting this long for the client to read.
    std::chrono::milliseconds write_timeout{10'000};
    // An idle kept-alive connection, waiting for its next request.
    std::chrono::milliseconds keep_alive{5'000};
};

// An answer the loop writes itself: a refusal before the router sees the request.
struct Refusal {
    int status = 0;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string content_type;
    std::string body;
};

// The client of a connection.
struct Peer {
    std::string ip;
    int port = 0;
    std::string local_ip;
    int local_port = 0;
    std::string remote() const { return ip + ":" + std::to_string(port); }
};

// One connection as the router reads and writes it: reads come from the request the loop has
// already read whole; writes go to the socket, each bounded by the write timeout.
class AnswerStream final : public httplib::Stream {
public:
    AnswerStream(int fd, const std::string& request, const Peer& peer,
                 std::chrono::milliseconds write_timeout, bool half_closed);

    bool is_readable() const override { return offset_ < request_.size(); }
    // The client can take bytes and has not gone: an end of its input counts as gone, unless it
    // had half-closed with the request (then only a failed write says so).
    bool is_writable() const override;
    ssize_t read(char* ptr, std::size_t size) override;
    ssize_t write(const char* ptr, std::size_t size) override;
    void get_remote_ip_and_port(std::string& ip, int& port) const override;
    void get_local_ip_and_port(std::string& ip, int& port) const override;
    socket_t socket() const override { return fd_; }

    bool failed() const noexcept { return failed_; }

private:
    int fd_;
    const std::string& request_;
    std::size_t offset_ = 0;
    const Peer& peer_;
    std::chrono::milliseconds write_timeout_;
    bool half_closed_;
    bool failed_ = false;
};

class ConnectionLoop {
public:
    struct Hooks {
        // Once a head is read, before its body: a refusal (rate limit, token, the route's body
        // bound), or nullopt to go on.
        std::function<std::optional<Refusal>(const RequestHead& head, const Peer& peer)> admit;
        // The answer to a request that cannot be read or served (`path` empty when no request
        // line was read): its status and what to say.
        std::function<Refusal(int status, std::string_view path, const std::string& detail,
                              const Peer& peer)>
            refuse;
        // Answers one whole request read from `stream`; false when the connection must close.
        std::function<bool(AnswerStream& stream, bool close_connection, bool& connection_closed)>
            answer;
    };

    ConnectionLoop(RequestLimits request_limits, ConnectionLimits limits,
                   ConnectionTimeouts timeouts, std::size_t threads, Hooks hooks);
    ~ConnectionLoop();
    ConnectionLoop(const ConnectionLoop&) = delete;
    ConnectionLoop& operator=(const ConnectionLoop&) = delete;

    // Listens on host:port (0: any free port); the port. InvalidRequest when it cannot.
    base::Result<int> bind(const std::string& host, int port);
    // Serves until stop() (from any thread); false when the loop failed.
    bool run();
    void stop();
    bool running() const noexcept { return running_.load(); }
    // Whole requests waiting for a thread.
    std::size_t queued();

    struct Connection;

private:
    void accept_all();
    void on_readable(std::unique_ptr<Connection>& c);
    void advance(std::unique_ptr<Connection>& c);
    bool admit(Connection& c);
    void dispatch(std::unique_ptr<Connection>& c);
    void answer(std::unique_ptr<Connection> c);
    void resume(std::unique_ptr<Connection> c);
    void refuse(Connection& c, int status, const std::string& detail, bool keep = false);
    void write_refusal(Connection& c, const Refusal& refusal, bool keep);
    void linger(Connection& c);
    void close_now(int fd);
    void sweep();
    void take_returned();
    void worker();
    void enqueue(std::function<void()> task);
    void drain_on_stop();
    std::size_t free_threads_locked() const;

    RequestLimits request_limits_;
    ConnectionLimits limits_;
    ConnectionTimeouts timeouts_;
    std::size_t threads_;
    Hooks hooks_;
    int listen_fd_ = -1;
    int epoll_fd_ = -1;
    int wake_fd_ = -1;
    int spare_fd_ = -1;  // kept to be closed when descriptors run out (accept_all)
    std::atomic<bool> running_{false};
    std::atomic<bool> stopping_{false};

    // The loop thread's: connections it reads, and the count of every open one by client.
    std::unordered_map<int, std::unique_ptr<Connection>> connections_;
    std::unordered_map<std::string, std::size_t> per_client_;
    std::size_t open_ = 0;
    std::size_t buffered_ = 0;

    // Shared with the threads: whole requests waiting, and connections coming back.
    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::deque<std::function<void()>> tasks_;
    std::vector<std::unique_ptr<Connection>> returned_;
    std::set<int> answering_;  // sockets a thread is answering on
    std::vector<std::thread> workers_;
};

// For the router's handlers, about the request this thread is answering: when it began (its
// first byte's arrival), and a wish to close its connection once the answer is written.
std::chrono::steady_clock::time_point request_started();
void close_connection_after_answer();

}  // namespace glassbox::gateway
