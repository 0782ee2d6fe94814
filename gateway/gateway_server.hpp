// The gateway's HTTP server: cpp-httplib's Server with a connection loop of its own, so reading a
// request runs on a whole-request deadline and a client that drips its request cannot hold one
// of the few HTTP threads (docs/http.md §4).
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace glassbox::gateway {

// How long reading one request may take, besides httplib's per-read timeout:
// - its head (request line and headers) must be complete within `header_timeout` of its first
//   byte, as nginx's client_header_timeout bounds the whole header;
// - its body within `body_timeout` of the head's end, plus one second for every
//   `body_min_rate` bytes received, as Apache's mod_reqtimeout `body=…,MinRate=…` (0: the whole
//   body within `body_timeout`).
// Writes keep httplib's write timeout alone: an SSE answer may stream for minutes.
struct RequestDeadlines {
    std::chrono::milliseconds header_timeout{10'000};
    std::chrono::milliseconds body_timeout{10'000};
    std::size_t body_min_rate = 500;  // bytes a second
};

namespace detail {
class RequestStream;
}

class GatewayServer : public httplib::Server {
public:
    // Set before run(); read by each new connection.
    void set_request_deadlines(const RequestDeadlines& deadlines) { deadlines_ = deadlines; }

private:
    // httplib's own loop, redone (cpp-httplib 0.11.4, process_server_socket): up to
    // keep_alive_max_count_ requests a connection, each awaited for keep_alive_timeout_sec_,
    // none once the server stops; one stream for the connection, whose reads enforce the
    // request's deadlines, so bytes a client sent ahead (pipelining) are kept, not dropped.
    // httplib calls this private virtual for each accepted socket (its SSLServer overrides it
    // the same way).
    bool process_and_close_socket(socket_t sock) override;
    // The next request's first byte is there: false after keep_alive_timeout_sec_ of nothing,
    // on an error, or once the server stops (checked every 100 ms).
    bool await_request(const detail::RequestStream& stream) const;

    RequestDeadlines deadlines_;
};

// Why reading the request this thread is answering ran out of time: `detail` for its problem
// ("the request head did not arrive within 10000 ms"), `remote` the client ("ip:port").
struct ReadTimeout {
    std::string detail;
    std::string remote;
};

// For the handlers of the request this thread is answering (the error handler): why its
// reading ran out of time, or nullopt when it did not. Such a request is answered 408 and its
// connection closed.
std::optional<ReadTimeout> request_read_timeout();

// When the request this thread is answering began: its first byte's arrival.
std::chrono::steady_clock::time_point request_started();

// Ends the connection of the request this thread is answering once its answer is written
// (a client whose request could not be read is not kept waiting on keep-alive).
void close_connection_after_response();

}  // namespace glassbox::gateway
