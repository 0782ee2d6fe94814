// The trace collector as a real process: echo traces reach the store through the broker's
// spool, exactly once, also when the collector starts late or restarts.
#include <csignal>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/bus_peers.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

class TraceCollectorTest : public ClusterTest {
protected:
    // The FINAL body of `glassbox call trace <body>`, or null.
    json call_trace(const std::string& endpoint, const json& body) {
        const auto r = run_glassbox({"call", "trace", body.dump(), "--broker", endpoint});
        std::istringstream lines(r.out);
        std::string line;
        json last;
        while (std::getline(lines, line)) {
            auto parsed = json::parse(line, nullptr, false);
            if (parsed.is_object() && parsed.value("kind", "") == "final") last = parsed["body"];
        }
        return last;
    }
    // Polls `list` until `total` sessions are complete with 2 events each.
    bool wait_for_complete(const std::string& endpoint, int total,
                           milliseconds timeout = milliseconds{15'000}) {
        const auto until = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < until) {
            const auto listed =
                call_trace(endpoint, {{"op", "list"}, {"status", "complete"}, {"limit", 1000}});
            if (listed.is_object() && listed.value("total", -1) == total) {
                for (const auto& s : listed["sessions"]) EXPECT_EQ(s["events"], 2) << s.dump();
                return true;
            }
            std::this_thread::sleep_for(milliseconds{100});
        }
        return false;
    }
    // A broker, an echo worker and a trace collector, once echo and trace are served (use with
    // ASSERT_NO_FATAL_FAILURE).
    void start_echo_and_collector(RunningBroker& broker) {
        broker = start_broker();
        start_echo_worker(broker.endpoint);
        start_trace_collector(broker.endpoint);
        ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
        ASSERT_TRUE(wait_for_service(broker.endpoint, "trace"));
    }
    void run_echoes(const std::string& endpoint, int n) {
        for (int i = 0; i < n; ++i) {
            const auto r = run_glassbox(
                {"call", "echo", echo_body("question " + std::to_string(i)), "--broker", endpoint});
            ASSERT_TRUE(r.status.exited && r.status.code == 0) << r.err;
        }
    }
};

TEST_F(TraceCollectorTest, EchoRequestsBecomeCompleteSessions) {
    RunningBroker broker;
    ASSERT_NO_FATAL_FAILURE(start_echo_and_collector(broker));
    constexpr int kRequests = 5;
    run_echoes(broker.endpoint, kRequests);
    ASSERT_TRUE(wait_for_complete(broker.endpoint, kRequests));

    const auto listed = call_trace(broker.endpoint, {{"op", "list"}, {"search", "question 3"}});
    ASSERT_EQ(listed["sessions"].size(), 1u) << listed.dump();
    const std::string session = listed["sessions"][0]["session"];
    // A prefix of the UUID (urn:glassbox:<uuid>:question) names the session.
    const auto shown =
        call_trace(broker.endpoint, {{"op", "show"}, {"session", session.substr(13, 8)}});
    ASSERT_TRUE(shown.is_object()) << "no FINAL for show";
    EXPECT_EQ(shown["session"]["session"], session);
    EXPECT_EQ(shown["events"].size(), 2u);
    const auto unknown = run_glassbox(
        {"call", "trace", R"({"op":"show","session":"00000000"})", "--broker", broker.endpoint});
    EXPECT_TRUE(unknown.out.find("NotFound") != std::string::npos ||
                unknown.err.find("NotFound") != std::string::npos)
        << unknown.out << unknown.err;
}

TEST_F(TraceCollectorTest, MalformedExplainIsQuarantinedAndCountedInStatus) {
    RunningBroker broker;
    ASSERT_NO_FATAL_FAILURE(start_echo_and_collector(broker));

    // A raw GBW01 worker whose one explain message is not JSON (docs/protocol.md §5.3).
    RawDealer worker(context_, broker.endpoint);
    worker.send({"", "MDPW01", std::string(1, '\x01'), "badexplain", "GBW01"});
    ASSERT_TRUE(wait_for_service(broker.endpoint, "badexplain"));
    GbcClient client(context_, broker.endpoint);
    const std::string id = client.request("badexplain", "{}");
    std::optional<Frames> request;
    for (int i = 0; i < 20 && !(request && request->size() >= 4 && (*request)[2] == "\x02"); ++i) {
        request = worker.recv(milliseconds{250});
    }
    ASSERT_TRUE(request && (*request)[2] == "\x02") << "the raw worker got no REQUEST";
    const std::string token = (*request)[3];
    worker.send({"", "MDPW01", std::string(1, '\x07'), token, "", "urn:glassbox:bad:question", "0",
                 "complete", "{not json"});
    worker.send({"", "MDPW01", std::string(1, '\x03'), token, "", "{}"});
    const auto replies = client.collect(id, milliseconds{5'000});
    ASSERT_FALSE(replies.empty());
    EXPECT_TRUE(replies.back().is_final()) << replies.back().describe();

    // Kept in quarantine, counted in `glassbox status`; the collector goes on storing.
    int quarantined = -1;
    const auto until = std::chrono::steady_clock::now() + milliseconds{10'000};
    while (quarantined != 1 && std::chrono::steady_clock::now() < until) {
        const auto r = run_glassbox({"status", "--json", "--broker", broker.endpoint});
        const auto status = json::parse(r.out, nullptr, false);
        if (status.is_object() && status.contains("traces"))
            quarantined = status["traces"].value("quarantined", -1);
        if (quarantined != 1) std::this_thread::sleep_for(milliseconds{100});
    }
    EXPECT_EQ(quarantined, 1);
    run_echoes(broker.endpoint, 2);
    ASSERT_TRUE(wait_for_complete(broker.endpoint, 2));
}

TEST_F(TraceCollectorTest, LateAndRestartedCollectorStoresEachMessageOnce) {
    const auto broker = start_broker();
    start_echo_worker(broker.endpoint);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    constexpr int kRequests = 4;
    run_echoes(broker.endpoint, kRequests);  // spooled: no collector yet

    auto& first = start_trace_collector(broker.endpoint);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "trace"));
    ASSERT_TRUE(wait_for_complete(broker.endpoint, kRequests));
    const auto stopped = first.terminate();
    EXPECT_TRUE(stopped.exited && stopped.code == 0) << stopped.describe();

    run_echoes(broker.endpoint, kRequests);  // spooled while the collector is down
    start_trace_collector(broker.endpoint);
    ASSERT_TRUE(wait_for_complete(broker.endpoint, 2 * kRequests));
    const auto stats = call_trace(broker.endpoint, {{"op", "stats"}});
    EXPECT_EQ(stats["sessions"], 2 * kRequests) << stats.dump();
    EXPECT_EQ(stats["events"], 4 * kRequests) << stats.dump();
    EXPECT_EQ(stats["quarantined"], 0);
}

// Retention through the CLI and a real collector: pin, a dry run, a prune, the counts in
// `traces stats` and `status`, and a bad age refused before anything is sent.
TEST_F(TraceCollectorTest, TracesPinAndPruneThroughTheCli) {
    RunningBroker broker;
    ASSERT_NO_FATAL_FAILURE(start_echo_and_collector(broker));
    run_echoes(broker.endpoint, 3);
    ASSERT_TRUE(wait_for_complete(broker.endpoint, 3));
    const auto listed = call_trace(broker.endpoint, {{"op", "list"}, {"search", "question 1"}});
    ASSERT_EQ(listed["sessions"].size(), 1u) << listed.dump();
    const std::string kept = listed["sessions"][0]["session"];

    const auto pinned =
        run_glassbox({"traces", "pin", kept.substr(13, 8), "--broker", broker.endpoint});
    ASSERT_TRUE(pinned.status.exited && pinned.status.code == 0) << pinned.err;
    EXPECT_NE(pinned.out.find("Pinned " + kept), std::string::npos) << pinned.out;

    // The runs are a second old soon: a dry run then counts the two unpinned ones, every time.
    json dry;
    ASSERT_TRUE(test_support::wait_until([&] {
        const auto r = run_glassbox({"traces", "prune", "--older-than", "1s", "--dry-run", "--json",
                                     "--broker", broker.endpoint});
        dry = json::parse(r.out, nullptr, false);
        return dry.is_object() && dry.value("traces", 0) == 2;
    })) << dry.dump();
    EXPECT_EQ(dry["dry_run"], true);
    EXPECT_EQ(dry["events"], 4);
    ASSERT_TRUE(wait_for_complete(broker.endpoint, 3)) << "a dry run deletes nothing";

    const auto pruned =
        run_glassbox({"traces", "prune", "--older-than", "1s", "--broker", broker.endpoint});
    ASSERT_TRUE(pruned.status.exited && pruned.status.code == 0) << pruned.err;
    EXPECT_NE(pruned.out.find("Pruned 2 traces (2 runs, 4 events"), std::string::npos)
        << pruned.out;
    const auto left = call_trace(broker.endpoint, {{"op", "list"}});
    ASSERT_EQ(left["sessions"].size(), 1u) << left.dump();
    EXPECT_EQ(left["sessions"][0]["session"], kept);
    EXPECT_EQ(left["sessions"][0]["pinned"], true);

    const auto stats = run_glassbox({"traces", "stats", "--broker", broker.endpoint});
    EXPECT_NE(stats.out.find("traces pruned"), std::string::npos) << stats.out;
    const auto status = run_glassbox({"status", "--broker", broker.endpoint});
    EXPECT_NE(status.out.find("pruned 2 traces, 4 events"), std::string::npos) << status.out;

    const auto bad = run_glassbox(
        {"traces", "prune", "--older-than", "30x", "--dry-run", "--broker", broker.endpoint});
    EXPECT_TRUE(bad.status.exited && bad.status.code != 0);
    EXPECT_NE(bad.err.find("is not an age"), std::string::npos) << bad.err;
    const auto unpinned =
        run_glassbox({"traces", "unpin", kept, "--json", "--broker", broker.endpoint});
    EXPECT_EQ(json::parse(unpinned.out, nullptr, false).value("pinned", true), false)
        << unpinned.out << unpinned.err;
}

// traces.retention: the collector's own thread prunes what grows older, while it goes on
// storing.
TEST_F(TraceCollectorTest, TheCollectorPrunesByItsRetentionSetting) {
    RunningBroker broker = start_broker();
    start_echo_worker(broker.endpoint);
    start_process("trace-collector-retention",
                  {glassbox_binary(), "worker", "trace-collector", "--broker", broker.endpoint,
                   "--home", (dir() / "collector-home").string(), "--heartbeat-ms",
                   std::to_string(kHeartbeatMs), "--retention", "1s", "--prune-interval-s", "1"});
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    ASSERT_TRUE(wait_for_service(broker.endpoint, "trace"));
    run_echoes(broker.endpoint, 3);
    json stats;
    ASSERT_TRUE(wait_for_trace_answer(
        broker.endpoint, {{"op", "stats"}},
        [](const json& s) {
            return s.contains("retention") && s["retention"].value("traces", 0) == 3 &&
                   s.value("sessions", -1) == 0;
        },
        stats))
        << stats.dump();
    EXPECT_EQ(stats["retention"]["retention_ms"], 1000);
    EXPECT_EQ(stats["retention"]["events"], 6);
    EXPECT_EQ(stats["retention"]["failures"], 0);
}

// traces.sample (docs/traces.md, "Sampling"): the collector's own thread summarises the runs the
// rule leaves (all of them at 0), and stats, status, list, show and pin say so.
TEST_F(TraceCollectorTest, TheCollectorSummarisesBySampling) {
    RunningBroker broker = start_broker();
    start_echo_worker(broker.endpoint);
    start_process("trace-collector-sampling",
                  {"/usr/bin/env", "GLASSBOX_TRACES_SAMPLE=0", "GLASSBOX_TRACES_SAMPLE_AFTER_S=0",
                   glassbox_binary(), "worker", "trace-collector", "--broker", broker.endpoint,
                   "--home", (dir() / "collector-home").string(), "--heartbeat-ms",
                   std::to_string(kHeartbeatMs), "--prune-interval-s", "1"});
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    ASSERT_TRUE(wait_for_service(broker.endpoint, "trace"));
    run_echoes(broker.endpoint, 3);
    json stats;
    ASSERT_TRUE(wait_for_trace_answer(
        broker.endpoint, {{"op", "stats"}},
        [](const json& s) {
            return s.contains("sampling") && s["sampling"].value("summarised", 0) == 3;
        },
        stats))
        << stats.dump();
    EXPECT_EQ(stats["sampling"]["fraction"], 0.0);
    EXPECT_EQ(stats["sampling"]["waiting"], 0);
    EXPECT_EQ(stats["sampling"]["whole"]["sampled"], 0);

    const auto table = run_glassbox({"traces", "stats", "--broker", broker.endpoint});
    EXPECT_NE(table.out.find("Sampling (top-level runs)"), std::string::npos) << table.out;
    const auto status = run_glassbox({"status", "--broker", broker.endpoint});
    EXPECT_NE(status.out.find("sampling traces.sample 0"), std::string::npos) << status.out;
    EXPECT_NE(status.out.find("summarised 3 · waiting 0"), std::string::npos) << status.out;
    const auto listed = call_trace(broker.endpoint, {{"op", "list"}});
    ASSERT_EQ(listed["sessions"].size(), 3u) << listed.dump();
    for (const auto& s : listed["sessions"]) EXPECT_EQ(s.value("summary", false), true);
    const std::string run = listed["sessions"][0]["session"];
    const auto shown = run_glassbox({"traces", "show", run, "--broker", broker.endpoint});
    EXPECT_NE(shown.out.find("detail not kept: traces.sample"), std::string::npos) << shown.out;
    const auto pinned = run_glassbox({"traces", "pin", run, "--broker", broker.endpoint});
    ASSERT_TRUE(pinned.status.exited && pinned.status.code == 0) << pinned.err;
    EXPECT_NE(pinned.out.find("It stays a summary"), std::string::npos) << pinned.out;
}

}  // namespace
}  // namespace glassbox::integration
