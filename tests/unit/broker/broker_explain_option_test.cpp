// In-process broker tests: a GBC01 request's options frame (docs/protocol.md §4.1). With
// explain=none the client gets no PARTIAL explain, while the spool, the collectors and the topic
// get every explain message as before, and the client's data, FINAL and ERROR keep their order;
// options the broker does not know are a ProtocolError for that request only.
#include "tests/unit/broker/broker_fixture.hpp"

namespace glassbox::broker::broker_test {
namespace {

const std::string kExplainNone = "explain=none";

// REQUEST with an options frame before the body.
void request_with(Peer& client, const std::string& service, const std::string& id,
                  const std::string& options, const std::string& body = "{}",
                  const std::string& deadline_ms = "0") {
    client.send({kEmpty, kGbc, cmd(0x01), service, id, deadline_ms, options, body});
}

Frames packed(Frames frames) {
    glassbox::bus::pack_frames(frames);
    return frames;
}

void partial(Peer& w, const std::string& token, const std::string& body) {
    w.send({kEmpty, kMdpw, cmd(0x06), token, kEmpty, body});
}

TEST_F(BrokerTest, ExplainNoneClientGetsItsDataAndFinalButNoExplain) {
    start();
    auto sub = std::make_unique<Peer>(context_, endpoints_.pub_endpoint, zmq::socket_type::sub);
    sub->socket().set(zmq::sockopt::subscribe, "explain.echo");
    ASSERT_TRUE(wait_for_subscriptions(1));
    auto collector = collector_peer("10");
    auto w = worker("echo", true);
    auto client = peer();
    request_with(*client, "echo", "r1", kExplainNone, "{\"q\":1}", "4000");
    const Frames req = expect_request(*w);
    // The worker is told (§5.1 meta), and gets the body as for any request.
    const json meta = expect_meta(req[5], "r1", "echo");
    EXPECT_EQ(meta["explain"], "none");
    EXPECT_EQ(req[6], "{\"q\":1}");
    const std::string& token = req[3];
    partial(*w, token, "\"c0\"");
    explain(*w, token, "urn:q:none", "0", "open", "{\"seq\":0}");
    partial(*w, token, "\"c1\"");
    explain(*w, token, "urn:q:none", "1", "complete", "{\"seq\":1}");
    partial(*w, token, "\"c2\"");
    reply(*w, token, "{\"done\":true}");

    // The client: its data in order, then the FINAL, each once, and no explain.
    expect_partial(*client, "r1", "data", "\"c0\"");
    expect_partial(*client, "r1", "data", "\"c1\"");
    expect_partial(*client, "r1", "data", "\"c2\"");
    expect_final(*client, "r1", "{\"done\":true}");
    EXPECT_TRUE(client->silent_for(200ms));

    // The topic and the collector: every explain message, as for any request.
    EXPECT_EQ(sub->recv(), (Frames{"explain.echo", "urn:q:none", "0", "open", "{\"seq\":0}"}));
    EXPECT_EQ(sub->recv(), (Frames{"explain.echo", "urn:q:none", "1", "complete", "{\"seq\":1}"}));
    for (const std::string seq : {"0", "1"}) {
        const auto delivery = collector->recv();
        ASSERT_TRUE(delivery.has_value());
        ASSERT_EQ(delivery->size(), 9u);
        EXPECT_EQ((*delivery)[2], cmd(0x02));
        EXPECT_EQ(Frames(delivery->begin() + 4, delivery->end()),
                  (Frames{"echo", "urn:q:none", seq, seq == "0" ? "open" : "complete",
                          "{\"seq\":" + seq + "}"}));
        collector->send({kEmpty, kGbe, cmd(0x03), (*delivery)[3]});
    }
    const json s = status();
    EXPECT_EQ(s["counters"]["explains"], 2);
    EXPECT_EQ(s["counters"]["published"], 2);
    EXPECT_EQ(s["counters"]["partials"], 3);

    // The same client asking for the stream (no options frame, or explain=stream) gets it.
    for (const auto& [id, with_frame] : {std::pair<std::string, bool>{"r2", false}, {"r3", true}}) {
        if (with_frame) {
            request_with(*client, "echo", id, "explain=stream");
        } else {
            request(*client, "echo", id, "{}");
        }
        const Frames again = expect_request(*w);
        EXPECT_FALSE(json::parse(again[5]).contains("explain")) << again[5];
        explain(*w, again[3], "urn:q:" + id, "0", "complete", "{\"id\":\"" + id + "\"}");
        reply(*w, again[3], "{}");
        expect_partial(*client, id, "explain", "{\"id\":\"" + id + "\"}");
        expect_final(*client, id, "{}");
    }
}

// The packed form (§1.4) carries the options in its envelope; the answers come packed, without
// the explain messages.
TEST_F(BrokerTest, ExplainNoneInThePackedForm) {
    start();
    auto w = credit_worker("echo", "2", "GBW03");
    auto client = peer();
    client->send(
        packed({kEmpty, kGbc, cmd(0x01), "echo", "rp", "4000", kExplainNone, "{\"q\":1}"}));
    const auto got = w->recv();
    ASSERT_TRUE(got.has_value());
    ASSERT_EQ(got->size(), 6u);
    EXPECT_EQ(json::parse((*got)[4])["explain"], "none");
    EXPECT_EQ((*got)[5], "{\"q\":1}");
    const std::string token = (*got)[3];
    w->send(packed({kEmpty, kMdpw, cmd(0x07), token, "urn:q:p", "0", "open", "{}"}));
    w->send(packed({kEmpty, kMdpw, cmd(0x06), token, "\"chunk\""}));
    w->send(packed({kEmpty, kMdpw, cmd(0x07), token, "urn:q:p", "1", "complete", "{}"}));
    w->send(packed({kEmpty, kMdpw, cmd(0x03), token, "{\"done\":1}"}));
    const Frames data = expect_gb(*client, 0x02, "rp");
    EXPECT_TRUE(client->last_packed());
    ASSERT_EQ(data.size(), 6u);
    EXPECT_EQ(data[4], "data");
    const Frames final_frames = expect_gb(*client, 0x03, "rp");
    EXPECT_TRUE(client->last_packed());
    EXPECT_EQ(final_frames.at(4), "{\"done\":1}");
    EXPECT_TRUE(client->silent_for(200ms));
    EXPECT_TRUE(eventually([](const json& s) { return s["counters"]["published"] == 2; }));
}

TEST_F(BrokerTest, MalformedRequestOptionsAreAProtocolErrorAndTheBrokerServesOn) {
    start();
    auto w = worker("echo", true);
    auto client = peer();
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"b1", "explain=all"},
        {"b2", "trace=off"},
        {"b3", "explain"},
        {"b4", "explain=none,explain=none"},
        {"b5", "explain=none,"},
        {"b6", "EXPLAIN=none"},
        {"b7", std::string(300, 'x')},
        {"b8", "explain=none;x=y"}};
    for (const auto& [id, options] : bad) {
        request_with(*client, "echo", id, options);
        const Frames error = expect_gb(*client, 0x05, id);
        ASSERT_EQ(error.size(), 6u);
        EXPECT_EQ(error[4], "ProtocolError");
        EXPECT_TRUE(error[5].starts_with("request options: ")) << error[5];
    }
    // Packed too; and the message names what is wrong.
    client->send(packed({kEmpty, kGbc, cmd(0x01), "echo", "b9", "0", "colour=red", "{}"}));
    const Frames packed_error = expect_gb(*client, 0x05, "b9");
    EXPECT_TRUE(client->last_packed());
    EXPECT_NE(packed_error.at(5).find("unknown option \"colour\""), std::string::npos)
        << packed_error.at(5);
    // Nothing reached the worker, nothing is queued.
    EXPECT_TRUE(w->silent_for(200ms));
    EXPECT_EQ(service_of(status(), "echo")["queued"], 0);
    EXPECT_EQ(status()["counters"]["errors"]["ProtocolError"], 9);

    // The broker serves on: the same client, a refused id used again, good options.
    request_with(*client, "echo", "b1", kExplainNone);
    const Frames req = expect_request(*w);
    complete_trace(*w, req[3], "urn:q:after", "{}");
    expect_final(*client, "b1", "{}");
    EXPECT_TRUE(client->silent_for(100ms));
    // The broker's own services take options too (and ignore them).
    request_with(*client, "mmi.service", "m1", kExplainNone, "\"echo\"");
    expect_final(*client, "m1", "200");
}

// A request that ends abnormally with a trace open gets the broker's end of trace (§5.3): on the
// topic, not to an explain=none client, which gets its ERROR alone.
TEST_F(BrokerTest, ExplainNoneClientGetsNoBrokerEndOfTrace) {
    start();
    auto sub = std::make_unique<Peer>(context_, endpoints_.pub_endpoint, zmq::socket_type::sub);
    sub->socket().set(zmq::sockopt::subscribe, "explain.echo");
    ASSERT_TRUE(wait_for_subscriptions(1));
    auto w = worker("echo", true);
    auto client = peer();
    request_with(*client, "echo", "r1", kExplainNone);
    const Frames req = expect_request(*w);
    explain(*w, req[3], "urn:q:cut", "0", "open", "{}");
    partial(*w, req[3], "\"c0\"");
    expect_partial(*client, "r1", "data", "\"c0\"");
    client->send({kEmpty, kGbc, cmd(0x04), "r1"});
    expect_error(*client, "r1", "Cancelled");
    EXPECT_TRUE(client->silent_for(200ms));
    EXPECT_EQ(sub->recv(), (Frames{"explain.echo", "urn:q:cut", "0", "open", "{}"}));
    const auto end = sub->recv();
    ASSERT_TRUE(end.has_value());
    ASSERT_EQ(end->size(), 5u);
    EXPECT_EQ((*end)[2], "1");
    EXPECT_EQ((*end)[3], "error");
    EXPECT_EQ(json::parse((*end)[4])["error"]["type"], "Cancelled");
}

TEST_F(BrokerTest, ExplainNoneSpoolFullWithFailRequestEndsTheRequestAlone) {
    BrokerConfig config = test_config();
    config.spool_max_messages = 1;
    start(config);
    auto w = worker("echo", true);
    auto client = peer();
    request_with(*client, "echo", "r1", kExplainNone);
    const Frames req = expect_request(*w);
    explain(*w, req[3], "urn:q:1", "0", "open", "{}");
    explain(*w, req[3], "urn:q:1", "1", "open", "{}");
    expect_error(*client, "r1", "SpoolFull");
    EXPECT_EQ(w->recv(), (Frames{kEmpty, kMdpw, cmd(0x09), req[3]}));
    EXPECT_TRUE(client->silent_for(200ms));
}

// A commit that fails under fail-request (a full disk) ends the request with SpoolFull in place
// of its FINAL, held for that commit: for an explain=none client too, without the trace's end.
TEST_F(BrokerTest, ExplainNoneSpoolWriteFailureStillTurnsTheFinalIntoSpoolFull) {
    BrokerConfig config = test_config();
    config.spool_path = temp_spool_path("unwritable-explain-none");
    start(config);
    auto w = worker("echo", true);
    auto client = peer();
    request_with(*client, "echo", "r1", kExplainNone);
    const Frames req = expect_request(*w);
    {
        FileSizeLimit full(1);  // no segment write gets through
        partial(*w, req[3], "\"c0\"");
        explain(*w, req[3], "urn:q:full", "0", "open", "{\"n\":0}");
        explain(*w, req[3], "urn:q:full", "1", "complete", "{\"n\":1}");
        reply(*w, req[3], "{}");
        expect_partial(*client, "r1", "data", "\"c0\"");
        expect_error(*client, "r1", "SpoolFull");
        EXPECT_TRUE(client->silent_for(200ms));
    }
    ASSERT_TRUE(eventually([](const json& s) { return s["spool"]["writable"] == true; }));
}

}  // namespace
}  // namespace glassbox::broker::broker_test
