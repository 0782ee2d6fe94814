// In-process broker tests: integrity of explain sessions, tokens and acknowledgements (issue 20).
#include "tests/unit/broker/broker_fixture.hpp"

namespace glassbox::broker::broker_test {
namespace {

// ---------------------------------------------------------------- integrity (issue 20)

// A worker writes only into the sessions of requests it holds (§5.3): an EXPLAIN naming a
// session another request opened, live or ended, is dropped and counted; the request goes on.
TEST_F(BrokerTest, ExplainIntoAnotherRequestsSessionIsDroppedAndCounted) {
    start();
    auto collector = collector_peer("100");
    auto w = credit_worker("echo", "2");
    ASSERT_TRUE(eventually([](const json& s) {
        return s["counters"]["workers"] == 1 && s["spool"]["collectors"] == 1;
    }));
    auto client = peer();
    request(*client, "echo", "victim", "{}");
    const Frames victim = expect_request(*w);
    explain(*w, victim[3], "urn:q:victim", "0", "open", "{\"v\":0}");
    explain(*w, victim[3], "urn:q:victim", "1", "complete", "{\"v\":1}");
    reply(*w, victim[3], "\"v\"");
    expect_partials(*client, "victim", 2);
    expect_gb(*client, 0x03, "victim");

    request(*client, "echo", "live", "{}");
    const Frames live = expect_request(*w);
    explain(*w, live[3], "urn:q:live", "0", "open", "{\"l\":0}");
    EXPECT_EQ(expect_gb(*client, 0x02, "live").back(), "{\"l\":0}");

    request(*client, "echo", "rogue", "{}");
    const Frames rogue = expect_request(*w);
    explain(*w, rogue[3], "urn:q:victim", "77", "open", "{\"forged\":77}");
    explain(*w, rogue[3], "urn:q:live", "1", "open", "{\"forged\":1}");
    explain(*w, rogue[3], "urn:q:rogue", "0", "complete", "{\"r\":0}");
    reply(*w, rogue[3], "\"r\"");
    EXPECT_EQ(expect_gb(*client, 0x02, "rogue").back(), "{\"r\":0}")
        << "the client sees its own session's message only";
    EXPECT_EQ(expect_gb(*client, 0x03, "rogue").back(), "\"r\"");

    // The live request's own next message still goes through.
    explain(*w, live[3], "urn:q:live", "1", "complete", "{\"l\":1}");
    reply(*w, live[3], "\"l\"");
    EXPECT_EQ(expect_gb(*client, 0x02, "live").back(), "{\"l\":1}");
    expect_gb(*client, 0x03, "live");

    std::set<std::string> bodies;
    for (int i = 0; i < 5; ++i) {
        auto delivered = collector->recv();
        ASSERT_TRUE(delivered) << "delivery " << i;
        ASSERT_EQ(delivered->size(), 9u);
        bodies.insert(delivered->back());
        collector->send({kEmpty, kGbe, cmd(0x03), (*delivered)[3]});
    }
    EXPECT_TRUE(collector->silent_for(300ms)) << "nothing forged was spooled";
    EXPECT_EQ(bodies, (std::set<std::string>{"{\"v\":0}", "{\"v\":1}", "{\"l\":0}", "{\"l\":1}",
                                             "{\"r\":0}"}));
    EXPECT_EQ(status()["counters"]["foreign_sessions"], 2);
}

// Within a session seq grows (gaps allowed); a repeat, a step back or anything after the
// session's end is dropped and counted (§5.3).
TEST_F(BrokerTest, ExplainSeqMustGrowAndNothingFollowsTheSessionsEnd) {
    start();
    auto [w, client, req] = served("echo", "r1");
    explain(*w, req[3], "urn:q:1", "0", "open", "{\"n\":0}");
    explain(*w, req[3], "urn:q:1", "2", "open", "{\"n\":2}");
    explain(*w, req[3], "urn:q:1", "2", "open", "{\"again\":2}");
    explain(*w, req[3], "urn:q:1", "1", "open", "{\"back\":1}");
    explain(*w, req[3], "urn:q:1", "3", "complete", "{\"n\":3}");
    explain(*w, req[3], "urn:q:1", "4", "open", "{\"after_end\":4}");
    reply(*w, req[3], "\"done\"");
    for (const char* body : {"{\"n\":0}", "{\"n\":2}", "{\"n\":3}"}) {
        EXPECT_EQ(expect_gb(*client, 0x02, "r1").back(), body);
    }
    EXPECT_EQ(expect_gb(*client, 0x03, "r1").back(), "\"done\"");
    const json s = status();
    EXPECT_EQ(s["counters"]["explains_out_of_order"], 3);
    EXPECT_EQ(s["spool"]["messages"], 3);
}

// What legitimately opens sessions is not refused: a sub-run (a worker calling another service
// opens no session of its caller's; the callee's request has its own) and a request dispatched
// again after its worker was lost before sending anything.
TEST_F(BrokerTest, SubRunsAndRedispatchedRequestsOpenTheirOwnSessions) {
    start();
    auto caller = worker("agent", true);
    auto callee = worker("echo", true);
    auto client = peer();
    request(*client, "agent", "outer", "{}");
    const Frames outer = expect_request(*caller);
    explain(*caller, outer[3], "urn:q:outer", "0", "open", "{\"o\":0}");
    auto caller_as_client = peer();
    request(*caller_as_client, "echo", "inner", "{}");
    const Frames inner = expect_request(*callee);
    complete_trace(*callee, inner[3], "urn:q:inner", "{\"parent_uri\":\"urn:q:outer\"}");
    expect_gb(*caller_as_client, 0x02, "inner");
    expect_gb(*caller_as_client, 0x03, "inner");
    explain(*caller, outer[3], "urn:q:outer", "1", "complete", "{\"o\":1}");
    reply(*caller, outer[3], "{}");
    EXPECT_EQ(expect_gb(*client, 0x02, "outer").back(), "{\"o\":0}");
    EXPECT_EQ(expect_gb(*client, 0x02, "outer").back(), "{\"o\":1}");
    expect_gb(*client, 0x03, "outer");

    auto lost = worker("slow", true);
    request(*client, "slow", "retried", "{}");
    (void)expect_request(*lost);
    lost->go_silent();  // expires without an answer: the request goes to the next worker
    auto next = worker("slow", true);
    const Frames second = expect_request(*next, 3000ms);
    ASSERT_EQ(second.size(), 7u);
    EXPECT_EQ(json::parse(second[5])["attempt"], 2);
    complete_trace(*next, second[3], "urn:q:retried", "{\"t\":0}");
    std::optional<Frames> got;
    while ((got = client->recv()) && (*got)[3] != "retried") {
    }
    ASSERT_TRUE(got);
    EXPECT_EQ(got->back(), "{\"t\":0}");
    expect_gb(*client, 0x03, "retried");
    const json s = status();
    EXPECT_EQ(s["counters"]["foreign_sessions"], 0);
    EXPECT_EQ(s["counters"]["explains_out_of_order"], 0);
}

// A worker cannot answer, stream or explain for a request it was not given (§5.1): dropped,
// logged as a warning and counted; the holder's answer is the one the client gets.
TEST_F(BrokerTest, AnswersForATokenTheWorkerWasNotGivenAreDroppedAndCounted) {
    start();
    auto holder = worker("echo", true);
    ASSERT_TRUE(eventually([](const json& s) { return s["counters"]["workers"] == 1; }));
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*holder);
    auto rogue = worker("echo", true);
    ASSERT_TRUE(eventually([](const json& s) { return s["counters"]["workers"] == 2; }));
    const std::string token = req[3];
    rogue->send({kEmpty, kMdpw, cmd(0x06), token, kEmpty, "\"forged chunk\""});
    explain(*rogue, token, "urn:q:forged", "0", "complete", "{\"forged\":0}");
    rogue->send({kEmpty, kMdpw, cmd(0x08), token, kEmpty, "Internal", "forged error"});
    reply(*rogue, token, "\"forged reply\"");
    reply(*rogue, "999", "\"forged reply\"");
    ASSERT_TRUE(eventually([](const json& s) { return s["counters"]["foreign_tokens"] == 5; }));
    reply(*holder, token, "\"genuine\"");
    EXPECT_EQ(expect_gb(*client, 0x03, "r1").back(), "\"genuine\"");
    EXPECT_TRUE(client->silent_for(200ms));
    EXPECT_EQ(status()["spool"]["messages"], 0);
}

// §6.1: an ACK counts only from an attached collector; a stranger's ACKs take nothing from the
// spool, and it is told to attach.
TEST_F(BrokerTest, AnAckFromAPeerThatIsNotAttachedIsRefused) {
    start();
    auto [w, client, req] = served("echo", "r1");
    explain(*w, req[3], "urn:q:1", "0", "open", "{}");
    explain(*w, req[3], "urn:q:1", "1", "open", "{}");
    explain(*w, req[3], "urn:q:1", "2", "complete", "{}");
    reply(*w, req[3], "{}");
    expect_partials(*client, "r1", 3);
    expect_gb(*client, 0x03, "r1");
    auto stranger = peer();
    Frames ack{kEmpty, kGbe, cmd(0x03)};
    for (int id = 1; id <= 60; ++id) ack.push_back(std::to_string(id));
    stranger->send(ack);
    EXPECT_EQ(stranger->recv(), (Frames{kEmpty, kGbe, cmd(0x05)})) << "told to attach";
    const json s = status();
    EXPECT_EQ(s["counters"]["acks_refused"], 60);
    EXPECT_EQ(s["counters"]["acks"], 0);
    EXPECT_EQ(s["spool"]["messages"], 3);
    auto collector = collector_peer("10");
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(collector->recv()) << "delivery " << i;
}

// An attached collector acknowledges only the ids delivered to it and not yet acknowledged.
TEST_F(BrokerTest, ACollectorAcksOnlyWhatWasDeliveredToIt) {
    start();
    auto first = collector_peer("1");
    ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["collectors"] == 1; }));
    auto [w, client, req] = served("echo", "r1");
    explain(*w, req[3], "urn:q:1", "0", "open", "{}");
    explain(*w, req[3], "urn:q:1", "1", "open", "{}");
    explain(*w, req[3], "urn:q:1", "2", "complete", "{}");
    reply(*w, req[3], "{}");
    auto d1 = first->recv();
    ASSERT_TRUE(d1);
    EXPECT_EQ((*d1)[3], "1");
    first->send({kEmpty, kGbe, cmd(0x03), "2", "3", "not-an-id"});
    ASSERT_TRUE(eventually([](const json& s) { return s["counters"]["acks_refused"] == 3; }));
    EXPECT_EQ(status()["spool"]["messages"], 3);

    auto second = collector_peer("10");
    ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["collectors"] == 2; }));
    second->send({kEmpty, kGbe, cmd(0x03), "1"});
    ASSERT_TRUE(eventually([](const json& s) { return s["counters"]["acks_refused"] == 4; }));
    EXPECT_EQ(status()["spool"]["messages"], 3);

    first->send({kEmpty, kGbe, cmd(0x03), "1"});
    auto d2 = first->recv();
    ASSERT_TRUE(d2);
    EXPECT_EQ((*d2)[3], "2");
    first->send({kEmpty, kGbe, cmd(0x03), "1"});  // again: already acknowledged
    ASSERT_TRUE(eventually([](const json& s) {
        return s["counters"]["acks_refused"] == 5 && s["counters"]["acks"] == 1;
    }));
}

// Which collector (by index) got each session's deliveries, ACKing each one: `want` in all.
std::map<std::string, std::set<std::size_t>> collect_sessions(std::vector<Peer*> collectors,
                                                              std::size_t want) {
    std::map<std::string, std::set<std::size_t>> seen;
    std::size_t got = 0;
    const auto deadline = Clock::now() + test_support::kHangGuard;
    while (got < want && Clock::now() < deadline) {
        for (std::size_t i = 0; i < collectors.size(); ++i) {
            auto delivered = collectors[i]->recv(20ms);
            if (!delivered || delivered->size() != 9) continue;
            seen[(*delivered)[5]].insert(i);
            collectors[i]->send({kEmpty, kGbe, cmd(0x03), (*delivered)[3]});
            ++got;
        }
    }
    return seen;
}

// §6.1: delivery is session-affine, so each collector with its own store holds whole traces.
TEST_F(BrokerTest, EveryDeliveryOfASessionGoesToTheSameCollector) {
    start();
    auto a = collector_peer("100");
    ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["collectors"] == 1; }));
    auto b = collector_peer("100");
    ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["collectors"] == 2; }));
    auto w = credit_worker("echo", "8");
    auto client = peer();
    std::vector<std::string> tokens;
    for (int i = 0; i < 7; ++i) request(*client, "echo", "r" + std::to_string(i), "{}");
    for (int i = 0; i < 7; ++i) tokens.push_back(expect_request(*w)[3]);
    // Interleaved, as concurrent requests send them; an odd number of sessions, so that handing
    // out records in turn would split them.
    for (int seq = 0; seq < 3; ++seq) {
        for (int i = 0; i < 7; ++i) {
            explain(*w, tokens[static_cast<std::size_t>(i)], "urn:q:" + std::to_string(i),
                    std::to_string(seq), seq == 2 ? "complete" : "open", "{}");
        }
    }
    for (const auto& token : tokens) reply(*w, token, "{}");
    const auto seen = collect_sessions({a.get(), b.get()}, 21);
    ASSERT_EQ(seen.size(), 7u);
    std::set<std::size_t> used;
    for (const auto& [session, at] : seen) {
        EXPECT_EQ(at.size(), 1u) << session << " went to more than one collector";
        used.insert(at.begin(), at.end());
    }
    EXPECT_EQ(used.size(), 2u) << "sessions are spread over both collectors";
}

// A session whose collector's window is full waits for it; other sessions go elsewhere.
TEST_F(BrokerTest, ASessionWaitsForItsCollectorsWindowWhileOthersGoElsewhere) {
    start();
    auto a = collector_peer("1");
    ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["collectors"] == 1; }));
    auto b = collector_peer("10");
    ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["collectors"] == 2; }));
    auto w = credit_worker("echo", "2");
    auto client = peer();
    requests(*client, "echo", {"r1", "r2"});
    const std::string t1 = expect_request(*w)[3];
    const std::string t2 = expect_request(*w)[3];
    explain(*w, t1, "urn:q:1", "0", "open", "{}");
    auto first = a->recv();
    ASSERT_TRUE(first) << "the first session goes to the first collector in turn";
    EXPECT_EQ((*first)[5], "urn:q:1");
    explain(*w, t1, "urn:q:1", "1", "open", "{}");
    explain(*w, t1, "urn:q:1", "2", "complete", "{}");
    explain(*w, t2, "urn:q:2", "0", "complete", "{}");
    auto other = b->recv();
    ASSERT_TRUE(other);
    EXPECT_EQ((*other)[5], "urn:q:2") << "b gets the other session, not the rest of the first";
    EXPECT_TRUE(b->silent_for(300ms));
    for (const char* seq : {"1", "2"}) {
        a->send({kEmpty, kGbe, cmd(0x03), (*first)[3]});
        first = a->recv();
        ASSERT_TRUE(first);
        EXPECT_EQ((*first)[5], "urn:q:1");
        EXPECT_EQ((*first)[6], seq);
    }
    reply(*w, t1, "{}");
    reply(*w, t2, "{}");
}

// When a session's collector detaches, the session's messages not acknowledged and those to
// come go together to one other collector.
TEST_F(BrokerTest, ASessionMovesWholeToAnotherCollectorWhenItsCollectorDetaches) {
    start();
    auto a = collector_peer("10");
    ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["collectors"] == 1; }));
    auto b = collector_peer("10");
    ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["collectors"] == 2; }));
    auto [w, client, req] = served("echo", "r1");
    explain(*w, req[3], "urn:q:1", "0", "open", "{}");
    explain(*w, req[3], "urn:q:1", "1", "open", "{}");
    for (const char* seq : {"0", "1"}) {
        auto got = a->recv();
        ASSERT_TRUE(got);
        EXPECT_EQ((*got)[6], seq);
    }
    EXPECT_TRUE(b->silent_for(200ms));
    a->send({kEmpty, kGbe, cmd(0x05)});
    a->go_silent();
    explain(*w, req[3], "urn:q:1", "2", "complete", "{}");
    reply(*w, req[3], "{}");
    for (const char* seq : {"0", "1", "2"}) {
        auto got = b->recv();
        ASSERT_TRUE(got);
        EXPECT_EQ((*got)[5], "urn:q:1");
        EXPECT_EQ((*got)[6], seq);
    }
}

}  // namespace
}  // namespace glassbox::broker::broker_test
