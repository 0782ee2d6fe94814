// In-process broker tests: GBC01 requests to GBW01 workers: streaming, packed and compact frames,
// errors, deadlines, cancel and full queues.
#include "tests/unit/broker/broker_fixture.hpp"

namespace glassbox::broker::broker_test {
namespace {

// ---------------------------------------------------------------- GBC01 + GBW01

TEST_F(BrokerTest, StreamingRepliesArriveInOrderThenFinal) {
    start();
    auto [w, client, req] = served("echo", "r1", "{\"q\":1}", "4000");
    ASSERT_EQ(req.size(), 7u);
    const json meta = expect_meta(req[5], "r1", "echo");
    EXPECT_GT(meta["deadline_ms"].get<int>(), 3000);
    EXPECT_LE(meta["deadline_ms"].get<int>(), 4000);
    EXPECT_EQ(req[6], "{\"q\":1}");
    const std::string token = req[3];
    for (int i = 0; i < 5; ++i) {
        w->send({kEmpty, kMdpw, cmd(0x06), token, kEmpty, "\"chunk" + std::to_string(i) + "\""});
    }
    explain(*w, token, "urn:q:1", "0", "complete", "{\"seq\":0}");
    reply(*w, token, "{\"done\":true}");
    for (int i = 0; i < 5; ++i) {
        expect_partial(*client, "r1", "data", "\"chunk" + std::to_string(i) + "\"");
    }
    expect_partial(*client, "r1", "explain", "{\"seq\":0}");
    expect_final(*client, "r1", "{\"done\":true}");
    EXPECT_TRUE(client->silent_for(200ms));
}

// A GBW02 worker (§5.4): the same conversation as above, one frame shorter each way.
TEST_F(BrokerTest, CompactWorkerStreamsWithoutTheEmptyFrame) {
    start();
    auto w = peer();
    w->send({kEmpty, kMdpw, cmd(0x01), "echo", "GBW02"});
    w->keepalive({kEmpty, kMdpw, cmd(0x04)});
    auto client = peer();
    request(*client, "echo", "r1", "{\"q\":1}", "4000");
    const auto got = w->recv(3000ms);
    ASSERT_TRUE(got.has_value()) << "worker got no REQUEST";
    const Frames& req = *got;
    ASSERT_EQ(req.size(), 6u);
    EXPECT_EQ(req[2], cmd(0x02));
    const json meta = expect_meta(req[4], "r1", "echo");
    EXPECT_EQ(req[5], "{\"q\":1}");
    const std::string token = req[3];
    w->send({kEmpty, kMdpw, cmd(0x06), token, "\"chunk\""});
    // The classic empty frame from a GBW02 worker makes a PARTIAL of two frames: dropped.
    w->send({kEmpty, kMdpw, cmd(0x06), token, kEmpty, "\"dropped\""});
    w->send({kEmpty, kMdpw, cmd(0x07), token, "urn:q:1", "0", "complete", "{\"seq\":0}"});
    w->send({kEmpty, kMdpw, cmd(0x03), token, "{\"done\":true}"});
    expect_partial(*client, "r1", "data", "\"chunk\"");
    expect_partial(*client, "r1", "explain", "{\"seq\":0}");
    expect_final(*client, "r1", "{\"done\":true}");
    EXPECT_TRUE(client->silent_for(200ms));
}

// GBW02 with credit: pipelined REQUESTs, a CANCEL (the same in both layouts) for one token, and
// an ERROR without the empty frame.
TEST_F(BrokerTest, CompactWorkerWithCreditGetsCancelAndSendsErrors) {
    start();
    auto w = credit_worker("echo", "2", "GBW02");
    auto client = peer();
    request(*client, "echo", "r1", "{}", "4000");
    request(*client, "echo", "r2", "{}", "4000");
    const auto first = w->recv(3000ms);
    const auto second = w->recv(3000ms);
    ASSERT_TRUE(first && second);
    ASSERT_EQ(first->size(), 6u);
    ASSERT_EQ(second->size(), 6u);
    client->send({kEmpty, kGbc, cmd(0x04), "r1"});
    expect_error(*client, "r1", "Cancelled");
    const auto cancel = w->recv(3000ms);
    ASSERT_TRUE(cancel.has_value());
    EXPECT_EQ(*cancel, (Frames{kEmpty, kMdpw, cmd(0x09), (*first)[3]}));
    w->send({kEmpty, kMdpw, cmd(0x08), (*first)[3], "Cancelled", "stopped"});  // discarded
    w->send({kEmpty, kMdpw, cmd(0x08), (*second)[3], "UpstreamError", "llm down"});
    const Frames error = expect_gb(*client, 0x05, "r2");
    ASSERT_EQ(error.size(), 6u);
    EXPECT_EQ(error[4], "UpstreamError");
    EXPECT_EQ(error[5], "llm down");
    EXPECT_TRUE(client->silent_for(200ms));
}

Frames packed(Frames frames) {
    glassbox::bus::pack_frames(frames);
    return frames;
}

// The packed form (§1.4): a packed client and a GBW03 worker exchange two-frame messages, and
// a classic client served by the same worker meanwhile gets the classic frames.
TEST_F(BrokerTest, PackedPeersGetPackedMessagesAndClassicOnesClassic) {
    start();
    auto w = credit_worker("echo", "2", "GBW03");
    auto packed_client = peer();
    packed_client->send(packed({kEmpty, kGbc, cmd(0x01), "echo", "rp", "4000", "{\"q\":1}"}));
    auto classic_client = peer();
    request(*classic_client, "echo", "rc", "{\"q\":2}", "4000");
    std::map<std::string, std::string> tokens;  // request id -> token
    for (int i = 0; i < 2; ++i) {
        const auto got = w->recv();
        ASSERT_TRUE(got.has_value()) << "worker got no REQUEST";
        EXPECT_TRUE(w->last_packed()) << "a GBW03 worker is written to packed";
        EXPECT_EQ(w->last_wire_frames(), 2u);
        ASSERT_EQ(got->size(), 6u);  // unpacked: the compact layout
        EXPECT_EQ((*got)[2], cmd(0x02));
        const json meta = json::parse((*got)[4]);
        tokens[meta["request_id"].get<std::string>()] = (*got)[3];
        EXPECT_EQ((*got)[5], meta["request_id"] == "rp" ? "{\"q\":1}" : "{\"q\":2}");
    }
    ASSERT_EQ(tokens.size(), 2u);
    for (const auto& [id, token] : tokens) {
        w->send(packed({kEmpty, kMdpw, cmd(0x06), token, "\"chunk-" + id + "\""}));
        w->send(packed(
            {kEmpty, kMdpw, cmd(0x07), token, "urn:q:" + id, "0", "complete", "{\"seq\":0}"}));
        w->send(packed({kEmpty, kMdpw, cmd(0x03), token, "{\"done\":\"" + id + "\"}"}));
    }
    for (auto* client : {packed_client.get(), classic_client.get()}) {
        const bool is_packed = client == packed_client.get();
        const std::string id = is_packed ? "rp" : "rc";
        const Frames data = expect_gb(*client, 0x02, id);
        EXPECT_EQ(client->last_packed(), is_packed);
        EXPECT_EQ(client->last_wire_frames(), is_packed ? 2u : 6u);
        ASSERT_EQ(data.size(), 6u);
        EXPECT_EQ(data[4], "data");
        EXPECT_EQ(data[5], "\"chunk-" + id + "\"");
        const Frames explained = expect_gb(*client, 0x02, id);
        EXPECT_EQ(client->last_packed(), is_packed);
        EXPECT_EQ(explained.at(4), "explain");
        const Frames final_frames = expect_gb(*client, 0x03, id);
        EXPECT_EQ(client->last_packed(), is_packed);
        ASSERT_EQ(final_frames.size(), 5u);
        EXPECT_EQ(final_frames[4], "{\"done\":\"" + id + "\"}");
    }
    // An error for a packed request goes packed too: no worker for the service.
    packed_client->send(packed({kEmpty, kGbc, cmd(0x01), "nobody", "rx", "4000", "{}"}));
    expect_error(*packed_client, "rx", "UnknownService");
    EXPECT_TRUE(packed_client->last_packed());
    EXPECT_EQ(status()["counters"]["dropped_frames"], 0);
}

// A packed message that is not well formed is dropped (there is no request id to answer) and
// counted; the broker goes on serving, the sender included.
TEST_F(BrokerTest, MalformedPackedMessagesAreDroppedAndTheBrokerServesOn) {
    start();
    auto w = worker("echo", true);
    auto bad = peer();
    bad->send({"\x02junk", "x"});                            // unknown version
    bad->send({std::string("\x01\x05GBC01", 7), "a", "b"});  // three frames
    bad->send({std::string("\x01\x09GBC01", 7), "x"});       // a field past its end
    bad->send({std::string("\x01", 1), "x"});                // no field
    EXPECT_TRUE(bad->silent_for(200ms));
    EXPECT_TRUE(eventually([](const json& s) { return s["counters"]["dropped_frames"] == 4; }));
    bad->send(packed({kEmpty, kGbc, cmd(0x01), "echo", "ok", "4000", "{}"}));
    const Frames req = expect_request(*w);
    reply(*w, req[3], "{\"fine\":true}");
    const Frames final_frames = expect_gb(*bad, 0x03, "ok");
    EXPECT_TRUE(bad->last_packed());
    EXPECT_EQ(final_frames.at(4), "{\"fine\":true}");
}

// An EXPLAIN holds its client's later messages until the spool commits (§2.3), and only its
// client's: another client's reply in the same burst, and the first client's data sent before
// the EXPLAIN, keep their places; the first client's stream stays in order.
TEST_F(BrokerTest, AnExplainHoldsOnlyItsOwnClientsLaterMessages) {
    start();
    auto [w1, a, req_a] = served("echo", "ra", "{}", "4000");
    auto [w2, b, req_b] = served("echo", "rb", "{}", "4000");
    w1->send({kEmpty, kMdpw, cmd(0x06), req_a[3], kEmpty, "\"c0\""});
    explain(*w1, req_a[3], "urn:q:a", "0", "complete", "{\"seq\":0}");
    w1->send({kEmpty, kMdpw, cmd(0x06), req_a[3], kEmpty, "\"c1\""});
    reply(*w2, req_b[3], "{\"b\":true}");
    reply(*w1, req_a[3], "{\"a\":true}");
    EXPECT_EQ(expect_gb(*b, 0x03, "rb").at(4), "{\"b\":true}");
    EXPECT_EQ(expect_gb(*a, 0x02, "ra").at(5), "\"c0\"");
    const Frames explained = expect_gb(*a, 0x02, "ra");
    EXPECT_EQ(explained.at(4), "explain");
    EXPECT_EQ(explained.at(5), "{\"seq\":0}");
    EXPECT_EQ(expect_gb(*a, 0x02, "ra").at(5), "\"c1\"");
    EXPECT_EQ(expect_gb(*a, 0x03, "ra").at(4), "{\"a\":true}");
    EXPECT_TRUE(a->silent_for(100ms));
    EXPECT_TRUE(b->silent_for(100ms));
}

TEST_F(BrokerTest, MajordomoClientGetsOnlyTheFinalReplyOfAStreamingWorker) {
    start();
    auto w = worker("echo", true);
    auto client = peer();
    client->send({kEmpty, kMdpc, "echo", "{\"x\":1}"});
    const Frames req = expect_request(*w);
    ASSERT_EQ(req.size(), 7u);
    EXPECT_EQ(json::parse(req[5])["client"], "MDPC01");
    w->send({kEmpty, kMdpw, cmd(0x06), req[3], kEmpty, "\"part\""});
    reply(*w, req[3], "{\"y\":2}");
    EXPECT_EQ(client->recv(), (Frames{kEmpty, kMdpc, "echo", "{\"y\":2}"}));
    EXPECT_TRUE(client->silent_for(200ms));
}

TEST_F(BrokerTest, WorkerErrorIsForwarded) {
    start();
    auto [w, client, req] = served("echo", "r1", "not json");
    w->send({kEmpty, kMdpw, cmd(0x08), req[3], kEmpty, "InvalidJson", "body is not JSON"});
    const Frames error = expect_gb(*client, 0x05, "r1");
    ASSERT_EQ(error.size(), 6u);
    EXPECT_EQ(error[4], "InvalidJson");
    EXPECT_EQ(error[5], "body is not JSON");

    // The worker is ready again; an MDPC01 client gets the error as a JSON body.
    auto mdp = peer();
    mdp->send({kEmpty, kMdpc, "echo", "{}"});
    const Frames second = expect_request(*w);
    w->send({kEmpty, kMdpw, cmd(0x08), second[3], kEmpty, "InvalidRequest", "no \"q\""});
    auto got = mdp->recv();
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 4u);
    const json body = json::parse((*got)[3]);
    EXPECT_EQ(body["error"]["type"], "InvalidRequest");
    EXPECT_EQ(body["error"]["message"], "no \"q\"");
}

TEST_F(BrokerTest, UnknownServiceEndsAfterTheWait) {
    start();
    auto client = peer();
    // That the request first waits for a worker is
    // WorkerArrivingDuringTheUnknownServiceWaitServesTheRequest's to show; here it ends.
    request(*client, "nosuch", "r1", "{}", "10000");
    expect_error(*client, "r1", "UnknownService");
    // MDPC01 too.
    client->send({kEmpty, kMdpc, "nosuch", "{}"});
    auto got = client->recv();
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 4u);
    EXPECT_EQ(json::parse((*got)[3])["error"]["type"], "UnknownService");
    // Garbage service names do not accumulate.
    EXPECT_TRUE(eventually([](const json& s) { return s["services"].empty(); }));
}

TEST_F(BrokerTest, WorkerArrivingDuringTheUnknownServiceWaitServesTheRequest) {
    BrokerConfig config = test_config();
    config.unknown_service_wait = test_support::kHangGuard;  // the worker comes; no race with it
    start(config);
    auto client = peer();
    request(*client, "late", "r1", "{}");
    ASSERT_TRUE(wait_for_queued("late", 1)) << "the request waits before any worker of it exists";
    auto w = worker("late", false);
    const Frames req = expect_request(*w);
    reply(*w, req[3], "\"ok\"");
    EXPECT_EQ(expect_gb(*client, 0x03, "r1").back(), "\"ok\"");
}

TEST_F(BrokerTest, DeadlineExceededCancelsTheWorkerWhichThenServesAgain) {
    start();
    auto [w, client, req] = served("slow", "r1", "{}", "300");
    expect_error(*client, "r1", "DeadlineExceeded");
    auto cancel = w->recv();
    ASSERT_TRUE(cancel);
    EXPECT_EQ(*cancel, (Frames{kEmpty, kMdpw, cmd(0x09), req[3]}));
    reply(*w, req[3], "\"too late\"");  // discarded, makes the worker ready
    request(*client, "slow", "r2", "{}");
    const Frames second = expect_request(*w);
    reply(*w, second[3], "\"fresh\"");
    const Frames final_frames = expect_gb(*client, 0x03, "r2");
    EXPECT_EQ(final_frames.back(), "\"fresh\"");
    EXPECT_TRUE(client->silent_for(200ms)) << "the late reply must not reach the client";
}

TEST_F(BrokerTest, QueuedRequestWithoutLiveWorkerGetsServiceUnavailable) {
    start();
    auto w = worker("gone", false);
    ASSERT_TRUE(wait_for_workers("gone", 1));
    w->send({kEmpty, kMdpw, cmd(0x05)});
    ASSERT_TRUE(eventually([](const json& s) { return s["counters"]["workers"] == 0; }));
    auto client = peer();
    request(*client, "gone", "r1", "{}", "400");
    expect_error(*client, "r1", "ServiceUnavailable");
}

TEST_F(BrokerTest, CancelEndsQueuedAndRunningRequests) {
    start();
    auto [w, client, req] = served("echo", "running");
    request(*client, "echo", "queued", "{}");
    ASSERT_TRUE(wait_for_queued("echo", 1));
    client->send({kEmpty, kGbc, cmd(0x04), "queued"});
    expect_error(*client, "queued", "Cancelled");
    client->send({kEmpty, kGbc, cmd(0x04), "running"});
    expect_error(*client, "running", "Cancelled");
    EXPECT_EQ(w->recv(), (Frames{kEmpty, kMdpw, cmd(0x09), req[3]}));
    client->send({kEmpty, kGbc, cmd(0x04), "never-sent"});  // ignored
    EXPECT_TRUE(client->silent_for(200ms));
}

TEST_F(BrokerTest, FullQueueRejectsTheNewRequest) {
    auto [w, client, first] = overflowing_queue(OverflowPolicy::kReject);
    expect_error(*client, "r4", "QueueFull");
    reply(*w, first[3], "1");
    expect_gb(*client, 0x03, "r1");
    EXPECT_EQ(json::parse(expect_request(*w)[5])["request_id"], "r2");
}

TEST_F(BrokerTest, FullQueueDropOldestEvictsTheOldestQueued) {
    auto [w, client, first] = overflowing_queue(OverflowPolicy::kDropOldest);
    expect_error(*client, "r2", "Evicted");
    reply(*w, first[3], "1");
    expect_gb(*client, 0x03, "r1");
    EXPECT_EQ(json::parse(expect_request(*w)[5])["request_id"], "r3");
    const json s = status();
    ASSERT_EQ(s["services"].size(), 1u);
    EXPECT_EQ(s["services"][0]["overflow"], "drop-oldest");
    EXPECT_EQ(s["services"][0]["max_queue"], 2);
    EXPECT_EQ(s["services"][0]["queued"], 1);
}

}  // namespace
}  // namespace glassbox::broker::broker_test
