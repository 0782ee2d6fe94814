// MCP sessions: random unguessable ids, the negotiated protocol version, idle expiry.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace glassbox::gateway::mcp {

struct Session {
    std::string protocol_version;
    std::string client_name;
    std::chrono::steady_clock::time_point last_seen;
};

// Thread-safe: the HTTP server calls from several threads. A session unused for `idle` is
// gone: the next request naming it gets 404 and the client initialises a new one
// (MCP "Streamable HTTP", session management).
class SessionTable {
public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;

    SessionTable(std::chrono::milliseconds idle, std::size_t max_sessions, Clock clock);

    // A new session's id, or nullopt when `max_sessions` live sessions exist.
    std::optional<std::string> open(std::string protocol_version, std::string client_name);
    // The live session (its idle clock restarted), or nullopt when unknown or expired.
    std::optional<Session> touch(const std::string& id);
    // True when the id named a live session, which is now gone.
    bool close(const std::string& id);
    std::size_t size();

private:
    void expire_locked(std::chrono::steady_clock::time_point now);

    std::chrono::milliseconds idle_;
    std::size_t max_sessions_;
    Clock clock_;
    std::mutex mutex_;
    std::map<std::string, Session> sessions_;
};

// 128 random bits from the kernel as 32 lower-case hex digits (visible ASCII, as the spec asks).
std::string random_session_id();

}  // namespace glassbox::gateway::mcp
