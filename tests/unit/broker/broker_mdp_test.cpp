// In-process broker tests: lifecycle, 7/MDP clients and workers, mmi.service and mmi.status.
#include "tests/unit/broker/broker_fixture.hpp"

#include <future>

namespace glassbox::broker::broker_test {
namespace {

// ---------------------------------------------------------------- lifecycle

TEST_F(BrokerTest, BindResolvesWildcardPortsAndStopIsPrompt) {
    start();
    EXPECT_EQ(endpoints_.endpoint.find('*'), std::string::npos) << endpoints_.endpoint;
    EXPECT_EQ(endpoints_.pub_endpoint.find('*'), std::string::npos);
    EXPECT_EQ(endpoints_.endpoint.rfind("tcp://127.0.0.1:", 0), 0u);
    // The outcome is that stop() ends run(); how fast is bench/'s to measure. The guard only
    // ends a hang.
    broker_->stop();
    auto joined = std::async(std::launch::async, [this] { thread_.join(); });
    EXPECT_EQ(joined.wait_for(test_support::kHangGuard), std::future_status::ready);
}

TEST_F(BrokerTest, BindFailureIsAnError) {
    start();
    BrokerConfig config = test_config();
    config.endpoint = endpoints_.endpoint;  // already bound
    Broker second{context_, config};
    auto bound = second.bind();
    ASSERT_FALSE(bound.ok());
    EXPECT_NE(bound.error().message.find("cannot bind"), std::string::npos);
}

// ---------------------------------------------------------------- 7/MDP

TEST_F(BrokerTest, MajordomoClientAndWorkerRoundTrip) {
    start();
    auto w = worker("echo", false);
    auto client = peer(zmq::socket_type::req);  // zguide mdcliapi uses REQ
    client->send({kMdpc, "echo", "hello", "world"});
    const Frames req = expect_request(*w);
    ASSERT_EQ(req.size(), 7u);
    EXPECT_EQ(req[5], "hello");
    EXPECT_EQ(req[6], "world");
    w->send({kEmpty, kMdpw, cmd(0x03), req[3], kEmpty, "HELLO", "WORLD"});
    auto got = client->recv();
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, (Frames{kMdpc, "echo", "HELLO", "WORLD"}));
}

TEST_F(BrokerTest, MmiServiceAnswers200And404And501) {
    start();
    auto w = worker("echo", false);
    ASSERT_TRUE(wait_for_workers("echo", 1));  // the READY travels on another connection
    auto client = peer(zmq::socket_type::req);
    client->send({kMdpc, "mmi.service", "echo"});
    EXPECT_EQ(client->recv(), (Frames{kMdpc, "mmi.service", "200"}));
    client->send({kMdpc, "mmi.service", "nosuch"});
    EXPECT_EQ(client->recv(), (Frames{kMdpc, "mmi.service", "404"}));
    client->send({kMdpc, "mmi.nope", "x"});
    EXPECT_EQ(client->recv(), (Frames{kMdpc, "mmi.nope", "501"}));

    auto gb = peer();
    request(*gb, "mmi.service", "m1", "\"echo\"");
    expect_final(*gb, "m1", "200");
    request(*gb, "mmi.nope", "m2", "{}");
    expect_error(*gb, "m2", "UnknownService");
}

// mmi.status counts each service's workers by the address they connect from (docs/deployment.md).
TEST_F(BrokerTest, StatusCountsEachServicesWorkersByHost) {
    start();
    auto one = worker("echo", true);
    auto two = worker("echo", true);
    auto other = worker("store", true);
    ASSERT_TRUE(eventually([](const json& s) {
        for (const auto& service : s["services"]) {
            if (service["name"] == "echo" && service["workers"] == 2) return true;
        }
        return false;
    }));
    const json shown = status();
    std::map<std::string, json> hosts;
    for (const auto& service : shown["services"]) hosts[service["name"]] = service["hosts"];
    EXPECT_EQ(hosts["echo"], json({{"127.0.0.1", 2}})) << shown.dump();
    EXPECT_EQ(hosts["store"], json({{"127.0.0.1", 1}})) << shown.dump();
}

TEST_F(BrokerTest, SecondReadyAndUnknownWorkerGetDisconnect) {
    start();
    auto w = worker("echo", false);
    w->go_silent();
    w->send({kEmpty, kMdpw, cmd(0x01), "echo"});
    auto got = w->recv();
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, (Frames{kEmpty, kMdpw, cmd(0x05)}));

    auto stranger = peer();
    stranger->send({kEmpty, kMdpw, cmd(0x04)});
    EXPECT_EQ(stranger->recv(), (Frames{kEmpty, kMdpw, cmd(0x05)}));

    auto mmi = peer();
    mmi->send({kEmpty, kMdpw, cmd(0x01), "mmi.service"});
    EXPECT_EQ(mmi->recv(), (Frames{kEmpty, kMdpw, cmd(0x05)}));
}

// ---------------------------------------------------------------- status

TEST_F(BrokerTest, StatusReportsServicesWorkersQueuesAndSpool) {
    start();
    auto a = worker("alpha", false);
    auto b = worker("alpha", true);
    auto c = worker("beta", false);
    ASSERT_TRUE(eventually([](const json& s) { return s["counters"]["workers"] == 3; }));
    const json s = status();
    EXPECT_EQ(s["broker"]["endpoint"], endpoints_.endpoint);
    EXPECT_EQ(s["broker"]["pub_endpoint"], endpoints_.pub_endpoint);
    EXPECT_TRUE(s["broker"]["version"].is_string());
    EXPECT_EQ(s["broker"]["instance"].get<std::string>().size(), 16u);
    EXPECT_GE(s["broker"]["uptime_s"].get<double>(), 0.0);
    ASSERT_EQ(s["services"].size(), 2u);
    EXPECT_EQ(s["services"][0]["name"], "alpha");
    EXPECT_EQ(s["services"][0]["workers"], 2);
    EXPECT_EQ(s["services"][0]["idle"], 2);
    EXPECT_EQ(s["services"][0]["credit"], 2);  // one unit per worker without a credit frame
    EXPECT_EQ(s["services"][0]["in_flight"], 0);
    EXPECT_EQ(s["services"][0]["queued"], 0);
    EXPECT_EQ(s["services"][0]["max_queue"], 10000);
    EXPECT_EQ(s["services"][0]["overflow"], "reject");
    EXPECT_EQ(s["services"][1]["name"], "beta");
    for (const char* key : {"messages", "bytes", "max_messages", "max_bytes", "policy", "dropped",
                            "collectors", "in_flight"}) {
        EXPECT_TRUE(s["spool"].contains(key)) << key;
    }
    EXPECT_EQ(s["spool"]["policy"], "fail-request");
    EXPECT_GE(s["counters"]["requests"].get<int>(), 1);
}

}  // namespace
}  // namespace glassbox::broker::broker_test
