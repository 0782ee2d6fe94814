// Traces under faults with real processes (issue 16): a full disk under the broker's and the
// collector's home, and a broker SIGKILLed mid-burst: every trace that exists ends.
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/cluster.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// A tmpfs of `size` mounted on `path` for the scope (root only); lazily detached at the end
// so processes still holding files there do not keep it busy.
class SmallTmpfs {
public:
    SmallTmpfs(const std::filesystem::path& path, const std::string& size) : path_(path) {
        if (::geteuid() != 0) {
            why_ = "not root: mounting a tmpfs needs CAP_SYS_ADMIN";
            return;
        }
        std::filesystem::create_directories(path_);
        const std::string options = "size=" + size + ",mode=0700";
        if (::mount("tmpfs", path_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
            why_ = std::string("mount tmpfs failed: ") + std::strerror(errno);
            return;
        }
        mounted_ = true;
    }
    ~SmallTmpfs() {
        if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
    }
    SmallTmpfs(const SmallTmpfs&) = delete;
    SmallTmpfs& operator=(const SmallTmpfs&) = delete;
    bool mounted() const noexcept { return mounted_; }
    const std::string& why() const noexcept { return why_; }

private:
    std::filesystem::path path_;
    bool mounted_ = false;
    std::string why_;
};

// Writes `path` until the file system is full; the bytes written.
std::uintmax_t fill_up(const std::filesystem::path& path) {
    std::ofstream out(path, std::ios::binary);
    const std::string chunk(std::size_t{64} * 1024, 'x');
    while (out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()))) {
        out.flush();
        if (!out) break;
    }
    out.close();
    std::error_code ignored;
    return std::filesystem::file_size(path, ignored);
}

// Fault* suites carry the `slow` label (tests/integration/CMakeLists.txt).
class FaultTraces : public ClusterTest {
protected:
    // Every session of the store, by URI: its listing (status, events, error).
    std::map<std::string, json> sessions(const std::string& endpoint) {
        std::map<std::string, json> out;
        const auto listed = trace_answer(
            endpoint, {{"op", "list"}, {"include_subtraces", true}, {"limit", 10'000}});
        if (!listed.is_object()) return out;
        for (const auto& s : listed["sessions"]) out[s.value("session", "")] = s;
        return out;
    }

    // Waits until the spool is drained and written, and every stored session has ended
    // (complete or error), each of `complete` complete; returns the sessions last seen.
    std::map<std::string, json> wait_until_all_ended(const std::string& endpoint,
                                                     const std::set<std::string>& complete,
                                                     milliseconds timeout) {
        const auto until = std::chrono::steady_clock::now() + timeout;
        std::map<std::string, json> seen;
        while (std::chrono::steady_clock::now() < until) {
            const auto s = status(endpoint);
            const bool drained = s && (*s)["spool"].value("messages", -1) == 0 &&
                                 (*s)["spool"].value("in_flight", -1) == 0 &&
                                 (*s)["spool"].value("unwritten", -1) == 0;
            seen = sessions(endpoint);
            bool ended = drained;
            for (const auto& [uri, session] : seen) {
                const std::string st = session.value("status", "");
                if (st != "complete" && st != "error") ended = false;
            }
            for (const auto& uri : complete) {
                const auto found = seen.find(uri);
                if (found == seen.end() || found->second.value("status", "") != "complete")
                    ended = false;
            }
            if (ended) return seen;
            std::this_thread::sleep_for(milliseconds{200});
        }
        return seen;
    }

    static std::string describe(const std::map<std::string, json>& seen) {
        std::map<std::string, int> by_status;
        for (const auto& [uri, s] : seen) ++by_status[s.value("status", "?")];
        std::string out = std::to_string(seen.size()) + " sessions:";
        for (const auto& [st, n] : by_status) out += " " + st + "=" + std::to_string(n);
        return out;
    }
};

// Issue 16.1: with the home on a full disk a request either fails with SpoolFull or its
// trace is kept; once space is freed every trace that exists is complete or an error.
TEST_F(FaultTraces, FullDiskFailsRequestsTypedAndLosesNoTrace) {
    SmallTmpfs disk(broker_home(), "20m");
    if (!disk.mounted()) GTEST_SKIP() << "needs a small tmpfs: " << disk.why();
    const auto broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    start_echo_worker(broker.endpoint, 1);
    start_trace_collector(broker.endpoint, broker_home() / "collector");
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    ASSERT_TRUE(wait_for_service(broker.endpoint, "trace"));

    std::set<std::string> answered;
    GbcClient client(context_, broker.endpoint);
    const auto ask = [&](const std::string& question, std::map<std::string, int>& errors) {
        const auto messages =
            client.call("echo", echo_body(question), 10'000, milliseconds{15'000});
        if (messages.empty() || !messages.back().terminal()) {
            ++errors["no answer"];
        } else if (messages.back().is_final()) {
            answered.insert(messages.back().json().value("session", ""));
        } else {
            ++errors[messages.back().error_type];
        }
    };
    std::map<std::string, int> before;
    ask("before the disk fills", before);
    ASSERT_TRUE(before.empty());

    const auto filled = fill_up(broker_home() / "filler");
    ASSERT_GT(filled, 0u);
    constexpr int kRequests = 12;
    std::map<std::string, int> errors;
    const std::size_t answered_before = answered.size();
    for (int i = 0; i < kRequests; ++i) ask("disk full " + std::to_string(i), errors);
    // Each request was answered (its trace kept) or failed typed; the disk being full, some
    // failed. Nothing else.
    EXPECT_GT(errors["SpoolFull"], 0) << "requests succeeded on a full disk";
    EXPECT_EQ(static_cast<int>(answered.size() - answered_before) + errors["SpoolFull"], kRequests);
    EXPECT_EQ(errors.size(), 1u);
    const auto during = status(broker.endpoint);
    ASSERT_TRUE(during.has_value());
    EXPECT_GT((*during)["counters"]["errors"].value("SpoolFull", 0), 0) << during->dump();
    EXPECT_GT((*during)["counters"].value("spool_errors", 0), 0) << during->dump();

    std::filesystem::remove(broker_home() / "filler");
    const auto seen = wait_until_all_ended(broker.endpoint, answered, milliseconds{30'000});
    for (const auto& uri : answered) {
        const auto found = seen.find(uri);
        ASSERT_NE(found, seen.end())
            << "answered but not stored: " << uri << "; " << describe(seen);
        EXPECT_EQ(found->second.value("status", ""), "complete") << found->second.dump();
    }
    for (const auto& [uri, s] : seen) {
        const std::string st = s.value("status", "");
        EXPECT_TRUE(st == "complete" || st == "error") << s.dump();
    }
    // And the broker serves traces as before.
    std::map<std::string, int> after;
    ask("after the disk is freed", after);
    EXPECT_TRUE(after.empty());
}

// Issue 16.2: a broker SIGKILLed mid-burst and restarted on the same home: the requests it
// held end (BrokerRestarted), and every trace in the store ends — the ones cut off with an
// error and the reason — within a bounded time.
TEST_F(FaultTraces, BrokerKilledMidBurstLeavesNoTraceWithoutAnEnd) {
    auto broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    const std::string port = port_of(broker.endpoint);
    start_echo_worker(broker.endpoint, 4);
    start_trace_collector(broker.endpoint, dir() / "collector-home");
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo", milliseconds{10'000}, 4));
    ASSERT_TRUE(wait_for_service(broker.endpoint, "trace"));

    // 40 requests, 4 at a time on the workers, each 300 ms between its trace's first and last
    // message: whenever the kill lands, about 4 traces are open.
    constexpr int kRequests = 40;
    GbcClient client(context_, broker.endpoint);
    std::set<std::string> waiting;
    for (int i = 0; i < kRequests; ++i) {
        waiting.insert(
            client.request("echo", echo_body("burst " + std::to_string(i), 1, 300), 30'000));
    }
    std::set<std::string> answered;
    std::map<std::string, int> errors;
    const auto take = [&](milliseconds for_how_long) {
        const auto until = std::chrono::steady_clock::now() + for_how_long;
        while (!waiting.empty() && std::chrono::steady_clock::now() < until) {
            auto m = client.recv(milliseconds{50});
            if (!m || !m->terminal() || waiting.erase(m->request_id) == 0) continue;
            if (m->is_final()) {
                answered.insert(m->json().value("session", ""));
            } else {
                ++errors[m->error_type];
            }
        }
    };
    take(milliseconds{1'000});
    ASSERT_FALSE(answered.empty()) << "nothing answered before the kill";
    ASSERT_FALSE(waiting.empty()) << "the burst ended before the kill";
    const auto how = broker.process->kill();
    EXPECT_EQ(how.signal, SIGKILL) << how.describe();  // reaped: its port is free
    broker = start_broker(
        {.bind = "tcp://127.0.0.1:" + port, .heartbeat_ms = kHeartbeatMs, .extra = {}});
    ASSERT_EQ(port_of(broker.endpoint), port);

    // Every request ends: answered before the kill, or told the broker restarted.
    take(milliseconds{20'000});
    EXPECT_TRUE(waiting.empty()) << waiting.size() << " requests without an end";
    EXPECT_GT(errors["BrokerRestarted"], 0);
    int other_errors = 0;
    for (const auto& [type, n] : errors) other_errors += type == "BrokerRestarted" ? 0 : n;
    EXPECT_EQ(other_errors, 0);

    // Every trace ends within a bounded time; the cut ones with an error and the reason.
    const auto seen = wait_until_all_ended(broker.endpoint, answered, milliseconds{20'000});
    int cut = 0;
    for (const auto& [uri, s] : seen) {
        const std::string st = s.value("status", "");
        EXPECT_TRUE(st == "complete" || st == "error") << s.dump();
        if (st == "error") {
            ++cut;
            const auto shown = trace_answer(broker.endpoint, {{"op", "show"}, {"session", uri}});
            ASSERT_TRUE(shown.is_object()) << uri;
            EXPECT_NE(shown.dump().find("BrokerRestarted"), std::string::npos) << shown.dump();
        }
    }
    for (const auto& uri : answered) {
        EXPECT_EQ(seen.count(uri), 1u) << "answered but not stored: " << uri;
    }
    EXPECT_GT(cut, 0) << describe(seen);
    EXPECT_LE(cut, errors["BrokerRestarted"]) << describe(seen);
}

// Issue 16.2: a request sent right after a restart, before the service's workers register
// again, waits for them (restart_grace) instead of ending with UnknownService.
TEST_F(FaultTraces, RequestRightAfterARestartIsServedWhenItsWorkersReturn) {
    auto broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    const std::string port = port_of(broker.endpoint);
    auto& worker = start_echo_worker(broker.endpoint, 1);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    broker.process->kill();
    worker.kill();
    broker = start_broker(
        {.bind = "tcp://127.0.0.1:" + port, .heartbeat_ms = kHeartbeatMs, .extra = {}});
    ASSERT_EQ(port_of(broker.endpoint), port);

    GbcClient client(context_, broker.endpoint);
    const auto rid = client.request("echo", echo_body("right after the restart"), 60'000);
    // Longer than unknown_service_wait (1 s): a never-seen service asked after it, on the same
    // connection, ends with UnknownService at the end of that wait; without the grace the echo
    // request would have ended before it (collect() below would find its error first).
    const auto unknown = client.call("never-seen", "{}", 60'000, milliseconds{60'000});
    ASSERT_FALSE(unknown.empty());
    ASSERT_EQ(unknown.back().error_type, "UnknownService") << unknown.back().describe();
    start_echo_worker(broker.endpoint, 1);
    const auto messages = client.collect(rid, milliseconds{60'000});
    ASSERT_FALSE(messages.empty());
    EXPECT_TRUE(messages.back().is_final()) << messages.back().describe();
}

}  // namespace
}  // namespace glassbox::integration
