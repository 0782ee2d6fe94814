// A GBC01 request's explain option (docs/protocol.md §4.1) with real processes: a broker, an echo
// worker and a trace collector. A client that asks explain=none gets its data partials and its
// FINAL and no explain message, while a topic subscriber sees every explain message and the
// collector stores the trace whole, as for a client that takes the stream.
#include <gtest/gtest.h>

#include "tests/support/bus_peers.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/echo_stream.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

class ExplainOptionTest : public ClusterTest {
protected:
    void SetUp() override {
        broker_ = start_broker();
        start_echo_worker(broker_.endpoint);
        start_trace_collector(broker_.endpoint);
        ASSERT_TRUE(wait_for_service(broker_.endpoint, "echo"));
        ASSERT_TRUE(wait_for_service(broker_.endpoint, "trace"));
    }

    // The stored trace of `session` once the collector holds it complete with `events` events.
    json stored(const std::string& session, std::size_t events) {
        json shown;
        const bool whole = wait_for_trace_answer(
            broker_.endpoint, {{"op", "show"}, {"session", session}},
            [&](const json& s) {
                return s["session"].value("status", "") == "complete" &&
                       s["events"].size() == events;
            },
            shown);
        EXPECT_TRUE(whole) << session
                           << " not stored whole; last: " << shown.dump().substr(0, 2000);
        return shown;
    }

    RunningBroker broker_;
};

TEST_F(ExplainOptionTest, ExplainNoneClientGetsDataAndFinalWhileTheTraceIsPublishedAndStoredWhole) {
    zmq::socket_t sub(context_, zmq::socket_type::sub);
    sub.set(zmq::sockopt::linger, 0);
    sub.set(zmq::sockopt::subscribe, "explain.echo");
    sub.connect(broker_.pub_endpoint);
    ASSERT_TRUE(wait_for_subscriptions(broker_.endpoint, 1));  // PUB/SUB: late joiners miss

    constexpr int kPartials = 3;
    const std::string body = echo_body("without explains", kPartials);
    GbcClient client(context_, broker_.endpoint);
    client.send_raw(
        {"", "GBC01", std::string(1, '\x01'), "echo", "quiet-1", "10000", "explain=none", body});
    const auto messages = client.collect("quiet-1", milliseconds{15'000});
    const EchoStream quiet = split_stream(messages);
    EXPECT_TRUE(quiet.explain.empty()) << describe(messages);
    EXPECT_TRUE(quiet.malformed.empty()) << describe(messages);
    ASSERT_EQ(quiet.data.size(), static_cast<std::size_t>(kPartials)) << describe(messages);
    for (int i = 0; i < kPartials; ++i) EXPECT_EQ(quiet.data[i]["index"], i);
    ASSERT_EQ(quiet.terminals.size(), 1u) << describe(messages);
    ASSERT_TRUE(quiet.terminals[0].is_final()) << describe(messages);
    EXPECT_EQ(quiet.order.back(), "final");
    const json final_body = quiet.terminals[0].json();
    EXPECT_EQ(final_body["echo"], json::parse(body));
    const std::string session = final_body.value("session", "");
    ASSERT_FALSE(session.empty()) << describe(messages);

    // The topic: every explain message of the run (echo sends two), in order.
    const auto published = receive_published(sub, 2, milliseconds{10'000});
    ASSERT_EQ(published.size(), 2u);
    for (std::size_t i = 0; i < published.size(); ++i) {
        ASSERT_EQ(published[i].size(), 5u);
        EXPECT_EQ(published[i][0], "explain.echo");
        EXPECT_EQ(published[i][1], session);
        EXPECT_EQ(published[i][2], std::to_string(i));
        EXPECT_EQ(published[i][3], i == 0 ? "open" : "complete");
        EXPECT_EQ(json::parse(published[i][4])["session"], session);
    }
    // The collector: the trace whole and complete.
    const json shown = stored(session, 2);
    ASSERT_TRUE(shown.is_object());

    // The same request with the stream: the same answer, the explain messages too, and its trace
    // stored just as whole.
    const auto streamed_messages = client.call("echo", body);
    ASSERT_TRUE(is_complete_echo_stream(streamed_messages, json::parse(body), kPartials))
        << describe(streamed_messages);
    const EchoStream streamed = split_stream(streamed_messages);
    EXPECT_EQ(streamed.explain.size(), 2u);
    EXPECT_EQ(streamed.data, quiet.data);
    const std::string streamed_session = streamed.terminals.at(0).json().value("session", "");
    ASSERT_NE(streamed_session, session);
    const json streamed_shown = stored(streamed_session, 2);
    ASSERT_TRUE(streamed_shown.is_object());
    EXPECT_EQ(receive_published(sub, 2, milliseconds{10'000}).size(), 2u);

    // A malformed options frame: ProtocolError for that request, and the broker serves on.
    client.send_raw(
        {"", "GBC01", std::string(1, '\x01'), "echo", "bad-1", "10000", "explain=maybe", body});
    const auto refused = client.collect("bad-1", milliseconds{10'000});
    ASSERT_EQ(refused.size(), 1u) << describe(refused);
    ASSERT_TRUE(refused[0].is_error()) << describe(refused);
    EXPECT_EQ(refused[0].error_type, "ProtocolError");
    EXPECT_NE(refused[0].message.find("explain=maybe"), std::string::npos) << refused[0].message;
    expect_echo_served(broker_.endpoint);
}

}  // namespace
}  // namespace glassbox::integration
