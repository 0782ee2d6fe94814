// The SPARQL client against a real Virtuoso (tests/support/virtuoso_server.hpp): Graph Store
// writes read back by queries, the engine's refusals and timeouts as typed errors, an engine
// that stopped; and `glassbox up` with sparql.engine = "virtuoso" (docs/sparql.md). Skipped,
// with the reason, only when /usr/bin/virtuoso-t is not installed.
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "http/sparql_client.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/virtuoso_server.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::integration {
namespace {

using base::ErrorType;
using http::SparqlClient;
using http::SparqlConfig;
using namespace std::chrono_literals;

// N-Triples of `count` triples <urn:s{i}> <urn:p{i % 7}> "v{i}" (distinct subjects).
std::string ntriples(int count, const std::string& prefix = "urn:s") {
    std::string text;
    for (int i = 0; i < count; ++i) {
        text.append("<").append(prefix).append(std::to_string(i)).append("> <urn:p");
        text.append(std::to_string(i % 7)).append("> \"v").append(std::to_string(i));
        text.append("\" .\n");
    }
    return text;
}

std::string count_query(const std::string& graph) {
    return "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <" + graph + "> { ?s ?p ?o } }";
}

// The count a count_query answered, or -1 (with the failure added to the test).
long long count_in(SparqlClient& client, const std::string& graph) {
    auto answer = client.select(count_query(graph));
    if (!answer) {
        ADD_FAILURE() << answer.error().describe();
        return -1;
    }
    const auto& bindings = answer.value()["results"]["bindings"];
    if (!bindings.is_array() || bindings.size() != 1) {
        ADD_FAILURE() << answer.value().dump();
        return -1;
    }
    return std::stoll(bindings[0]["n"]["value"].get<std::string>());
}

// One Virtuoso for the suite (a start takes seconds); each test writes graphs of its own.
class SparqlTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (VirtuosoServer::skip_reason()) return;
        dir_ = new TempDir("glassbox-sparql");
        server_ = new std::optional<VirtuosoServer>(VirtuosoServer::start(dir_->path() / "db"));
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
        delete dir_;
        dir_ = nullptr;
    }
    void SetUp() override {
        if (auto why = VirtuosoServer::skip_reason()) GTEST_SKIP() << *why;
        ASSERT_TRUE(server_ != nullptr && server_->has_value());
    }
    static const SparqlConfig& config() { return (*server_)->config(); }

    static TempDir* dir_;
    static std::optional<VirtuosoServer>* server_;
};

TempDir* SparqlTest::dir_ = nullptr;
std::optional<VirtuosoServer>* SparqlTest::server_ = nullptr;

TEST_F(SparqlTest, PutGraphReplacesAndSelectCountsTheTriples) {
    SparqlClient client(config());
    // An IRI with characters the query string must carry percent-encoded.
    const std::string graph = "urn:glassbox:test/put?x=1&y=a%20b#frag";
    ASSERT_TRUE(client.put_graph(graph, ntriples(3)).ok());
    EXPECT_EQ(count_in(client, graph), 3);
    ASSERT_TRUE(client.put_graph(graph, ntriples(2, "urn:other")).ok());
    EXPECT_EQ(count_in(client, graph), 2) << "PUT replaces the graph";
    auto subjects =
        client.select("SELECT ?s WHERE { GRAPH <" + graph + "> { ?s ?p ?o } } ORDER BY ?s");
    ASSERT_TRUE(subjects) << subjects.error().describe();
    const auto& rows = subjects.value()["results"]["bindings"];
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0]["s"]["value"], "urn:other0");
    EXPECT_EQ(rows[0]["s"]["type"], "uri");
}

TEST_F(SparqlTest, PostGraphAddsAndDeleteGraphRemoves) {
    SparqlClient client(config());
    const std::string graph = "urn:glassbox:test:post";
    ASSERT_TRUE(client.put_graph(graph, ntriples(2)).ok());
    ASSERT_TRUE(client.post_graph(graph, ntriples(3, "urn:added")).ok());
    EXPECT_EQ(count_in(client, graph), 5) << "POST adds to the graph";
    ASSERT_TRUE(client.delete_graph(graph).ok());
    EXPECT_EQ(count_in(client, graph), 0);
    const auto again = client.delete_graph(graph);
    EXPECT_TRUE(again.ok()) << "a graph that is gone is deleted already: "
                            << again.error().describe();
}

TEST_F(SparqlTest, ResultsComeAsCsvAndTsvToo) {
    SparqlClient client(config());
    const std::string graph = "urn:glassbox:test:formats";
    ASSERT_TRUE(client.put_graph(graph, ntriples(1)).ok());
    const std::string query = "SELECT ?o WHERE { GRAPH <" + graph + "> { ?s ?p ?o } }";
    auto csv = client.query(query, http::kSparqlCsv);
    ASSERT_TRUE(csv) << csv.error().describe();
    EXPECT_EQ(csv.value().status, 200);
    EXPECT_NE(csv.value().content_type.find("text/csv"), std::string::npos);
    EXPECT_NE(csv.value().body.find("v0"), std::string::npos) << csv.value().body;
    auto tsv = client.query(query, http::kSparqlTsv);
    ASSERT_TRUE(tsv) << tsv.error().describe();
    EXPECT_NE(tsv.value().content_type.find("text/tab-separated-values"), std::string::npos);
    auto ask = client.select("ASK { GRAPH <" + graph + "> { ?s ?p \"v0\" } }");
    ASSERT_TRUE(ask) << ask.error().describe();
    EXPECT_EQ(ask.value()["boolean"], true);
}

TEST_F(SparqlTest, AMalformedQueryIsRefusedWithTheEnginesReason) {
    SparqlClient client(config());
    const auto answer = client.query("SELEC ?x WHERE { ?x ?y ?z }", http::kSparqlJson);
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, ErrorType::kInvalidRequest) << answer.error().describe();
    EXPECT_NE(answer.error().message.find("syntax error"), std::string::npos)
        << answer.error().message;
    EXPECT_EQ(answer.error().message.find('\n'), std::string::npos) << "one line";
}

TEST_F(SparqlTest, TheAnonymousEndpointCannotUpdate) {
    SparqlClient client(config());  // queries go to /sparql without credentials
    const std::string graph = "urn:glassbox:test:anonymous";
    const auto answer = client.query(
        "INSERT DATA { GRAPH <" + graph + "> { <urn:a> <urn:b> <urn:c> } }", http::kSparqlJson);
    ASSERT_FALSE(answer) << answer.value().body;
    EXPECT_EQ(answer.error().type, ErrorType::kInvalidRequest) << answer.error().describe();
    EXPECT_EQ(count_in(client, graph), 0);
}

TEST_F(SparqlTest, TheDbaPasswordIsRandomAndOwnerOnly) {
    const auto file = (*server_)->instance().dir / "dba.password";
    struct stat info {};
    ASSERT_EQ(::stat(file.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600);
    EXPECT_NE(config().password, "dba");
    EXPECT_GE(config().password.size(), 16u);
    SparqlConfig wrong = config();
    wrong.password = "dba";
    SparqlClient client(wrong);
    const auto put = client.put_graph("urn:glassbox:test:wrong", ntriples(1));
    ASSERT_FALSE(put);
    EXPECT_EQ(put.error().type, ErrorType::kInvalidRequest) << put.error().describe();
    EXPECT_NE(put.error().message.find("401"), std::string::npos) << put.error().message;
}

TEST_F(SparqlTest, AQueryPastItsTimeoutIsATimeout) {
    SparqlClient writer(config());
    const std::string graph = "urn:glassbox:test:big";
    ASSERT_TRUE(writer.put_graph(graph, ntriples(2'000)).ok());
    SparqlConfig quick = config();
    quick.timeout = 500ms;
    SparqlClient client(quick);
    // 2,000^3 = 8e9 rows to count: far beyond half a second on any machine.
    const std::string cross = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <" + graph +
                              "> { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } }";
    const auto start = std::chrono::steady_clock::now();
    const auto answer = client.select(cross);
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(answer) << answer.value().dump();
    EXPECT_EQ(answer.error().type, ErrorType::kTimeout) << answer.error().describe();
    EXPECT_LT(took, 500ms + http::detail::kSparqlWireGrace + 2s);
    EXPECT_EQ(count_in(writer, graph), 2'000) << "the engine still answers";
}

// A server of its own: stopped (the engine down), then started again on the same folder.
TEST(SparqlEngineDownTest, AStoppedEngineIsUnavailableAndARestartKeepsTheData) {
    if (auto why = VirtuosoServer::skip_reason()) GTEST_SKIP() << *why;
    TempDir dir("glassbox-sparql-down");
    auto server = VirtuosoServer::start(dir.path() / "db");
    ASSERT_TRUE(server);
    const SparqlConfig config = server->config();
    {
        SparqlClient client(config);
        ASSERT_TRUE(client.put_graph("urn:glassbox:test:kept", ntriples(4)).ok());
    }
    server->stop();
    SparqlClient client(config);
    const auto query = client.select(count_query("urn:glassbox:test:kept"));
    ASSERT_FALSE(query);
    EXPECT_EQ(query.error().type, ErrorType::kServiceUnavailable) << query.error().describe();
    const auto put = client.put_graph("urn:glassbox:test:kept", ntriples(1));
    ASSERT_FALSE(put);
    EXPECT_EQ(put.error().type, ErrorType::kServiceUnavailable) << put.error().describe();

    server.reset();
    auto again = VirtuosoServer::start(dir.path() / "db");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->config().password, config.password) << "the kept dba password";
    SparqlClient restarted(again->config());
    EXPECT_EQ(count_in(restarted, "urn:glassbox:test:kept"), 4);
}

// `glassbox up` with sparql.engine = "virtuoso".
class SparqlUpTest : public ClusterTest {};

std::vector<pid_t> started_pids(const std::string& log, const std::string& name) {
    std::vector<pid_t> pids;
    const std::regex line("event=started child=" + name + " pid=([0-9]+)");
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator();
         ++it) {
        pids.push_back(static_cast<pid_t>(std::stol((*it)[1].str())));
    }
    return pids;
}

TEST_F(SparqlUpTest, UpStartsVirtuosoAndEveryCommandFindsItThenStopsIt) {
    if (auto why = VirtuosoServer::skip_reason()) GTEST_SKIP() << *why;
    const auto home = dir() / "up-home";
    std::filesystem::create_directories(home);
    std::filesystem::permissions(home, std::filesystem::perms::owner_all);
    std::ofstream(home / "config.toml") << "[sparql]\nengine = \"virtuoso\"\n";
    const auto ready_file = dir() / "up.ready";
    auto& up =
        start_process("up", {glassbox_binary(), "up", "--home", home.string(), "--bind",
                             "tcp://127.0.0.1:*", "--pub", "tcp://127.0.0.1:*", "--heartbeat-ms",
                             std::to_string(kHeartbeatMs), "--services", "trace-collector",
                             "--no-gateway", "--ready-file", ready_file.string()});
    const auto ready = wait_for_ready_file(ready_file, up, 120'000ms);
    ASSERT_TRUE(ready) << up.stderr_text();
    const std::string endpoint = ready->value("sparql", "");
    ASSERT_TRUE(endpoint.starts_with("http://127.0.0.1:")) << ready->dump();

    // The resolved settings name the engine from the runtime state, its password masked.
    const auto shown = run_glassbox({"config", "show", "--json", "--home", home.string()});
    ASSERT_EQ(shown.status.code, 0) << shown.err;
    const auto json = nlohmann::json::parse(shown.out, nullptr, false);
    std::map<std::string, nlohmann::json> entries;
    for (const auto& entry : json["settings"]) entries[entry["key"]] = entry;
    EXPECT_EQ(entries["sparql.endpoint"]["value"], endpoint);
    EXPECT_EQ(entries["sparql.endpoint"]["source"], "state");
    EXPECT_EQ(entries["sparql.user"]["value"], "dba");
    EXPECT_EQ(entries["sparql.password"]["value"], "***");
    const auto state = nlohmann::json::parse(read_file(home / "run" / "endpoints.json"));
    const std::string password = state.value("sparql.password", "");
    ASSERT_FALSE(password.empty());
    EXPECT_EQ(shown.out.find(password), std::string::npos) << "never printed";
    const auto table = run_glassbox({"config", "show", "--home", home.string()});
    EXPECT_EQ(table.out.find(password), std::string::npos) << "never printed";

    // The engine answers, and takes writes with the credentials `up` wrote.
    SparqlConfig config;
    config.query_url = endpoint;
    config.graph_store_url = state.value("sparql.graph_store", "");
    config.user = state.value("sparql.user", "");
    config.password = password;
    SparqlClient client(config);
    ASSERT_TRUE(client.put_graph("urn:glassbox:test:up", ntriples(3)).ok());
    EXPECT_EQ(count_in(client, "urn:glassbox:test:up"), 3);

    // SIGTERM: Virtuoso stops with the rest.
    const auto virtuoso = started_pids(up.stderr_text(), "virtuoso");
    ASSERT_EQ(virtuoso.size(), 1u) << up.stderr_text();
    up.send_signal(SIGTERM);
    const auto status = up.wait_exit(60'000ms);
    ASSERT_TRUE(status) << "glassbox up did not stop";
    EXPECT_TRUE(status->exited && status->code == 0) << status->describe();
    EXPECT_TRUE(::kill(virtuoso[0], 0) != 0 && errno == ESRCH) << "Virtuoso still runs";
    const auto after = client.select(count_query("urn:glassbox:test:up"));
    ASSERT_FALSE(after);
    EXPECT_EQ(after.error().type, ErrorType::kServiceUnavailable) << after.error().describe();
}

}  // namespace
}  // namespace glassbox::integration
