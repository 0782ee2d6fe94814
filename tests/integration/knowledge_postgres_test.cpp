// The knowledge store on PostgreSQL with real processes (issue 34): store workers with homes of
// their own share one database — facts loaded through one are answered through the other, two
// loads of the same file at once leave each fact once — and the server stopped mid-run makes
// store requests fail with a typed StoreUnavailable naming it (never the password), a load then
// leaves nothing half-written, and everything works again once it is back.
#include <cstdlib>
#include <fstream>
#include <future>
#include <iterator>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "tests/integration/sample_knowledge.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// Never used by the server (it trusts loopback): it must appear in no log and no reply.
constexpr const char* kPassword = "pw-kb-never-logged-51c9";

// Each store process serves this many requests at once (a worker each on the broker).
constexpr int kStoreSlots = 2;

class KnowledgePostgres : public ClusterTest {
protected:
    void SetUp() override {
        if (auto why = PostgresServer::unavailable()) GTEST_SKIP() << *why;
        server_.emplace();
        server_->create_database("kb");
        // Every process this test starts from here on keeps its state there.
        env_.emplace(server_->dsn("kb") + " password=" + kPassword);
    }
    void TearDown() override {
        ClusterTest::TearDown();
        env_.reset();
    }

    // The broker, a trace collector, embeddings, llm and graph-rag; no store yet.
    void start_pipeline() {
        broker_ = start_broker();
        const std::string hb = std::to_string(kHeartbeatMs);
        start_trace_collector(broker_.endpoint);
        for (const char* service : {"embeddings", "llm", "graph-rag"}) {
            start_process(service, {glassbox_binary(), "worker", service, "--broker",
                                    broker_.endpoint, "--heartbeat-ms", hb});
        }
        for (const char* service : {"trace", "embeddings", "llm", "graph-rag"})
            ASSERT_TRUE(wait_for_service(broker_.endpoint, service)) << service;
    }

    // A store worker with a home of its own (`name`), as on another host: kStoreSlots workers on
    // the broker.
    ChildProcess& start_store(const std::string& name) {
        return start_process(
            name, {glassbox_binary(), "worker", "store", "--broker", broker_.endpoint, "--home",
                   (dir() / name).string(), "--heartbeat-ms", std::to_string(kHeartbeatMs)});
    }

    CommandResult glassbox(std::vector<std::string> args,
                           milliseconds timeout = milliseconds{120'000}) {
        args.insert(args.end(), {"--broker", broker_.endpoint});
        return run_glassbox(std::move(args), timeout);
    }

    // The store's `stats` of `collection` (its FINAL body), or null when the call failed.
    json stats(const std::string& collection, CommandResult* result = nullptr) {
        auto done =
            glassbox({"call", "store", json{{"op", "stats"}, {"collection", collection}}.dump()});
        if (result != nullptr) *result = done;
        if (!exited_with(done, 0)) return nullptr;
        // `call` prints each reply as {"kind": ..., "body": ...}.
        auto reply = json::parse(done.out, nullptr, false);
        if (reply.is_discarded() || !reply.is_object()) return nullptr;
        return reply.value("body", json());
    }

    CommandResult load_sample(const std::string& collection) {
        return glassbox({"load", "rdf", (kSample / "orrin.ttl").string(), "--tier", "1",
                         "--collection", collection});
    }

    std::optional<PostgresServer> server_;
    std::optional<PostgresStorageEnv> env_;
    RunningBroker broker_;
};

TEST_F(KnowledgePostgres, StoresOfTwoHomesShareOneDatabase) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    auto& first = start_store("store-a");
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "store"));
    const auto loaded = load_sample("default");
    ASSERT_TRUE(exited_with(loaded, 0)) << loaded.err;
    const json before = stats("default");
    ASSERT_TRUE(before.is_object()) << "stats through the first store";
    ASSERT_GT(before.value("quads", 0), 0) << before.dump();

    // The second store, then the first gone: only the second can answer now.
    start_store("store-b");
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "store", milliseconds{10'000}, 2 * kStoreSlots));
    first.kill();
    ASSERT_TRUE(wait_for_workers(broker_.endpoint, "store", kStoreSlots, milliseconds{10'000}));
    const json after = stats("default");
    ASSERT_TRUE(after.is_object());
    EXPECT_EQ(after["quads"], before["quads"]) << after.dump();
    EXPECT_EQ(after["entity_vectors"], before["entity_vectors"]) << after.dump();
    const auto asked =
        glassbox({"invoke", "graph-rag", "-q", "Who designed Greyhollow Light?", "--no-stream"});
    ASSERT_TRUE(exited_with(asked, 0)) << asked.err;
    EXPECT_NE(asked.out.find("Ilse Varrow"), std::string::npos) << asked.out;

    // Two loads of one file into one collection at once, through both stores: each fact once.
    start_store("store-a2");
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "store", milliseconds{10'000}, 2 * kStoreSlots));
    auto one = std::async(std::launch::async, [&] { return load_sample("twice"); });
    auto two = std::async(std::launch::async, [&] { return load_sample("twice"); });
    const auto first_load = one.get();
    const auto second_load = two.get();
    ASSERT_TRUE(exited_with(first_load, 0)) << first_load.err;
    ASSERT_TRUE(exited_with(second_load, 0)) << second_load.err;
    const json twice = stats("twice");
    ASSERT_TRUE(twice.is_object());
    EXPECT_EQ(twice["quads"], before["quads"]) << twice.dump();
    EXPECT_EQ(twice["terms"], before["terms"]) << twice.dump();

    // No SQLite file beside the database, and no password anywhere.
    for (const char* home : {"store-a", "store-b", "store-a2"}) {
        EXPECT_FALSE(std::filesystem::exists(dir() / home / "knowledge" / "default.db")) << home;
    }
    EXPECT_FALSE(logs_hold(kPassword));
}

TEST_F(KnowledgePostgres, ServerStoppedMidRunIsStoreUnavailableAndALoadLeavesNothing) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    start_store("store-a");
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "store"));
    const auto loaded = load_sample("default");
    ASSERT_TRUE(exited_with(loaded, 0)) << loaded.err;
    const json before = stats("default");
    ASSERT_TRUE(before.is_object());

    server_->stop();
    CommandResult refused;
    EXPECT_TRUE(stats("default", &refused).is_null());
    const std::string said = refused.out + refused.err;
    EXPECT_NE(said.find("StoreUnavailable"), std::string::npos) << said;
    EXPECT_NE(said.find("127.0.0.1:" + std::to_string(server_->port())), std::string::npos) << said;
    EXPECT_EQ(said.find(kPassword), std::string::npos) << said;
    const auto failed_load = load_sample("outage");
    EXPECT_FALSE(exited_with(failed_load, 0)) << failed_load.out;

    server_->start();
    // The store re-connects with a backoff (at most 5 s between attempts).
    json after;
    ASSERT_TRUE(test_support::wait_until([&] { return (after = stats("default")).is_object(); },
                                         milliseconds{30'000}, milliseconds{200}))
        << "the store serves again once the server is back";
    EXPECT_EQ(after["quads"], before["quads"]) << after.dump();
    CommandResult missing;
    EXPECT_TRUE(stats("outage", &missing).is_null()) << "the load in the outage left a collection";
    EXPECT_NE((missing.out + missing.err).find("NotFound"), std::string::npos)
        << missing.out << missing.err;
    const auto again = load_sample("outage");
    ASSERT_TRUE(exited_with(again, 0)) << again.err;
    EXPECT_EQ(stats("outage")["quads"], before["quads"]);
    EXPECT_FALSE(logs_hold(kPassword));
}

// A store worker whose database cannot be reached when it starts says so and exits: the
// server's host and port named, never the password.
TEST_F(KnowledgePostgres, ADatabaseDownAtStartStopsTheStoreWorkerWithAClearError) {
    server_->stop();
    const auto done = run_glassbox({"worker", "store", "--broker", "tcp://127.0.0.1:9", "--home",
                                    (dir() / "store-home").string()},
                                   milliseconds{60'000});
    EXPECT_TRUE(done.status.exited && done.status.code == 1) << done.status.describe();
    EXPECT_NE(done.err.find("StoreUnavailable"), std::string::npos) << done.err;
    EXPECT_NE(done.err.find("127.0.0.1:" + std::to_string(server_->port())), std::string::npos)
        << done.err;
    EXPECT_EQ(done.err.find(kPassword), std::string::npos) << done.err;
}

}  // namespace
}  // namespace glassbox::integration
