// MCP sessions: creation, idle expiry, closing and the calls in flight, under one mutex.
#include "gateway/mcp/session_table.hpp"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/utf8.hpp"

namespace glassbox::gateway::mcp {

SessionTable::SessionTable(std::chrono::milliseconds idle, std::size_t max_sessions,
                           std::size_t max_per_client, Clock clock)
    : idle_(idle),
      max_sessions_(max_sessions),
      max_per_client_(max_per_client),
      clock_(std::move(clock)) {
    if (!clock_) clock_ = [] { return std::chrono::steady_clock::now(); };
}

namespace {

std::string key_of(const nlohmann::json& request_id) {
    return request_id.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

CallTicket::CallTicket(SessionTable& table, std::string session, std::string key,
                       std::shared_ptr<CallState> state)
    : table_(table), session_(std::move(session)), key_(std::move(key)), state_(std::move(state)) {}

CallTicket::~CallTicket() { table_.end_call(session_, key_, state_.get()); }

void SessionTable::expire_locked(std::chrono::steady_clock::time_point now) {
    std::erase_if(sessions_, [&](const auto& entry) {
        return entry.second.calls == 0 && now - entry.second.last_seen >= idle_;
    });
}

std::chrono::seconds SessionTable::retry_after_locked(std::chrono::steady_clock::time_point now,
                                                      const std::string* client) const {
    std::optional<std::chrono::steady_clock::time_point> first;
    for (const auto& [id, session] : sessions_) {
        if (session.calls > 0 || (client != nullptr && session.client != *client)) continue;
        const auto expires = session.last_seen + idle_;
        if (!first || expires < *first) first = expires;
    }
    const auto wait = first ? *first - now : std::chrono::steady_clock::duration(idle_);
    return std::max(std::chrono::ceil<std::chrono::seconds>(wait), std::chrono::seconds(1));
}

Opened SessionTable::open(std::string client, std::string protocol_version,
                          std::string_view client_name) {
    auto now = clock_();
    std::lock_guard lock(mutex_);
    expire_locked(now);
    const auto own = static_cast<std::size_t>(
        std::count_if(sessions_.begin(), sessions_.end(),
                      [&](const auto& entry) { return entry.second.client == client; }));
    // The client's bound first: one client must not take every slot of the table.
    if (own >= max_per_client_) return OpenRefused{true, retry_after_locked(now, &client)};
    if (sessions_.size() >= max_sessions_) {
        return OpenRefused{false, retry_after_locked(now, nullptr)};
    }
    std::string id = random_session_id();
    sessions_[id] = Session{std::move(client), std::move(protocol_version),
                            std::string(base::utf8_prefix(client_name, kMaxClientNameBytes)), now};
    return id;
}

std::optional<Session> SessionTable::touch(const std::string& id) {
    auto now = clock_();
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return std::nullopt;
    if (it->second.calls == 0 && now - it->second.last_seen >= idle_) {
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
    if (sessions_.erase(id) == 0) return false;
    // MCP "Streamable HTTP", session management: a deleted session's requests are not answered;
    // their runs stop (each call sees its state cancelled and ends its ticket on its own).
    auto first = calls_.lower_bound({id, std::string()});
    auto last = first;
    for (; last != calls_.end() && last->first.first == id; ++last) last->second->cancel();
    calls_.erase(first, last);
    return true;
}

base::Result<std::unique_ptr<CallTicket>> SessionTable::begin_call(
    const std::string& id, const nlohmann::json& request_id) {
    auto now = clock_();
    std::string key = key_of(request_id);
    std::lock_guard lock(mutex_);
    auto session = sessions_.find(id);
    if (session == sessions_.end()) {
        return base::make_error(base::ErrorType::kNotFound, "session not found");
    }
    auto state = std::make_shared<CallState>();
    if (!calls_.emplace(std::make_pair(id, key), state).second) {
        return base::make_error(base::ErrorType::kInvalidRequest,
                                "request id " + key + " is already in flight in this session");
    }
    session->second.calls += 1;
    session->second.last_seen = now;
    return std::make_unique<CallTicket>(*this, id, std::move(key), std::move(state));
}

bool SessionTable::cancel_call(const std::string& id, const nlohmann::json& request_id) {
    std::lock_guard lock(mutex_);
    auto it = calls_.find({id, key_of(request_id)});
    if (it == calls_.end()) return false;
    it->second->cancel();
    return true;
}

std::size_t SessionTable::calls_in_flight() {
    std::lock_guard lock(mutex_);
    return calls_.size();
}

void SessionTable::end_call(const std::string& id, const std::string& key, const CallState* state) {
    auto now = clock_();
    std::lock_guard lock(mutex_);
    // A deleted session took its calls' entries with it (and a new call cannot reuse its id).
    auto it = calls_.find({id, key});
    if (it == calls_.end() || it->second.get() != state) return;
    calls_.erase(it);
    if (auto session = sessions_.find(id); session != sessions_.end()) {
        session->second.calls -= 1;
        session->second.last_seen = now;
    }
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
