// The trace collector's SPARQL mirror against a real Virtuoso (issue 36, docs/traces.md "Mirror
// to a SPARQL engine"): each ended run becomes the named graph of its session URI holding
// exactly its triples; while the engine is down runs keep arriving and wait in the queue, and
// once it is back the backlog is written.
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "http/sparql_client.hpp"
#include "http/virtuoso_instance.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
namespace virtuoso = http::virtuoso;

class TraceMirrorTest : public ClusterTest {
protected:
    void SetUp() override {
        if (auto why = virtuoso::unavailable()) GTEST_SKIP() << *why;
        instance_.dir = dir() / "virtuoso";
        auto sql = virtuoso::free_loopback_port();
        auto web = virtuoso::free_loopback_port();
        ASSERT_TRUE(sql.ok() && web.ok());
        instance_.sql_port = *sql;
        instance_.http_port = *web;
        ASSERT_TRUE(virtuoso::write_ini(instance_).ok());
        ASSERT_NO_FATAL_FAILURE(start_engine());
    }

    // Starts Virtuoso on the instance's folder and ports (the data of an earlier start kept) and
    // waits until it answers and is secured; `config_` is then its client configuration.
    void start_engine() {
        auto argv = virtuoso::server_argv(instance_);
        engine_ = &start_process("virtuoso-" + std::to_string(starts_++), std::move(argv));
        ASSERT_TRUE(test_support::wait_until([&] { return virtuoso::answers(instance_); },
                                             milliseconds{60'000}))
            << "Virtuoso did not answer:\n"
            << engine_->stdout_text();
        auto secured = virtuoso::secure(instance_, milliseconds{30'000});
        ASSERT_TRUE(secured.ok()) << secured.error().describe();
        config_ = *secured;
    }

    void stop_engine() { engine_->terminate(milliseconds{30'000}); }

    // The collector's home: its config.toml names the engine (owner-only: it holds the password).
    std::filesystem::path collector_home() {
        auto home = dir() / "collector-home";
        std::filesystem::create_directories(home);
        ::chmod(home.c_str(), 0700);
        const auto file = home / "config.toml";
        std::ofstream(file) << "[sparql]\nendpoint = \"" << config_.query_url
                            << "\"\ngraph_store = \"" << config_.graph_store_url << "\"\nuser = \""
                            << config_.user << "\"\npassword = \"" << config_.password
                            << "\"\nmirror_interval_ms = 100\n";
        ::chmod(file.c_str(), 0600);
        return home;
    }

    json mirror_stats(const std::string& endpoint) {
        const auto stats = trace_answer(endpoint, json{{"op", "stats"}});
        return stats.is_object() && stats.contains("sparql_mirror") ? stats["sparql_mirror"]
                                                                    : json();
    }

    // The sessions of the complete echo runs stored, once there are `n`.
    std::vector<std::string> complete_runs(const std::string& endpoint, std::size_t n) {
        json listed;
        EXPECT_TRUE(wait_for_trace_answer(
            endpoint, json{{"op", "list"}, {"status", "complete"}, {"limit", 100}},
            [&](const json& a) { return a["sessions"].size() == n; }, listed))
            << listed.dump();
        std::vector<std::string> out;
        for (const auto& s : listed["sessions"]) out.push_back(s["session"]);
        return out;
    }

    // How many distinct triples `traces show ID --format ntriples` prints for the run.
    std::size_t shown_triples(const std::string& endpoint, const std::string& session) {
        const auto r =
            run_glassbox({"traces", "show", session, "--format", "ntriples", "--broker", endpoint});
        EXPECT_EQ(r.status.code, 0) << r.err;
        std::istringstream lines(r.out);
        std::size_t n = 0;
        for (std::string line; std::getline(lines, line);) n += line.empty() ? 0 : 1;
        return n;
    }

    // The triples the engine holds in the named graph `graph` (-1 when the query failed).
    long long engine_triples(const std::string& graph) {
        http::SparqlClient client(config_);
        auto rows =
            client.select("SELECT (COUNT(*) AS ?n) WHERE { GRAPH <" + graph + "> { ?s ?p ?o } }");
        if (!rows) return -1;
        const auto& bindings = (*rows)["results"]["bindings"];
        if (bindings.empty() || !bindings[0].contains("n")) return -1;
        return std::stoll(bindings[0]["n"]["value"].get<std::string>());
    }

    void run_echoes(const std::string& endpoint, int from, int to) {
        for (int i = from; i < to; ++i) {
            const auto r = run_glassbox(
                {"call", "echo", echo_body("mirrored " + std::to_string(i)), "--broker", endpoint});
            ASSERT_TRUE(r.status.exited && r.status.code == 0) << r.err;
        }
    }

    // Every run's graph is in the engine with exactly the run's triples.
    void expect_mirrored(const std::string& endpoint, const std::vector<std::string>& runs) {
        for (const auto& run : runs) {
            const auto expected = shown_triples(endpoint, run);
            EXPECT_GT(expected, 0u);
            EXPECT_EQ(engine_triples(run), static_cast<long long>(expected)) << run;
        }
    }

    virtuoso::Instance instance_;
    http::SparqlConfig config_;
    ChildProcess* engine_ = nullptr;
    int starts_ = 0;
};

TEST_F(TraceMirrorTest, RunsBecomeGraphsAndTheBacklogWaitsWhileTheEngineIsDown) {
    auto broker = start_broker();
    start_echo_worker(broker.endpoint);
    start_trace_collector(broker.endpoint, collector_home());
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    ASSERT_TRUE(wait_for_service(broker.endpoint, "trace"));

    run_echoes(broker.endpoint, 0, 3);
    auto first = complete_runs(broker.endpoint, 3);
    ASSERT_EQ(first.size(), 3u);
    json mirror;
    ASSERT_TRUE(test_support::wait_until([&] {
        mirror = mirror_stats(broker.endpoint);
        return mirror.is_object() && mirror["pending"] == 0 && mirror["mirrored"] >= 3;
    })) << mirror.dump();
    EXPECT_EQ(mirror["configured"], true);
    EXPECT_EQ(mirror["failures"], 0);
    expect_mirrored(broker.endpoint, first);

    // The engine down: runs are stored as ever and wait for it.
    stop_engine();
    run_echoes(broker.endpoint, 3, 5);
    auto all = complete_runs(broker.endpoint, 5);
    ASSERT_TRUE(test_support::wait_until([&] {
        mirror = mirror_stats(broker.endpoint);
        return mirror.is_object() && mirror["pending"] == 2 && mirror["failures"] > 0;
    })) << mirror.dump();
    EXPECT_NE(mirror["last_error"], "");
    EXPECT_GT(mirror["oldest_pending_ms"], 0);

    // Back: the backlog is written, nothing lost.
    ASSERT_NO_FATAL_FAILURE(start_engine());
    ASSERT_TRUE(test_support::wait_until([&] {
        mirror = mirror_stats(broker.endpoint);
        return mirror.is_object() && mirror["pending"] == 0 && mirror["mirrored"] >= 5;
    })) << mirror.dump();
    expect_mirrored(broker.endpoint, all);

    // `traces mirror --all` queues every ended run again; the mirror writes them once more.
    const auto queued = run_glassbox({"traces", "mirror", "--all", "--broker", broker.endpoint});
    EXPECT_EQ(queued.status.code, 0) << queued.err;
    EXPECT_EQ(queued.out, "Queued 5 traces for the SPARQL mirror\n");
    ASSERT_TRUE(test_support::wait_until([&] {
        mirror = mirror_stats(broker.endpoint);
        return mirror.is_object() && mirror["pending"] == 0 && mirror["mirrored"] >= 10;
    })) << mirror.dump();
    expect_mirrored(broker.endpoint, all);
}

}  // namespace
}  // namespace glassbox::integration
