// In-process broker tests: explain delivery: the topic, collectors, windows and the spool.
#include "tests/unit/broker/broker_fixture.hpp"

namespace glassbox::broker::broker_test {
namespace {

// ---------------------------------------------------------------- explain delivery

TEST_F(BrokerTest, ExplainIsPublishedOnTheTopic) {
    start();
    auto sub = std::make_unique<Peer>(context_, endpoints_.pub_endpoint, zmq::socket_type::sub);
    sub->socket().set(zmq::sockopt::subscribe, "explain.echo");
    ASSERT_TRUE(wait_for_subscriptions(1));
    auto w = worker("echo", true);
    auto client = peer(zmq::socket_type::req);
    client->send({kMdpc, "echo", "{}"});
    const Frames req = expect_request(*w);
    explain(*w, req[3], "urn:q:1", "0", "open", "{\"a\":0}");
    explain(*w, req[3], "urn:q:1", "1", "complete", "{\"a\":1}");
    reply(*w, req[3], "{}");
    EXPECT_EQ(sub->recv(), (Frames{"explain.echo", "urn:q:1", "0", "open", "{\"a\":0}"}));
    EXPECT_EQ(sub->recv(), (Frames{"explain.echo", "urn:q:1", "1", "complete", "{\"a\":1}"}));
    EXPECT_EQ(client->recv(), (Frames{kMdpc, "echo", "{}"}));  // explains not forwarded to MDPC01
}

TEST_F(BrokerTest, MalformedExplainIsDroppedAndTheRequestGoesOn) {
    start();
    auto [w, client, req] = served("echo", "r1");
    explain(*w, req[3], "urn:q:1", "minus-one", "open", "{}");
    explain(*w, req[3], "urn:q:1", "0", "finished", "{}");
    reply(*w, req[3], "\"ok\"");
    EXPECT_EQ(expect_gb(*client, 0x03, "r1").back(), "\"ok\"");
    EXPECT_EQ(status()["spool"]["messages"], 0);
}

TEST_F(BrokerTest, CollectorGetsDeliveriesAndAckRemovesThemFromTheSpool) {
    start();
    auto collector = collector_peer("10");
    auto [w, client, req] = served("echo", "r1");
    explain(*w, req[3], "urn:q:1", "0", "open", "{\"a\":0}");
    explain(*w, req[3], "urn:q:1", "1", "complete", "{\"a\":1}");
    reply(*w, req[3], "{}");
    auto d1 = collector->recv();
    auto d2 = collector->recv();
    ASSERT_TRUE(d1 && d2);
    EXPECT_FALSE(collector->last_packed()) << "a classic ATTACH is answered classic";
    ASSERT_EQ(d1->size(), 9u);
    EXPECT_EQ((*d1)[1], kGbe);
    EXPECT_EQ((*d1)[2], cmd(0x02));
    EXPECT_EQ((*d1)[3], "1");
    EXPECT_EQ(Frames(d1->begin() + 4, d1->end()),
              (Frames{"echo", "urn:q:1", "0", "open", "{\"a\":0}"}));
    EXPECT_EQ((*d2)[3], "2");
    EXPECT_EQ((*d2)[6], "1");
    EXPECT_EQ((*d2)[7], "complete");
    EXPECT_EQ(status()["spool"]["messages"], 2);
    collector->send({kEmpty, kGbe, cmd(0x03), "1", "2"});
    EXPECT_TRUE(eventually([](const json& s) {
        return s["spool"]["messages"] == 0 && s["spool"]["in_flight"] == 0 &&
               s["spool"]["collectors"] == 1;
    }));
    EXPECT_TRUE(collector->silent_for(300ms)) << "acknowledged messages are not redelivered";
}

// Issue 33 (§1.4, §6.1): a collector that ATTACHes packed gets its DELIVERs packed, two frames
// that carry exactly the classic nine, and its packed ACK empties the spool as a classic one.
TEST_F(BrokerTest, CollectorThatAttachesPackedGetsPackedDeliveries) {
    start();
    auto collector = peer();
    Frames attach{kEmpty, kGbe, cmd(0x01), "10"};
    bus::pack_frames(attach);
    collector->send(attach);
    Frames beat{kEmpty, kGbe, cmd(0x04)};
    bus::pack_frames(beat);
    collector->keepalive(beat);
    auto [w, client, req] = served("echo", "r1");
    explain(*w, req[3], "urn:q:1", "0", "open", "{\"a\":0}");
    explain(*w, req[3], "urn:q:1", "1", "complete", "{\"a\":1}");
    reply(*w, req[3], "{}");
    auto d1 = collector->recv();  // unpacked by the peer: how it came is asked below
    ASSERT_TRUE(d1);
    EXPECT_TRUE(collector->last_packed());
    EXPECT_EQ(collector->last_wire_frames(), 2u) << "packed: [envelope] [body]";
    auto d2 = collector->recv();
    ASSERT_TRUE(d2);
    EXPECT_TRUE(collector->last_packed());
    EXPECT_EQ(*d1,
              (Frames{kEmpty, kGbe, cmd(0x02), "1", "echo", "urn:q:1", "0", "open", "{\"a\":0}"}));
    EXPECT_EQ((*d2)[3], "2");
    EXPECT_EQ((*d2)[7], "complete");
    Frames ack{kEmpty, kGbe, cmd(0x03), "1", "2"};
    bus::pack_frames(ack);
    collector->send(ack);
    EXPECT_TRUE(eventually([](const json& s) {
        return s["spool"]["messages"] == 0 && s["spool"]["in_flight"] == 0 &&
               s["counters"]["acks_refused"] == 0;
    }));
    EXPECT_TRUE(collector->silent_for(300ms)) << "acknowledged messages are not redelivered";
}

// Deliveries go out in batches at most every delivery_interval: an EXPLAIN spooled right
// after a delivery waits for the next turn (it is forwarded to the client at once all the same).
// The interval is this test's subject, so it reads the clock: the interval is long enough that
// the silence checked below cannot end in it on a loaded machine, and the last check is a lower
// bound (load only makes the wait longer).
TEST_F(BrokerTest, DeliveriesWaitForTheirIntervalButAnswersDoNot) {
    BrokerConfig config = test_config();
    config.delivery_interval = 2000ms;
    start(config);
    auto collector = collector_peer("10");
    auto [w, client, req] = served("echo", "r1");
    explain(*w, req[3], "urn:q:1", "0", "open", "{\"a\":0}");
    auto first = collector->recv();
    ASSERT_TRUE(first) << "the first EXPLAIN after a quiet spell is delivered at once";
    EXPECT_EQ((*first)[3], "1");
    const auto delivered = std::chrono::steady_clock::now();
    explain(*w, req[3], "urn:q:1", "1", "complete", "{\"a\":1}");
    reply(*w, req[3], "{}");
    std::optional<Frames> answer;  // the two explains, then the answer: none of them waits
    while ((answer = client->recv()) && (*answer)[2] != cmd(0x03)) {
    }
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->back(), "{}");
    EXPECT_TRUE(collector->silent_for(200ms)) << "the second EXPLAIN waits for the next turn";
    auto second = collector->recv();
    ASSERT_TRUE(second);
    EXPECT_EQ((*second)[3], "2");
    EXPECT_GE(std::chrono::steady_clock::now() - delivered, 1900ms);
}

TEST_F(BrokerTest, CollectorWindowBoundsUnacknowledgedDeliveries) {
    start();
    auto collector = collector_peer("2");
    auto [w, client, req] = served("echo", "r1");
    for (int seq = 0; seq < 4; ++seq) {
        explain(*w, req[3], "urn:q:1", std::to_string(seq), seq == 3 ? "complete" : "open", "{}");
    }
    reply(*w, req[3], "{}");
    auto d1 = collector->recv();
    auto d2 = collector->recv();
    ASSERT_TRUE(d1 && d2);
    EXPECT_TRUE(collector->silent_for(300ms)) << "window of 2";
    collector->send({kEmpty, kGbe, cmd(0x03), (*d1)[3]});
    auto d3 = collector->recv();
    ASSERT_TRUE(d3);
    EXPECT_EQ((*d3)[3], "3");
}

TEST_F(BrokerTest, UnacknowledgedDeliveriesAreRedeliveredAfterCollectorExpiry) {
    start();
    auto first = collector_peer("10");
    auto [w, client, req] = served("echo", "r1");
    complete_trace(*w, req[3], "urn:q:1", "{\"a\":0}");
    auto delivered = first->recv();
    ASSERT_TRUE(delivered);
    ASSERT_EQ(delivered->size(), 9u);
    first->go_silent();  // crashes before ACK
    auto second = collector_peer("10");
    auto again = second->recv(3000ms);
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *delivered);
    second->send({kEmpty, kGbe, cmd(0x03), (*again)[3]});
    EXPECT_TRUE(eventually([](const json& s) { return s["spool"]["messages"] == 0; }));
    // The expired collector is told to re-attach when it speaks again.
    first->send({kEmpty, kGbe, cmd(0x04)});
    EXPECT_EQ(first->recv(), (Frames{kEmpty, kGbe, cmd(0x05)}));
}

TEST_F(BrokerTest, DetachReturnsDeliveriesAndUnknownCollectorIsDetached) {
    start();
    auto stranger = peer();
    stranger->send({kEmpty, kGbe, cmd(0x04)});
    EXPECT_EQ(stranger->recv(), (Frames{kEmpty, kGbe, cmd(0x05)}));
    stranger->send({kEmpty, kGbe, cmd(0x01), "0"});  // window out of range
    EXPECT_EQ(stranger->recv(), (Frames{kEmpty, kGbe, cmd(0x05)}));

    auto first = collector_peer("10");
    auto [w, client, req] = served("echo", "r1");
    complete_trace(*w, req[3], "urn:q:2", "{}");
    auto delivered = first->recv();
    ASSERT_TRUE(delivered);
    first->send({kEmpty, kGbe, cmd(0x05)});
    first->go_silent();
    auto second = collector_peer("10");
    auto again = second->recv(1000ms);
    ASSERT_TRUE(again);
    EXPECT_EQ((*again)[3], (*delivered)[3]);
}

TEST_F(BrokerTest, SpoolSurvivesABrokerRestart) {
    const std::string path = temp_spool_path("restart.db");
    BrokerConfig config = test_config();
    config.spool_path = path;
    start(config);
    {
        auto [w, client, req] = served("echo", "r1");
        explain(*w, req[3], "urn:q:9", "0", "open", "{\"kept\":0}");
        explain(*w, req[3], "urn:q:9", "1", "complete", "{\"kept\":1}");
        reply(*w, req[3], "{}");
        expect_partials(*client, "r1", 2);
        expect_gb(*client, 0x03, "r1");
    }
    stop_broker();

    start(config);
    auto collector = collector_peer("10");
    auto d1 = collector->recv();
    auto d2 = collector->recv();
    ASSERT_TRUE(d1 && d2);
    EXPECT_EQ(Frames(d1->begin() + 3, d1->end()),
              (Frames{"1", "echo", "urn:q:9", "0", "open", "{\"kept\":0}"}));
    EXPECT_EQ((*d2)[3], "2");
    collector->send({kEmpty, kGbe, cmd(0x03), "1"});
    EXPECT_TRUE(eventually([](const json& s) { return s["spool"]["messages"] == 1; }));
    stop_broker();

    // The unacknowledged one is still there after a second restart; new ids keep increasing.
    start(config);
    auto again = collector_peer("10");
    auto d = again->recv();
    ASSERT_TRUE(d);
    EXPECT_EQ((*d)[3], "2");
    auto [w, client, req] = served("echo", "r2");
    explain(*w, req[3], "urn:q:10", "0", "complete", "{}");
    auto fresh = again->recv();
    ASSERT_TRUE(fresh);
    EXPECT_EQ((*fresh)[3], "3");
    reply(*w, req[3], "{}");
}

TEST_F(BrokerTest, SpoolFullWithFailRequestEndsTheRequest) {
    BrokerConfig config = test_config();
    config.spool_max_messages = 1;
    start(config);
    auto [w, client, req] = served("echo", "r1");
    explain(*w, req[3], "urn:q:1", "0", "open", "{}");
    explain(*w, req[3], "urn:q:1", "1", "open", "{}");
    EXPECT_EQ(expect_gb(*client, 0x02, "r1")[4], "explain");
    const Frames end = expect_gb(*client, 0x02, "r1");  // the broker's end of trace
    ASSERT_EQ(end.size(), 6u);
    EXPECT_EQ(json::parse(end[5])["seq"], 1);
    EXPECT_EQ(json::parse(end[5])["error"]["type"], "SpoolFull");
    expect_error(*client, "r1", "SpoolFull");
    EXPECT_EQ(w->recv(), (Frames{kEmpty, kMdpw, cmd(0x09), req[3]}));
}

TEST_F(BrokerTest, SpoolFullWithDropNewestForwardsButDoesNotSpool) {
    BrokerConfig config = test_config();
    config.spool_max_messages = 1;
    config.spool_policy = SpoolPolicy::kDropNewest;
    start(config);
    auto [w, client, req] = served("echo", "r1");
    explain(*w, req[3], "urn:q:1", "0", "open", "{\"n\":0}");
    explain(*w, req[3], "urn:q:1", "1", "complete", "{\"n\":1}");
    reply(*w, req[3], "{}");
    EXPECT_EQ(expect_gb(*client, 0x02, "r1")[5], "{\"n\":0}");
    EXPECT_EQ(expect_gb(*client, 0x02, "r1")[5], "{\"n\":1}");
    // The trace lost a message: the broker's end marks it (and cannot be spooled either).
    const json mark = json::parse(expect_gb(*client, 0x02, "r1")[5]);
    EXPECT_EQ(mark["seq"], 2);
    EXPECT_EQ(mark["trace_status"], "error");
    EXPECT_EQ(mark["error"]["type"], "SpoolFull");
    expect_gb(*client, 0x03, "r1");
    const json s = status();
    EXPECT_EQ(s["spool"]["messages"], 1);
    EXPECT_EQ(s["spool"]["dropped"], 2);
    EXPECT_EQ(s["spool"]["policy"], "drop-newest");
}

// Deliveries a collector gets within `timeout`, acknowledged as they come.
std::vector<Frames> drain_deliveries(Peer& collector, std::chrono::milliseconds timeout) {
    std::vector<Frames> got;
    while (auto d = collector.recv(timeout)) {
        if (d->size() != 9 || (*d)[2] != std::string(1, '\x02')) continue;
        collector.send({"", "GBE01", std::string(1, '\x03'), (*d)[3]});
        got.push_back(*d);
    }
    return got;
}

// Issue 16.1: a commit that fails (a full disk) must not let a request succeed as if its
// explain messages were kept.
TEST_F(BrokerTest, SpoolWriteFailureWithFailRequestEndsTheRequestWithSpoolFull) {
    BrokerConfig config = test_config();
    config.spool_path = temp_spool_path("unwritable-fail");
    start(config);
    auto [w, client, req] = served("echo", "r1");
    {
        FileSizeLimit full(1);  // no segment write gets through
        explain(*w, req[3], "urn:q:full", "0", "open", "{\"n\":0}");
        explain(*w, req[3], "urn:q:full", "1", "complete", "{\"n\":1}");
        reply(*w, req[3], "{}");
        // Not the worker's explains (they are not durable) and no FINAL: the broker's end of
        // trace, then ERROR SpoolFull.
        const Frames end = expect_gb(*client, 0x02, "r1");
        ASSERT_EQ(end.size(), 6u);
        const json body = json::parse(end[5], nullptr, false);
        ASSERT_TRUE(body.is_object()) << end[5];
        EXPECT_EQ(body["trace_status"], "error");
        EXPECT_EQ(body["error"]["type"], "SpoolFull");
        expect_error(*client, "r1", "SpoolFull");
        const json s = status();
        EXPECT_EQ(s["spool"]["writable"], false);
        EXPECT_NE(s["spool"]["error"], "");
        EXPECT_GE(s["counters"]["errors"]["SpoolFull"], 1);
    }
    // Room again: what was kept pending is written, and the trace that exists ends marked.
    ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["writable"] == true; }));
    auto collector = collector_peer("100");
    const auto deliveries = drain_deliveries(*collector, 500ms);
    ASSERT_FALSE(deliveries.empty());
    const Frames& last = deliveries.back();
    EXPECT_EQ(last[5], "urn:q:full");
    EXPECT_EQ(last[7], "error");
    EXPECT_EQ(json::parse(last[8])["error"]["type"], "SpoolFull");
    // And the broker serves on as before. r1's CANCEL may come first: when the broker read the
    // worker's explains and its REPLY in different batches (a slow run: ASan), the failed commit
    // ended r1 while the worker still held it.
    request(*client, "echo", "r2", "{}");
    auto next = w->recv(3000ms);
    ASSERT_TRUE(next.has_value()) << "worker got nothing after r1";
    if (next->size() >= 4 && (*next)[2] == cmd(0x09)) {
        EXPECT_EQ((*next)[3], req[3]) << "a CANCEL only for r1";
        next = w->recv(3000ms);
        ASSERT_TRUE(next.has_value()) << "worker got no REQUEST for r2";
    }
    ASSERT_GE(next->size(), 6u);
    ASSERT_EQ((*next)[2], cmd(0x02));
    const Frames again = *next;
    complete_trace(*w, again[3], "urn:q:after", "{}");
    expect_gb(*client, 0x02, "r2");
    expect_gb(*client, 0x03, "r2");
}

TEST_F(BrokerTest, SpoolWriteFailureWithDropNewestCountsAndMarksTheTrace) {
    BrokerConfig config = test_config();
    config.spool_path = temp_spool_path("unwritable-drop");
    config.spool_policy = SpoolPolicy::kDropNewest;
    start(config);
    auto [w, client, req] = served("echo", "r1");
    {
        FileSizeLimit full(1);
        explain(*w, req[3], "urn:q:drop", "0", "open", "{\"n\":0}");
        EXPECT_EQ(expect_gb(*client, 0x02, "r1")[5], "{\"n\":0}");
        ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["writable"] == false; }));
        explain(*w, req[3], "urn:q:drop", "1", "complete", "{\"n\":1}");
        reply(*w, req[3], "{}");
        EXPECT_EQ(expect_gb(*client, 0x02, "r1")[5], "{\"n\":1}");
        const json mark = json::parse(expect_gb(*client, 0x02, "r1")[5]);
        EXPECT_EQ(mark["seq"], 2);
        EXPECT_EQ(mark["error"]["type"], "SpoolFull");
        expect_gb(*client, 0x03, "r1");
        EXPECT_EQ(status()["spool"]["dropped"], 1);
    }
    ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["writable"] == true; }));
    auto collector = collector_peer("100");
    const auto deliveries = drain_deliveries(*collector, 500ms);
    ASSERT_EQ(deliveries.size(), 2u);  // seq 0, kept pending; the mark; not the dropped seq 1
    EXPECT_EQ(deliveries[0][6], "0");
    EXPECT_EQ(deliveries[1][6], "2");
    EXPECT_EQ(deliveries[1][7], "error");
}

// Issue 16.2: a trace left open when the broker stops (or dies) is ended by the broker that
// starts next on the spool, even if its messages were already acknowledged.
TEST_F(BrokerTest, TraceLeftOpenIsEndedByTheNextBrokerOnTheSpool) {
    BrokerConfig config = test_config();
    config.spool_path = temp_spool_path("open-trace");
    start(config);
    {
        auto w = worker("echo", true);
        auto client = peer();
        auto collector = collector_peer("10");
        request(*client, "echo", "r1", "{}");
        const Frames req = expect_request(*w);
        explain(*w, req[3], "urn:q:left-open", "0", "open", "{\"n\":0}");
        explain(*w, req[3], "urn:q:ended", "0", "complete", "{\"n\":0}");
        const auto delivered = drain_deliveries(*collector, 300ms);  // stored and acknowledged
        ASSERT_EQ(delivered.size(), 2u);
        // The open trace's latest record stays spooled; the ended one's goes.
        EXPECT_TRUE(eventually([](const json& s) { return s["spool"]["messages"] == 1; }));
        // Stopped while its peers are still there (gone first, the worker would be lost and the
        // broker would end the trace itself): the request is still running, its trace has no end.
        stop_broker();
    }

    start(config);
    auto collector = collector_peer("10");
    const auto deliveries = drain_deliveries(*collector, 300ms);
    ASSERT_EQ(deliveries.size(), 2u);
    EXPECT_EQ(deliveries[0][5], "urn:q:left-open");
    EXPECT_EQ(deliveries[0][6], "0");  // again: the collector ignores what it has
    EXPECT_EQ(deliveries[1][5], "urn:q:left-open");
    EXPECT_EQ(deliveries[1][6], "1");
    EXPECT_EQ(deliveries[1][7], "error");
    const json end = json::parse(deliveries[1][8]);
    EXPECT_EQ(end["end_of_trace"], true);
    EXPECT_EQ(end["trace_status"], "error");
    EXPECT_EQ(end["error"]["type"], "BrokerRestarted");
    EXPECT_TRUE(eventually([](const json& s) { return s["spool"]["messages"] == 0; }));
}

// Issue 16.2: right after a restart, a service registered before it is not unknown: its
// request waits (restart_grace) for the workers to register again. A never-seen name is.
TEST_F(BrokerTest, RequestForAServiceKnownBeforeARestartWaitsForItsWorkers) {
    BrokerConfig config = test_config();
    config.spool_path = temp_spool_path("known-services");
    config.restart_grace = test_support::kHangGuard;  // the workers come back; no race with them
    start(config);
    {
        auto w = worker("echo", true);
        EXPECT_TRUE(eventually([](const json& s) { return s["counters"]["workers"] == 1; }));
    }
    stop_broker();

    start(config);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    request(*client, "never-seen", "r2", "{}");
    // After unknown_service_wait (300 ms). r1 was asked first: had the broker taken its service
    // for unknown too, r1's error would have come before r2's, and expect_gb below would see it.
    expect_error(*client, "r2", "UnknownService");
    auto w = worker("echo", true);
    const Frames req = expect_request(*w);
    reply(*w, req[3], "{\"served\":true}");
    expect_final(*client, "r1", "{\"served\":true}");
}

}  // namespace
}  // namespace glassbox::broker::broker_test
