// Fault injection with real processes: workers SIGKILLed, late workers, broker restarts.
#include <signal.h>

#include <set>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include "tests/support/cluster.hpp"
#include "tests/support/echo_stream.hpp"

namespace glassbox::integration {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// The (session, seq) of explain messages.
using ExplainKeys = std::set<std::pair<std::string, std::uint64_t>>;

// Asks echo `count` questions "<prefix><i>" (one partial each), each of which must end with a
// FINAL, and adds the (session, seq) of every explain message of their answers to `keys`.
void ask_echoes(GbcClient& client, int count, const std::string& prefix, ExplainKeys& keys) {
    for (int i = 0; i < count; ++i) {
        auto messages = client.call("echo", echo_body(prefix + std::to_string(i), 1));
        ASSERT_FALSE(messages.empty());
        ASSERT_TRUE(messages.back().is_final()) << describe(messages);
        for (const auto& e : split_stream(messages).explain) {
            keys.emplace(e.value("session", ""), e.value("seq", 0u));
        }
    }
}

// A fixture whose broker's spool is filled by echo answers before any collector is attached.
class EchoSpoolTest : public ClusterTest {
protected:
    // A broker and an echo worker (two threads), then `count` questions "<prefix><i>" answered
    // while no collector is attached: the (session, seq) of their explain messages, all waiting
    // in the spool, are added to `keys` (use with ASSERT_NO_FATAL_FAILURE).
    void spool_echoes(RunningBroker& broker, int count, const std::string& prefix,
                      ExplainKeys& keys) {
        ASSERT_NO_FATAL_FAILURE(start_broker_with_echo(broker, 2));
        GbcClient client(context_, broker.endpoint);
        ask_echoes(client, count, prefix, keys);
    }
};

class FaultWorkerDeath : public ClusterTest {};

// The echo worker sends its Question explain at once, so a worker that dies "before replying"
// (before sending anything, §2.2) is the plain 7/MDP integration_test_worker holding the request.
TEST_F(FaultWorkerDeath, KilledBeforeReplyIsRedispatchedToAnotherWorker) {
    auto broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    auto& first = start_test_worker(broker.endpoint, "holder", 5000);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "holder"));

    GbcClient client(context_, broker.endpoint);
    const nlohmann::json body{{"question", "survive a worker death"}};
    const auto rid = client.request("holder", body.dump(), 30'000);
    ASSERT_TRUE(wait_until_busy(broker.endpoint, "holder")) << "the request was never dispatched";
    first.kill();
    auto& second = start_test_worker(broker.endpoint, "holder", 0);

    auto messages = client.collect(rid, milliseconds{60'000});
    ASSERT_EQ(messages.size(), 1u) << describe(messages);
    ASSERT_TRUE(messages.back().is_final()) << describe(messages);
    const auto reply = messages.back().json();
    EXPECT_EQ(reply["request"], body) << reply.dump();
    EXPECT_EQ(reply.value("served_by", -1), second.pid()) << reply.dump();
}

TEST_F(FaultWorkerDeath, RepeatedDeathsBeforeReplyEndWithWorkerLost) {
    auto broker = start_broker({.extra = {"--max-retries", "1"}});
    ASSERT_FALSE(broker.endpoint.empty());
    auto& first = start_test_worker(broker.endpoint, "holder", 10'000);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "holder"));
    GbcClient client(context_, broker.endpoint);
    const auto rid = client.request("holder", R"({"question":"unlucky"})", 60'000);
    // Attempt 1 dies, the retry (attempt 2) dies: with max_retries 1 the request ends.
    ASSERT_TRUE(wait_until_busy(broker.endpoint, "holder"));
    first.kill();
    // The dead worker counts as busy until the broker notices; wait for that first.
    ASSERT_TRUE(wait_for_workers(broker.endpoint, "holder", 0)) << "the death was never noticed";
    auto& second = start_test_worker(broker.endpoint, "holder", 10'000);
    ASSERT_TRUE(wait_until_busy(broker.endpoint, "holder")) << "the retry was never dispatched";
    second.kill();
    auto messages = client.collect(rid, milliseconds{10'000});
    ASSERT_FALSE(messages.empty());
    EXPECT_TRUE(messages.back().is_error()) << describe(messages);
    EXPECT_EQ(messages.back().error_type, "WorkerLost") << describe(messages);
}

TEST_F(FaultWorkerDeath, KilledMidStreamEndsWithWorkerLostAndAnErrorTraceEnd) {
    auto broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    auto& worker = start_echo_worker(broker.endpoint, 1);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    GbcClient client(context_, broker.endpoint);
    Collector collector(context_, broker.endpoint);

    // Many slow partials: the worker is killed after the first one arrives.
    const auto rid = client.request("echo", echo_body("die mid-stream", 20, 300), 30'000);
    std::vector<GbcMessage> messages;
    const auto until = Clock::now() + milliseconds{10'000};
    while (Clock::now() < until) {
        auto m = client.recv(milliseconds{200});
        if (m) {
            messages.push_back(*m);
            if (m->is_partial("data") || m->terminal()) {
                break;
            }
        }
    }
    ASSERT_FALSE(messages.empty());
    ASSERT_TRUE(messages.back().is_partial("data")) << describe(messages);
    worker.kill();
    // The outcome, not how soon: the broker notices the death and ends the stream (how soon
    // liveness notices is bench/'s to measure).
    auto rest = client.collect(rid, milliseconds{60'000});
    messages.insert(messages.end(), rest.begin(), rest.end());
    ASSERT_FALSE(rest.empty()) << describe(messages);

    const auto s = split_stream(messages);
    ASSERT_EQ(s.terminals.size(), 1u) << describe(messages);
    EXPECT_TRUE(messages.back().is_error()) << describe(messages);
    EXPECT_EQ(messages.back().error_type, "WorkerLost") << describe(messages);
    // The broker closes the open trace: an explain with end_of_trace and trace_status error.
    ASSERT_FALSE(s.explain.empty()) << describe(messages);
    const auto& last = s.explain.back();
    EXPECT_EQ(last.value("end_of_trace", false), true) << last.dump();
    EXPECT_EQ(last.value("trace_status", ""), "error") << last.dump();
    EXPECT_EQ(last.value("session", ""), s.explain.front().value("session", "x")) << last.dump();
    EXPECT_EQ(last.value("seq", 0u), s.explain.size() - 1) << last.dump();
    ASSERT_TRUE(last.contains("error")) << last.dump();
    EXPECT_EQ(last["error"].value("type", ""), "WorkerLost") << last.dump();

    // The reliable feed gets the same trace end, with state `error`.
    ASSERT_TRUE(collector.wait_for(s.explain.size(), milliseconds{5000}))
        << collector.messages().size() << " of " << s.explain.size();
    const auto key = std::make_pair(last.value("session", ""), s.explain.size() - 1);
    ASSERT_EQ(collector.messages().count(key), 1u);
    EXPECT_EQ(collector.messages().at(key).state, "error");
}

class WaitingRequests : public ClusterTest {};

TEST_F(WaitingRequests, WorkerStartedAfterRequestsServesThemAll) {
    // A service that was known (a worker came and went) keeps requests queued until their deadline.
    auto broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    auto& early = start_echo_worker(broker.endpoint, 1);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    early.terminate();
    // mmi.service says 404 once the broker has forgotten the worker.
    const auto until = Clock::now() + milliseconds{5000};
    bool gone = false;
    while (!gone && Clock::now() < until) {
        MdpClient mmi(context_, broker.endpoint);
        auto r = mmi.call("mmi.service", {"echo"}, milliseconds{1000});
        gone = r && r->size() == 1 && (*r)[0] == "404";
        std::this_thread::sleep_for(milliseconds{20});
    }
    ASSERT_TRUE(gone) << "the broker never forgot the stopped worker";

    constexpr int kRequests = 20;
    GbcClient client(context_, broker.endpoint);
    std::vector<std::string> rids;
    std::vector<nlohmann::json> bodies;
    for (int i = 0; i < kRequests; ++i) {
        bodies.push_back(nlohmann::json::parse(echo_body("queued " + std::to_string(i), 1)));
        rids.push_back(client.request("echo", bodies.back().dump(), 60'000));
    }
    ASSERT_TRUE(wait_for_service_entry(broker.endpoint, "echo", [&](const nlohmann::json& e) {
        return e.value("queued", -1) == kRequests;
    }));
    // Longer than unknown_service_wait: a never-seen service asked after the 20 were queued
    // gets its UnknownService at the end of that wait, so had the 20 been held to it, their
    // errors would have come first.
    GbcClient probe(context_, broker.endpoint);
    const auto unknown = probe.call("never-seen", "{}", 60'000, milliseconds{60'000});
    ASSERT_FALSE(unknown.empty());
    ASSERT_EQ(unknown.back().error_type, "UnknownService") << describe(unknown);
    auto early_reply = client.recv(milliseconds{0});
    EXPECT_FALSE(early_reply.has_value()) << early_reply->describe();
    start_echo_worker(broker.endpoint, 2);
    for (int i = 0; i < kRequests; ++i) {
        auto messages = client.collect(rids[static_cast<std::size_t>(i)], milliseconds{15'000});
        EXPECT_TRUE(is_complete_echo_stream(messages, bodies[static_cast<std::size_t>(i)], 1)) << i;
    }
}

TEST_F(WaitingRequests, NeverSeenServiceWaitsForAWorkerThatComesInTime) {
    // unknown_service_wait: a request for a service no worker has registered yet waits for one.
    // A wait long enough for a worker process to start on a loaded machine.
    auto broker = start_broker({.extra = {"--unknown-service-wait-ms", "10000"}});
    ASSERT_FALSE(broker.endpoint.empty());
    GbcClient client(context_, broker.endpoint);
    std::vector<std::string> rids;
    std::vector<nlohmann::json> bodies;
    for (int i = 0; i < 10; ++i) {
        bodies.push_back(nlohmann::json::parse(echo_body("early " + std::to_string(i))));
        rids.push_back(client.request("echo", bodies.back().dump(), 60'000));
    }
    ASSERT_TRUE(wait_for_service_entry(broker.endpoint, "echo", [](const nlohmann::json& e) {
        return e.value("queued", -1) == 10;
    })) << "the requests wait before any worker of theirs exists";
    start_echo_worker(broker.endpoint, 2);
    for (std::size_t i = 0; i < rids.size(); ++i) {
        auto messages = client.collect(rids[i], milliseconds{15'000});
        EXPECT_TRUE(is_complete_echo_stream(messages, bodies[i], 0)) << i;
    }
    // And one that never comes ends with UnknownService after the wait (not at its deadline).
    auto messages = client.call("no-such-service", "{}", 120'000, milliseconds{60'000});
    ASSERT_FALSE(messages.empty());
    EXPECT_EQ(messages.back().error_type, "UnknownService") << describe(messages);
}

class FaultBrokerRestart : public EchoSpoolTest {};

TEST_F(FaultBrokerRestart, InFlightRequestsEndAndWorkersReconnect) {
    RunningBroker broker;
    ASSERT_NO_FATAL_FAILURE(start_broker_with_echo(broker, 2));

    GbcClient client(context_, broker.endpoint);
    std::vector<std::string> rids;
    rids.reserve(4);
    for (int i = 0; i < 4; ++i) {  // two running, two queued
        rids.push_back(
            client.request("echo", echo_body("in flight " + std::to_string(i), 1, 4000), 60'000));
    }
    ASSERT_TRUE(wait_for_service_entry(broker.endpoint, "echo", [](const nlohmann::json& e) {
        return e.value("in_flight", -1) == 2 && e.value("queued", -1) == 2;
    }));
    broker.process->kill();

    auto restarted = start_broker({.bind = "tcp://127.0.0.1:" + port_of(broker.endpoint),
                                   .heartbeat_ms = kHeartbeatMs,
                                   .extra = {}});
    ASSERT_EQ(restarted.endpoint, broker.endpoint);
    for (const auto& rid : rids) {
        auto messages = client.collect(rid, milliseconds{60'000});
        ASSERT_FALSE(messages.empty()) << "request " << rid << " never ended";
        EXPECT_TRUE(messages.back().is_error()) << describe(messages);
        EXPECT_EQ(messages.back().error_type, "BrokerRestarted") << describe(messages);
    }
    // A late FINAL from the old worker must not reach the client for a finished id.
    auto late = client.recv(milliseconds{300});
    EXPECT_FALSE(late.has_value()) << late->describe();

    // The worker reconnects by itself; new requests succeed.
    ASSERT_TRUE(wait_for_service(restarted.endpoint, "echo", milliseconds{10'000}));
    const auto body = nlohmann::json::parse(echo_body("after restart", 2));
    EXPECT_TRUE(is_complete_echo_stream(client.call("echo", body.dump()), body, 2));
}

TEST_F(FaultBrokerRestart, SpooledExplainDeliveredOnceAfterRestart) {
    // No collector attached: every explain message waits in the spool.
    RunningBroker broker;
    ExplainKeys expected;
    ASSERT_NO_FATAL_FAILURE(spool_echoes(broker, 10, "spooled ", expected));
    ASSERT_GE(expected.size(), 20u);
    broker.process->kill();

    auto restarted = start_broker();
    ASSERT_FALSE(restarted.endpoint.empty());
    Collector collector(context_, restarted.endpoint, 8);
    EXPECT_TRUE(collector.wait_for(expected.size(), milliseconds{10'000}))
        << collector.messages().size() << " of " << expected.size();
    collector.pump(milliseconds{1000});  // anything sent twice shows up now
    ExplainKeys got;
    for (const auto& [key, d] : collector.messages()) {
        got.insert(key);
    }
    EXPECT_EQ(got, expected);
    EXPECT_TRUE(collector.duplicates().empty()) << collector.duplicates().size() << " duplicates";
    // Acknowledged entries leave the spool.
    auto s = status(restarted.endpoint);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ((*s)["spool"].value("messages", -1), 0) << s->dump();
}

class ExplainDelivery : public EchoSpoolTest {};

TEST_F(ExplainDelivery, SpooledUntilACollectorConnectsThenDeliveredOnce) {
    RunningBroker broker;
    ExplainKeys expected;
    ASSERT_NO_FATAL_FAILURE(spool_echoes(broker, 20, "no collector yet ", expected));
    auto before = status(broker.endpoint);
    ASSERT_TRUE(before.has_value());
    EXPECT_EQ((*before)["spool"].value("messages", 0u), expected.size()) << before->dump();

    Collector collector(context_, broker.endpoint, 4);
    EXPECT_TRUE(collector.wait_for(expected.size(), milliseconds{10'000}))
        << collector.messages().size() << " of " << expected.size();
    collector.pump(milliseconds{1000});
    ExplainKeys got;
    std::uint64_t last_id = 0;
    for (const auto& [key, d] : collector.messages()) {
        got.insert(key);
        EXPECT_EQ(d.service, "echo");
        EXPECT_EQ(d.body.value("session", ""), key.first);
        EXPECT_EQ(d.body.value("seq", 0u), key.second);
        last_id = std::max(last_id, d.delivery_id);
    }
    EXPECT_EQ(got, expected);
    EXPECT_TRUE(collector.duplicates().empty()) << collector.duplicates().size() << " duplicates";
    auto after = status(broker.endpoint);
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ((*after)["spool"].value("messages", -1), 0) << after->dump();

    // With a collector attached, new explain messages flow straight through.
    GbcClient client(context_, broker.endpoint);
    auto messages = client.call("echo", echo_body("collector attached", 0));
    const auto fresh = split_stream(messages).explain.size();
    EXPECT_TRUE(collector.wait_for(expected.size() + fresh, milliseconds{5000}));
}

TEST_F(ExplainDelivery, UnacknowledgedDeliveriesComeBackAfterDetach) {
    RunningBroker broker;
    ASSERT_NO_FATAL_FAILURE(start_broker_with_echo(broker, 1));
    GbcClient client(context_, broker.endpoint);
    auto messages = client.call("echo", echo_body("redeliver me", 0));
    ASSERT_TRUE(!messages.empty() && messages.back().is_final()) << describe(messages);
    const auto count = split_stream(messages).explain.size();

    {
        Collector forgetful(context_, broker.endpoint, 64);
        forgetful.ack = false;
        EXPECT_TRUE(forgetful.wait_for(count, milliseconds{5000}));
    }  // DETACH without ACK
    Collector collector(context_, broker.endpoint, 64);
    EXPECT_TRUE(collector.wait_for(count, milliseconds{5000}))
        << collector.messages().size() << " of " << count;
    collector.pump(milliseconds{500});
    EXPECT_TRUE(collector.duplicates().empty());
}

}  // namespace
}  // namespace glassbox::integration
