// Abuse of the broker by one peer, with real processes: a huge explain subscription, a client
// flooding a service queue. The broker stays small and serves everyone else (issue 16).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/cluster.hpp"
#include "tests/support/echo_stream.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::integration {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Resident set of a process in KiB (VmRSS of /proc/<pid>/status); 0 if unreadable.
long resident_kib(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return 0;
}

// A subscriber speaking ZMTP 3.0 over a plain TCP socket (RFC 23), so the test process holds
// no subscription trie of its own: greeting, READY as a SUB, then `count` subscriptions of
// `topic_bytes` bytes each, distinct from their first byte on (the index, then 'e's), and the
// connection is held open for `hold` (a closed one takes what is unread with it). Returns how
// many bytes the broker took before closing the connection (all if it never did).
std::size_t send_raw_subscriptions(const std::string& endpoint, std::size_t count,
                                   std::size_t topic_bytes) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    const auto port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    std::size_t sent = 0;
    auto write_all = [&](std::string_view bytes) {
        std::size_t done = 0;
        while (done < bytes.size()) {
            const auto n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
            if (n <= 0) return false;
            done += static_cast<std::size_t>(n);
            sent += static_cast<std::size_t>(n);
        }
        return true;
    };
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
        std::string greeting(64, '\0');
        greeting[0] = '\xFF';
        greeting[9] = '\x7F';
        greeting[10] = 3;  // version 3.0
        greeting.replace(12, 4, "NULL");
        char peer[64];
        std::size_t got = 0;
        bool ok = write_all(greeting);
        while (ok && got < sizeof peer) {
            const auto n = ::recv(fd, peer + got, sizeof peer - got, 0);
            if (n <= 0)
                ok = false;
            else
                got += static_cast<std::size_t>(n);
        }
        // READY: a short command frame, one property Socket-Type = SUB.
        std::string ready = "\x05READY\x0BSocket-Type";
        ready += std::string{"\0\0\0\x03", 4} + "SUB";
        ok = ok && write_all(std::string{"\x04"} + static_cast<char>(ready.size()) + ready);
        // The broker's READY (a command frame, short or long) ends the handshake: messages sent
        // before it are a protocol error once the broker asks its ZAP handler first.
        auto read_exactly = [&](char* into, std::size_t size) {
            for (std::size_t have = 0; have < size;) {
                const auto n = ::recv(fd, into + have, size - have, 0);
                if (n <= 0) return false;
                have += static_cast<std::size_t>(n);
            }
            return true;
        };
        unsigned char flags = 0;
        ok = ok && read_exactly(reinterpret_cast<char*>(&flags), 1);
        std::uint64_t length = 0;
        const std::size_t length_bytes = (flags & 0x02) != 0 ? 8 : 1;
        for (std::size_t b = 0; ok && b < length_bytes; ++b) {
            unsigned char byte = 0;
            ok = read_exactly(reinterpret_cast<char*>(&byte), 1);
            length = (length << 8) | byte;
        }
        std::string command(ok && length < 4096 ? length : 0, '\0');
        ok = ok && length < 4096 && read_exactly(command.data(), command.size()) &&
             command.rfind("\x05READY", 0) == 0;
        // Each subscription: a long message frame [0x01][topic], written in 1 MiB pieces.
        const std::string filler(1 << 20, 'e');
        for (std::size_t i = 0; ok && i < count; ++i) {
            const std::string index = std::to_string(i);
            std::string header(9, '\0');
            header[0] = '\x02';
            std::uint64_t size = std::max(topic_bytes, index.size()) + 1;
            for (std::size_t b = 8; b >= 1; --b, size >>= 8) {
                header[b] = static_cast<char>(size & 0xFF);
            }
            header += '\x01';
            header += index;
            ok = write_all(header);
            for (std::size_t left = topic_bytes - std::min(topic_bytes, index.size());
                 ok && left > 0;) {
                const std::size_t n = std::min(left, filler.size());
                ok = write_all(std::string_view{filler}.substr(0, n));
                left -= n;
            }
        }
        // Held open until the broker has taken it in and dropped the connection (it refuses
        // or cuts every abuser here); the hang guard only ends a broker that never does.
        (void)test_support::wait_until(
            [&] {
                char byte = 0;
                const auto n = ::recv(fd, &byte, 1, MSG_DONTWAIT);
                return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
            },
            test_support::kHangGuard, milliseconds{10});
    }
    ::close(fd);
    return sent;
}

// The broker's peak VmRSS while `abuse` runs and until `released` holds after it.
template <typename Abuse, typename Released>
long peak_resident_kib(pid_t pid, Abuse abuse, Released released) {
    std::atomic<long> peak{resident_kib(pid)};
    std::atomic<bool> done{false};
    std::thread watcher([&] {
        while (!done) {
            peak = std::max(peak.load(), resident_kib(pid));
            std::this_thread::sleep_for(
                milliseconds{50});  // the sampling interval of a measurement
        }
    });
    abuse();
    // The old broker's trie kept growing after the abuser left: the sampler watches until the
    // broker has let go of everything the abuser sent (the hang guard only ends a broker that
    // never does), and samples once more after.
    (void)test_support::wait_until(released, test_support::kHangGuard, milliseconds{20});
    done = true;
    watcher.join();
    return std::max(peak.load(), resident_kib(pid));
}

class FaultExplainTopic : public ClusterTest {
protected:
    // A broker with an explain topic and an echo worker that serves, and its resident set in
    // KiB before anything else happens.
    void start_served_broker(RunningBroker& broker, long& resident) {
        broker = start_broker();
        ASSERT_FALSE(broker.pub_endpoint.empty());
        start_echo_worker(broker.endpoint);
        ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
        expect_echo_served(broker.endpoint);
        resident = resident_kib(broker.process->pid());
        ASSERT_GT(resident, 0);
    }

    // After an abuser: the topic and echo still serve, the broker runs, and `shown` is its
    // mmi.status (use with ASSERT_NO_FATAL_FAILURE).
    void expect_serving_after_abuse(const RunningBroker& broker, nlohmann::json& shown) {
        expect_topic_serves(broker);
        expect_echo_served(broker.endpoint);
        EXPECT_TRUE(broker.process->running());
        const auto reply = status(broker.endpoint);
        ASSERT_TRUE(reply.has_value());
        shown = *reply;
    }

    // True once the broker answers mmi.status holding no subscription: an abuser's are gone.
    bool holds_no_subscription(const RunningBroker& broker) {
        const auto shown = status(broker.endpoint);
        return shown && (*shown)["topic"].value("subscriptions", -1) == 0;
    }

    // An ordinary subscriber gets every explain message of one echo request.
    void expect_topic_serves(const RunningBroker& broker) {
        // The abuser's subscriptions are gone first, so that the count below is the watcher's.
        const auto subscriptions = [&] {
            const auto shown = status(broker.endpoint);
            return shown ? (*shown)["topic"].value("subscriptions", -1) : -1;
        };
        ASSERT_TRUE(test_support::wait_until([&] { return subscriptions() == 0; },
                                             test_support::kHangGuard, milliseconds{20}));
        zmq::socket_t sub(context_, zmq::socket_type::sub);
        sub.set(zmq::sockopt::linger, 0);
        sub.set(zmq::sockopt::subscribe, "explain.echo");
        sub.connect(broker.pub_endpoint);
        // PUB/SUB: late joiners miss messages.
        ASSERT_TRUE(test_support::wait_until([&] { return subscriptions() >= 1; },
                                             test_support::kHangGuard, milliseconds{20}));
        GbcClient client(context_, broker.endpoint);
        const auto body = nlohmann::json::parse(echo_body("watched past the abuser", 1));
        const auto messages = client.call("echo", body.dump());
        ASSERT_TRUE(is_complete_echo_stream(messages, body, 1)) << describe(messages);
        const auto explain = split_stream(messages).explain;
        const auto published = receive_published(sub, explain.size(), milliseconds{3000});
        ASSERT_EQ(published.size(), explain.size());
        for (const auto& frames : published) {
            ASSERT_FALSE(frames.empty());
            EXPECT_EQ(frames[0], "explain.echo");
        }
    }
};

// Point 4: a 10 MB subscription on the XPUB port once cost the broker ~1 GB that stayed after
// the subscriber left. A subscription longer than any topic is now refused by the socket.
TEST_F(FaultExplainTopic, HugeSubscriptionDoesNotGrowTheBroker) {
    RunningBroker broker;
    long before = 0;
    ASSERT_NO_FATAL_FAILURE(start_served_broker(broker, before));

    // What a SUB socket with a 10 MB subscription does: send it, and again after each
    // reconnect. The old broker's trie grew for ~1-2 s after.
    const std::size_t huge = 10'000'000;
    std::size_t taken = 0;
    const long peak = peak_resident_kib(
        broker.process->pid(),
        [&] {
            taken = send_raw_subscriptions(broker.pub_endpoint, 1, huge);
            for (int again = 0; again < 2; ++again) {
                send_raw_subscriptions(broker.pub_endpoint, 1, huge);
            }
        },
        [&] { return holds_no_subscription(broker); });
    EXPECT_LT(taken, huge) << "the broker read the whole subscription";
    EXPECT_LT(peak - before, 64L * 1024)
        << "broker RSS grew from " << before << " KiB to " << peak << " KiB";

    nlohmann::json reply;
    ASSERT_NO_FATAL_FAILURE(expect_serving_after_abuse(broker, reply));
    // At most the ordinary subscription (gone or going) is held: the huge one never was.
    EXPECT_LE(reply["topic"].value("subscriptions", 1'000'000), 1) << reply.dump();
}

// Point 4, the count: libzmq's XPUB stores each subscription in its trie before the broker
// sees it, so 20,000 distinct ones from one connection once cost the broker hundreds of MB.
// The broker now counts each subscriber's subscriptions and cuts the connection of one that
// passes max_subscriptions_per_subscriber (docs/operations.md, event=explain_subscriber_dropped).
TEST_F(FaultExplainTopic, ManySubscriptionsFromOnePeerAreCut) {
    RunningBroker broker;
    long before = 0;
    ASSERT_NO_FATAL_FAILURE(start_served_broker(broker, before));

    // 20,000 subscriptions of 200 bytes, distinct from their first byte: ~4 MB on the wire.
    constexpr std::size_t kCount = 20'000;
    constexpr std::size_t kTopicBytes = 200;
    std::size_t taken = 0;
    const long peak = peak_resident_kib(
        broker.process->pid(),
        [&] { taken = send_raw_subscriptions(broker.pub_endpoint, kCount, kTopicBytes); },
        [&] { return holds_no_subscription(broker); });
    ASSERT_GT(taken, 0u);
    EXPECT_LT(peak - before, 64L * 1024)
        << "broker RSS grew from " << before << " KiB to " << peak << " KiB";

    nlohmann::json reply;
    ASSERT_NO_FATAL_FAILURE(expect_serving_after_abuse(broker, reply));
    const auto topic = reply["topic"];
    EXPECT_GE(topic.value("dropped_subscribers", 0), 1) << reply.dump();
    // The offender's subscriptions are gone with it; the watcher's (gone or going) at most.
    EXPECT_LE(topic.value("subscriptions", 1'000'000), 1) << reply.dump();
    EXPECT_NE(broker.process->stderr_text().find("event=explain_subscriber_dropped"),
              std::string::npos);
}

// Point 4, the count alone: many short subscriptions (well within the bytes a subscriber may
// send) pass max_subscriptions_per_subscriber; that subscriber is cut, the others are served.
TEST_F(FaultExplainTopic, ASubscriberPastTheCountBoundIsCut) {
    auto broker = start_broker({.extra = {"--max-subscriptions-per-subscriber", "100"}});
    ASSERT_FALSE(broker.pub_endpoint.empty());
    start_echo_worker(broker.endpoint);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));

    // 1,000 distinct 8-byte subscriptions: ~11 KB sent, far below the inbound byte bound.
    send_raw_subscriptions(broker.pub_endpoint, 1000, 8);
    const auto reply = status(broker.endpoint);
    ASSERT_TRUE(reply.has_value());
    const auto topic = (*reply)["topic"];
    EXPECT_EQ(topic.value("dropped_subscribers", 0), 1) << reply->dump();
    EXPECT_EQ(topic.value("max_subscriptions_per_subscriber", 0), 100) << reply->dump();
    EXPECT_NE(broker.process->stderr_text().find("reason=subscriber_subscriptions"),
              std::string::npos);
    expect_topic_serves(broker);
}

class FaultQueueFlood : public ClusterTest {};

// The entry of `service` in an mmi.status reply (null if absent).
nlohmann::json service_status(const nlohmann::json& status, const std::string& service) {
    for (const auto& entry : status.value("services", nlohmann::json::array())) {
        if (entry.value("name", "") == service) return entry;
    }
    return nullptr;
}

// Point 6: one client with 1,000 queued requests once delayed another client's single request
// by all 1,000 of them. Clients of a service are now served in turn.
TEST_F(FaultQueueFlood, ASingleRequestOvertakesAnotherClientsFlood) {
    auto broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    start_test_worker(broker.endpoint, "slow", 20);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "slow"));

    constexpr int kFlood = 1000;
    GbcClient flood(context_, broker.endpoint);
    for (int i = 0; i < kFlood; ++i) {
        flood.request("slow", nlohmann::json{{"flood", i}}.dump(), 120'000);
    }
    // All of them queued (the worker takes one each 20 ms) before the other client asks.
    std::size_t queued = 0;
    const auto until = Clock::now() + milliseconds{10'000};
    while (queued < kFlood - 50 && Clock::now() < until) {
        if (auto reply = status(broker.endpoint)) {
            queued = service_status(*reply, "slow").value("queued", 0u);
        }
    }
    ASSERT_GE(queued, std::size_t{kFlood - 50}) << "the flood never queued";

    GbcClient single(context_, broker.endpoint);
    const nlohmann::json body{{"single", true}};
    const auto messages = single.call("slow", body.dump(), 120'000, milliseconds{60'000});
    ASSERT_FALSE(messages.empty());
    ASSERT_TRUE(messages.back().is_final()) << describe(messages);
    EXPECT_EQ(messages.back().json()["request"], body);

    // Served after at most a few of the flood's: nearly all of the flood is still queued, and
    // status shows whose it is.
    const auto after = status(broker.endpoint);
    ASSERT_TRUE(after.has_value());
    const auto slow = service_status(*after, "slow");
    const std::size_t left = slow.value("queued", 0u);
    EXPECT_GE(left + 10, queued) << "the flood's requests served before the single one: "
                                 << queued - left << "; " << slow.dump();
    const auto clients = slow.value("queued_by", nlohmann::json::array());
    ASSERT_EQ(clients.size(), 1u) << slow.dump();
    EXPECT_EQ(clients[0].value("queued", 0u), left) << slow.dump();
    EXPECT_EQ(slow.value("queued_clients", 0u), 1u) << slow.dump();

    // `glassbox status` shows the depth per client too.
    const auto shown = run_glassbox({"status", "--broker", broker.endpoint});
    EXPECT_NE(shown.out.find("queued by"), std::string::npos) << shown.out;
}

}  // namespace
}  // namespace glassbox::integration
