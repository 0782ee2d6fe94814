// The trace store on PostgreSQL with real processes (issue 34): trace collectors with homes of
// their own share one database, a collector killed mid-burst loses nothing (the broker hands its
// traces to the other), and the server stopped mid-burst makes the `trace` service answer a typed
// StoreUnavailable while the broker keeps every message until the server is back; the query side
// reads from a streaming hot standby.
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cluster.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/trace_fixture.hpp"
#include "tests/support/wait_until.hpp"
#include "workers/trace_collector/trace_service.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// Never used by the server (it trusts loopback): it must appear in no log.
constexpr const char* kPassword = "pw-never-logged-7f3a";

class TracePostgres : public ClusterTest {
protected:
    void SetUp() override {
        if (auto why = PostgresServer::unavailable()) GTEST_SKIP() << *why;
        server_.emplace();
        server_->create_database("traces");
        // Every process this test starts from here on keeps its state there.
        env_.emplace(server_->dsn("traces") + " password=" + kPassword);
    }
    void TearDown() override {
        ClusterTest::TearDown();
        env_.reset();
    }

    void run_echoes(const std::string& endpoint, int from, int count) {
        for (int i = from; i < from + count; ++i) {
            const auto r = run_glassbox(
                {"call", "echo", echo_body("question " + std::to_string(i)), "--broker", endpoint});
            ASSERT_TRUE(r.status.exited && r.status.code == 0) << r.err;
        }
    }
    // Waits until the store holds `total` complete sessions of 2 events each, and no other.
    void expect_complete(const std::string& endpoint, int total) {
        json listed;
        const bool all = wait_for_trace_answer(
            endpoint, {{"op", "list"}, {"limit", 1000}},
            [&](const json& r) { return r.value("total", -1) == total && all_complete(r); }, listed,
            milliseconds{60'000});
        ASSERT_TRUE(all) << listed.dump();
        const auto stats = trace_answer(endpoint, {{"op", "stats"}});
        EXPECT_EQ(stats["sessions"], total) << stats.dump();
        EXPECT_EQ(stats["events"], 2 * total) << "each event stored once: " << stats.dump();
        EXPECT_EQ(stats["quarantined"], 0) << stats.dump();
    }
    static bool all_complete(const json& listed) {
        for (const auto& s : listed["sessions"]) {
            if (s["status"] != "complete" || s["events"] != 2) return false;
        }
        return true;
    }

    std::optional<PostgresServer> server_;
    std::optional<PostgresStorageEnv> env_;
};

// Two collectors, two homes, one database: a session's messages go to one collector while it
// lives; killed mid-burst, its unacknowledged deliveries go to the other, which stores them
// into the same sessions. Every trace ends up stored once and whole.
TEST_F(TracePostgres, CollectorsShareOneStoreAndAKilledOneLosesNothing) {
    RunningBroker broker = start_broker();
    start_echo_worker(broker.endpoint);
    auto& first = start_trace_collector(broker.endpoint, dir() / "home-a");
    start_trace_collector(broker.endpoint, dir() / "home-b");
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    ASSERT_TRUE(wait_for_service(broker.endpoint, "trace", milliseconds{10'000}, 2));

    ASSERT_NO_FATAL_FAILURE(run_echoes(broker.endpoint, 0, 20));
    ASSERT_NO_FATAL_FAILURE(expect_complete(broker.endpoint, 20));

    std::thread burst([&] { run_echoes(broker.endpoint, 20, 20); });
    json listed;
    (void)wait_for_trace_answer(
        broker.endpoint, {{"op", "list"}, {"limit", 1}},
        [](const json& r) { return r.value("total", 0) >= 25; }, listed);
    first.kill();
    burst.join();
    ASSERT_NO_FATAL_FAILURE(expect_complete(broker.endpoint, 40));
    EXPECT_FALSE(std::filesystem::exists(dir() / "home-a" / "traces.db"))
        << "the collector wrote a SQLite file beside the PostgreSQL store";
    EXPECT_FALSE(logs_hold(kPassword)) << "a log holds the connection string's password";
}

// The server down mid-run: the `trace` service answers StoreUnavailable naming the server (not
// the password), requests are still served, the broker keeps their explain messages, and once
// the server is back every trace is stored.
TEST_F(TracePostgres, ServerStoppedMidBurstStoresEverythingOnceItIsBack) {
    RunningBroker broker = start_broker();
    start_echo_worker(broker.endpoint);
    start_trace_collector(broker.endpoint);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    ASSERT_TRUE(wait_for_service(broker.endpoint, "trace"));
    ASSERT_NO_FATAL_FAILURE(run_echoes(broker.endpoint, 0, 10));
    ASSERT_NO_FATAL_FAILURE(expect_complete(broker.endpoint, 10));

    server_->stop();
    ASSERT_NO_FATAL_FAILURE(run_echoes(broker.endpoint, 10, 10));
    const auto refused =
        run_glassbox({"call", "trace", json{{"op", "stats"}}.dump(), "--broker", broker.endpoint});
    const std::string said = refused.out + refused.err;
    EXPECT_NE(said.find("StoreUnavailable"), std::string::npos) << said;
    EXPECT_NE(said.find("127.0.0.1:" + std::to_string(server_->port())), std::string::npos) << said;
    EXPECT_EQ(said.find(kPassword), std::string::npos) << said;

    server_->start();
    ASSERT_NO_FATAL_FAILURE(expect_complete(broker.endpoint, 20));
    EXPECT_FALSE(logs_hold(kPassword)) << "a log holds the connection string's password";
}

// storage.postgres_read_dsn: the `trace` service's reads go to a streaming hot standby. A trace
// written on the primary is read there, and still after the primary has stopped (so the reads
// did not go to the primary); a read-only store cannot write on the standby.
TEST(TracePostgresReplica, QueriesReadFromAHotStandby) {
    if (auto why = PostgresServer::unavailable()) GTEST_SKIP() << *why;
    PostgresServer primary;
    primary.create_database("traces");
    trace::StoreLocation location;
    location.postgres_dsn = primary.dsn("traces");
    auto writer = trace::TraceStore::open(location, trace::OpenMode::kReadWrite);
    ASSERT_TRUE(writer.ok()) << writer.error().describe();
    PostgresServer::Options standby_options;
    standby_options.standby_of = &primary;
    PostgresServer standby(standby_options);
    location.postgres_read_dsn = standby.dsn("traces");
    trace::ReadStorePool pool(location, trace::StoreConfig{});
    const auto events_read = [&]() -> std::int64_t {
        auto r = pool.with_store([](trace::TraceStore& s) { return s.stats(); });
        return r.ok() ? (*r).value("events", std::int64_t{-1}) : -1;
    };
    EXPECT_EQ(events_read(), 0);

    // One run written on the primary, as the collector writes it.
    const auto run =
        trace::testing::FakeRun::make("echo", "asked on the primary", 1'790'000'000'000);
    auto outcome = (*writer)->store_batch(
        {trace::testing::delivery_of(run.open(), 1), trace::testing::delivery_of(run.end(), 2)});
    ASSERT_TRUE(outcome.ok()) << outcome.error().describe();
    ASSERT_EQ(outcome->stored, 2u);
    ASSERT_TRUE(test_support::wait_until([&] { return events_read() == 2; }, milliseconds{30'000}))
        << "the standby never showed the primary's write";

    writer->reset();
    primary.stop();
    auto shown = pool.with_store([&](trace::TraceStore& s) { return s.show(run.session()); });
    ASSERT_TRUE(shown.ok()) << "the reads needed the primary: " << shown.error().describe();
    EXPECT_EQ((*shown)["session"]["question"], "asked on the primary");
    EXPECT_EQ((*shown)["session"]["status"], "complete");
    // The writer side of the pool goes to the primary: down, a typed StoreUnavailable.
    auto forgotten = pool.with_writer([](trace::TraceStore& s) { return s.forget("c1"); });
    ASSERT_FALSE(forgotten.ok());
    EXPECT_EQ(forgotten.error().type, base::ErrorType::kStoreUnavailable)
        << forgotten.error().describe();
}

}  // namespace
}  // namespace glassbox::integration
