// MCP sessions' bounds (issue 30): what one session keeps, how many one client may open, and
// when a refused client may retry, on an injected clock.
#include "gateway/mcp/session_table.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/utf8.hpp"

namespace glassbox::gateway::mcp {
namespace {

using namespace std::chrono_literals;

class McpSessionTableTest : public ::testing::Test {
protected:
    McpSessionTableTest() : table_(60s, 4, 2, [this] { return now_; }) {}

    // A new session's id; a failure when none was opened.
    std::string open(const std::string& client, std::string_view name = "unit") {
        auto opened = table_.open(client, "2025-11-25", name);
        if (auto* id = std::get_if<std::string>(&opened)) return *id;
        ADD_FAILURE() << client << " was refused";
        return "";
    }

    // Why `client` gets no session; a failure when it got one.
    OpenRefused refused(const std::string& client) {
        auto opened = table_.open(client, "2025-11-25", "unit");
        if (auto* why = std::get_if<OpenRefused>(&opened)) return *why;
        ADD_FAILURE() << client << " was given a session";
        return {};
    }

    std::chrono::steady_clock::time_point now_{std::chrono::hours(1)};
    SessionTable table_;
};

TEST_F(McpSessionTableTest, AClientNameIsKeptToItsBoundCutOnACharacterBoundary) {
    const std::string huge(1'000'000, 'n');
    const auto kept = table_.touch(open("address 10.0.0.1", huge));
    ASSERT_TRUE(kept);
    EXPECT_EQ(kept->client_name, huge.substr(0, kMaxClientNameBytes));

    // "a" then two-byte characters: byte 256 would split one, so the cut is at 255.
    std::string accented = "a";
    for (int i = 0; i < 200; ++i) accented += "\xC3\xA9";
    const auto cut = table_.touch(open("address 10.0.0.2", accented));
    ASSERT_TRUE(cut);
    EXPECT_EQ(cut->client_name.size(), kMaxClientNameBytes - 1);
    EXPECT_FALSE(base::find_invalid_utf8(cut->client_name));
    EXPECT_EQ(cut->client, "address 10.0.0.2");

    const auto small = table_.touch(open("address 10.0.0.3", "claude-code"));
    ASSERT_TRUE(small);
    EXPECT_EQ(small->client_name, "claude-code");
}

TEST_F(McpSessionTableTest, AClientAtItsBoundWaitsForItsOwnFirstIdleSession) {
    const std::string busy = open("token alice");
    now_ += 10s;
    open("token alice");
    now_ += 5s;
    // Its first session has a call in flight: it does not expire, so the second's expiry counts.
    auto call = table_.begin_call(busy, 1);
    ASSERT_TRUE(call);
    OpenRefused why = refused("token alice");
    EXPECT_TRUE(why.client_at_cap);
    EXPECT_EQ(why.retry_after, 55s);
    // Others' sessions do not count against it, nor its against them.
    EXPECT_FALSE(open("token bob").empty());
    EXPECT_FALSE(open("address 10.0.0.1").empty());
    EXPECT_EQ(table_.size(), 4u);
}

TEST_F(McpSessionTableTest, AFullTableWaitsForTheFirstIdleSessionOfAnyClient) {
    open("address 10.0.0.1");
    now_ += 1s;
    open("address 10.0.0.2");
    open("address 10.0.0.3");
    open("address 10.0.0.4");
    now_ += 500ms;
    OpenRefused why = refused("address 10.0.0.5");
    EXPECT_FALSE(why.client_at_cap);
    EXPECT_EQ(why.retry_after, 59s) << "58.5 s, rounded up";
    // Once that session expires, the slot is free.
    now_ += 58500ms;
    EXPECT_FALSE(open("address 10.0.0.5").empty());
}

TEST_F(McpSessionTableTest, WithEverySessionBusyTheWaitIsTheIdleTime) {
    std::vector<std::unique_ptr<CallTicket>> calls;
    for (const char* client : {"a", "b", "c", "d"}) {
        auto call = table_.begin_call(open(client), 1);
        ASSERT_TRUE(call);
        calls.push_back(std::move(*call));
    }
    now_ += 90s;  // past the idle time, but a session with a call in flight does not expire
    EXPECT_EQ(refused("e").retry_after, 60s);
    calls.clear();  // the calls end: each session's idle clock restarts now
    now_ += 20s;
    EXPECT_EQ(refused("e").retry_after, 40s);
}

}  // namespace
}  // namespace glassbox::gateway::mcp
