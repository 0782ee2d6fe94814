// `glassbox store copy` end to end (issue 34, "Moving a home"): a SQLite home filled by the real
// pipeline (the sample's facts and documents, a graph-RAG question and its trace) copied into a
// PostgreSQL server of the test's own while its workers still run; the counts line checked against
// what the SQLite store reports, a second copy refused with nothing written, and then a store
// worker and a trace collector on PostgreSQL answer with the same knowledge and the same traces.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "storage/sqlite_database.hpp"
#include "tests/integration/sample_knowledge.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/postgres_server.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// Never used by the server (it trusts loopback): it must appear in nothing the command prints.
constexpr const char* kPassword = "pw-copy-never-shown-2d71";
constexpr const char* kQuestion = "Who designed Greyhollow Light?";

// 1234567 -> "1,234,567", as the command prints counts.
std::string with_commas(std::uint64_t n) {
    std::string digits = std::to_string(n);
    for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3)
        digits.insert(static_cast<std::size_t>(at), ",");
    return digits;
}

class StoreCopy : public ClusterTest {
protected:
    void SetUp() override {
        if (auto why = PostgresServer::unavailable()) GTEST_SKIP() << *why;
        server_.emplace();
        server_->create_database("moved");
        dsn_ = server_->dsn("moved") + " password=" + kPassword;
    }
    void TearDown() override {
        ClusterTest::TearDown();
        env_.reset();
    }
    // From here on, the processes this test starts keep their state in the target database.
    void use_postgres() { env_.emplace(dsn_); }

    CommandResult glassbox(std::vector<std::string> args,
                           milliseconds timeout = milliseconds{120'000}) {
        args.insert(args.end(), {"--broker", broker_.endpoint});
        return run_glassbox(std::move(args), timeout);
    }
    ChildProcess& start_store(const std::filesystem::path& home) {
        return start_process(
            "store-" + home.filename().string(),
            {glassbox_binary(), "worker", "store", "--broker", broker_.endpoint, "--home",
             home.string(), "--heartbeat-ms", std::to_string(kHeartbeatMs)});
    }
    json stats(const std::string& collection) {
        const auto done =
            glassbox({"call", "store", json{{"op", "stats"}, {"collection", collection}}.dump()});
        EXPECT_TRUE(exited_with(done, 0)) << done.err;
        // `call` prints the reply: {"kind": "final", "body": {...}}.
        const auto reply = json::parse(done.out, nullptr, false);
        return reply.is_object() ? reply.value("body", json()) : json();
    }
    // Every stored run (sub-runs too), once the graph-RAG question's run is there and every run
    // is complete.
    json stored_runs() {
        json listed;
        const bool stored = wait_for_trace_answer(
            broker_.endpoint, {{"op", "list"}, {"limit", 1000}, {"include_subtraces", true}},
            [&](const json& r) {
                bool asked = false;
                for (const auto& s : r.value("sessions", json::array())) {
                    if (s.value("status", "") != "complete") return false;
                    asked = asked || s.value("question", "") == kQuestion;
                }
                return asked;
            },
            listed, milliseconds{30'000});
        EXPECT_TRUE(stored) << listed.dump();
        return listed;
    }
    static std::set<std::string> session_ids(const json& listed) {
        std::set<std::string> out;
        for (const auto& s : listed.value("sessions", json::array()))
            out.insert(s.value("session", ""));
        return out;
    }
    // "1 fact", "1,234 facts": as the command counts.
    static std::string counted(std::uint64_t n, const std::string& kind) {
        return with_commas(n) + " " + kind + (n == 1 ? "" : "s");
    }
    // The start of the line the command prints for a collection with the SQLite store's `stats`.
    static std::string collection_line(const std::string& collection, const json& s) {
        const auto n = [&](const char* key) { return s[key].get<std::uint64_t>(); };
        return "collection " + collection + ": " + counted(n("quads"), "fact") + ", " +
               counted(n("documents"), "document") + ", " + counted(n("chunks"), "chunk") + ", " +
               counted(n("entity_vectors") + n("chunk_vectors"), "vector") + "; ";
    }
    // The start of the traces' line, with the SQLite trace service's `stats`.
    static std::string traces_line(const json& s) {
        return "traces: " + counted(s["sessions"].get<std::uint64_t>(), "session") + ", " +
               counted(s["events"].get<std::uint64_t>(), "event") + "; ";
    }
    // `glassbox store copy --from <home> --to <the test's database> <more>`.
    CommandResult copy(const std::filesystem::path& home, std::vector<std::string> more = {}) {
        std::vector<std::string> args{"store", "copy", "--from", home.string(), "--to", dsn_};
        args.insert(args.end(), more.begin(), more.end());
        return run_glassbox(std::move(args), milliseconds{120'000});
    }

    std::optional<PostgresStorageEnv> env_;
    std::optional<PostgresServer> server_;
    std::string dsn_;
    RunningBroker broker_;
};

TEST_F(StoreCopy, MovesAHomeToPostgresAndThePostgresStoresAnswerTheSame) {
    const auto home = dir() / "home";
    broker_ = start_broker();
    ASSERT_FALSE(broker_.endpoint.empty()) << "no broker";
    auto& sqlite_collector = start_trace_collector(broker_.endpoint, home);
    auto& sqlite_store = start_store(home);
    start_workers(broker_.endpoint, {{"embeddings"}, {"llm"}, {"graph-rag"}});
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "store"));
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "trace"));
    ASSERT_NO_FATAL_FAILURE(load_sample(broker_.endpoint, kSample, true));
    const auto second = glassbox(
        {"load", "rdf", (kSample / "orrin.ttl").string(), "--tier", "2", "--collection", "second"});
    ASSERT_TRUE(exited_with(second, 0)) << second.err;
    const auto third = glassbox(
        {"load", "rdf", (kSample / "orrin.ttl").string(), "--collection", "third", "--no-index"});
    ASSERT_TRUE(exited_with(third, 0)) << third.err;
    const auto asked = glassbox({"invoke", "graph-rag", "-q", kQuestion, "--no-stream"});
    ASSERT_TRUE(exited_with(asked, 0)) << asked.err;
    ASSERT_NE(asked.out.find("Ilse Varrow"), std::string::npos) << asked.out;
    const json before = stats("default");
    ASSERT_GT(before.value("quads", 0), 0) << before.dump();
    ASSERT_GT(before.value("chunks", 0), 0) << before.dump();
    ASSERT_GT(before.value("entity_vectors", 0), 0) << before.dump();
    const json second_before = stats("second");
    const json sqlite_runs = stored_runs();
    const json sqlite_trace_stats = trace_answer(broker_.endpoint, {{"op", "stats"}});
    ASSERT_TRUE(sqlite_trace_stats.is_object());

    // The copy, while the SQLite workers still run (it reads their files read-only).
    const auto copied = copy(home, {"--collection", "default"});
    ASSERT_TRUE(exited_with(copied, 0)) << copied.out << copied.err;
    for (const auto& line : {collection_line("default", before), traces_line(sqlite_trace_stats)}) {
        const auto at = copied.out.find("\n" + line);
        ASSERT_NE(at, std::string::npos) << "expected a line starting: " << line << "\n"
                                         << copied.out;
        const auto end = copied.out.find('\n', at + 1);
        EXPECT_TRUE(copied.out.substr(at, end - at).ends_with(", checked equal")) << copied.out;
    }
    EXPECT_EQ(copied.out.find("collection second"), std::string::npos) << copied.out;
    EXPECT_EQ((copied.out + copied.err).find(kPassword), std::string::npos) << copied.out;
    EXPECT_NE(copied.out.find("password=***"), std::string::npos) << copied.out;

    // The other collection alone, as JSON; then refusals, each before anything is written.
    const auto json_copy = copy(home, {"--collection", "second", "--no-traces", "--json"});
    ASSERT_TRUE(exited_with(json_copy, 0)) << json_copy.err;
    const json reported = json::parse(json_copy.out, nullptr, false);
    ASSERT_TRUE(reported.is_object()) << json_copy.out;
    ASSERT_EQ(reported["collections"].size(), 1u) << json_copy.out;
    EXPECT_EQ(reported["collections"][0]["facts"], second_before["quads"]) << json_copy.out;
    EXPECT_EQ(reported["collections"][0]["checked_equal"], true);
    EXPECT_TRUE(reported["traces"].is_null());
    const auto again = copy(home, {"--no-traces"});
    EXPECT_TRUE(exited_with(again, 2)) << again.out << again.err;
    EXPECT_NE(again.err.find("collection \"default\" already exists"), std::string::npos)
        << again.err;
    const auto unknown = copy(home, {"--collection", "third", "--collection", "nothing"});
    EXPECT_TRUE(exited_with(unknown, 2)) << unknown.err;

    // The SQLite workers go; a store and a collector on PostgreSQL (another home) take over.
    sqlite_store.terminate();
    sqlite_collector.terminate();
    ASSERT_TRUE(wait_for_workers(broker_.endpoint, "store", 0, milliseconds{10'000}));
    ASSERT_TRUE(wait_for_workers(broker_.endpoint, "trace", 0, milliseconds{10'000}));
    // A collection that fails part-way (its sources table holds text PostgreSQL cannot store,
    // after its facts were written): refused as bad input (exit 2), naming the table, and nothing
    // of it on the target (checked below).
    {
        auto db = storage::Database::open(home / "knowledge" / "third.db");
        ASSERT_TRUE(db) << db.error().message;
        ASSERT_TRUE((*db)->exec("UPDATE graph_sources SET media_type = 'bad' || char(0)"));
    }
    const auto failed = copy(home, {"--collection", "third", "--no-traces"});
    EXPECT_TRUE(exited_with(failed, 2)) << failed.out << failed.err;
    EXPECT_NE(failed.err.find("copying table graph_sources: "), std::string::npos) << failed.err;
    EXPECT_NE(failed.err.find("collection \"third\" not copied (nothing of it was written)"),
              std::string::npos)
        << failed.err;
    // A home holding the traces only: the target's trace store already holds them.
    const auto traces_only = dir() / "traces-only";
    std::filesystem::create_directories(traces_only);
    std::filesystem::copy_file(home / "traces.db", traces_only / "traces.db");
    const auto refused = copy(traces_only);
    EXPECT_TRUE(exited_with(refused, 2)) << refused.out << refused.err;
    EXPECT_NE(refused.err.find("already holds"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("--no-traces"), std::string::npos) << refused.err;

    use_postgres();
    const auto pg_home = dir() / "pg-home";
    start_store(pg_home);
    start_trace_collector(broker_.endpoint, pg_home);
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "store"));
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "trace"));

    const json after = stats("default");
    for (const char* count :
         {"quads", "terms", "sources", "documents", "chunks", "entity_vectors", "chunk_vectors"}) {
        EXPECT_EQ(after[count], before[count]) << count << ": " << after.dump();
    }
    EXPECT_EQ(stats("second")["quads"], second_before["quads"]);
    const auto collections = glassbox({"call", "store", R"({"op": "collections"})"});
    ASSERT_TRUE(exited_with(collections, 0)) << collections.err;
    std::set<std::string> names;
    const json listed_collections = json::parse(collections.out, nullptr, false);
    for (const auto& c : listed_collections["body"]["collections"]) names.insert(c["collection"]);
    EXPECT_EQ(names, (std::set<std::string>{"default", "second"})) << collections.out;
    const json pg_runs = trace_answer(
        broker_.endpoint, {{"op", "list"}, {"limit", 1000}, {"include_subtraces", true}});
    EXPECT_EQ(session_ids(pg_runs), session_ids(sqlite_runs)) << pg_runs.dump();
    EXPECT_EQ(trace_answer(broker_.endpoint, {{"op", "stats"}})["events"],
              sqlite_trace_stats["events"]);
    const auto listed = glassbox({"traces", "list"});
    ASSERT_TRUE(exited_with(listed, 0)) << listed.err;
    EXPECT_NE(listed.out.find(kQuestion), std::string::npos) << listed.out;
    std::string session;
    for (const auto& run : sqlite_runs["sessions"]) {
        if (run.value("question", "") == kQuestion) session = run.value("session", "");
    }
    const json shown = trace_answer(broker_.endpoint, {{"op", "show"}, {"session", session}});
    ASSERT_TRUE(shown.is_object()) << "the copied trace cannot be shown";
    EXPECT_EQ(shown["session"]["question"], kQuestion) << shown.dump();
    const auto asked_again = glassbox({"invoke", "graph-rag", "-q", kQuestion, "--no-stream"});
    ASSERT_TRUE(exited_with(asked_again, 0)) << asked_again.err;
    EXPECT_NE(asked_again.out.find("Ilse Varrow"), std::string::npos) << asked_again.out;
    EXPECT_FALSE(std::filesystem::exists(pg_home / "knowledge" / "default.db"));
}

// A collection of 100,000 facts (10,000 subjects): copied across many INSERTs with every count
// equal, and served by a store worker on PostgreSQL. The copy's time is printed (its line), not
// asserted.
TEST_F(StoreCopy, CopiesAHundredThousandFactsWithEqualCounts) {
    constexpr int kSubjects = 10'000;
    constexpr int kPerSubject = 10;
    const auto file = dir() / "facts.nt";
    {
        std::ofstream out(file);
        for (int s = 0; s < kSubjects; ++s) {
            for (int p = 0; p < kPerSubject; ++p) {
                out << "<urn:copy:e" << s << "> <urn:copy:p" << p << "> \"value " << s << "/" << p
                    << "\" .\n";
            }
        }
    }
    const auto home = dir() / "home";
    broker_ = start_broker();
    ASSERT_FALSE(broker_.endpoint.empty()) << "no broker";
    auto& sqlite_store = start_store(home);
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "store"));
    const auto loaded = glassbox({"load", "rdf", file.string(), "--tier", "1", "--no-index"});
    ASSERT_TRUE(exited_with(loaded, 0)) << loaded.err;
    const json before = stats("default");
    ASSERT_EQ(before.value("quads", 0), kSubjects * kPerSubject) << before.dump();

    const auto copied = copy(home, {"--no-traces"});
    ASSERT_TRUE(exited_with(copied, 0)) << copied.out << copied.err;
    std::cout << copied.out;
    EXPECT_NE(
        copied.out.find("collection default: 100,000 facts, 0 documents, 0 chunks, 0 vectors; "),
        std::string::npos)
        << copied.out;
    EXPECT_NE(copied.out.find(", checked equal\n"), std::string::npos) << copied.out;

    sqlite_store.terminate();
    ASSERT_TRUE(wait_for_workers(broker_.endpoint, "store", 0, milliseconds{10'000}));
    use_postgres();
    start_store(dir() / "pg-home");
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "store"));
    const json after = stats("default");
    for (const char* count : {"quads", "subjects", "predicates", "objects", "terms", "sources"})
        EXPECT_EQ(after[count], before[count]) << count << ": " << after.dump();
}

}  // namespace
}  // namespace glassbox::integration
