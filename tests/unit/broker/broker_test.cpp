// In-process broker tests: real DEALER/REQ/SUB sockets on tcp://127.0.0.1:*, every receive with a deadline.
#include "broker/broker.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "base/utf8.hpp"
#include "bus/frame_codec.hpp"
#include "schema/messages.hpp"
#include "tests/support/file_size_limit.hpp"

namespace glassbox::broker {
namespace {

using namespace std::chrono_literals;
using Frames = std::vector<std::string>;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
using test_support::FileSizeLimit;

const std::string kEmpty;
const std::string kMdpc = "MDPC01";
const std::string kGbc = "GBC01";
const std::string kMdpw = "MDPW01";
const std::string kGbe = "GBE01";
std::string cmd(char c) { return std::string(1, c); }

class Peer;
// The peers of one test. All run on the test thread, so whichever waits in recv() sends the
// heartbeats of all of them: a live worker stays live while the test waits on its client.
using PeerSet = std::set<Peer*>;

// A socket speaking to the broker. A peer with a heartbeat sends it every 50 ms while any peer
// of its set waits in recv(), and skips the broker's heartbeats, like a real worker or collector.
class Peer {
public:
    Peer(zmq::context_t& context, const std::string& endpoint,
         zmq::socket_type type = zmq::socket_type::dealer, PeerSet* set = nullptr)
        : socket_(context, type), dealer_(type == zmq::socket_type::dealer), set_(set) {
        socket_.set(zmq::sockopt::linger, 0);
        socket_.connect(endpoint);
        if (set_ != nullptr) set_->insert(this);
    }
    ~Peer() {
        if (set_ != nullptr) set_->erase(this);
    }
    Peer(const Peer&) = delete;
    Peer& operator=(const Peer&) = delete;

    void send(const Frames& frames) {
        for (std::size_t i = 0; i < frames.size(); ++i) {
            socket_.send(zmq::buffer(frames[i]),
                         i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
        }
    }

    void keepalive(Frames heartbeat) {
        heartbeat_ = std::move(heartbeat);
        skip_heartbeats_ = true;
    }
    void go_silent() { heartbeat_.reset(); }

    std::optional<Frames> recv(std::chrono::milliseconds timeout = 3000ms) {
        const auto deadline = Clock::now() + timeout;
        while (true) {
            const auto now = Clock::now();
            beat_all(now);
            if (now >= deadline) return std::nullopt;
            auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
            wait = std::min(wait, std::chrono::milliseconds{50});
            zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
            zmq::poll(&item, 1, std::max(wait, std::chrono::milliseconds{1}));
            if ((item.revents & ZMQ_POLLIN) == 0) continue;
            Frames frames;
            bool more = true;
            while (more) {
                zmq::message_t frame;
                (void)socket_.recv(frame);
                frames.emplace_back(frame.to_string());
                more = frame.more();
            }
            // A packed message (protocol.md §1.4) is handed over as the classic frames it
            // carries; last_packed() and last_wire_frames() tell how it came.
            // (DEALER peers only: a REQ socket strips the empty delimiter, a SUB's first frame
            // is the topic.)
            last_wire_frames_ = frames.size();
            last_packed_ = dealer_ && !frames.empty() && glassbox::bus::is_packed(frames[0]);
            if (last_packed_) {
                if (auto unpacked = glassbox::bus::unpack_frames(frames); !unpacked) {
                    ADD_FAILURE() << "a malformed packed message: " << unpacked.error().message;
                }
            }
            const bool is_heartbeat = frames.size() == 3 && frames[0].empty() &&
                                      frames[2] == cmd(0x04) &&
                                      (frames[1] == kMdpw || frames[1] == kGbe);
            if (skip_heartbeats_ && is_heartbeat) continue;
            return frames;
        }
    }

    // Nothing (but heartbeats) arrives within `quiet`.
    bool silent_for(std::chrono::milliseconds quiet) { return !recv(quiet).has_value(); }
    bool last_packed() const { return last_packed_; }
    std::size_t last_wire_frames() const { return last_wire_frames_; }

    zmq::socket_t& socket() { return socket_; }

private:
    void beat(Clock::time_point now) {
        if (heartbeat_ && now >= next_beat_) {
            send(*heartbeat_);
            next_beat_ = now + 50ms;
        }
    }
    void beat_all(Clock::time_point now) {
        if (set_ == nullptr) {
            beat(now);
            return;
        }
        for (Peer* peer : *set_) peer->beat(now);
    }

    zmq::socket_t socket_;
    bool dealer_;
    PeerSet* set_;
    std::optional<Frames> heartbeat_;
    Clock::time_point next_beat_{};
    bool skip_heartbeats_ = false;  // stays on after go_silent(): a dead peer still gets them
    bool last_packed_ = false;
    std::size_t last_wire_frames_ = 0;
};

class BrokerTest : public ::testing::Test {
protected:
    static BrokerConfig test_config() {
        BrokerConfig config;
        config.endpoint = "tcp://127.0.0.1:*";
        config.pub_endpoint = "tcp://127.0.0.1:*";
        config.heartbeat = 100ms;
        config.liveness = 10;  // 1 s: test peers heartbeat only while one of them waits in recv()
        config.unknown_service_wait = 300ms;
        config.default_deadline = 5000ms;
        config.poll_interval = 20ms;
        config.linger = 0ms;
        return config;
    }

    void start(BrokerConfig config = test_config()) {
        broker_ = std::make_unique<Broker>(context_, std::move(config));
        auto bound = broker_->bind();
        ASSERT_TRUE(bound.ok()) << bound.error().describe();
        endpoints_ = bound.value();
        thread_ = std::jthread([this](std::stop_token token) { broker_->run(token); });
    }

    void stop_broker() {
        if (thread_.joinable()) {
            thread_.request_stop();
            thread_.join();
        }
        broker_.reset();
    }

    void TearDown() override { stop_broker(); }

    std::unique_ptr<Peer> peer(zmq::socket_type type = zmq::socket_type::dealer) {
        return std::make_unique<Peer>(context_, endpoints_.endpoint, type, &peers_);
    }

    // A GBE01 collector, ATTACHed with `window`, that heartbeats while it waits.
    std::unique_ptr<Peer> collector_peer(const std::string& window) {
        auto collector = peer();
        collector->send({kEmpty, kGbe, cmd(0x01), window});
        collector->keepalive({kEmpty, kGbe, cmd(0x04)});
        return collector;
    }

    std::unique_ptr<Peer> worker(const std::string& service, bool extended) {
        auto w = peer();
        Frames ready{kEmpty, kMdpw, cmd(0x01), service};
        if (extended) ready.push_back("GBW01");
        w->send(ready);
        w->keepalive({kEmpty, kMdpw, cmd(0x04)});
        return w;
    }

    // A worker that declares the extension (GBW01 unless `capability` names GBW02 or GBW03)
    // and a credit (§5.1).
    std::unique_ptr<Peer> credit_worker(const std::string& service, const std::string& credit,
                                        const std::string& capability = "GBW01") {
        auto w = peer();
        w->send({kEmpty, kMdpw, cmd(0x01), service, capability, credit});
        w->keepalive({kEmpty, kMdpw, cmd(0x04)});
        return w;
    }

    static void request(Peer& client, const std::string& service, const std::string& id,
                        const std::string& body, const std::string& deadline_ms = "0") {
        client.send({kEmpty, kGbc, cmd(0x01), service, id, deadline_ms, body});
    }

    // The next REQUEST the worker gets: [empty][MDPW01][0x02][token][empty][body...].
    // On a failed expectation the frames are padded to 7, so callers may index them: the test
    // fails instead of reading out of range (that was the rare segfault under load).
    static Frames expect_request(Peer& w, std::chrono::milliseconds timeout = 3000ms) {
        auto got = w.recv(timeout);
        EXPECT_TRUE(got.has_value()) << "worker got no REQUEST";
        Frames frames = got.value_or(Frames{});
        EXPECT_GE(frames.size(), 6u);
        if (frames.size() < 7) frames.resize(7);
        EXPECT_EQ(frames[1], kMdpw);
        EXPECT_EQ(frames[2], cmd(0x02));
        EXPECT_EQ(frames[4], kEmpty);
        return frames;
    }

    static void reply(Peer& w, const std::string& token, const std::string& body) {
        w.send({kEmpty, kMdpw, cmd(0x03), token, kEmpty, body});
    }

    // [empty][GBC01][command][request-id]...
    static Frames expect_gb(Peer& client, char command, const std::string& id,
                            std::chrono::milliseconds timeout = 3000ms) {
        auto got = client.recv(timeout);
        EXPECT_TRUE(got.has_value()) << "client got nothing for " << id;
        if (!got) return Frames(6);
        EXPECT_GE(got->size(), 5u);
        if (got->size() < 5) return Frames(6);
        EXPECT_EQ((*got)[1], kGbc);
        EXPECT_EQ((*got)[2], cmd(command)) << "frames: " << got->size() << " last: " << got->back();
        EXPECT_EQ((*got)[3], id);
        return *got;
    }

    static void expect_error(Peer& client, const std::string& id, const std::string& type,
                             std::chrono::milliseconds timeout = 3000ms) {
        const Frames got = expect_gb(client, 0x05, id, timeout);
        ASSERT_EQ(got.size(), 6u);
        EXPECT_EQ(got[4], type) << got[5];
    }

    json status() {
        auto client = peer();
        request(*client, "mmi.status", "status", "{}");
        const Frames got = expect_gb(*client, 0x03, "status");
        if (got.size() != 5) return json{};
        return json::parse(got[4]);
    }

    // Polls mmi.status until `predicate` holds or 3 s pass.
    template <typename Predicate>
    bool eventually(Predicate predicate) {
        const auto deadline = Clock::now() + 3000ms;
        while (Clock::now() < deadline) {
            if (predicate(status())) return true;
            std::this_thread::sleep_for(20ms);
        }
        return false;
    }

    void explain(Peer& w, const std::string& token, const std::string& session,
                 const std::string& seq, const std::string& state, const std::string& body) {
        w.send({kEmpty, kMdpw, cmd(0x07), token, kEmpty, session, seq, state, body});
    }

    zmq::context_t context_;
    PeerSet peers_;
    std::unique_ptr<Broker> broker_;
    BoundEndpoints endpoints_;
    std::jthread thread_;
};

std::string temp_spool_path(const char* name) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("gb-broker-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto path = dir / name;
    std::filesystem::remove_all(path);  // a spool is a directory: a repeated test starts afresh
    return path.string();
}

// ---------------------------------------------------------------- lifecycle

TEST_F(BrokerTest, BindResolvesWildcardPortsAndStopIsPrompt) {
    start();
    EXPECT_EQ(endpoints_.endpoint.find('*'), std::string::npos) << endpoints_.endpoint;
    EXPECT_EQ(endpoints_.pub_endpoint.find('*'), std::string::npos);
    EXPECT_EQ(endpoints_.endpoint.rfind("tcp://127.0.0.1:", 0), 0u);
    const auto before = Clock::now();
    broker_->stop();
    thread_.join();
    EXPECT_LT(Clock::now() - before, 1000ms);
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
    std::this_thread::sleep_for(100ms);  // the READY travels on another connection
    auto client = peer(zmq::socket_type::req);
    client->send({kMdpc, "mmi.service", "echo"});
    EXPECT_EQ(client->recv(), (Frames{kMdpc, "mmi.service", "200"}));
    client->send({kMdpc, "mmi.service", "nosuch"});
    EXPECT_EQ(client->recv(), (Frames{kMdpc, "mmi.service", "404"}));
    client->send({kMdpc, "mmi.nope", "x"});
    EXPECT_EQ(client->recv(), (Frames{kMdpc, "mmi.nope", "501"}));

    auto gb = peer();
    request(*gb, "mmi.service", "m1", "\"echo\"");
    const Frames final_frames = expect_gb(*gb, 0x03, "m1");
    ASSERT_EQ(final_frames.size(), 5u);
    EXPECT_EQ(final_frames[4], "200");
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

// ---------------------------------------------------------------- GBC01 + GBW01

TEST_F(BrokerTest, StreamingRepliesArriveInOrderThenFinal) {
    start();
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{\"q\":1}", "4000");
    const Frames req = expect_request(*w);
    ASSERT_EQ(req.size(), 7u);
    const json meta = json::parse(req[5]);
    EXPECT_EQ(meta["request_id"], "r1");
    EXPECT_EQ(meta["service"], "echo");
    EXPECT_EQ(meta["attempt"], 1);
    EXPECT_EQ(meta["client"], "GBC01");
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
        const Frames partial = expect_gb(*client, 0x02, "r1");
        ASSERT_EQ(partial.size(), 6u);
        EXPECT_EQ(partial[4], "data");
        EXPECT_EQ(partial[5], "\"chunk" + std::to_string(i) + "\"");
    }
    const Frames explained = expect_gb(*client, 0x02, "r1");
    ASSERT_EQ(explained.size(), 6u);
    EXPECT_EQ(explained[4], "explain");
    EXPECT_EQ(explained[5], "{\"seq\":0}");
    const Frames final_frames = expect_gb(*client, 0x03, "r1");
    ASSERT_EQ(final_frames.size(), 5u);
    EXPECT_EQ(final_frames[4], "{\"done\":true}");
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
    const json meta = json::parse(req[4]);
    EXPECT_EQ(meta["request_id"], "r1");
    EXPECT_EQ(meta["service"], "echo");
    EXPECT_EQ(meta["attempt"], 1);
    EXPECT_EQ(meta["client"], "GBC01");
    EXPECT_EQ(req[5], "{\"q\":1}");
    const std::string token = req[3];
    w->send({kEmpty, kMdpw, cmd(0x06), token, "\"chunk\""});
    // The classic empty frame from a GBW02 worker makes a PARTIAL of two frames: dropped.
    w->send({kEmpty, kMdpw, cmd(0x06), token, kEmpty, "\"dropped\""});
    w->send({kEmpty, kMdpw, cmd(0x07), token, "urn:q:1", "0", "complete", "{\"seq\":0}"});
    w->send({kEmpty, kMdpw, cmd(0x03), token, "{\"done\":true}"});
    const Frames partial = expect_gb(*client, 0x02, "r1");
    ASSERT_EQ(partial.size(), 6u);
    EXPECT_EQ(partial[4], "data");
    EXPECT_EQ(partial[5], "\"chunk\"");
    const Frames explained = expect_gb(*client, 0x02, "r1");
    ASSERT_EQ(explained.size(), 6u);
    EXPECT_EQ(explained[4], "explain");
    EXPECT_EQ(explained[5], "{\"seq\":0}");
    const Frames final_frames = expect_gb(*client, 0x03, "r1");
    ASSERT_EQ(final_frames.size(), 5u);
    EXPECT_EQ(final_frames[4], "{\"done\":true}");
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
        w->send(packed({kEmpty, kMdpw, cmd(0x07), token, "urn:q:" + id, "0", "complete", "{\"seq\":0}"}));
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
    bad->send({"\x02junk", "x"});                                   // unknown version
    bad->send({std::string("\x01\x05GBC01", 7), "a", "b"});         // three frames
    bad->send({std::string("\x01\x09GBC01", 7), "x"});              // a field past its end
    bad->send({std::string("\x01", 1), "x"});                       // no field
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
    auto w1 = worker("echo", true);
    auto a = peer();
    request(*a, "echo", "ra", "{}", "4000");
    const Frames req_a = expect_request(*w1);
    auto w2 = worker("echo", true);
    auto b = peer();
    request(*b, "echo", "rb", "{}", "4000");
    const Frames req_b = expect_request(*w2);
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
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "not json");
    const Frames req = expect_request(*w);
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
    const auto before = Clock::now();
    request(*client, "nosuch", "r1", "{}", "10000");
    expect_error(*client, "r1", "UnknownService");
    const auto waited = Clock::now() - before;
    EXPECT_GE(waited, 250ms);
    EXPECT_LT(waited, 2000ms);
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
    start();
    auto client = peer();
    request(*client, "late", "r1", "{}");
    std::this_thread::sleep_for(50ms);
    auto w = worker("late", false);
    const Frames req = expect_request(*w);
    reply(*w, req[3], "\"ok\"");
    EXPECT_EQ(expect_gb(*client, 0x03, "r1").back(), "\"ok\"");
}

TEST_F(BrokerTest, DeadlineExceededCancelsTheWorkerWhichThenServesAgain) {
    start();
    auto w = worker("slow", true);
    auto client = peer();
    const auto before = Clock::now();
    request(*client, "slow", "r1", "{}", "300");
    const Frames req = expect_request(*w);
    expect_error(*client, "r1", "DeadlineExceeded");
    EXPECT_GE(Clock::now() - before, 250ms);
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
    std::this_thread::sleep_for(100ms);
    w->send({kEmpty, kMdpw, cmd(0x05)});
    std::this_thread::sleep_for(100ms);
    auto client = peer();
    request(*client, "gone", "r1", "{}", "400");
    expect_error(*client, "r1", "ServiceUnavailable");
}

TEST_F(BrokerTest, CancelEndsQueuedAndRunningRequests) {
    start();
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "running", "{}");
    const Frames req = expect_request(*w);
    request(*client, "echo", "queued", "{}");
    std::this_thread::sleep_for(50ms);
    client->send({kEmpty, kGbc, cmd(0x04), "queued"});
    expect_error(*client, "queued", "Cancelled");
    client->send({kEmpty, kGbc, cmd(0x04), "running"});
    expect_error(*client, "running", "Cancelled");
    EXPECT_EQ(w->recv(), (Frames{kEmpty, kMdpw, cmd(0x09), req[3]}));
    client->send({kEmpty, kGbc, cmd(0x04), "never-sent"});  // ignored
    EXPECT_TRUE(client->silent_for(200ms));
}

TEST_F(BrokerTest, FullQueueRejectsTheNewRequest) {
    BrokerConfig config = test_config();
    config.max_queue = 2;
    start(config);
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames first = expect_request(*w);
    request(*client, "echo", "r2", "{}");
    request(*client, "echo", "r3", "{}");
    request(*client, "echo", "r4", "{}");
    expect_error(*client, "r4", "QueueFull");
    reply(*w, first[3], "1");
    expect_gb(*client, 0x03, "r1");
    EXPECT_EQ(json::parse(expect_request(*w)[5])["request_id"], "r2");
}

TEST_F(BrokerTest, FullQueueDropOldestEvictsTheOldestQueued) {
    BrokerConfig config = test_config();
    config.max_queue = 2;
    config.overflow = OverflowPolicy::kDropOldest;
    start(config);
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames first = expect_request(*w);
    request(*client, "echo", "r2", "{}");
    request(*client, "echo", "r3", "{}");
    request(*client, "echo", "r4", "{}");
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

// ---------------------------------------------------------------- worker failure

TEST_F(BrokerTest, WorkerExpiringBeforeReplyIsReplacedByAnother) {
    start();
    auto first = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{\"n\":1}");
    const Frames req = expect_request(*first);
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
    std::this_thread::sleep_for(150ms);
    auto w = worker("rag", true);
    auto client = peer();
    request(*client, "rag", "r1", "{}");
    const Frames req = expect_request(*w);
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
    for (const char* id : {"r4", "r1", "r5", "r3"}) reply(*w, token_of[id], "\"" + std::string{id} + "\"");
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
    const auto deadline = Clock::now() + 4000ms;
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
    for (const char* id : {"r1", "r3", "r4"}) EXPECT_EQ(expect_gb(*client, 0x03, id).back(), "\"ok\"");
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

// ---------------------------------------------------------------- bad input

TEST_F(BrokerTest, OversizeMessagesGetMessageTooLarge) {
    BrokerConfig config = test_config();
    config.max_message_bytes = 1000;
    start(config);
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "big", "\"" + std::string(2000, 'x') + "\"");
    expect_error(*client, "big", "MessageTooLarge");
    client->send({kEmpty, kMdpc, "echo", std::string(2000, 'y')});
    auto got = client->recv();
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 4u);
    EXPECT_EQ(json::parse((*got)[3])["error"]["type"], "MessageTooLarge");
    // A worker's oversize reply ends the request the same way; the broker keeps serving.
    request(*client, "echo", "r2", "{}");
    const Frames req = expect_request(*w);
    reply(*w, req[3], std::string(2000, 'z'));
    expect_error(*client, "r2", "MessageTooLarge");
    request(*client, "echo", "r3", "{}");
    const Frames again = expect_request(*w);
    reply(*w, again[3], "\"small\"");
    EXPECT_EQ(expect_gb(*client, 0x03, "r3").back(), "\"small\"");
}

TEST_F(BrokerTest, GarbageIsDroppedOrAnsweredAndTheBrokerKeepsServing) {
    start();
    auto w = worker("echo", false);
    auto junk = peer();
    junk->send({"no delimiter"});
    junk->send({kEmpty, "MDPC02", "echo", "x"});
    junk->send({kEmpty});
    junk->send({kEmpty, kMdpc});  // no service frame
    EXPECT_TRUE(junk->silent_for(200ms));

    junk->send({kEmpty, kGbc, cmd(0x0F), "x"});  // unknown command
    auto unknown = junk->recv();
    ASSERT_TRUE(unknown);
    EXPECT_EQ(*unknown, (Frames{kEmpty, kGbc, cmd(0x05), kEmpty, "ProtocolError",
                                "unknown GBC01 command 15"}));
    junk->send({kEmpty, kGbc, cmd(0x01), "echo"});  // too short for a request id
    auto short_request = junk->recv();
    ASSERT_TRUE(short_request);
    ASSERT_EQ(short_request->size(), 6u);
    EXPECT_EQ((*short_request)[3], kEmpty);
    EXPECT_EQ((*short_request)[4], "ProtocolError");
    junk->send({kEmpty, kGbc, cmd(0x01), "echo", "r9", "soon", "{}"});  // bad deadline
    expect_error(*junk, "r9", "ProtocolError");
    junk->send({kEmpty, kGbc, cmd(0x01), "bad service", "r10", "0", "{}"});
    expect_error(*junk, "r10", "ProtocolError");
    Frames too_many{kEmpty, kGbc, cmd(0x01), "echo", "r11", "0"};
    for (int i = 0; i < 70; ++i) too_many.push_back("{}");
    junk->send(too_many);
    expect_error(*junk, "r11", "ProtocolError");

    // Exactly 64 frames is allowed: an MDPC01 request with 61 body frames.
    Frames at_limit{kEmpty, kMdpc, "echo"};
    for (int i = 0; i < 61; ++i) at_limit.push_back(std::to_string(i));
    junk->send(at_limit);
    const Frames big = expect_request(*w);
    ASSERT_EQ(big.size(), 5u + 61u);
    reply(*w, big[3], "\"61\"");
    EXPECT_EQ(junk->recv(), (Frames{kEmpty, kMdpc, "echo", "\"61\""}));

    auto client = peer();
    request(*client, "echo", "ok", "{}");
    const Frames req = expect_request(*w);
    reply(*w, req[3], "\"fine\"");
    EXPECT_EQ(expect_gb(*client, 0x03, "ok").back(), "\"fine\"");
    const json s = status();
    EXPECT_GE(s["counters"]["dropped_frames"].get<int>(), 4);
    EXPECT_GE(s["counters"]["errors"]["ProtocolError"].get<int>(), 5);
}

TEST_F(BrokerTest, WorkerProtocolErrorDisconnectsAndRequeues) {
    start();
    auto bad = worker("echo", false);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    expect_request(*bad);
    bad->go_silent();
    bad->send({kEmpty, kMdpw, cmd(0x07), "1", kEmpty, "s", "0", "open", "{}"});  // not GBW01
    auto got = bad->recv();
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, (Frames{kEmpty, kMdpw, cmd(0x05)}));
    auto good = worker("echo", false);
    const Frames retry = expect_request(*good);
    reply(*good, retry[3], "\"ok\"");
    expect_gb(*client, 0x03, "r1");
}

TEST_F(BrokerTest, HeartbeatWithUnknownRequestIdGetsBrokerRestarted) {
    start();
    auto w = worker("echo", false);
    auto client = peer();
    request(*client, "echo", "live", "{}");
    const Frames req = expect_request(*w);
    client->send({kEmpty, kGbc, cmd(0x06), "live", "lost"});
    expect_error(*client, "lost", "BrokerRestarted");
    EXPECT_TRUE(client->silent_for(200ms)) << "a known request id is not answered";
    reply(*w, req[3], "\"ok\"");
    expect_gb(*client, 0x03, "live");
}

TEST_F(BrokerTest, DuplicateRequestIdIsRefused) {
    start();
    auto w = worker("echo", false);
    auto client = peer();
    request(*client, "echo", "dup", "{}");
    const Frames req = expect_request(*w);
    request(*client, "echo", "dup", "{}");
    expect_error(*client, "dup", "ProtocolError");
    reply(*w, req[3], "\"ok\"");
    expect_gb(*client, 0x03, "dup");
}

TEST_F(BrokerTest, VanishedClientLeavesNothingBehind) {
    start();
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames first = expect_request(*w);
    request(*client, "echo", "r2", "{}");
    std::this_thread::sleep_for(50ms);
    client.reset();  // the client process is gone
    std::this_thread::sleep_for(100ms);
    reply(*w, first[3], "\"nobody listens\"");
    // r2 may reach the worker before the broker learns the client is gone; then it is cancelled.
    auto next = w->recv(500ms);
    if (next && (*next)[2] == cmd(0x02)) {
        auto cancel = w->recv();
        ASSERT_TRUE(cancel);
        EXPECT_EQ(*cancel, (Frames{kEmpty, kMdpw, cmd(0x09), (*next)[3]}));
        reply(*w, (*next)[3], "\"discarded\"");
    }
    EXPECT_TRUE(eventually([](const json& s) {
        return s["counters"]["in_flight"] == 0 && s["services"][0]["queued"] == 0 &&
               s["services"][0]["idle"] == 1;
    }));
    EXPECT_GE(status()["counters"]["send_failures"].get<int>(), 1);
}

// ---------------------------------------------------------------- explain delivery

TEST_F(BrokerTest, ExplainIsPublishedOnTheTopic) {
    start();
    auto sub = std::make_unique<Peer>(context_, endpoints_.pub_endpoint, zmq::socket_type::sub);
    sub->socket().set(zmq::sockopt::subscribe, "explain.echo");
    std::this_thread::sleep_for(150ms);
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
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
    explain(*w, req[3], "urn:q:1", "minus-one", "open", "{}");
    explain(*w, req[3], "urn:q:1", "0", "finished", "{}");
    reply(*w, req[3], "\"ok\"");
    EXPECT_EQ(expect_gb(*client, 0x03, "r1").back(), "\"ok\"");
    EXPECT_EQ(status()["spool"]["messages"], 0);
}

TEST_F(BrokerTest, CollectorGetsDeliveriesAndAckRemovesThemFromTheSpool) {
    start();
    auto collector = collector_peer("10");
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
    explain(*w, req[3], "urn:q:1", "0", "open", "{\"a\":0}");
    explain(*w, req[3], "urn:q:1", "1", "complete", "{\"a\":1}");
    reply(*w, req[3], "{}");
    auto d1 = collector->recv();
    auto d2 = collector->recv();
    ASSERT_TRUE(d1 && d2);
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

// Deliveries go out in batches at most every delivery_interval: an EXPLAIN spooled right
// after a delivery waits for the next turn (it is forwarded to the client at once all the same).
TEST_F(BrokerTest, DeliveriesWaitForTheirIntervalButAnswersDoNot) {
    BrokerConfig config = test_config();
    config.delivery_interval = 400ms;
    start(config);
    auto collector = collector_peer("10");
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
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
    EXPECT_GE(std::chrono::steady_clock::now() - delivered, 350ms);
}

TEST_F(BrokerTest, CollectorWindowBoundsUnacknowledgedDeliveries) {
    start();
    auto collector = collector_peer("2");
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
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
    auto first = peer();
    first->send({kEmpty, kGbe, cmd(0x01), "10"});
    first->keepalive({kEmpty, kGbe, cmd(0x04)});
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
    explain(*w, req[3], "urn:q:1", "0", "complete", "{\"a\":0}");
    reply(*w, req[3], "{}");
    auto delivered = first->recv();
    ASSERT_TRUE(delivered);
    ASSERT_EQ(delivered->size(), 9u);
    first->go_silent();  // crashes before ACK
    auto second = peer();
    second->send({kEmpty, kGbe, cmd(0x01), "10"});
    second->keepalive({kEmpty, kGbe, cmd(0x04)});
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

    auto first = peer();
    first->send({kEmpty, kGbe, cmd(0x01), "10"});
    first->keepalive({kEmpty, kGbe, cmd(0x04)});
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
    explain(*w, req[3], "urn:q:2", "0", "complete", "{}");
    reply(*w, req[3], "{}");
    auto delivered = first->recv();
    ASSERT_TRUE(delivered);
    first->send({kEmpty, kGbe, cmd(0x05)});
    first->go_silent();
    auto second = peer();
    second->send({kEmpty, kGbe, cmd(0x01), "10"});
    second->keepalive({kEmpty, kGbe, cmd(0x04)});
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
        auto w = worker("echo", true);
        auto client = peer();
        request(*client, "echo", "r1", "{}");
        const Frames req = expect_request(*w);
        explain(*w, req[3], "urn:q:9", "0", "open", "{\"kept\":0}");
        explain(*w, req[3], "urn:q:9", "1", "complete", "{\"kept\":1}");
        reply(*w, req[3], "{}");
        expect_gb(*client, 0x02, "r1");
        expect_gb(*client, 0x02, "r1");
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
    auto again = peer();
    again->send({kEmpty, kGbe, cmd(0x01), "10"});
    again->keepalive({kEmpty, kGbe, cmd(0x04)});
    auto d = again->recv();
    ASSERT_TRUE(d);
    EXPECT_EQ((*d)[3], "2");
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r2", "{}");
    const Frames req = expect_request(*w);
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
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
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
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
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
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
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
    explain(*w, again[3], "urn:q:after", "0", "complete", "{}");
    reply(*w, again[3], "{}");
    expect_gb(*client, 0x02, "r2");
    expect_gb(*client, 0x03, "r2");
}

TEST_F(BrokerTest, SpoolWriteFailureWithDropNewestCountsAndMarksTheTrace) {
    BrokerConfig config = test_config();
    config.spool_path = temp_spool_path("unwritable-drop");
    config.spool_policy = SpoolPolicy::kDropNewest;
    start(config);
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
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
    config.restart_grace = 3000ms;
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
    expect_error(*client, "r2", "UnknownService");  // after unknown_service_wait (300 ms)
    std::this_thread::sleep_for(500ms);
    auto w = worker("echo", true);
    const Frames req = expect_request(*w);
    reply(*w, req[3], "{\"served\":true}");
    const Frames final_reply = expect_gb(*client, 0x03, "r1");
    ASSERT_EQ(final_reply.size(), 5u);
    EXPECT_EQ(final_reply[4], "{\"served\":true}");
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
    expect_gb(*client, 0x02, "victim");
    expect_gb(*client, 0x02, "victim");
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
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
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
    explain(*callee, inner[3], "urn:q:inner", "0", "complete", "{\"parent_uri\":\"urn:q:outer\"}");
    reply(*callee, inner[3], "{}");
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
    explain(*next, second[3], "urn:q:retried", "0", "complete", "{\"t\":0}");
    reply(*next, second[3], "{}");
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
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
    explain(*w, req[3], "urn:q:1", "0", "open", "{}");
    explain(*w, req[3], "urn:q:1", "1", "open", "{}");
    explain(*w, req[3], "urn:q:1", "2", "complete", "{}");
    reply(*w, req[3], "{}");
    expect_gb(*client, 0x02, "r1");
    expect_gb(*client, 0x02, "r1");
    expect_gb(*client, 0x02, "r1");
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
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
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
    const auto deadline = Clock::now() + 5000ms;
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
    request(*client, "echo", "r1", "{}");
    request(*client, "echo", "r2", "{}");
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
    auto w = worker("echo", true);
    auto client = peer();
    request(*client, "echo", "r1", "{}");
    const Frames req = expect_request(*w);
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
}  // namespace glassbox::broker
