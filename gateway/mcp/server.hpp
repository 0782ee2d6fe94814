// The MCP server over Streamable HTTP (protocol 2025-11-25), independent of any HTTP library.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gateway/mcp/backend.hpp"
#include "gateway/mcp/json_rpc.hpp"
#include "gateway/mcp/session_table.hpp"
#include "gateway/mcp/tools.hpp"
#include "gateway/mcp/trace_resources.hpp"

namespace glassbox::gateway::mcp {

// One HTTP request to the MCP endpoint, as the gateway received it.
struct HttpExchange {
    std::string method;                          // "POST", "GET", "DELETE", …
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
    // Who is asking, for Options::max_sessions_per_client: what the HTTP layer can vouch for
    // ("address 127.0.0.1", or "token <name>" where it checks tokens). Never a secret: it is
    // kept in the session. Empty: one anonymous client.
    std::string client{};
};

// Where a streamed answer goes: the HTTP connection, used from the thread that runs the stream.
struct StreamSink {
    std::function<bool(std::string_view)> write;  // false: the client is gone
    std::function<bool()> connected;              // false: the client is gone
};

// The answer to send back. With `sse`, `body` is the complete text/event-stream text, unless
// `stream` is set: then the HTTP layer sends the headers and calls `stream` once to write the
// events as they happen (a tools/call's progress, then its response). `stream` answers false
// when the client went away.
struct HttpAnswer {
    int status = 200;
    std::map<std::string, std::string> headers;
    std::string body;
    bool sse = false;
    std::function<bool(StreamSink&)> stream;
};

// Every bound and policy of the server, with its default (docs/mcp.md §2).
struct Options {
    // A session unused this long is gone: the next request naming it gets 404.
    std::chrono::milliseconds session_idle = std::chrono::minutes(30);
    // Live sessions at most; an initialize beyond it gets 503 with Retry-After.
    std::size_t max_sessions = 1024;
    // Live sessions of one client (HttpExchange::client) at most, so that no client takes every
    // slot; its initialize beyond it gets 429 with Retry-After.
    std::size_t max_sessions_per_client = 16;
    // A larger POST body gets 413.
    std::size_t max_body_bytes = std::size_t{4} << 20;
    // Messages in one JSON-RPC batch (protocol 2025-03-26 only; later versions have none).
    std::size_t max_batch = 64;
    // Origins accepted besides loopback ones (http(s)://localhost|127.0.0.1|[::1][:port]),
    // exactly as a browser sends them ("https://example.org:8443").
    std::vector<std::string> allowed_origins;
    // When a client accepts both, answer a POST as an SSE stream instead of one JSON body.
    // A tools/call that asks for progress (params._meta.progressToken) is always answered as a
    // stream when the client accepts one.
    bool prefer_sse = false;
    // A streamed answer with nothing else to send writes an SSE comment this often, so the
    // client and any proxy see a long call alive.
    std::chrono::milliseconds keep_alive = std::chrono::seconds(15);
    // serverInfo.version; empty: the build's version (the project's CMake version).
    std::string server_version;
    // The clock behind session expiry and keep-alives (tests replace it).
    std::function<std::chrono::steady_clock::time_point()> clock;
};

// The methods /mcp serves: the Allow header of every 405 there (GET included: this server opens
// no stream of its own).
inline constexpr const char* kAllowedMethods = "POST, DELETE, OPTIONS";

// A refusal at the HTTP level (MCP "Streamable HTTP"): the status says what happened; the body
// is a JSON-RPC error without an id, -32603 for a 500 and -32600 otherwise, so a client can show
// why. The gateway answers its own refusals of /mcp (401, 403, 429, …) with it too.
HttpAnswer refusal(int status, std::string message);

// Protocol versions this server speaks, newest first.
const std::vector<std::string>& supported_protocol_versions();

// Whether a request with this Origin header may reach the server (MCP "Streamable HTTP",
// security: DNS rebinding): none (not a browser), a loopback origin, or one of
// options.allowed_origins (case ignored). The gateway asks it too, so that its own refusals of
// /mcp (401, 403, 429) reach an allowed browser client readable (CORS).
bool origin_allowed(const Options& options, const std::string& origin);

// Thread-safe: the gateway calls handle() from its HTTP threads; Backend calls run unlocked.
class Server {
public:
    Server(Backend& backend, Options options);

    HttpAnswer handle(const HttpExchange& exchange);
    std::size_t live_sessions() { return sessions_.size(); }
    // tools/call requests running now, in every session.
    std::size_t calls_in_flight() { return sessions_.calls_in_flight(); }

private:
    HttpAnswer route(const HttpExchange& exchange);
    HttpAnswer post(const HttpExchange& exchange);
    HttpAnswer remove(const HttpExchange& exchange);
    HttpAnswer initialize(const nlohmann::json& body, bool sse, const std::string& client);
    HttpAnswer call_tool(const std::string& session, const Message& message, bool sse);
    std::optional<nlohmann::json> dispatch(const nlohmann::json& value, const std::string& session);
    nlohmann::json request(const Message& message);
    nlohmann::json tool_reply(const Message& message, RunControl& control);
    // A tools/call answered in one piece (JSON, or inside a batch): its reply, or nothing when
    // it was cancelled while it ran (MCP "Cancellation": no response).
    std::optional<nlohmann::json> call_in_one_piece(const CallTicket& ticket,
                                                    const Message& message);
    void notify(const Message& message, const std::string& session);
    bool origin_allowed(const std::string& origin) const;

    Options options_;
    SessionTable sessions_;
    ToolBox tools_;
    TraceResources resources_;
};

}  // namespace glassbox::gateway::mcp
