// The shared fixture of the in-process broker tests (broker_*_test.cpp): real DEALER/REQ/SUB
// sockets on tcp://127.0.0.1:*, every receive with a deadline.
#pragma once

#include "broker/broker.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <initializer_list>
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
#include "tests/support/scratch_dir.hpp"
#include "tests/support/wait_until.hpp"
#include "tests/unit/broker/peer_frames.hpp"

// A named namespace, not an anonymous one: gtest requires every TEST_F of BrokerTest, in
// whichever file, to use the one fixture type.
namespace glassbox::broker::broker_test {

using namespace std::chrono_literals;
using Frames = std::vector<std::string>;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
using test_support::FileSizeLimit;

// How long a receive that expects a message waits for it: a hang guard, not a timing.
inline constexpr std::chrono::milliseconds kReceiveGuard{30'000};

inline const std::string kEmpty;
inline const std::string kMdpc = "MDPC01";
inline const std::string kGbc = "GBC01";
inline const std::string kMdpw = "MDPW01";
inline const std::string kGbe = "GBE01";
inline std::string cmd(char c) { return std::string(1, c); }

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

    void send(const Frames& frames) { test_frames::send_frames(socket_, frames); }

    void keepalive(Frames heartbeat) {
        heartbeat_ = std::move(heartbeat);
        skip_heartbeats_ = true;
    }
    void go_silent() { heartbeat_.reset(); }

    std::optional<Frames> recv(std::chrono::milliseconds timeout = kReceiveGuard) {
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
            Frames frames = test_frames::read_frames(socket_);
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
    static Frames expect_request(Peer& w, std::chrono::milliseconds timeout = kReceiveGuard) {
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

    // An extended worker of `service`, a client, and the REQUEST the client's request `id`
    // brought the worker: `auto [w, client, req] = served("echo", "r1");`.
    struct Served {
        std::unique_ptr<Peer> worker;
        std::unique_ptr<Peer> client;
        Frames request;
    };
    Served served(const std::string& service, const std::string& id, const std::string& body = "{}",
                  const std::string& deadline_ms = "0") {
        return served_by(worker(service, true), service, id, body, deadline_ms);
    }
    // The same with a worker of the test's own (a 7/MDP one, one with credit).
    Served served_by(std::unique_ptr<Peer> w, const std::string& service, const std::string& id,
                     const std::string& body = "{}", const std::string& deadline_ms = "0") {
        Served one{std::move(w), peer(), {}};
        request(*one.client, service, id, body, deadline_ms);
        one.request = expect_request(*one.worker);
        return one;
    }

    // A broker whose queues hold two requests under `overflow`: r1 held by its worker, then
    // r2, r3 and r4 sent behind it (one too many).
    Served overflowing_queue(OverflowPolicy overflow) {
        BrokerConfig config = test_config();
        config.max_queue = 2;
        config.overflow = overflow;
        start(config);
        Served one = served("echo", "r1");
        requests(*one.client, "echo", {"r2", "r3", "r4"});
        return one;
    }

    // GBC01 requests of the client, one a request id, each with body {}.
    static void requests(Peer& client, const std::string& service,
                         std::initializer_list<const char*> ids) {
        for (const char* id : ids) request(client, service, id, "{}");
    }

    static void reply(Peer& w, const std::string& token, const std::string& body) {
        w.send({kEmpty, kMdpw, cmd(0x03), token, kEmpty, body});
    }

    // [empty][GBC01][command][request-id]...
    static Frames expect_gb(Peer& client, char command, const std::string& id,
                            std::chrono::milliseconds timeout = kReceiveGuard) {
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

    // A PARTIAL of request `id`: its kind (data or explain) and body.
    static void expect_partial(Peer& client, const std::string& id, const std::string& kind,
                               const std::string& body) {
        const Frames got = expect_gb(client, 0x02, id);
        ASSERT_EQ(got.size(), 6u);
        EXPECT_EQ(got[4], kind);
        EXPECT_EQ(got[5], body);
    }

    // The FINAL of request `id` and its body.
    static void expect_final(Peer& client, const std::string& id, const std::string& body) {
        const Frames got = expect_gb(client, 0x03, id);
        ASSERT_EQ(got.size(), 5u);
        EXPECT_EQ(got[4], body);
    }

    // The meta frame of a REQUEST a GBC01 client's first attempt brought a GBW01 worker.
    static json expect_meta(const std::string& frame, const std::string& id,
                            const std::string& service) {
        json meta = json::parse(frame, nullptr, false);
        EXPECT_TRUE(meta.is_object()) << frame;
        if (!meta.is_object()) return json::object();
        EXPECT_EQ(meta["request_id"], id);
        EXPECT_EQ(meta["service"], service);
        EXPECT_EQ(meta["attempt"], 1);
        EXPECT_EQ(meta["client"], "GBC01");
        return meta;
    }

    // The next `count` messages of the client are PARTIALs of request `id`.
    static void expect_partials(Peer& client, const std::string& id, int count) {
        for (int i = 0; i < count; ++i) expect_gb(client, 0x02, id);
    }

    static void expect_error(Peer& client, const std::string& id, const std::string& type,
                             std::chrono::milliseconds timeout = kReceiveGuard) {
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

    // Polls mmi.status until `predicate` holds; the hang guard only ends a test that never
    // gets there.
    template <typename Predicate>
    bool eventually(Predicate predicate) {
        return test_support::wait_until([&] { return predicate(status()); },
                                        test_support::kHangGuard, 20ms);
    }

    // The entry of `service` in an mmi.status answer, or null.
    static json service_of(const json& shown, const std::string& service) {
        for (const auto& entry : shown.value("services", json::array())) {
            if (entry.value("name", "") == service) return entry;
        }
        return json{};
    }

    // Waits until the broker counts `workers` workers of `service` (a READY travels on its own
    // connection: a client cannot know it arrived before the broker says so).
    bool wait_for_workers(const std::string& service, int workers) {
        return eventually([&](const json& s) {
            const json entry = service_of(s, service);
            return entry.is_object() && entry.value("workers", -1) == workers;
        });
    }

    // Waits until `service` holds `queued` queued requests.
    bool wait_for_queued(const std::string& service, int queued) {
        return eventually([&](const json& s) {
            const json entry = service_of(s, service);
            return entry.is_object() && entry.value("queued", -1) == queued;
        });
    }

    // Waits until the broker's topic holds `subscriptions` subscriptions: a PUB/SUB subscriber
    // misses what is published before its subscription reaches the broker.
    bool wait_for_subscriptions(int subscriptions) {
        return eventually(
            [&](const json& s) { return s["topic"].value("subscriptions", -1) >= subscriptions; });
    }

    void explain(Peer& w, const std::string& token, const std::string& session,
                 const std::string& seq, const std::string& state, const std::string& body) {
        w.send({kEmpty, kMdpw, cmd(0x07), token, kEmpty, session, seq, state, body});
    }

    // A one-message trace (session seq 0, complete) and the reply {} that ends its request.
    void complete_trace(Peer& w, const std::string& token, const std::string& session,
                        const std::string& body) {
        explain(w, token, session, "0", "complete", body);
        reply(w, token, "{}");
    }

    zmq::context_t context_;
    PeerSet peers_;
    std::unique_ptr<Broker> broker_;
    BoundEndpoints endpoints_;
    std::jthread thread_;
};

// A spool `name` in the test process's scratch folder (removed when the process exits).
inline std::string temp_spool_path(const char* name) {
    const auto path = test_support::scratch_dir("gb-broker") / name;
    std::filesystem::remove_all(path);  // a spool is a directory: a repeated test starts afresh
    return path.string();
}

}  // namespace glassbox::broker::broker_test
