// Streaming replies through the real broker and echo worker: order, concurrency, cancel, deadline.
#include <atomic>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/cluster.hpp"
#include "tests/support/echo_stream.hpp"

namespace glassbox::integration {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class StreamingTest : public ClusterTest {};

TEST_F(StreamingTest, PartialsInOrderThenExactlyOneTerminal) {
    RunningBroker broker;
    ASSERT_NO_FATAL_FAILURE(start_broker_with_echo(broker));

    GbcClient client(context_, broker.endpoint);
    for (int partials : {0, 1, 7}) {
        const auto body =
            nlohmann::json::parse(echo_body("order " + std::to_string(partials), partials));
        const auto rid = client.request("echo", body.dump());
        auto messages = client.collect(rid, milliseconds{10'000});
        EXPECT_TRUE(is_complete_echo_stream(messages, body, partials));
        // Nothing for a request id follows its terminal message (§4.2).
        auto late = client.recv(milliseconds{300});
        EXPECT_FALSE(late.has_value()) << late->describe();
    }
}

TEST_F(StreamingTest, HundredConcurrentClientsEachGetTheirFullStream) {
    auto broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    start_echo_worker(broker.endpoint, 4);
    start_echo_worker(broker.endpoint, 4);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo", milliseconds{10'000}, 2));

    constexpr int kClients = 100;
    constexpr int kThreads = 4;
    constexpr int kPartials = 3;
    std::vector<std::vector<GbcMessage>> streams(kClients);
    std::vector<nlohmann::json> bodies(kClients);
    for (int i = 0; i < kClients; ++i) {
        bodies[static_cast<std::size_t>(i)] =
            nlohmann::json::parse(echo_body("client " + std::to_string(i), kPartials));
    }
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::vector<std::unique_ptr<GbcClient>> clients;
            std::vector<std::string> rids;
            for (int i = t; i < kClients; i += kThreads) {
                clients.push_back(std::make_unique<GbcClient>(context_, broker.endpoint));
            }
            // All clients connect first, then all send at once.
            ready.fetch_add(1);
            while (ready.load() < kThreads) {
                std::this_thread::yield();
            }
            std::size_t k = 0;
            for (int i = t; i < kClients; i += kThreads, ++k) {
                rids.push_back(clients[k]->request(
                    "echo", bodies[static_cast<std::size_t>(i)].dump(), 30'000));
            }
            k = 0;
            for (int i = t; i < kClients; i += kThreads, ++k) {
                streams[static_cast<std::size_t>(i)] =
                    clients[k]->collect(rids[k], milliseconds{30'000});
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    std::set<std::string> sessions;
    int complete = 0;
    for (int i = 0; i < kClients; ++i) {
        const auto& stream = streams[static_cast<std::size_t>(i)];
        auto ok = is_complete_echo_stream(stream, bodies[static_cast<std::size_t>(i)], kPartials);
        EXPECT_TRUE(ok) << "client " << i;
        if (ok) {
            ++complete;
            sessions.insert(stream.back().json()["session"].get<std::string>());
        }
    }
    EXPECT_EQ(complete, kClients);
    EXPECT_EQ(sessions.size(), static_cast<std::size_t>(complete)) << "sessions must be distinct";
}

TEST_F(StreamingTest, CancelAndDeadlineEndRequestsAndTheWorkerServesAgain) {
    RunningBroker broker;
    ASSERT_NO_FATAL_FAILURE(start_broker_with_echo(broker, 1));
    GbcClient client(context_, broker.endpoint);

    // CANCEL a running request: ERROR Cancelled. The work would take 5 s and then end as a
    // complete stream: an error is the cancel's doing, however long a loaded machine takes.
    const auto rid = client.request("echo", echo_body("cancel me", 1, 5000), 30'000);
    ASSERT_TRUE(wait_until_busy(broker.endpoint, "echo", 1, milliseconds{60'000})) << "not running";
    client.cancel(rid);
    auto messages = client.collect(rid, milliseconds{30'000});
    ASSERT_FALSE(messages.empty());
    EXPECT_TRUE(messages.back().is_error()) << describe(messages);
    EXPECT_EQ(messages.back().error_type, "Cancelled") << describe(messages);

    // A deadline shorter than the work: DeadlineExceeded, not the complete stream.
    messages = client.call("echo", echo_body("too slow", 1, 5000), 400, milliseconds{30'000});
    ASSERT_FALSE(messages.empty());
    EXPECT_TRUE(messages.back().is_error()) << describe(messages);
    EXPECT_EQ(messages.back().error_type, "DeadlineExceeded") << describe(messages);

    // The single worker thread was told to stop; it must become ready again (§5.3).
    const auto body = nlohmann::json::parse(echo_body("after cancel", 2));
    messages = client.call("echo", body.dump(), 10'000, milliseconds{10'000});
    EXPECT_TRUE(is_complete_echo_stream(messages, body, 2));
}

TEST_F(StreamingTest, WorkerErrorIsForwardedAsTypedError) {
    RunningBroker broker;
    ASSERT_NO_FATAL_FAILURE(start_broker_with_echo(broker));
    GbcClient client(context_, broker.endpoint);
    for (const std::string type : {"UpstreamError", "NotFound", "Internal"}) {
        auto messages = client.call("echo", echo_body("fail " + type, 1, 0, type));
        ASSERT_FALSE(messages.empty()) << type;
        const auto s = split_stream(messages);
        ASSERT_EQ(s.terminals.size(), 1u) << describe(messages);
        EXPECT_TRUE(messages.back().is_error()) << describe(messages);
        EXPECT_EQ(messages.back().error_type, type) << describe(messages);
    }
    expect_echo_served(broker.endpoint);
}

TEST_F(StreamingTest, MdpClientGetsOneReplyWithTheFinalBody) {
    RunningBroker broker;
    ASSERT_NO_FATAL_FAILURE(start_broker_with_echo(broker));
    MdpClient client(context_, broker.endpoint);
    const auto body = nlohmann::json::parse(echo_body("via mdp", 3));
    auto reply = client.call("echo", {body.dump()});
    ASSERT_TRUE(reply.has_value());
    ASSERT_EQ(reply->size(), 1u);
    auto value = nlohmann::json::parse((*reply)[0], nullptr, false);
    ASSERT_TRUE(value.is_object()) << (*reply)[0];
    EXPECT_EQ(value["echo"], body);
    // No partial or explain follows the single REPLY.
    auto extra = client.dealer().recv(milliseconds{300});
    EXPECT_FALSE(extra.has_value()) << extra->size() << " frames after the REPLY";
}

}  // namespace
}  // namespace glassbox::integration

namespace glassbox::integration {
namespace {

TEST_F(StreamingTest, ExplainTopicPublishesEveryExplainMessage) {
    auto broker = start_broker();
    ASSERT_FALSE(broker.pub_endpoint.empty());
    start_echo_worker(broker.endpoint);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));

    zmq::socket_t sub(context_, zmq::socket_type::sub);
    sub.set(zmq::sockopt::linger, 0);
    sub.set(zmq::sockopt::subscribe, "explain.");
    sub.connect(broker.pub_endpoint);
    ASSERT_TRUE(wait_for_subscriptions(broker.endpoint, 1));  // PUB/SUB: late joiners miss messages

    GbcClient client(context_, broker.endpoint);
    const auto body = nlohmann::json::parse(echo_body("watched", 1));
    auto messages = client.call("echo", body.dump());
    ASSERT_TRUE(is_complete_echo_stream(messages, body, 1));
    const auto explain = split_stream(messages).explain;

    // §6.2: [topic] [session] [seq] [state] [body], topic "explain.<service>".
    std::vector<Frames> published;
    const auto until = Clock::now() + milliseconds{30'000};
    while (published.size() < explain.size() && Clock::now() < until) {
        zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
        if (zmq::poll(&item, 1, milliseconds{100}) <= 0) {
            continue;
        }
        Frames frames;
        while (true) {
            zmq::message_t part;
            if (!sub.recv(part, zmq::recv_flags::dontwait)) {
                break;
            }
            frames.push_back(part.to_string());
            if (!part.more()) {
                break;
            }
        }
        published.push_back(std::move(frames));
    }
    ASSERT_EQ(published.size(), explain.size());
    for (std::size_t i = 0; i < published.size(); ++i) {
        const auto& f = published[i];
        ASSERT_EQ(f.size(), 5u);
        EXPECT_EQ(f[0], "explain.echo");
        EXPECT_EQ(f[1], explain[i].value("session", ""));
        EXPECT_EQ(f[2], std::to_string(i));
        EXPECT_EQ(f[3], i + 1 == published.size() ? "complete" : "open");
        EXPECT_EQ(nlohmann::json::parse(f[4], nullptr, false), explain[i]);
    }
}

}  // namespace
}  // namespace glassbox::integration
