// MCP sessions: random unguessable ids, the negotiated protocol version, idle expiry, and the
// tools/call requests each has in flight (so a notification or DELETE can cancel them).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"

namespace glassbox::gateway::mcp {

// What a session keeps: bounded whatever its client sent (issue 30: a 1 MB clientInfo name
// kept per session let 1,024 sessions hold a gigabyte).
struct Session {
    std::string client;            // who opened it (HttpExchange::client), for the per-client bound
    std::string protocol_version;  // one the server speaks
    std::string client_name;       // clientInfo.name, at most kMaxClientNameBytes
    std::chrono::steady_clock::time_point last_seen;
    std::size_t calls = 0;  // requests in flight: a session with any does not expire
};

// Whether one call in flight was cancelled; shared by the call (which polls it from its own
// thread) and the table (which sets it from the thread that got the cancellation).
class CallState {
public:
    bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }
    void cancel() noexcept { cancelled_.store(true, std::memory_order_release); }

private:
    std::atomic<bool> cancelled_{false};
};

// The most of clientInfo.name a session keeps (cut on a UTF-8 boundary).
inline constexpr std::size_t kMaxClientNameBytes = 256;

// Why open() made no session, and when to retry: when the first idle session in the way (the
// client's own, or any for a full table) expires. A session with a call in flight does not
// expire, so without an idle one the answer is the idle time.
struct OpenRefused {
    bool client_at_cap = false;  // the client has its most sessions; else the table is full
    std::chrono::seconds retry_after{1};
};

// A new session's id, or why none was opened.
using Opened = std::variant<std::string, OpenRefused>;

class SessionTable;

// A request registered in flight in its session. Destroying the ticket ends the registration
// and restarts the session's idle clock (a long call counts as use of its session).
class CallTicket {
public:
    CallTicket(SessionTable& table, std::string session, std::string key,
               std::shared_ptr<CallState> state);
    ~CallTicket();
    CallTicket(const CallTicket&) = delete;
    CallTicket& operator=(const CallTicket&) = delete;

    bool cancelled() const noexcept { return state_->cancelled(); }
    const std::string& session() const noexcept { return session_; }

private:
    SessionTable& table_;
    std::string session_;
    std::string key_;
    std::shared_ptr<CallState> state_;
};

// Thread-safe: the HTTP server calls from several threads. A session unused for `idle` (and
// with no request in flight) is gone: the next request naming it gets 404 and the client
// initialises a new one (MCP "Streamable HTTP", session management).
class SessionTable {
public:
    using Clock = std::function<std::chrono::steady_clock::time_point()>;

    // At most `max_sessions` live sessions, `max_per_client` of them opened by one client.
    SessionTable(std::chrono::milliseconds idle, std::size_t max_sessions,
                 std::size_t max_per_client, Clock clock);

    // A new session of `client`, keeping at most kMaxClientNameBytes of `client_name`; refused
    // when the client has `max_per_client` live sessions or the table `max_sessions`.
    Opened open(std::string client, std::string protocol_version, std::string_view client_name);
    // The live session (its idle clock restarted), or nullopt when unknown or expired.
    std::optional<Session> touch(const std::string& id);
    // True when the id named a live session, which is now gone; its calls in flight are
    // cancelled.
    bool close(const std::string& id);
    std::size_t size();

    // Registers request `request_id` (a JSON-RPC id) of session `id` as in flight until the
    // ticket ends. NotFound when the session is gone; InvalidRequest when a request with that
    // id is in flight in the session already (JSON-RPC ids are unique among a sender's
    // requests in flight, and a cancellation must name one).
    base::Result<std::unique_ptr<CallTicket>> begin_call(const std::string& id,
                                                         const nlohmann::json& request_id);
    // Cancels request `request_id` of session `id`; false when no such request is in flight
    // (unknown, or finished: MCP "Cancellation" says to ignore those).
    bool cancel_call(const std::string& id, const nlohmann::json& request_id);
    // Requests in flight in every session.
    std::size_t calls_in_flight();

private:
    friend class CallTicket;
    void end_call(const std::string& id, const std::string& key, const CallState* state);
    void expire_locked(std::chrono::steady_clock::time_point now);
    // When the first idle session (of `client`, or any when it is null) expires, from `now`.
    std::chrono::seconds retry_after_locked(std::chrono::steady_clock::time_point now,
                                            const std::string* client) const;

    std::chrono::milliseconds idle_;
    std::size_t max_sessions_;
    std::size_t max_per_client_;
    Clock clock_;
    std::mutex mutex_;
    std::map<std::string, Session> sessions_;
    // (session id, request id as JSON text) → the call's state.
    std::map<std::pair<std::string, std::string>, std::shared_ptr<CallState>> calls_;
};

// 128 random bits from the kernel as 32 lower-case hex digits (visible ASCII, as the spec asks).
std::string random_session_id();

}  // namespace glassbox::gateway::mcp
