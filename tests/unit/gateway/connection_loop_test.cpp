// The connection loop with a real router (GatewayServer) on loopback: whole requests, keep-alive
// and pipelining, refusals at the head, deadlines, the per-client bound, half-closed clients,
// and stopping with an answer in progress. Runs under the sanitizers with the other unit tests.
#include "gateway/connection_loop.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "gateway/gateway_server.hpp"
#include "tests/support/loopback_socket.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::gateway {
namespace {

using std::chrono::milliseconds;

// A plain socket to the loop; every wait has a deadline.
class Client {
public:
    explicit Client(int port, const char* source = "127.0.0.1")
        : fd_(integration::connect_loopback(port, source)), connected_(fd_ >= 0) {}
    ~Client() { ::close(fd_); }
    bool connected() const { return connected_; }
    void send(const std::string& bytes) { ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL); }
    void half_close() { ::shutdown(fd_, SHUT_WR); }
    // Everything received until `needle` has arrived, the server closed, or `timeout` passed.
    std::string read_until(const std::string& needle, milliseconds timeout = milliseconds{5'000}) {
        const auto until = std::chrono::steady_clock::now() + timeout;
        while (received_.find(needle) == std::string::npos && !closed_ &&
               std::chrono::steady_clock::now() < until) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            char buffer[4096];
            const auto n = ::recv(fd_, buffer, sizeof buffer, 0);
            if (n <= 0)
                closed_ = true;
            else
                received_.append(buffer, static_cast<std::size_t>(n));
        }
        return received_;
    }
    bool closed(milliseconds timeout = milliseconds{5'000}) {
        read_until("\x01never", timeout);
        return closed_;
    }

private:
    int fd_ = -1;
    bool connected_ = false;
    bool closed_ = false;
    std::string received_;
};

class ConnectionLoopTest : public ::testing::Test {
protected:
    void start(ConnectionLimits limits = {}, ConnectionTimeouts timeouts = {}) {
        server_.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
            res.set_content("hi", "text/plain");
        });
        server_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
            res.set_content(req.body + "|" + req.get_header_value("Content-Type"), "text/plain");
        });
        server_.Get("/slow", [this](const httplib::Request&, httplib::Response& res) {
            std::unique_lock lock(mutex_);
            ++slow_started_;
            changed_.notify_all();
            changed_.wait(lock, [this] { return release_; });
            res.set_content("late", "text/plain");
        });
        ConnectionLoop::Hooks hooks;
        hooks.admit = [](const RequestHead& head, const Peer&) -> std::optional<Refusal> {
            if (head.field("X-Refuse") == nullptr) return std::nullopt;
            return Refusal{403, {{"X-Why", "asked"}}, "text/plain", "refused"};
        };
        hooks.refuse = [](int status, std::string_view path, const std::string& detail,
                          const Peer&) {
            return Refusal{status, {}, "text/plain", std::string(path) + ": " + detail};
        };
        hooks.answer = [this](AnswerStream& stream, bool close, bool& closed) {
            return server_.answer(stream, close, closed);
        };
        loop_ = std::make_unique<ConnectionLoop>(RequestLimits{}, limits, timeouts, 2,
                                                 std::move(hooks));
        auto port = loop_->bind("127.0.0.1", 0);
        ASSERT_TRUE(port);
        port_ = *port;
        server_.set_serving(true);
        runner_ = std::thread([this] { loop_->run(); });
    }
    void release() {
        std::lock_guard lock(mutex_);
        release_ = true;
        changed_.notify_all();
    }
    void TearDown() override {
        release();
        if (loop_) loop_->stop();
        if (runner_.joinable()) runner_.join();
    }

    GatewayServer server_;
    std::unique_ptr<ConnectionLoop> loop_;
    std::thread runner_;
    int port_ = 0;
    // The /slow handlers: how many started, and whether they may answer (under mutex_).
    std::mutex mutex_;
    std::condition_variable changed_;
    int slow_started_ = 0;
    bool release_ = false;
};

TEST_F(ConnectionLoopTest, KeepAliveAndPipelinedRequestsAreAnsweredInOrder) {
    start();
    Client c(port_);
    ASSERT_TRUE(c.connected());
    c.send(
        "GET /hello HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nHost: "
        "x\r\nTransfer-Encoding: chunked\r\n"
        "Content-Type: multipart/form-data; boundary=z\r\n\r\n3\r\na=1\r\n0\r\n\r\n");
    const std::string got = c.read_until("a=1|");
    EXPECT_NE(got.find("HTTP/1.1 200 OK"), std::string::npos) << got;
    EXPECT_LT(got.find("hi"), got.find("a=1|application/octet-stream")) << got;
    c.send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_TRUE(c.closed());
}

TEST_F(ConnectionLoopTest, AdmissionRefusesAtTheHeadAndFramingErrorsAreAnsweredAndClosed) {
    start();
    Client refused(port_);
    refused.send("POST /echo HTTP/1.1\r\nHost: x\r\nX-Refuse: 1\r\nContent-Length: 100000\r\n\r\n");
    const std::string answer = refused.read_until("refused");
    EXPECT_NE(answer.find("HTTP/1.1 403 Forbidden\r\n"), std::string::npos) << answer;
    EXPECT_NE(answer.find("X-Why: asked\r\n"), std::string::npos) << answer;
    EXPECT_TRUE(refused.closed());
    Client broken(port_);
    broken.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n");
    const std::string refusal = broken.read_until("implemented");
    EXPECT_NE(refusal.find("HTTP/1.1 501 "), std::string::npos) << refusal;
    EXPECT_NE(refusal.find("Connection: close\r\n"), std::string::npos) << refusal;
    EXPECT_NE(refusal.find("/echo: the transfer coding"), std::string::npos) << refusal;
    EXPECT_TRUE(broken.closed());
}

TEST_F(ConnectionLoopTest, AHeadPastItsDeadlineIs408AndAnIdleConnectionIsClosedSilently) {
    ConnectionTimeouts timeouts;
    timeouts.header_timeout = milliseconds{300};
    start({}, timeouts);
    Client slow(port_);
    slow.send("GET /hello HTTP/1.1\r\nHost: x\r\n");
    const std::string answer = slow.read_until("did not arrive");
    EXPECT_NE(answer.find("HTTP/1.1 408 "), std::string::npos) << answer;
    EXPECT_TRUE(slow.closed());
    Client idle(port_);
    EXPECT_TRUE(idle.closed());
    EXPECT_EQ(idle.read_until("x", milliseconds{0}), "");
}

TEST_F(ConnectionLoopTest, OneClientIsBoundedAndAnotherIsStillServed) {
    start({.max_connections_per_client = 2});
    Client a(port_), b(port_);
    a.send("GET /hel");
    b.send("GET /hel");
    Client c(port_);
    const std::string refused = c.read_until("connections open");
    EXPECT_NE(refused.find("HTTP/1.1 503 "), std::string::npos) << refused;
    Client other(port_, "127.0.0.2");
    other.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_NE(other.read_until("hi").find("200 OK"), std::string::npos);
}

TEST_F(ConnectionLoopTest, AHalfClosedClientGetsItsAnswer) {
    start();
    Client c(port_);
    c.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    c.half_close();
    EXPECT_NE(c.read_until("hi").find("200 OK"), std::string::npos);
    EXPECT_TRUE(c.closed());
}

TEST_F(ConnectionLoopTest, RequestsWaitForAThreadAndBeyondTheQueueAre503) {
    start({.max_queued_requests = 1});
    // Both threads answer /slow, one more request waits, the next is refused.
    Client s1(port_), s2(port_);
    s1.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
    s2.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
    const auto until = std::chrono::steady_clock::now() + milliseconds{5'000};
    {
        std::unique_lock lock(mutex_);
        ASSERT_TRUE(changed_.wait_until(lock, until, [this] { return slow_started_ == 2; }))
            << s2.read_until("x", milliseconds{200});
    }
    Client waiting(port_);
    waiting.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(test_support::wait_until([this] { return loop_->queued() >= 1; }));
    ASSERT_EQ(loop_->queued(), 1u);
    Client refused(port_);
    refused.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_NE(refused.read_until("retry later").find("HTTP/1.1 503 "), std::string::npos);
    release();
    EXPECT_NE(waiting.read_until("hi").find("200 OK"), std::string::npos);
    EXPECT_NE(s1.read_until("late").find("200 OK"), std::string::npos);
}

}  // namespace
}  // namespace glassbox::gateway
