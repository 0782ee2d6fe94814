// In-process broker tests: oversize, garbage and protocol-breaking input, duplicate ids and
// vanished clients.
#include "tests/unit/broker/broker_fixture.hpp"

namespace glassbox::broker::broker_test {
namespace {

// ---------------------------------------------------------------- bad input

TEST_F(BrokerTest, OversizeMessagesGetMessageTooLarge) {
    BrokerConfig config = test_config();
    config.max_message_bytes = 1000;
    start(config);
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "big", "\"" + std::string(2000, 'x') + "\"");
    expect_error(*client, "big", "MessageTooLarge");
    client->send({kEmpty, kMdpc, "echo", std::string(2000, 'y')});
    auto got = client->recv();
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 4u);
    EXPECT_EQ(json::parse((*got)[3])["error"]["type"], "MessageTooLarge");
    // A worker's oversize reply ends the request the same way; the broker keeps serving.
    request(*client, "echo", "r2", "{}");
    const Frames req = expect_request(*w);
    reply(*w, req[3], std::string(2000, 'z'));
    expect_error(*client, "r2", "MessageTooLarge");
    request(*client, "echo", "r3", "{}");
    const Frames again = expect_request(*w);
    reply(*w, again[3], "\"small\"");
    EXPECT_EQ(expect_gb(*client, 0x03, "r3").back(), "\"small\"");
}

TEST_F(BrokerTest, GarbageIsDroppedOrAnsweredAndTheBrokerKeepsServing) {
    start();
    auto w = worker("echo", false);
    auto junk = peer();
    junk->send({"no delimiter"});
    junk->send({kEmpty, "MDPC02", "echo", "x"});
    junk->send({kEmpty});
    junk->send({kEmpty, kMdpc});  // no service frame
    EXPECT_TRUE(junk->silent_for(200ms));

    junk->send({kEmpty, kGbc, cmd(0x0F), "x"});  // unknown command
    auto unknown = junk->recv();
    ASSERT_TRUE(unknown);
    EXPECT_EQ(*unknown, (Frames{kEmpty, kGbc, cmd(0x05), kEmpty, "ProtocolError",
                                "unknown GBC01 command 15"}));
    junk->send({kEmpty, kGbc, cmd(0x01), "echo"});  // too short for a request id
    auto short_request = junk->recv();
    ASSERT_TRUE(short_request);
    ASSERT_EQ(short_request->size(), 6u);
    EXPECT_EQ((*short_request)[3], kEmpty);
    EXPECT_EQ((*short_request)[4], "ProtocolError");
    junk->send({kEmpty, kGbc, cmd(0x01), "echo", "r9", "soon", "{}"});  // bad deadline
    expect_error(*junk, "r9", "ProtocolError");
    junk->send({kEmpty, kGbc, cmd(0x01), "bad service", "r10", "0", "{}"});
    expect_error(*junk, "r10", "ProtocolError");
    Frames too_many{kEmpty, kGbc, cmd(0x01), "echo", "r11", "0"};
    for (int i = 0; i < 70; ++i) too_many.push_back("{}");
    junk->send(too_many);
    expect_error(*junk, "r11", "ProtocolError");

    // Exactly 64 frames is allowed: an MDPC01 request with 61 body frames.
    Frames at_limit{kEmpty, kMdpc, "echo"};
    for (int i = 0; i < 61; ++i) at_limit.push_back(std::to_string(i));
    junk->send(at_limit);
    const Frames big = expect_request(*w);
    ASSERT_EQ(big.size(), 5u + 61u);
    reply(*w, big[3], "\"61\"");
    EXPECT_EQ(junk->recv(), (Frames{kEmpty, kMdpc, "echo", "\"61\""}));

    auto client = peer();
    request(*client, "echo", "ok", "{}");
    const Frames req = expect_request(*w);
    reply(*w, req[3], "\"fine\"");
    EXPECT_EQ(expect_gb(*client, 0x03, "ok").back(), "\"fine\"");
    const json s = status();
    EXPECT_GE(s["counters"]["dropped_frames"].get<int>(), 4);
    EXPECT_GE(s["counters"]["errors"]["ProtocolError"].get<int>(), 5);
}

TEST_F(BrokerTest, WorkerProtocolErrorDisconnectsAndRequeues) {
    start();
    auto bad = worker("echo", false);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    expect_request(*bad);
    bad->go_silent();
    bad->send({kEmpty, kMdpw, cmd(0x07), "1", kEmpty, "s", "0", "open", "{}"});  // not GBW01
    auto got = bad->recv();
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, (Frames{kEmpty, kMdpw, cmd(0x05)}));
    auto good = worker("echo", false);
    const Frames retry = expect_request(*good);
    reply(*good, retry[3], "\"ok\"");
    expect_gb(*client, 0x03, "r1");
}

TEST_F(BrokerTest, HeartbeatWithUnknownRequestIdGetsBrokerRestarted) {
    start();
    auto [w, client, req] = served_by(worker("echo", false), "echo", "live");
    client->send({kEmpty, kGbc, cmd(0x06), "live", "lost"});
    expect_error(*client, "lost", "BrokerRestarted");
    EXPECT_TRUE(client->silent_for(200ms)) << "a known request id is not answered";
    reply(*w, req[3], "\"ok\"");
    expect_gb(*client, 0x03, "live");
}

TEST_F(BrokerTest, DuplicateRequestIdIsRefused) {
    start();
    auto [w, client, req] = served_by(worker("echo", false), "echo", "dup");
    request(*client, "echo", "dup", "{}");
    expect_error(*client, "dup", "ProtocolError");
    reply(*w, req[3], "\"ok\"");
    expect_gb(*client, 0x03, "dup");
}

TEST_F(BrokerTest, VanishedClientLeavesNothingBehind) {
    start();
    auto [w, client, first] = served("echo", "r1");
    request(*client, "echo", "r2", "{}");
    ASSERT_TRUE(wait_for_queued("echo", 1));
    client.reset();  // the client process is gone
    // The broker learns it from its ROUTER, which drops the pipe when it next takes a message:
    // one more answered request, on a connection opened after the close, orders the two.
    ASSERT_TRUE(status().is_object());
    reply(*w, first[3], "\"nobody listens\"");
    // r2 may reach the worker before the broker learns the client is gone; then it is cancelled.
    auto next = w->recv(500ms);
    if (next && (*next)[2] == cmd(0x02)) {
        auto cancel = w->recv();
        ASSERT_TRUE(cancel);
        EXPECT_EQ(*cancel, (Frames{kEmpty, kMdpw, cmd(0x09), (*next)[3]}));
        reply(*w, (*next)[3], "\"discarded\"");
    }
    EXPECT_TRUE(eventually([](const json& s) {
        return s["counters"]["in_flight"] == 0 && s["services"][0]["queued"] == 0 &&
               s["services"][0]["idle"] == 1;
    }));
    EXPECT_GE(status()["counters"]["send_failures"].get<int>(), 1);
}

}  // namespace
}  // namespace glassbox::broker::broker_test
