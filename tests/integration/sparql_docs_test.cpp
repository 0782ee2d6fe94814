// docs/sparql.md's queries against a real Virtuoso (issue 36 point 4): `glassbox up` with
// sparql.engine = "virtuoso" starts it in the home, the sample is loaded, questions are asked
// through graph RAG, document RAG and the agent, a `load rdf --replace` changes one fact, and once
// `status` shows both mirrors current every ```sparql block of the page (read from the file now,
// so the page cannot drift from what runs) must succeed with rows. Then POST /api/v1/sparql on
// the gateway `up` started: JSON, CSV, TSV, 406, 400 for an update and for a refused query,
// 401/403 without the read scope; and, without an engine, 503 and `glassbox sparql`'s exit 2.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tests/support/bus_peers.hpp"
#include "tests/support/closed_port.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

const fs::path kSample = GLASSBOX_SAMPLE_DIR;
const fs::path kSourceDir = GLASSBOX_SOURCE_DIR;
const std::string kProbe = (kSourceDir / "tests/support/http_probe.py").string();
const std::string kOpenApiCheck = (kSourceDir / "tests/support/openapi_check.py").string();
constexpr const char* kVirtuoso = "/usr/bin/virtuoso-t";
constexpr const char* kReader = "reader-0123456789abcdef";
constexpr const char* kAskOnly = "askonly-0123456789abcdef";

// A ```sparql block of the page and the heading line above it.
struct DocQuery {
    std::string heading;
    std::string text;
};

// Every ```sparql block of docs/sparql.md, in order, each with the last `### ` heading before it.
std::vector<DocQuery> doc_queries() {
    std::ifstream in(kSourceDir / "docs" / "sparql.md");
    std::vector<DocQuery> queries;
    std::string line, heading;
    bool inside = false;
    while (std::getline(in, line)) {
        if (!inside && line.rfind("### ", 0) == 0) heading = line.substr(4);
        if (!inside && line == "```sparql") {
            inside = true;
            queries.push_back({heading, ""});
        } else if (inside && line == "```") {
            inside = false;
        } else if (inside) {
            queries.back().text.append(line).append("\n");
        }
    }
    return queries;
}

// The trace a command printed ("trace: <session>").
std::string printed_trace(const std::string& out) {
    static const std::regex kTrace(R"(trace: (urn:glassbox:[0-9a-f-]{36}:question))");
    std::smatch found;
    return std::regex_search(out, found, kTrace) ? found[1].str() : std::string();
}

// One answer as http_probe.py prints it.
struct HttpAnswer {
    int status = 0;
    json headers;
    std::string body;
    json body_json() const { return json::parse(body, nullptr, false); }
    std::string describe() const { return std::to_string(status) + " " + body.substr(0, 2000); }
};

class SparqlFrontEndTest : public ClusterTest {
protected:
    void write_config(const std::string& text) {
        fs::create_directories(home_);
        std::ofstream(home_ / "config.toml") << text;
    }

    CommandResult glassbox(std::vector<std::string> args,
                           milliseconds timeout = milliseconds{120'000}) {
        args.insert(args.end(), {"--home", home_.string()});
        return run_glassbox(std::move(args), timeout);
    }

    HttpAnswer http(const std::string& method, const std::string& path,
                    const std::optional<std::string>& body,
                    const std::vector<std::string>& headers) {
        std::vector<std::string> argv = {"/usr/bin/python3", kProbe, method, url_ + path};
        if (body) argv.insert(argv.end(), {"--body", *body});
        for (const auto& h : headers) argv.insert(argv.end(), {"--header", h});
        const auto done = run_command(argv, dir(), milliseconds{90'000});
        HttpAnswer answer;
        const json out = json::parse(done.out, nullptr, false);
        if (!exited_with(done, 0) || !out.is_object()) {
            ADD_FAILURE() << "http_probe failed: " << done.err << done.out;
            return answer;
        }
        answer.status = out.value("status", 0);
        answer.headers = out.value("headers", json::object());
        answer.body = out.value("body", "");
        return answer;
    }

    // POST /api/v1/sparql with `query` as an application/sparql-query body.
    HttpAnswer post_query(const std::string& query, const std::string& accept,
                          const std::string& token = kReader) {
        std::vector<std::string> headers = {"Content-Type: application/sparql-query",
                                            "Accept: " + accept};
        if (!token.empty()) headers.push_back("Authorization: Bearer " + token);
        return http("POST", "/api/v1/sparql", query, headers);
    }

    fs::path home_ = dir() / "home";
    std::string url_;
};

// The home, the pipeline and Virtuoso of the docs test.
class SparqlDocsTest : public SparqlFrontEndTest {
protected:
    void SetUp() override {
        if (!fs::exists(kVirtuoso)) GTEST_SKIP() << kVirtuoso << " is absent (ops/install-deps)";
        const auto tokens = dir() / "tokens";
        {
            std::ofstream out(tokens);
            out << kReader << " read reader\n" << kAskOnly << " ask askonly\n";
        }
        fs::permissions(tokens, fs::perms::owner_read | fs::perms::owner_write);
        std::string config = "[sparql]\nengine = \"virtuoso\"\n\n[gateway]\ntokens = \"";
        config.append(tokens.string()).append("\"\n");
        write_config(config);
        auto& up = start_up(home_, dir() / "up.ready");
        const auto ready = wait_for_ready_file(dir() / "up.ready", up, milliseconds{120'000});
        ASSERT_TRUE(ready) << up.stderr_text();
        endpoint_ = ready->value("endpoint", "");
        url_ = ready->value("gateway", "");
        ASSERT_FALSE(url_.empty()) << ready->dump();
        use_curve_for(endpoint_, home_curve_keys(home_.string()));
        for (const char* service :
             {"store", "trace", "embeddings", "llm", "graph-rag", "document-rag", "agent"})
            ASSERT_TRUE(wait_for_service(endpoint_, service, milliseconds{60'000})) << service;
    }

    // A question through `engine`; its trace.
    std::string ask(const std::string& engine, const std::string& question) {
        const auto r = glassbox({"invoke", engine, "-q", question});
        EXPECT_TRUE(exited_with(r, 0)) << r.err << r.out;
        auto session = printed_trace(r.out);
        EXPECT_FALSE(session.empty()) << r.out;
        return session;
    }

    // `glassbox status --json`'s sparql member (null when it has none).
    json sparql_status() {
        const auto r = glassbox({"status", "--json"}, milliseconds{30'000});
        const json status = json::parse(r.out, nullptr, false);
        return status.is_object() ? status.value("sparql", json()) : json();
    }

    // Both mirrors report nothing pending and every collection mirrored at its version.
    static bool mirrors_current(const json& sparql) {
        if (!sparql.is_object()) return false;
        const json traces = sparql.value("traces", json());
        const json store = sparql.value("collections", json());
        if (!traces.is_object() || !store.is_object()) return false;
        if (traces.value("pending", -1) != 0 || store.value("pending", -1) != 0) return false;
        const json collections = store.value("collections", json::array());
        if (!collections.is_array() || collections.empty()) return false;
        for (const auto& c : collections)
            if (c.value("mirrored", -1) < c.value("version", 0)) return false;
        return true;
    }

    // A query through `glassbox sparql --format json`: its bindings (null on failure).
    json select(const std::string& name, const std::string& text) {
        const auto file = dir() / (name + ".rq");
        std::ofstream(file) << text;
        const auto r = glassbox({"sparql", "--file", file.string(), "--format", "json"});
        EXPECT_TRUE(exited_with(r, 0)) << name << ": " << r.err << "\n" << text;
        const json results = json::parse(r.out, nullptr, false);
        if (!results.is_object()) return json();
        return results["results"].value("bindings", json::array());
    }

    // The sample loaded from a copy (kb_), dated old enough to be past any revalidation age
    // (docs/knowledge.md, "Freshness"), and its documents.
    void load_sample_copy() {
        fs::copy_file(kSample / "orrin.ttl", kb_);
        std::ofstream(kb_, std::ios::app)
            << "\n<> <http://purl.org/dc/terms/modified> "
               "\"2020-01-01\"^^<http://www.w3.org/2001/XMLSchema#date> .\n";
        auto loaded = glassbox({"load", "rdf", kb_.string(), "--tier", "1"});
        ASSERT_TRUE(exited_with(loaded, 0)) << loaded.err;
        loaded = glassbox({"load", "docs", (kSample / "docs").string(), "--date", "2020-01-01"});
        ASSERT_TRUE(exited_with(loaded, 0)) << loaded.err;
    }

    // One fact of the copy changes, Greyhollow Light's designer, and the copy replaces the load.
    void replace_designer() {
        std::string text;
        {
            std::ifstream in(kb_);
            std::stringstream all;
            all << in.rdbuf();
            text = all.str();
        }
        const std::string old_fact = ":designedBy :IlseVarrow ; :keptBy :TomasHeddle";
        ASSERT_NE(text.find(old_fact), std::string::npos);
        text.replace(text.find(old_fact), old_fact.size(),
                     ":designedBy :BenedictHale ; :keptBy :TomasHeddle");
        std::ofstream(kb_) << text;
        const auto replaced = glassbox({"load", "rdf", kb_.string(), "--tier", "1", "--replace"});
        ASSERT_TRUE(exited_with(replaced, 0)) << replaced.err;
    }

    // Once the change has marked `affected_run` (its invalidation and pending mirror row are
    // stored together), until both mirrors report everything written; then status says so.
    void wait_for_mirrors(const std::string& affected_run) {
        ASSERT_TRUE(test_support::wait_until(
            [&] {
                const auto r = glassbox({"traces", "list", "--affected", "--json"});
                return r.out.find(affected_run) != std::string::npos;
            },
            test_support::kHangGuard, milliseconds{200}))
            << "the replace marked no answer";
        json sparql;
        ASSERT_TRUE(
            test_support::wait_until([&] { return mirrors_current(sparql = sparql_status()); },
                                     test_support::kHangGuard, milliseconds{200}))
            << sparql.dump();
        const auto status_text = glassbox({"status"}, milliseconds{30'000});
        EXPECT_NE(status_text.out.find("sparql   http://"), std::string::npos) << status_text.out;
        EXPECT_NE(status_text.out.find("(0 pending)"), std::string::npos) << status_text.out;
    }

    fs::path kb_ = dir() / "orrin.ttl";
    std::string endpoint_;
};

TEST_F(SparqlDocsTest, EveryQueryOfTheDocsAnswersOverMirroredTracesAndKnowledge) {
    ASSERT_NO_FATAL_FAILURE(load_sample_copy());
    const auto graph_run = ask("graph-rag", "Who designed Greyhollow Light?");
    const auto document_run = ask("document-rag", "Who designed Greyhollow Light?");
    const auto gale_run = ask("document-rag", "What happened in the Great Gale?");
    const auto agent_run = ask("agent", "Who designed Greyhollow Light?");
    ask("graph-rag", "Which shipyard built the MV Curlew?");
    ASSERT_NO_FATAL_FAILURE(replace_designer());
    ASSERT_NO_FATAL_FAILURE(wait_for_mirrors(graph_run));

    const auto queries = doc_queries();
    ASSERT_EQ(queries.size(), 10u) << "docs/sparql.md gives ten queries";
    std::map<std::string, std::string> results;
    for (std::size_t i = 0; i < queries.size(); ++i) {
        const auto rows = select("query-" + std::to_string(i + 1), queries[i].text);
        ASSERT_TRUE(rows.is_array()) << queries[i].heading;
        EXPECT_GE(rows.size(), 1u) << queries[i].heading << "\n" << queries[i].text;
        results[queries[i].heading] = rows.dump();
    }
    // What several must find (by heading words, so a reworded heading fails loudly here).
    const auto find = [&results](const std::string& words) {
        for (const auto& [heading, rows] : results)
            if (heading.find(words) != std::string::npos) return rows;
        ADD_FAILURE() << "no query headed \"" << words << "\"";
        return std::string();
    };
    EXPECT_NE(find("tier-3").find(document_run), std::string::npos);
    EXPECT_NE(find("document").find(gale_run), std::string::npos);
    const auto affected = find("affected");
    EXPECT_NE(affected.find(graph_run), std::string::npos) << affected;
    EXPECT_NE(affected.find(agent_run), std::string::npos) << affected;
    EXPECT_NE(affected.find("IlseVarrow"), std::string::npos) << affected;
    const auto gone = find("no longer");
    EXPECT_NE(gone.find(graph_run), std::string::npos) << gone;
    EXPECT_EQ(gone.find(gale_run), std::string::npos) << gone;
    EXPECT_NE(find("revalidation").find("orrin.ttl"), std::string::npos);
    EXPECT_NE(find("Tokens").find("glassbox-extractive-v1"), std::string::npos);
    EXPECT_NE(find("written by").find(graph_run), std::string::npos);

    // The table: IRIs shortened with the well-known prefixes only.
    const auto table = glassbox(
        {"sparql", "SELECT ?type WHERE { GRAPH ?g { ?s a ?type } } GROUP BY ?type ORDER BY ?type"});
    ASSERT_TRUE(exited_with(table, 0)) << table.err;
    EXPECT_NE(table.out.find("gb:Synthesis"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("prov:Activity"), std::string::npos) << table.out;
    // CSV straight from the engine.
    const auto csv = glassbox({"sparql", "--format", "csv", "ASK { ?s ?p ?o }"});
    ASSERT_TRUE(exited_with(csv, 0)) << csv.err;
    // A query the engine refuses: exit 2 with its reason.
    const auto refused = glassbox({"sparql", "SELECT ?x WHERE { ?x ?y }"});
    EXPECT_TRUE(exited_with(refused, 2)) << refused.err;
    EXPECT_NE(refused.err.find("InvalidRequest"), std::string::npos) << refused.err;
}

TEST_F(SparqlDocsTest, PostSparqlAnswersJsonCsvTsvAndRefusesWhatItMust) {
    const std::string query =
        "PREFIX gb: <https://glassbox.dev/ns#>\n"
        "SELECT ?x WHERE { VALUES ?x { gb:one gb:two } } ORDER BY ?x";
    const auto as_json = post_query(query, "application/sparql-results+json");
    ASSERT_EQ(as_json.status, 200) << as_json.describe();
    EXPECT_EQ(as_json.headers.value("content-type", "").rfind("application/sparql-results+json", 0),
              0u)
        << as_json.headers.dump();
    const json body = as_json.body_json();
    ASSERT_TRUE(body.is_object()) << as_json.describe();
    EXPECT_EQ(body["results"]["bindings"].size(), 2u) << as_json.describe();

    const auto as_csv = post_query(query, "text/csv");
    ASSERT_EQ(as_csv.status, 200) << as_csv.describe();
    EXPECT_NE(as_csv.body.find("https://glassbox.dev/ns#one"), std::string::npos);
    EXPECT_EQ(as_csv.headers.value("content-type", "").rfind("text/csv", 0), 0u);
    const auto as_tsv = post_query(query, "text/tab-separated-values");
    ASSERT_EQ(as_tsv.status, 200) << as_tsv.describe();
    // The engine's own TSV (Virtuoso quotes IRIs rather than writing <iri>).
    EXPECT_NE(as_tsv.body.find("https://glassbox.dev/ns#two"), std::string::npos);
    EXPECT_EQ(as_tsv.headers.value("content-type", "").rfind("text/tab-separated-values", 0), 0u);

    // The form encoding of the SPARQL 1.1 Protocol.
    const auto form = http("POST", "/api/v1/sparql", "query=ASK%20%7B%20%3Fs%20%3Fp%20%3Fo%20%7D",
                           {"Content-Type: application/x-www-form-urlencoded",
                            std::string("Authorization: Bearer ") + kReader});
    EXPECT_EQ(form.status, 200) << form.describe();

    EXPECT_EQ(post_query(query, "text/html").status, 406);
    const auto update = post_query(
        "PREFIX gb: <https://glassbox.dev/ns#>\n# a comment\n"
        "INSERT DATA { GRAPH <urn:x> { gb:a gb:b gb:c } }",
        "application/sparql-results+json");
    EXPECT_EQ(update.status, 400) << update.describe();
    EXPECT_EQ(update.body_json().value("error", ""), "InvalidRequest") << update.describe();
    const auto refused = post_query("SELECT ?x WHERE { ?x ?y }", "application/sparql-results+json");
    EXPECT_EQ(refused.status, 400) << refused.describe();
    EXPECT_FALSE(refused.body_json().value("detail", "").empty()) << refused.describe();
    EXPECT_EQ(post_query(query, "application/sparql-results+json", "").status, 401);
    EXPECT_EQ(post_query(query, "application/sparql-results+json", kAskOnly).status, 403);
    EXPECT_EQ(http("POST", "/api/v1/sparql", query,
                   {"Content-Type: text/plain", std::string("Authorization: Bearer ") + kReader})
                  .status,
              415);

    // The OpenAPI document describes the route and its JSON answer.
    const auto openapi = http("GET", "/api/v1/openapi.json", std::nullopt, {});
    ASSERT_EQ(openapi.status, 200);
    std::ofstream(dir() / "openapi.json") << openapi.body;
    std::ofstream(dir() / "answers.jsonl")
        << json{{"route", {"post", "/api/v1/sparql"}}}.dump() << "\n"
        << json{{"method", "post"},
                {"path", "/api/v1/sparql"},
                {"status", 200},
                {"content_type", "application/sparql-results+json"},
                {"body", body}}
               .dump()
        << "\n"
        << json{{"method", "post"},
                {"path", "/api/v1/sparql"},
                {"status", 400},
                {"content_type", "application/problem+json"},
                {"body", update.body_json()}}
               .dump()
        << "\n";
    const auto checked =
        run_command({"/bin/sh", "-c",
                     "/usr/bin/python3 " + kOpenApiCheck + " " + (dir() / "openapi.json").string() +
                         " < " + (dir() / "answers.jsonl").string()},
                    dir(), milliseconds{60'000});
    EXPECT_TRUE(exited_with(checked, 0)) << checked.out << checked.err;
}

// Without an engine: the route answers 503, `glassbox sparql` exits 2 saying how to enable one,
// and an engine that does not answer is exit 1 (ServiceUnavailable, docs/operations.md).
TEST_F(SparqlFrontEndTest, WithoutAnEngineTheRouteIs503AndTheCommandSaysHowToEnableOne) {
    write_config("");
    auto broker = start_broker();
    const auto ready = dir() / "gateway.ready";
    auto& gateway = start_process(
        "gateway", {glassbox_binary(), "gateway", "--listen", "127.0.0.1:0", "--broker",
                    broker.endpoint, "--home", home_.string(), "--ready-file", ready.string()});
    const auto info = wait_for_ready_file(ready, gateway, milliseconds{20'000});
    ASSERT_TRUE(info) << gateway.stderr_text();
    url_ = info->value("url", "");
    const auto answer =
        post_query("SELECT * WHERE { ?s ?p ?o } LIMIT 1", "application/sparql-results+json", "");
    EXPECT_EQ(answer.status, 503) << answer.describe();
    EXPECT_EQ(answer.headers.value("content-type", ""), "application/problem+json");

    const auto cli = glassbox({"sparql", "SELECT * WHERE { ?s ?p ?o } LIMIT 1"});
    EXPECT_TRUE(exited_with(cli, 2)) << cli.err;
    EXPECT_NE(cli.err.find("sparql.engine = \"virtuoso\""), std::string::npos) << cli.err;
    EXPECT_NE(cli.err.find("docs/sparql.md"), std::string::npos) << cli.err;

    std::string config = "[sparql]\nendpoint = \"http://127.0.0.1:";
    config.append(std::to_string(test_support::closed_loopback_port())).append("/sparql\"\n");
    write_config(config);
    const auto down = glassbox({"sparql", "ASK { ?s ?p ?o }", "--timeout-ms", "5000"});
    EXPECT_TRUE(exited_with(down, 1)) << down.err;
    EXPECT_NE(down.err.find("ServiceUnavailable"), std::string::npos) << down.err;
}

}  // namespace
}  // namespace glassbox::integration
