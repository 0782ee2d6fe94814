// Who may call the gateway and how often: bearer tokens with scopes (compared in constant
// time), and a per-client rate limit (token buckets).
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace glassbox::gateway {

// What a route needs: nothing (health, the OpenAPI document, the viewer's files), or a scope.
enum class Scope { kNone, kRead, kAsk, kLoad };
std::string_view to_string(Scope scope) noexcept;

// The scope `method path` needs (docs/http.md §4): POST /api/v1/query and /mcp ask, POST
// /api/v1/load/* and DELETE /api/v1/collections/* load, every other /api/ route and /metrics
// read; health, openapi.json, the static files and any OPTIONS (a CORS preflight) none.
Scope scope_for(std::string_view method, std::string_view path) noexcept;

struct TokenGrant {
    std::string name;  // shown in logs instead of the token
    bool read = false, ask = false, load = false;
    bool allows(Scope scope) const noexcept;
};

// The token of an `Authorization: Bearer <token>` header value (RFC 6750 §2.1), or "" when the
// value is not one.
std::string_view bearer_token(std::string_view authorization) noexcept;

// The tokens file: one token per line, `<token> <scope>[,<scope>…] [name]`, scopes `read`,
// `ask`, `load`; `#` starts a comment. Tokens are 16-256 printable ASCII characters.
class AccessTokens {
public:
    static constexpr std::size_t kMaxTokenBytes = 256;

    // Reads and checks the file (owner-only: base::read_owner_only_secret). InvalidRequest
    // naming the line for a malformed one; a file with no token is refused too.
    static base::Result<AccessTokens> load(const std::filesystem::path& path);
    static base::Result<AccessTokens> parse(std::string_view text);

    // The grant of the presented token, or nullopt. Every stored token is compared, each over
    // kMaxTokenBytes bytes, whatever matches: the time taken does not depend on the tokens.
    std::optional<TokenGrant> find(std::string_view presented) const noexcept;
    std::size_t size() const noexcept { return tokens_.size(); }

private:
    struct Stored {
        std::string padded;  // the token, zero-padded to kMaxTokenBytes
        std::size_t length = 0;
        TokenGrant grant;
    };
    std::vector<Stored> tokens_;
};

// A token bucket per client (its address): `rate` requests a second on average, `burst` at once.
class RateLimiter {
public:
    using Clock = std::chrono::steady_clock;
    RateLimiter(double rate, double burst) : rate_(rate), burst_(burst) {}

    // Zero when the client may go ahead (one token taken), else how long until it may.
    std::chrono::milliseconds admit(const std::string& client,
                                    Clock::time_point now = Clock::now());

private:
    struct Bucket {
        double tokens = 0;
        Clock::time_point updated;
    };
    static constexpr std::size_t kMaxClients = 10'000;  // idle buckets are dropped above this

    double rate_;
    double burst_;
    std::mutex mutex_;
    std::map<std::string, Bucket> buckets_;
};

}  // namespace glassbox::gateway
