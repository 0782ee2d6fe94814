// Bearer tokens with scopes, and the per-client rate limit.
#include "gateway/access.hpp"

#include <cctype>

#include <algorithm>
#include <cmath>

#include "base/ascii.hpp"
#include "base/owner_only.hpp"

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;

namespace {
constexpr std::size_t kMinTokenBytes = 16;
constexpr std::size_t kMaxTokensFileBytes = 1 << 20;
}  // namespace

std::string_view to_string(Scope scope) noexcept {
    switch (scope) {
        case Scope::kNone:
            return "none";
        case Scope::kRead:
            return "read";
        case Scope::kAsk:
            return "ask";
        case Scope::kLoad:
            return "load";
    }
    return "none";
}

Scope scope_for(std::string_view method, std::string_view path) noexcept {
    // A browser's CORS preflight never carries credentials (Fetch standard, "CORS-preflight
    // request"), and an OPTIONS answer only says what may be sent: asking it for a token would
    // refuse every browser client before its real request is made.
    if (method == "OPTIONS") return Scope::kNone;
    if (path == "/api/v1/health" || path == "/api/v1/openapi.json") return Scope::kNone;
    if (path == "/mcp" || path.starts_with("/mcp/")) return Scope::kAsk;
    if (path.starts_with("/api/v1/load/")) return Scope::kLoad;
    // Deleting a collection writes the knowledge store as loading does.
    if (method == "DELETE" && path.starts_with("/api/v1/collections/")) return Scope::kLoad;
    if (path == "/api/v1/query" && method == "POST") return Scope::kAsk;
    if (path.starts_with("/api/") || path == "/metrics") return Scope::kRead;
    return Scope::kNone;
}

bool TokenGrant::allows(Scope scope) const noexcept {
    switch (scope) {
        case Scope::kNone:
            return true;
        case Scope::kRead:
            return read;
        case Scope::kAsk:
            return ask;
        case Scope::kLoad:
            return load;
    }
    return false;
}

base::Result<AccessTokens> AccessTokens::load(const std::filesystem::path& path) {
    auto text = base::read_owner_only_secret(path, kMaxTokensFileBytes);
    if (!text) return text.error();
    auto tokens = parse(*text);
    if (!tokens)
        return make_error(tokens.error().type, path.string() + ": " + tokens.error().message);
    return tokens;
}

base::Result<AccessTokens> AccessTokens::parse(std::string_view text) {
    AccessTokens out;
    std::size_t line_number = 0;
    while (!text.empty()) {
        ++line_number;
        const auto end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        if (const auto hash = line.find('#'); hash != std::string_view::npos)
            line = line.substr(0, hash);
        std::vector<std::string_view> words;
        while (!line.empty()) {
            const auto start = line.find_first_not_of(" \t\r");
            if (start == std::string_view::npos) break;
            line.remove_prefix(start);
            const auto stop = line.find_first_of(" \t\r");
            words.push_back(line.substr(0, stop));
            line = stop == std::string_view::npos ? std::string_view() : line.substr(stop);
        }
        if (words.empty()) continue;
        const auto bad = [&](const std::string& why) {
            return make_error(ErrorType::kInvalidRequest,
                              "line " + std::to_string(line_number) + ": " + why);
        };
        if (words.size() < 2 || words.size() > 3)
            return bad("not `<token> <scope>[,<scope>…] [name]`");
        const std::string_view token = words[0];
        if (token.size() < kMinTokenBytes || token.size() > kMaxTokenBytes)
            return bad("a token is 16 to 256 characters");
        for (const char c : token)
            if (c < 0x21 || c > 0x7e) return bad("a token is printable ASCII");
        Stored stored;
        stored.padded.assign(kMaxTokenBytes, '\0');
        std::copy(token.begin(), token.end(), stored.padded.begin());
        stored.length = token.size();
        stored.grant.name = words.size() == 3 ? std::string(words[2])
                                              : "token-" + std::to_string(out.tokens_.size() + 1);
        std::string_view scopes = words[1];
        while (!scopes.empty()) {
            const auto comma = scopes.find(',');
            const std::string_view scope = scopes.substr(0, comma);
            scopes =
                comma == std::string_view::npos ? std::string_view() : scopes.substr(comma + 1);
            if (scope == "read")
                stored.grant.read = true;
            else if (scope == "ask")
                stored.grant.ask = true;
            else if (scope == "load")
                stored.grant.load = true;
            else
                return bad("unknown scope \"" + std::string(scope) + "\" (read, ask, load)");
        }
        out.tokens_.push_back(std::move(stored));
    }
    if (out.tokens_.empty()) return make_error(ErrorType::kInvalidRequest, "no token in the file");
    return out;
}

std::string_view bearer_token(std::string_view authorization) noexcept {
    // RFC 9110 §11.1: the scheme is case-insensitive; RFC 6750 §2.1: one or more spaces after it.
    constexpr std::string_view kBearer = "bearer";
    if (authorization.size() <= kBearer.size()) return {};
    for (std::size_t i = 0; i < kBearer.size(); ++i)
        if (base::ascii_lower(authorization[i]) != kBearer[i]) return {};
    auto rest = authorization.substr(kBearer.size());
    if (rest.front() != ' ') return {};
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    return rest;
}

std::optional<TokenGrant> AccessTokens::find(std::string_view presented) const noexcept {
    if (presented.size() > kMaxTokenBytes) return std::nullopt;  // says nothing about the tokens
    char padded[kMaxTokenBytes] = {};
    std::copy(presented.begin(), presented.end(), padded);
    const TokenGrant* found = nullptr;
    for (const auto& stored : tokens_) {
        // Every byte of every token is compared; volatile keeps the compiler from stopping early.
        volatile unsigned char diff =
            static_cast<unsigned char>((stored.length ^ presented.size()) != 0);
        for (std::size_t i = 0; i < kMaxTokenBytes; ++i)
            diff = static_cast<unsigned char>(diff | (static_cast<unsigned char>(stored.padded[i]) ^
                                                      static_cast<unsigned char>(padded[i])));
        if (diff == 0) found = &stored.grant;
    }
    if (found == nullptr) return std::nullopt;
    return *found;
}

std::chrono::milliseconds RateLimiter::admit(const std::string& client, Clock::time_point now) {
    std::lock_guard lock(mutex_);
    if (buckets_.size() >= kMaxClients) {
        // Full buckets are as good as none: drop them (a client idle for burst/rate seconds).
        for (auto it = buckets_.begin(); it != buckets_.end();) {
            const double idle = std::chrono::duration<double>(now - it->second.updated).count();
            it = it->second.tokens + idle * rate_ >= burst_ ? buckets_.erase(it) : std::next(it);
        }
    }
    auto [it, added] = buckets_.try_emplace(client, Bucket{burst_, now});
    Bucket& bucket = it->second;
    const double elapsed = std::chrono::duration<double>(now - bucket.updated).count();
    bucket.tokens = std::min(burst_, bucket.tokens + elapsed * rate_);
    bucket.updated = now;
    if (bucket.tokens >= 1.0) {
        bucket.tokens -= 1.0;
        return std::chrono::milliseconds{0};
    }
    const double wait_s = (1.0 - bucket.tokens) / rate_;
    return std::chrono::milliseconds{static_cast<long long>(std::ceil(wait_s * 1000.0))};
}

}  // namespace glassbox::gateway
