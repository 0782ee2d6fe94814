// Every bound and default of the HTTP gateway, in one place (docs/http.md lists them).
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "bus/curve_keys.hpp"
#include "gateway/mcp/server.hpp"
#include "http/sparql_client.hpp"

namespace glassbox::gateway {

struct GatewayConfig {
    std::string host = "127.0.0.1";
    int port = 8080;  // 0: any free port (tests)
    std::string broker = "tcp://127.0.0.1:5555";
    // CURVE (docs/security.md) on the bus and on the explain topic (the key needs `client` and
    // `subscriber`); none: plain TCP.
    std::optional<bus::CurveClientKeys> curve;
    // HTTP worker threads. An SSE stream holds one for its whole run, so this is more than
    // max_streams: other requests are still served while every stream slot is taken.
    std::size_t threads = 24;
    // SSE streams at once (query streams and live tails); one more is answered 503.
    std::size_t max_streams = 16;
    // A request body above this is answered 413 (uploads have their own bound).
    std::size_t max_body_bytes = std::size_t{1} << 20;
    // POST /api/v1/load/*: one upload (a file of triples or a document) at most this large.
    std::size_t max_upload_bytes = std::size_t{64} << 20;
    // Bearer tokens with scopes (access.hpp); empty: no auth, and only a loopback address is
    // served. Any other address refuses to start without it.
    std::filesystem::path tokens_file;
    // Per client address: requests a second on average, and at once; 0: no limit. Applies to
    // /api/, /metrics and /mcp (not to the viewer's files).
    double rate_limit = 50;
    double rate_burst = 100;
    // A question through the query router (several model calls); the bus deadline.
    std::chrono::milliseconds query_timeout{120'000};
    // Every other bus call (trace service, store, mmi.*).
    std::chrono::milliseconds call_timeout{30'000};
    // A broker that does not answer the connection within this is BrokerUnavailable (503).
    std::chrono::milliseconds connect_timeout{3'000};
    // SSE comment lines (": keep-alive") at least this often while nothing else is sent.
    std::chrono::milliseconds keep_alive{15'000};
    // How often a waiting stream checks that its HTTP client is still there.
    std::chrono::milliseconds client_check{250};
    // A client that sends nothing (or reads nothing) for this long is disconnected.
    std::chrono::milliseconds read_timeout{10'000};
    std::chrono::milliseconds write_timeout{10'000};
    // Reading one request (gateway_server.hpp, docs/http.md §4): its head within header_timeout
    // of its first byte; its body within body_timeout plus a second for every body_min_rate
    // bytes received (0: body_timeout alone). A request too slow is answered 408.
    std::chrono::milliseconds header_timeout{10'000};
    std::chrono::milliseconds body_timeout{10'000};
    std::size_t body_min_rate = 500;
    // An idle keep-alive connection is closed after this.
    std::chrono::seconds keep_alive_timeout{5};
    // Connections (connection_loop.hpp, docs/http.md §4): open at once, and from one client
    // address; one more is answered 503 and closed. Whole requests waiting for a thread, and
    // request bodies held in memory, all connections together: past either, 503.
    std::size_t max_connections = 1024;
    std::size_t max_connections_per_client = 64;
    std::size_t max_queued_requests = 256;
    std::size_t max_buffered_bytes = std::size_t{256} << 20;
    // A request's head (request line and header lines) and its header fields: 431 beyond.
    std::size_t max_head_bytes = std::size_t{64} * 1024;
    std::size_t max_header_fields = 100;
    // The MCP server at /mcp: session idle timeout, session bound, allowed origins (docs/mcp.md
    // §8).
    mcp::Options mcp;
    // Folders whose paths never reach a client (path_redaction.hpp): the home the gateway was
    // started with. Its working directory, $HOME, $GLASSBOX_HOME and its upload folder always are.
    std::vector<std::filesystem::path> private_paths;
    // The SPARQL engine POST /api/v1/sparql asks (docs/sparql.md), its timeout the query's bound;
    // none: the route answers 503.
    std::optional<http::SparqlConfig> sparql;
};

}  // namespace glassbox::gateway
