// The gateway's router: cpp-httplib's Server for its routes, handlers and answer writing, fed
// whole requests by the connection loop (connection_loop.hpp) instead of reading sockets itself.
#pragma once

#include <httplib.h>

namespace glassbox::gateway {

class GatewayServer : public httplib::Server {
public:
    // Routes one whole request read from `stream` and writes its answer (httplib's
    // process_request: the pre-routing handler, the route, the error and exception handlers, the
    // logger). False when the connection must close; `connection_closed` when the request asked
    // for that (Connection: close).
    bool answer(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
        return process_request(stream, close_connection, connection_closed, nullptr);
    }

    // httplib asks whether it is shutting down by its listening socket, which the connection
    // loop owns: while `serving` it holds a placeholder, else none, and a streamed answer (SSE)
    // then ends at its next chunk.
    void set_serving(bool serving) { svr_sock_ = serving ? kServing : INVALID_SOCKET; }

private:
    static constexpr socket_t kServing = 0;
};

}  // namespace glassbox::gateway
