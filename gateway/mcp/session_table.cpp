// MCP sessions: creation, idle expiry and closing, under one mutex.
#include "gateway/mcp/session_table.hpp"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <utility>

namespace glassbox::gateway::mcp {

SessionTable::SessionTable(std::chrono::milliseconds idle, std::size_t max_sessions, Clock clock)
    : idle_(idle), max_sessions_(max_sessions), clock_(std::move(clock)) {
    if (!clock_) clock_ = [] { return std::chrono::steady_clock::now(); };
}

void SessionTable::expire_locked(std::chrono::steady_clock::time_point now) {
    std::erase_if(sessions_, [&](const auto& entry) { return now - entry.second.last_seen >= idle_; });
}

std::optional<std::string> SessionTable::open(std::string protocol_version,
                                              std::string client_name) {
    auto now = clock_();
    std::lock_guard lock(mutex_);
    expire_locked(now);
    if (sessions_.size() >= max_sessions_) return std::nullopt;
    std::string id = random_session_id();
    sessions_[id] = Session{std::move(protocol_version), std::move(client_name), now};
    return id;
}

std::optional<Session> SessionTable::touch(const std::string& id) {
    auto now = clock_();
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return std::nullopt;
    if (now - it->second.last_seen >= idle_) {
        sessions_.erase(it);
        return std::nullopt;
    }
    it->second.last_seen = now;
    return it->second;
}

bool SessionTable::close(const std::string& id) {
    auto now = clock_();
    std::lock_guard lock(mutex_);
    expire_locked(now);
    return sessions_.erase(id) > 0;
}

std::size_t SessionTable::size() {
    auto now = clock_();
    std::lock_guard lock(mutex_);
    expire_locked(now);
    return sessions_.size();
}

std::string random_session_id() {
    std::array<std::uint8_t, 16> bytes{};
    std::size_t got = 0;
    while (got < bytes.size()) {
        ssize_t n = getrandom(bytes.data() + got, bytes.size() - got, 0);
        // getrandom only fails before the kernel's pool is seeded or on a signal: retry on EINTR,
        // and treat anything else as fatal (a guessable session id is worse than no server).
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error("getrandom failed: cannot make an unguessable session id");
        }
        got += static_cast<std::size_t>(n);
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string id;
    id.reserve(bytes.size() * 2);
    for (std::uint8_t b : bytes) {
        id.push_back(kHex[b >> 4]);
        id.push_back(kHex[b & 0x0f]);
    }
    return id;
}

}  // namespace glassbox::gateway::mcp
