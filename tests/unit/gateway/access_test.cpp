// Tokens, scopes, the rate limiter and --listen (gateway/access.hpp, listen_address.hpp).
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "gateway/access.hpp"
#include "gateway/listen_address.hpp"

namespace glassbox::gateway {
namespace {

TEST(AccessTokens, ParsesScopesAndFindsOnlyTheExactToken) {
    auto tokens = AccessTokens::parse(
        "# comment\n\nabcdefghijklmnop read dash  # trailing\nqrstuvwxyz0123456 ask,load\n");
    ASSERT_TRUE(tokens) << tokens.error().message;
    EXPECT_EQ(tokens->size(), 2u);
    auto reader = tokens->find("abcdefghijklmnop");
    ASSERT_TRUE(reader);
    EXPECT_EQ(reader->name, "dash");
    EXPECT_TRUE(reader->allows(Scope::kRead));
    EXPECT_FALSE(reader->allows(Scope::kAsk));
    auto other = tokens->find("qrstuvwxyz0123456");
    ASSERT_TRUE(other);
    EXPECT_TRUE(other->allows(Scope::kLoad));
    EXPECT_FALSE(other->allows(Scope::kRead));
    for (const std::string& wrong :
         {std::string("abcdefghijklmno"), std::string("abcdefghijklmnopq"),
          std::string("Abcdefghijklmnop"), std::string(), std::string("abcdefghijklmnop\0", 17)})
        EXPECT_FALSE(tokens->find(wrong)) << wrong;
    EXPECT_FALSE(tokens->find(std::string(1000, 'a')));
}

TEST(AccessTokens, ABearerTokenIsReadFromItsHeaderOnly) {
    // Authorization header -> the token read from it. RFC 9110 §11.1: the scheme's name is
    // case-insensitive.
    const std::pair<std::string, std::string> cases[] = {
        {"Bearer abcdefghijklmnop", "abcdefghijklmnop"},
        {"Bearer ", ""},
        {"Basic abcdefghijklmnop", ""},
        {"bearer abcdefghijklmnop", "abcdefghijklmnop"},
        {"BEARER  abcdefghijklmnop", "abcdefghijklmnop"},
        {"Bearerabcdefghijklmnop", ""},
        {"", ""}};
    for (const auto& [header, token] : cases) EXPECT_EQ(bearer_token(header), token) << header;
}

TEST(AccessTokens, RefusesMalformedFilesNamingTheLine) {
    for (const char* text : {"", "# only comments\n", "short read\n", "abcdefghijklmnop write\n",
                             "abcdefghijklmnop\n", "abcdefghijklmnop read name extra\n"}) {
        auto tokens = AccessTokens::parse(text);
        EXPECT_FALSE(tokens) << text;
    }
    auto bad = AccessTokens::parse("abcdefghijklmnop read\nabcdefghijklmnop wrote\n");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("line 2"), std::string::npos) << bad.error().message;
}

TEST(Scopes, EachRouteNeedsItsScope) {
    EXPECT_EQ(scope_for("POST", "/api/v1/query"), Scope::kAsk);
    EXPECT_EQ(scope_for("POST", "/api/v1/load/rdf"), Scope::kLoad);
    EXPECT_EQ(scope_for("GET", "/api/v1/traces/x/events"), Scope::kRead);
    EXPECT_EQ(scope_for("POST", "/api/v1/search"), Scope::kRead);
    EXPECT_EQ(scope_for("GET", "/metrics"), Scope::kRead);
    EXPECT_EQ(scope_for("POST", "/mcp"), Scope::kAsk);
    // A CORS preflight carries no credentials.
    EXPECT_EQ(scope_for("OPTIONS", "/mcp"), Scope::kNone);
    EXPECT_EQ(scope_for("OPTIONS", "/api/v1/query"), Scope::kNone);
    EXPECT_EQ(scope_for("GET", "/api/v1/health"), Scope::kNone);
    EXPECT_EQ(scope_for("GET", "/api/v1/openapi.json"), Scope::kNone);
    EXPECT_EQ(scope_for("GET", "/index.html"), Scope::kNone);
}

TEST(RateLimiter, AllowsTheBurstThenTheRateAndSaysHowLongToWait) {
    RateLimiter limiter(2.0, 3.0);
    const auto t0 = RateLimiter::Clock::now();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.admit("a", t0).count(), 0) << i;
    const auto wait = limiter.admit("a", t0);
    EXPECT_EQ(wait.count(), 500) << "one token comes back every 1/rate seconds";
    EXPECT_EQ(limiter.admit("b", t0).count(), 0) << "clients have their own buckets";
    EXPECT_EQ(limiter.admit("a", t0 + std::chrono::milliseconds{500}).count(), 0);
    EXPECT_GT(limiter.admit("a", t0 + std::chrono::milliseconds{500}).count(), 0);
}

TEST(ListenAddress, ParsesHostsAndPortsAndKnowsLoopback) {
    auto a = parse_listen_address("127.0.0.1:8080");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->port, 8080);
    EXPECT_TRUE(a->loopback);
    auto v6 = parse_listen_address("[::1]:0");
    ASSERT_TRUE(v6);
    EXPECT_EQ(v6->host, "::1");
    EXPECT_EQ(v6->url_host, "[::1]");
    EXPECT_TRUE(v6->loopback);
    auto open = parse_listen_address("0.0.0.0:80");
    ASSERT_TRUE(open);
    EXPECT_FALSE(open->loopback);
    for (const char* bad : {"8080", "host:", ":80", "h:65536", "h:-1", "h:8o", "::1:80", "a b:80"})
        EXPECT_FALSE(parse_listen_address(bad)) << bad;
}

// Issue 31: deleting a collection writes the store, as loading does; looking at them reads.
TEST(Scopes, CollectionsDeleteNeedsLoadAndReadingThemRead) {
    EXPECT_EQ(scope_for("DELETE", "/api/v1/collections/notes"), Scope::kLoad);
    EXPECT_EQ(scope_for("GET", "/api/v1/collections/notes"), Scope::kRead);
    EXPECT_EQ(scope_for("GET", "/api/v1/collections"), Scope::kRead);
    EXPECT_EQ(scope_for("OPTIONS", "/api/v1/collections/notes"), Scope::kNone);
}

}  // namespace
}  // namespace glassbox::gateway
