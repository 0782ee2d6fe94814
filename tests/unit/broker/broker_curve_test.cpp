// The broker under CURVE: only allowed keys get through the handshake, and each message is held
// to its key's roles — client, worker:<service>, collector, subscriber (docs/security.md).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "broker/broker.hpp"
#include "bus/curve_keys.hpp"
#include "bus/detail/frame_io.hpp"
#include "tests/support/wait_until.hpp"
#include "tests/unit/broker/peer_frames.hpp"

namespace glassbox::broker {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Frames = std::vector<std::string>;
using Clock = std::chrono::steady_clock;

const std::string kEmpty;
const std::string kMdpw = "MDPW01";
const std::string kMdpc = "MDPC01";
const std::string kGbc = "GBC01";
const std::string kGbe = "GBE01";
std::string cmd(int code) { return std::string(1, static_cast<char>(code)); }

// One socket with CURVE client options (or none: the NULL mechanism).
class Peer {
public:
    Peer(zmq::context_t& context, const std::string& endpoint, const bus::CurveClientKeys* keys,
         zmq::socket_type type = zmq::socket_type::dealer)
        : socket_(context, type) {
        socket_.set(zmq::sockopt::linger, 0);
        // A send is bounded like every receive: a peer whose connection is not up (a refused
        // handshake) fails its send after 2 s instead of blocking the test for ever.
        socket_.set(zmq::sockopt::sndtimeo, 2000);
        if (keys != nullptr) bus::apply_curve_client(socket_, *keys);
        socket_.connect(endpoint);
    }
    void send(const Frames& frames) { test_frames::send_frames(socket_, frames); }
    // The next message that is not a heartbeat, within `timeout`.
    std::optional<Frames> recv(std::chrono::milliseconds timeout = 3000ms) {
        const auto deadline = Clock::now() + timeout;
        while (Clock::now() < deadline) {
            zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
            zmq::poll(&item, 1, 20ms);
            if ((item.revents & ZMQ_POLLIN) == 0) continue;
            Frames frames = test_frames::read_frames(socket_);
            if (frames.size() == 3 && frames[2] == cmd(0x04)) continue;
            return frames;
        }
        return std::nullopt;
    }
    zmq::socket_t& socket() { return socket_; }

private:
    zmq::socket_t socket_;
};

class BrokerCurveTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("gb-broker-curve-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_ / "allowed");
        auto server = bus::generate_certificate("broker", {});
        ASSERT_TRUE(server.ok());
        server_ = server.value();
    }
    void TearDown() override {
        if (thread_.joinable()) {
            thread_.request_stop();
            thread_.join();
        }
        broker_.reset();
        fs::remove_all(dir_);
    }

    BrokerConfig curve_config() {
        BrokerConfig config;
        config.endpoint = "tcp://127.0.0.1:*";
        config.pub_endpoint = "tcp://127.0.0.1:*";
        config.heartbeat = 200ms;
        config.liveness = 10;
        config.poll_interval = 20ms;
        config.linger = 0ms;
        config.unknown_service_wait = 300ms;
        config.allow_reload_interval = 50ms;
        config.curve_public_key = server_.public_key;
        config.curve_secret_key = server_.secret_key;
        config.allow_folder = (dir_ / "allowed").string();
        return config;
    }

    void start(BrokerConfig config) {
        broker_ = std::make_unique<Broker>(context_, std::move(config));
        auto bound = broker_->bind();
        ASSERT_TRUE(bound.ok()) << bound.error().describe();
        endpoints_ = bound.value();
        thread_ = std::jthread([this](std::stop_token token) { broker_->run(token); });
    }

    // A key pair; allowed (its public certificate in the folder) unless `allowed` is false.
    bus::CurveClientKeys key(const std::string& name, const std::string& roles,
                             bool allowed = true) {
        auto parsed = bus::parse_roles(roles);
        EXPECT_TRUE(parsed.ok());
        auto made = bus::generate_certificate(name, parsed.value());
        EXPECT_TRUE(made.ok());
        if (allowed) allow(made.value());
        return bus::CurveClientKeys{server_.public_key, made.value().public_key,
                                    made.value().secret_key};
    }
    void allow(const bus::CurveCertificate& certificate) {
        std::ofstream out(dir_ / "allowed" / (certificate.name + ".key"));
        out << bus::public_certificate_text(certificate);
    }

    std::unique_ptr<Peer> peer(const bus::CurveClientKeys* keys) {
        return std::make_unique<Peer>(context_, endpoints_.endpoint, keys);
    }

    // mmi.status through an allowed client key.
    nlohmann::json status(const bus::CurveClientKeys& client) {
        auto p = peer(&client);
        p->send({kEmpty, kMdpc, "mmi.status", ""});
        auto got = p->recv();
        if (!got || got->size() < 4) return {};
        return nlohmann::json::parse(got->at(3), nullptr, false);
    }

    zmq::context_t context_;
    fs::path dir_;
    bus::CurveCertificate server_;
    std::unique_ptr<Broker> broker_;
    BoundEndpoints endpoints_;
    std::jthread thread_;
};

TEST_F(BrokerCurveTest, AnAllowedKeyIsServedAndAnUnknownOneIsRefusedAtTheHandshake) {
    const auto client = key("client", "client");
    const auto stranger = key("stranger", "client worker:*", false);
    start(curve_config());

    auto allowed = peer(&client);
    allowed->send({kEmpty, kMdpc, "mmi.service", "echo"});
    auto got = allowed->recv();
    ASSERT_TRUE(got) << "an allowed key gets its answer";
    EXPECT_EQ(got->at(3), "404");

    auto refused = peer(&stranger);
    refused->send({kEmpty, kMdpc, "mmi.service", "echo"});
    EXPECT_FALSE(refused->recv(1000ms)) << "a key not in the allow-list never gets through";

    auto plain = peer(nullptr);
    plain->send({kEmpty, kMdpc, "mmi.service", "echo"});
    EXPECT_FALSE(plain->recv(500ms)) << "no key at all: no connection";

    const auto shown = status(client);
    ASSERT_TRUE(shown.is_object());
    EXPECT_EQ(shown["security"]["mode"], "curve");
    EXPECT_EQ(shown["security"]["allowed_keys"], 1);
    EXPECT_GE(shown["security"]["peers_refused"].get<int>(), 1);
}

TEST_F(BrokerCurveTest, AWorkerKeyRegistersItsServiceAndNoOther) {
    const auto echo_worker = key("echo-worker", "worker:echo");
    const auto client = key("client", "client");
    start(curve_config());

    auto rogue = peer(&echo_worker);
    rogue->send({kEmpty, kMdpw, cmd(0x01), "trace", "GBW01"});
    auto got = rogue->recv();
    ASSERT_TRUE(got) << "a READY for a service the key may not serve is answered";
    EXPECT_EQ(*got, (Frames{kEmpty, kMdpw, cmd(0x05)})) << "with DISCONNECT";

    auto worker = peer(&echo_worker);
    worker->send({kEmpty, kMdpw, cmd(0x01), "echo", "GBW01"});
    auto c = peer(&client);
    c->send({kEmpty, kGbc, cmd(0x01), "echo", "r1", "3000", "{}"});
    auto request = worker->recv();
    ASSERT_TRUE(request) << "its own service is dispatched to it";
    EXPECT_EQ(request->at(2), cmd(0x02));

    const auto shown = status(client);
    bool trace_registered = false;
    for (const auto& service : shown["services"]) {
        if (service["name"] == "trace" && service["workers"].get<int>() > 0)
            trace_registered = true;
    }
    EXPECT_FALSE(trace_registered);
    EXPECT_GE(shown["security"]["messages_refused"].get<int>(), 1);
}

TEST_F(BrokerCurveTest, AKeyWithoutTheClientRoleGetsForbidden) {
    const auto worker_only = key("worker-only", "worker:echo");
    start(curve_config());
    auto p = peer(&worker_only);
    p->send({kEmpty, kGbc, cmd(0x01), "mmi.status", "r1", "3000", "{}"});
    auto got = p->recv();
    ASSERT_TRUE(got);
    ASSERT_GE(got->size(), 6u);
    EXPECT_EQ(got->at(2), cmd(0x05)) << "an ERROR";
    EXPECT_EQ(got->at(3), "r1");
    EXPECT_EQ(got->at(4), "Forbidden");

    p->send({kEmpty, kMdpc, "mmi.status", ""});
    got = p->recv();
    ASSERT_TRUE(got);
    EXPECT_NE(got->back().find("Forbidden"), std::string::npos) << got->back();
}

TEST_F(BrokerCurveTest, OnlyASubscriberKeyReadsTheExplainTopic) {
    const auto watcher = key("watcher", "subscriber");
    const auto nosy = key("nosy", "client");
    const auto client = key("client", "client");
    const auto echo_worker = key("echo-worker", "worker:echo");
    start(curve_config());

    Peer allowed_sub(context_, endpoints_.pub_endpoint, &watcher, zmq::socket_type::sub);
    allowed_sub.socket().set(zmq::sockopt::subscribe, "explain.");
    Peer refused_sub(context_, endpoints_.pub_endpoint, &nosy, zmq::socket_type::sub);
    refused_sub.socket().set(zmq::sockopt::subscribe, "explain.");
    // PUB/SUB: what is published before a subscription reaches the broker is not seen.
    ASSERT_TRUE(test_support::wait_until(
        [&] { return status(client)["topic"].value("subscriptions", 0) >= 1; },
        test_support::kHangGuard, 20ms));

    auto worker = peer(&echo_worker);
    worker->send({kEmpty, kMdpw, cmd(0x01), "echo", "GBW01"});
    auto c = peer(&client);
    c->send({kEmpty, kGbc, cmd(0x01), "echo", "r1", "3000", "{}"});
    auto request = worker->recv();
    ASSERT_TRUE(request);
    const std::string token = request->at(3);
    worker->send({kEmpty, kMdpw, cmd(0x07), token, kEmpty,
                  "urn:uuid:0f0e0d0c-0b0a-4908-8706-050403020100", "0", "complete",
                  "{\"question\":\"secret\"}"});
    worker->send({kEmpty, kMdpw, cmd(0x03), token, kEmpty, "{}"});

    EXPECT_TRUE(allowed_sub.recv(3000ms)) << "the subscriber key sees the explain message";
    EXPECT_FALSE(refused_sub.recv(500ms)) << "a key without the role sees nothing";
}

TEST_F(BrokerCurveTest, AKeyWithoutTheCollectorRoleCannotAttachOrAck) {
    const auto client = key("client", "client");
    const auto collector = key("collector", "collector");
    start(curve_config());

    auto rogue = peer(&client);
    rogue->send({kEmpty, kGbe, cmd(0x01), "100"});
    auto got = rogue->recv();
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, (Frames{kEmpty, kGbe, cmd(0x05)})) << "ATTACH without the role: DETACH";
    rogue->send({kEmpty, kGbe, cmd(0x03), "1", "2", "3"});

    auto real = peer(&collector);
    real->send({kEmpty, kGbe, cmd(0x01), "100"});
    EXPECT_FALSE(real->recv(500ms)) << "the collector key attaches: no DETACH";
    const auto shown = status(client);
    EXPECT_EQ(shown["spool"]["collectors"], 1);
    EXPECT_GE(shown["security"]["messages_refused"].get<int>(), 2);
}

TEST_F(BrokerCurveTest, GarbageOnTheCurvePortIsSurvived) {
    const auto client = key("client", "client");
    start(curve_config());
    const auto colon = endpoints_.endpoint.rfind(':');
    const int port = std::stoi(endpoints_.endpoint.substr(colon + 1));
    std::mt19937 random{7};
    for (int round = 0; round < 20; ++round) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        ASSERT_GE(fd, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<std::uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
        std::string noise(round % 2 == 0 ? 64 : 4096, '\0');
        for (auto& c : noise) c = static_cast<char>(random());
        if (round % 4 == 1) {
            // A ZMTP 3 greeting that asks for the NULL mechanism, then noise.
            std::string greeting(64, '\0');
            greeting[0] = static_cast<char>(0xFF);
            greeting[9] = 0x7F;
            greeting[10] = 3;
            greeting.replace(12, 4, "NULL");
            noise = greeting + noise;
        }
        (void)::send(fd, noise.data(), noise.size(), MSG_NOSIGNAL);
        ::close(fd);
    }
    auto p = peer(&client);
    p->send({kEmpty, kMdpc, "mmi.service", "echo"});
    auto got = p->recv();
    ASSERT_TRUE(got) << "the broker still serves an allowed key";
    EXPECT_EQ(got->at(3), "404");
}

TEST_F(BrokerCurveTest, TheAllowListIsReadAgainWhenItChanges) {
    const auto client = key("client", "client");
    auto late = bus::generate_certificate("late", bus::parse_roles("client").value());
    ASSERT_TRUE(late.ok());
    const bus::CurveClientKeys late_keys{server_.public_key, late.value().public_key,
                                         late.value().secret_key};
    start(curve_config());

    auto before = peer(&late_keys);
    before->send({kEmpty, kMdpc, "mmi.service", "echo"});
    EXPECT_FALSE(before->recv(500ms));

    allow(late.value());
    std::optional<Frames> got;
    for (int attempt = 0; attempt < 20 && !got; ++attempt) {
        auto after = peer(&late_keys);
        after->send({kEmpty, kMdpc, "mmi.service", "echo"});
        got = after->recv(500ms);
    }
    ASSERT_TRUE(got) << "a certificate added to the folder is admitted without a restart";

    // Taken away again: a connection made before keeps no rights.
    auto connected = peer(&late_keys);
    connected->send({kEmpty, kMdpc, "mmi.service", "echo"});
    ASSERT_TRUE(connected->recv());
    fs::remove(dir_ / "allowed" / "late.key");
    std::optional<Frames> answer;
    for (int attempt = 0; attempt < 40; ++attempt) {
        connected->send({kEmpty, kMdpc, "mmi.service", "echo"});
        answer = connected->recv(1000ms);
        if (answer && answer->back().find("Forbidden") != std::string::npos) break;
        std::this_thread::sleep_for(50ms);
    }
    ASSERT_TRUE(answer);
    EXPECT_NE(answer->back().find("Forbidden"), std::string::npos) << answer->back();
}

TEST_F(BrokerCurveTest, PlainTcpOnANonLoopbackAddressNeedsInsecure) {
    BrokerConfig config;
    config.endpoint = "tcp://0.0.0.0:*";
    config.pub_endpoint = "tcp://127.0.0.1:*";
    config.linger = 0ms;
    {
        Broker refused{context_, config};
        auto bound = refused.bind();
        ASSERT_FALSE(bound.ok());
        EXPECT_NE(bound.error().message.find("--insecure"), std::string::npos)
            << bound.error().message;
    }
    config.insecure = true;
    Broker allowed{context_, config};
    EXPECT_TRUE(allowed.bind().ok());
}

TEST_F(BrokerCurveTest, CurveWithoutAnAllowFolderDoesNotStart) {
    BrokerConfig config = curve_config();
    config.allow_folder = (dir_ / "missing").string();
    Broker broker{context_, config};
    EXPECT_FALSE(broker.bind().ok());
    config.allow_folder.clear();
    Broker second{context_, config};
    EXPECT_FALSE(second.bind().ok());
}

}  // namespace
}  // namespace glassbox::broker
