// In-process broker tests: worker failure, retries and worker credit (§5.1).
#include "tests/unit/broker/broker_fixture.hpp"

namespace glassbox::broker::broker_test {
namespace {

// ---------------------------------------------------------------- worker failure

TEST_F(BrokerTest, WorkerExpiringBeforeReplyIsReplacedByAnother) {
    start();
    auto [first, client, req] = served("echo", "r1", "{\"n\":1}");
    first->go_silent();  // dies without a word
    auto second = worker("echo", true);
    const Frames retry = expect_request(*second, 3000ms);
    ASSERT_EQ(retry.size(), 7u);
    EXPECT_EQ(json::parse(retry[5])["attempt"], 2);
    EXPECT_EQ(json::parse(retry[5])["request_id"], "r1");
    EXPECT_EQ(retry[6], "{\"n\":1}");
    reply(*second, retry[3], "\"second\"");
    EXPECT_EQ(expect_gb(*client, 0x03, "r1").back(), "\"second\"");
    // A late reply from the first worker is ignored.
    reply(*first, req[3], "\"first\"");
    EXPECT_TRUE(client->silent_for(200ms));
}

TEST_F(BrokerTest, RetriesAreBounded) {
    BrokerConfig config = test_config();
    config.max_retries = 1;
    start(config);
    auto client = peer();
    auto w1 = worker("echo", false);
    request(*client, "echo", "r1", "{}");
    expect_request(*w1);
    w1->send({kEmpty, kMdpw, cmd(0x05)});  // DISCONNECT before replying
    auto w2 = worker("echo", false);
    expect_request(*w2);
    w2->send({kEmpty, kMdpw, cmd(0x05)});
    expect_error(*client, "r1", "WorkerLost");
}

TEST_F(BrokerTest, WorkerLostMidStreamEndsWithWorkerLostAndAnEndOfTrace) {
    start();
    auto sub = std::make_unique<Peer>(context_, endpoints_.pub_endpoint, zmq::socket_type::sub);
    sub->socket().set(zmq::sockopt::subscribe, "explain.");
    ASSERT_TRUE(wait_for_subscriptions(1));
    auto [w, client, req] = served("rag", "r1");
    explain(*w, req[3], "urn:q:7", "0", "open", "{\"seq\":0}");
    w->send({kEmpty, kMdpw, cmd(0x06), req[3], kEmpty, "\"partial\""});
    w->go_silent();
    EXPECT_EQ(expect_gb(*client, 0x02, "r1").back(), "{\"seq\":0}");
    EXPECT_EQ(expect_gb(*client, 0x02, "r1").back(), "\"partial\"");
    const Frames end = expect_gb(*client, 0x02, "r1");
    ASSERT_EQ(end.size(), 6u);
    EXPECT_EQ(end[4], "explain");
    const json body = json::parse(end[5]);
    EXPECT_EQ(body["session"], "urn:q:7");
    EXPECT_EQ(body["seq"], 1);
    EXPECT_EQ(body["end_of_trace"], true);
    EXPECT_EQ(body["trace_status"], "error");
    EXPECT_EQ(body["error"]["type"], "WorkerLost");
    EXPECT_EQ(body["service"], "rag");
    // Written by the contract's encoder, so the one decoder reads it back whole.
    const auto decoded = schema::decode_body<schema::ExplainMessage>(end[5]);
    ASSERT_TRUE(decoded.ok()) << decoded.error().describe();
    EXPECT_EQ(decoded.value().seq, 1u);
    EXPECT_TRUE(decoded.value().end_of_trace);
    EXPECT_EQ(decoded.value().trace_status, schema::TraceStatus::kError);
    ASSERT_TRUE(decoded.value().error.has_value());
    EXPECT_EQ(decoded.value().error->type, base::ErrorType::kWorkerLost);
    expect_error(*client, "r1", "WorkerLost");

    // Both explain messages are on the topic, the synthesised one with state `error`.
    auto topic0 = sub->recv();
    ASSERT_TRUE(topic0);
    EXPECT_EQ(*topic0, (Frames{"explain.rag", "urn:q:7", "0", "open", "{\"seq\":0}"}));
    auto topic1 = sub->recv();
    ASSERT_TRUE(topic1);
    ASSERT_EQ(topic1->size(), 5u);
    EXPECT_EQ((*topic1)[2], "1");
    EXPECT_EQ((*topic1)[3], "error");
    const json s = status();
    EXPECT_EQ(s["spool"]["messages"], 2);
}

// ---------------------------------------------------------------- worker credit (§5.1)

// Hex of bytes for a failure message.
std::string printable_for_test(const std::string& bytes) {
    std::string out;
    for (const char c : bytes) {
        static constexpr char kHex[] = "0123456789abcdef";
        const auto b = static_cast<unsigned char>(c);
        out += {'\\', 'x', kHex[b >> 4], kHex[b & 0xF]};
    }
    return out;
}

// The request id of a GBW01 REQUEST (its meta frame).
std::string request_id_of(const Frames& req) {
    const json meta = json::parse(req[5], nullptr, false);
    return meta.is_object() && meta.contains("request_id") ? meta["request_id"].get<std::string>()
                                                           : std::string{};
}

// Regression: the broker's own UTF-8 check accepted overlong forms and surrogates, so a GBC01
// request id holding one went raw into the GBW01 meta frame, which a worker then refused as not
// JSON (ProtocolError). Request ids are opaque bytes (§4): the meta must stay well-formed JSON.
TEST_F(BrokerTest, IllFormedUtf8RequestIdStillGivesAWellFormedMeta) {
    start();
    auto w = worker("echo", true);
    auto client = peer();
    for (const std::string& id : {std::string{"\xC0\xAF"}, std::string{"\xE0\x80\xAF"},
                                  std::string{"\xED\xA0\x80"}, std::string{"ok\xF4\x90\x80\x80"}}) {
        request(*client, "echo", id, "{}");
        const Frames req = expect_request(*w);
        EXPECT_FALSE(base::find_invalid_utf8(req[5]).has_value()) << printable_for_test(id);
        const json meta = json::parse(req[5], nullptr, false);
        ASSERT_FALSE(meta.is_discarded()) << printable_for_test(id);
        EXPECT_TRUE(meta["request_id"].is_string());
        EXPECT_EQ(meta["service"], "echo");
        w->send({kEmpty, kMdpw, cmd(0x03), req[3], kEmpty, "\"done\""});
        const Frames final_reply = expect_gb(*client, 0x03, id);
        EXPECT_EQ(final_reply.back(), "\"done\"");
    }
}

TEST_F(BrokerTest, CreditWorkerHoldsUpToItsCreditAndAReplyFreesASlot) {
    start();
    auto w = credit_worker("echo", "4");
    ASSERT_TRUE(eventually([](const json& s) { return s["counters"]["workers"] == 1; }));
    auto client = peer();
    for (int i = 1; i <= 5; ++i) request(*client, "echo", "r" + std::to_string(i), "{}");
    std::map<std::string, std::string> token_of;  // request id -> token
    for (int i = 0; i < 4; ++i) {
        const Frames req = expect_request(*w);
        token_of[request_id_of(req)] = req[3];
    }
    EXPECT_EQ(token_of.size(), 4u);
    EXPECT_EQ(token_of.count("r5"), 0u) << "the oldest four go first";
    EXPECT_TRUE(w->silent_for(200ms)) << "a fifth request waits while the credit is spent";
    const json busy = status();
    ASSERT_EQ(busy["services"].size(), 1u);
    EXPECT_EQ(busy["services"][0]["credit"], 4);
    EXPECT_EQ(busy["services"][0]["in_flight"], 4);
    EXPECT_EQ(busy["services"][0]["queued"], 1);
    EXPECT_EQ(busy["services"][0]["idle"], 0);

    reply(*w, token_of["r2"], "\"two\"");
    EXPECT_EQ(expect_gb(*client, 0x03, "r2").back(), "\"two\"");
    const Frames fifth = expect_request(*w);
    EXPECT_EQ(request_id_of(fifth), "r5");
    token_of["r5"] = fifth[3];
    for (const char* id : {"r4", "r1", "r5", "r3"})
        reply(*w, token_of[id], "\"" + std::string{id} + "\"");
    for (const char* id : {"r4", "r1", "r5", "r3"}) {
        EXPECT_EQ(expect_gb(*client, 0x03, id).back(), "\"" + std::string{id} + "\"");
    }
    EXPECT_TRUE(eventually([](const json& s) {
        return s["services"][0]["in_flight"] == 0 && s["services"][0]["idle"] == 1 &&
               s["counters"]["in_flight"] == 0;
    }));
}

TEST_F(BrokerTest, CreditSpreadsRequestsRoundRobinOverAvailableWorkers) {
    start();
    auto a = credit_worker("echo", "2");
    auto b = credit_worker("echo", "2");
    ASSERT_TRUE(eventually([](const json& s) { return s["counters"]["workers"] == 2; }));
    auto client = peer();
    for (int i = 1; i <= 4; ++i) request(*client, "echo", "r" + std::to_string(i), "{}");
    const Frames a1 = expect_request(*a);
    const Frames a2 = expect_request(*a);
    const Frames b1 = expect_request(*b);
    const Frames b2 = expect_request(*b);
    EXPECT_TRUE(a->silent_for(100ms));
    EXPECT_TRUE(b->silent_for(100ms));
    for (const Frames* req : {&a1, &a2}) reply(*a, (*req)[3], "\"a\"");
    for (const Frames* req : {&b1, &b2}) reply(*b, (*req)[3], "\"b\"");
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(client->recv());
}

TEST_F(BrokerTest, CreditWorkerLostEndsStreamedRequestsAndRequeuesTheOthers) {
    start();
    auto first = credit_worker("echo", "4");
    ASSERT_TRUE(eventually([](const json& s) { return s["counters"]["workers"] == 1; }));
    auto client = peer();
    for (int i = 1; i <= 4; ++i) {
        request(*client, "echo", "r" + std::to_string(i), "{\"n\":" + std::to_string(i) + "}");
    }
    std::map<std::string, std::string> token_of;
    for (int i = 0; i < 4; ++i) {
        const Frames req = expect_request(*first);
        token_of[request_id_of(req)] = req[3];
    }
    ASSERT_EQ(token_of.size(), 4u);
    // r1 and r3 have started streaming; r2 and r4 have had nothing sent for them.
    first->send({kEmpty, kMdpw, cmd(0x06), token_of["r1"], kEmpty, "\"r1 part\""});
    first->send({kEmpty, kMdpw, cmd(0x06), token_of["r3"], kEmpty, "\"r3 part\""});
    EXPECT_EQ(expect_gb(*client, 0x02, "r1").back(), "\"r1 part\"");
    EXPECT_EQ(expect_gb(*client, 0x02, "r3").back(), "\"r3 part\"");
    first->go_silent();  // dies (expiry) holding four requests
    auto second = credit_worker("echo", "4");

    std::map<std::string, Frames> terminal;  // request id -> terminal message
    std::map<std::string, int> attempt;      // request id -> attempt seen by the second worker
    const auto deadline = Clock::now() + test_support::kHangGuard;
    while (terminal.size() < 4 && Clock::now() < deadline) {
        if (auto req = second->recv(20ms); req && req->size() == 7 && (*req)[2] == cmd(0x02)) {
            const json meta = json::parse((*req)[5]);
            attempt[meta["request_id"].get<std::string>()] = meta["attempt"].get<int>();
            reply(*second, (*req)[3], (*req)[6]);
        }
        if (auto got = client->recv(20ms); got && got->size() >= 5) {
            terminal[(*got)[3]] = *got;
        }
    }
    ASSERT_EQ(terminal.size(), 4u);
    for (const char* id : {"r1", "r3"}) {
        ASSERT_EQ(terminal[id].size(), 6u) << id;
        EXPECT_EQ(terminal[id][2], cmd(0x05)) << id;
        EXPECT_EQ(terminal[id][4], "WorkerLost") << id;
    }
    for (const char* id : {"r2", "r4"}) {
        ASSERT_EQ(terminal[id].size(), 5u) << id;
        EXPECT_EQ(terminal[id][2], cmd(0x03)) << id;
        EXPECT_EQ(attempt[id], 2) << id;
    }
    EXPECT_EQ(terminal["r2"][4], "{\"n\":2}");
    EXPECT_EQ(terminal["r4"][4], "{\"n\":4}");
    EXPECT_EQ(attempt.size(), 2u) << "streamed requests are never re-dispatched";
    const json s = status();
    EXPECT_EQ(s["counters"]["workers_expired"], 1);
    EXPECT_EQ(s["counters"]["retries"], 2);
    EXPECT_EQ(s["services"][0]["credit"], 4);
}

TEST_F(BrokerTest, CancelOfOneOfSeveralInFlightRequestsReachesThatTokenOnly) {
    start();
    auto w = credit_worker("echo", "3");
    ASSERT_TRUE(eventually([](const json& s) { return s["counters"]["workers"] == 1; }));
    auto client = peer();
    for (int i = 1; i <= 3; ++i) request(*client, "echo", "r" + std::to_string(i), "{}");
    std::map<std::string, std::string> token_of;
    for (int i = 0; i < 3; ++i) {
        const Frames req = expect_request(*w);
        token_of[request_id_of(req)] = req[3];
    }
    ASSERT_EQ(token_of.size(), 3u);
    client->send({kEmpty, kGbc, cmd(0x04), "r2"});
    expect_error(*client, "r2", "Cancelled");
    EXPECT_EQ(w->recv(), (Frames{kEmpty, kMdpw, cmd(0x09), token_of["r2"]}));
    EXPECT_TRUE(w->silent_for(200ms)) << "no CANCEL for the other tokens";

    // The cancelled request holds its unit of credit until the worker ends it.
    request(*client, "echo", "r4", "{}");
    EXPECT_TRUE(w->silent_for(200ms));
    reply(*w, token_of["r2"], "\"discarded\"");
    const Frames fourth = expect_request(*w);
    EXPECT_EQ(request_id_of(fourth), "r4");
    for (const std::string& token : {token_of["r1"], token_of["r3"], fourth[3]}) {
        reply(*w, token, "\"ok\"");
    }
    for (const char* id : {"r1", "r3", "r4"})
        EXPECT_EQ(expect_gb(*client, 0x03, id).back(), "\"ok\"");
    EXPECT_TRUE(client->silent_for(200ms)) << "the cancelled request's reply is discarded";
}

TEST_F(BrokerTest, BadCreditFrameIsAProtocolError) {
    start();
    const std::vector<Frames> bad_readies{
        {kEmpty, kMdpw, cmd(0x01), "echo", "GBW01", "0"},
        {kEmpty, kMdpw, cmd(0x01), "echo", "GBW01", "four"},
        {kEmpty, kMdpw, cmd(0x01), "echo", "GBW01", "1025"},
        {kEmpty, kMdpw, cmd(0x01), "echo", "GBW01", "-1"},
        {kEmpty, kMdpw, cmd(0x01), "echo", "GBW01", ""},
        {kEmpty, kMdpw, cmd(0x01), "echo", "GBW01", "99999999999999999999"},
        {kEmpty, kMdpw, cmd(0x01), "echo", "MDPW01", "4"},  // a credit needs GBW01
        {kEmpty, kMdpw, cmd(0x01), "echo", "GBW01", "4", "extra"},
    };
    for (const Frames& ready : bad_readies) {
        auto w = peer();
        w->send(ready);
        EXPECT_EQ(w->recv(), (Frames{kEmpty, kMdpw, cmd(0x05)})) << ready[5] << " " << ready.back();
    }
    EXPECT_EQ(status()["counters"]["workers"], 0);
    auto top = credit_worker("echo", "1024");
    EXPECT_TRUE(eventually([](const json& s) {
        return s["counters"]["workers"] == 1 && s["services"][0]["credit"] == 1024;
    }));
}

}  // namespace
}  // namespace glassbox::broker::broker_test
