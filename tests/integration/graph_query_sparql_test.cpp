// graph-query's SPARQL path against a real Virtuoso (issue 36 point 5): the sample (ops/sample/
// orrin.ttl) loaded into the store and PUT into the engine as the collection's graph, then the
// aggregate question set of ops/make-aggregate-questions asked of three agents on one in-process
// bus: the store's own `aggregate` op, the SPARQL engine, and an engine that is down (every
// attempt falls back to the store and says so). The answers must be the same each way; and the
// SPARQL form of each filter kind must select on Virtuoso what the store selects.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "base/ascii.hpp"
#include "http/sparql_client.hpp"
#include "loader/rdf_reader.hpp"
#include "schema/messages.hpp"
#include "schema/sparql_graphs.hpp"
#include "tests/integration/sample_knowledge.hpp"
#include "tests/support/closed_port.hpp"
#include "tests/support/process.hpp"
#include "tests/support/rag_cluster.hpp"
#include "tests/support/virtuoso_server.hpp"
#include "workers/agent/agent_service.hpp"
#include "workers/agent/sparql_graph_query.hpp"
#include "workers/agent/tool_catalog.hpp"
#include "workers/llm/extractive_provider.hpp"
#include "workers/llm/llm_service.hpp"
#include "workers/llm/prompt_template.hpp"
#include "workers/store/graph_aggregate.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kSourceDir = fs::path(GLASSBOX_SAMPLE_DIR).parent_path().parent_path();
constexpr const char* kCollection = "sample";

// graph-query's engine: the test's Virtuoso through the one SPARQL client.
class ClientEngine final : public agent::SparqlEngine {
public:
    explicit ClientEngine(http::SparqlConfig config) : client_(std::move(config)) {}
    base::Result<json> select(std::string_view query) override { return client_.select(query); }
    std::string name() const override { return "virtuoso at " + client_.config().query_url; }

private:
    http::SparqlClient client_;
};

std::string sample_ntriples() {
    std::string text;
    auto read = loader::read_rdf(kSample / "orrin.ttl", {},
                                 [&](std::span<const schema::Triple> batch) -> base::Result<void> {
                                     loader::write_nquads(batch, text);
                                     return {};
                                 });
    if (!read) throw std::runtime_error(read.error().describe());
    return text;
}

struct Question {
    std::string id, kind, question;
    std::vector<std::string> answers;
};

// The sample's aggregate questions as ops/make-aggregate-questions writes them.
std::vector<Question> aggregate_questions(const fs::path& dir) {
    const fs::path out = dir / "aggregate.jsonl";
    const auto made = run_command({(kSourceDir / "ops/make-aggregate-questions").string(), "--set",
                                   "sample", "--out", out.string()},
                                  dir, std::chrono::milliseconds{60'000});
    if (!exited_with(made, 0))
        throw std::runtime_error("ops/make-aggregate-questions failed: " + made.err);
    std::vector<Question> questions;
    std::ifstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        const json q = json::parse(line);
        questions.push_back(
            {q["id"], q["kind"], q["question"], q["answers"].get<std::vector<std::string>>()});
    }
    return questions;
}

json agent_request(const std::string& question) {
    schema::AgentRequest request;
    request.question = question;
    request.collection = kCollection;
    request.streaming = true;
    return schema::encode(request);
}

// One agent's answer and its graph-query observations.
struct Answer {
    std::string answer;
    json citations = json::array();  // the facts behind the rows, with their sources
    std::vector<json> observations;  // parsed (non-error ones)
    std::vector<std::string> errors;
};

class GraphQuerySparqlTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (VirtuosoServer::skip_reason()) return;
        dir_ = std::make_unique<TempDir>("glassbox-graph-query-sparql");
        server_ = VirtuosoServer::start(dir_->path() / "virtuoso");
        const std::string ntriples = sample_ntriples();
        http::SparqlClient client(server_->config());
        auto put = client.put_graph(schema::collection_graph_iri(kCollection), ntriples);
        if (!put) throw std::runtime_error("PUT of the sample: " + put.error().describe());
        cluster_ = std::make_unique<rag::testing::RagCluster>();
        cluster_->load_triples(kCollection, "file:///sample/orrin.ttl", ntriples);
        auto templates = llm::TemplateSet::builtin();
        if (!templates) throw std::runtime_error(templates.error().describe());
        cluster_->add_worker(
            "llm-real", llm::make_llm_handler(std::make_shared<const llm::TemplateSet>(*templates),
                                              std::make_shared<llm::ExtractiveProvider>()));
        agent::AgentConfig store_path;
        store_path.llm_service = "llm-real";
        cluster_->add_worker("agent", agent::make_agent_handler(store_path, agent::default_tools()),
                             2);
        agent::AgentConfig sparql_path = store_path;
        sparql_path.sparql = std::make_shared<ClientEngine>(server_->config());
        cluster_->add_worker("agent-sparql",
                             agent::make_agent_handler(sparql_path, agent::default_tools()), 2);
        agent::AgentConfig down = store_path;
        http::SparqlConfig nowhere = server_->config();
        nowhere.query_url =
            "http://127.0.0.1:" + std::to_string(test_support::closed_loopback_port()) + "/sparql";
        nowhere.timeout = std::chrono::milliseconds{2'000};
        down.sparql = std::make_shared<ClientEngine>(nowhere);
        cluster_->add_worker("agent-down", agent::make_agent_handler(down, agent::default_tools()));
        questions_ = aggregate_questions(dir_->path());
    }
    static void TearDownTestSuite() {
        cluster_.reset();
        server_.reset();
        dir_.reset();
    }
    void SetUp() override {
        if (auto why = VirtuosoServer::skip_reason()) GTEST_SKIP() << *why;
    }

    static Answer ask(const std::string& service, const std::string& question) {
        const auto replies = cluster_->request(service, agent_request(question), kDeadline);
        Answer out;
        for (const auto& r : replies) {
            if (r.kind != bus::ReplyKind::kData ||
                r.body.value("message_type", "") != "observation" ||
                r.body.value("tool", "") != "graph-query")
                continue;
            const std::string content = r.body.value("content", "");
            if (r.body.value("error", false)) {
                out.errors.push_back(content);
                continue;
            }
            out.observations.push_back(json::parse(content, nullptr, false));
        }
        const auto& final = replies.back();
        EXPECT_EQ(final.kind, bus::ReplyKind::kFinal)
            << service << ": " << (final.error ? final.error->describe() : final.body.dump());
        if (final.kind == bus::ReplyKind::kFinal) {
            out.answer = final.body.value("answer", "");
            out.citations = final.body.value("citations", json::array());
        }
        return out;
    }

    static constexpr std::chrono::milliseconds kDeadline{30'000};
    static inline std::unique_ptr<TempDir> dir_;
    static inline std::optional<VirtuosoServer> server_;
    static inline std::unique_ptr<rag::testing::RagCluster> cluster_;
    static inline std::vector<Question> questions_;
};

// A list answer's names in order ("A, B and C": A, B, C sorted): two ways of finding the same
// rows may list them in another order when the query orders nothing.
std::string names_sorted(const std::string& answer) {
    std::string text = answer;
    for (std::size_t at; (at = text.find(" and ")) != std::string::npos;) text.replace(at, 5, ",");
    std::vector<std::string> names;
    std::stringstream in(text);
    for (std::string name; std::getline(in, name, ',');) {
        while (!name.empty() && name.front() == ' ') name.erase(0, 1);
        names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& n : names) out.append(n).append("|");
    return out;
}

// Rows as a sorted list of their texts (rows of equal order keys come in either order, and so do
// a count's values).
std::vector<std::string> rows_sorted(const json& rows) {
    std::vector<std::string> out;
    for (json r : rows) {
        if (r.contains("values") && r["values"].is_array()) {
            auto& values = r["values"].get_ref<json::array_t&>();
            std::sort(values.begin(), values.end(),
                      [](const json& a, const json& b) { return a.dump() < b.dump(); });
        }
        out.push_back(r.dump());
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool is_gold(const Question& q, const std::string& answer) {
    for (const auto& a : q.answers)
        if (base::ascii_lower(a) == base::ascii_lower(answer)) return true;
    return false;
}

TEST_F(GraphQuerySparqlTest, TheAggregateQuestionsAnswerTheSameOnTheEngineAsOnTheStore) {
    ASSERT_GE(questions_.size(), 60u);
    std::size_t same = 0, gold_store = 0, gold_sparql = 0, on_engine = 0;
    for (const auto& q : questions_) {
        const Answer store = ask("agent", q.question);
        const Answer sparql = ask("agent-sparql", q.question);
        const bool equal = names_sorted(sparql.answer) == names_sorted(store.answer);
        EXPECT_TRUE(equal) << q.id << ": " << q.question << "\n  SPARQL: " << sparql.answer
                           << "\n  store:  " << store.answer;
        same += equal;
        // The rows' facts are cited from the store's sources either way.
        EXPECT_EQ(sparql.citations.size(), store.citations.size()) << q.id;
        gold_store += is_gold(q, store.answer);
        gold_sparql += is_gold(q, sparql.answer);
        // Every attempt that gave rows ran on the engine (none fell back), with its SPARQL text.
        for (const auto& o : sparql.observations) {
            EXPECT_EQ(o.value("engine", ""), "virtuoso at " + server_->config().query_url)
                << q.id << ": " << o.dump();
            EXPECT_FALSE(o.contains("engine_error")) << q.id << ": " << o.dump();
            EXPECT_NE(o.value("sparql", "").find("FROM <urn:glassbox:collection:sample>"),
                      std::string::npos);
            ++on_engine;
        }
        // The rows and their values are the store's, attempt by attempt.
        ASSERT_EQ(sparql.observations.size(), store.observations.size()) << q.id;
        for (std::size_t i = 0; i < store.observations.size(); ++i) {
            EXPECT_EQ(rows_sorted(sparql.observations[i]["rows"]),
                      rows_sorted(store.observations[i]["rows"]))
                << q.id;
            EXPECT_EQ(sparql.observations[i]["row_count"], store.observations[i]["row_count"])
                << q.id;
        }
    }
    EXPECT_EQ(same, questions_.size());
    EXPECT_GT(on_engine, 0u);
    EXPECT_EQ(gold_sparql, gold_store);
    std::cout << "aggregate questions (sample): " << questions_.size() << ", store " << gold_store
              << " exact, SPARQL " << gold_sparql << " exact, same answer " << same << "\n";
}

TEST_F(GraphQuerySparqlTest, AnEngineThatIsDownFallsBackToTheStoreAndSaysSo) {
    ASSERT_FALSE(questions_.empty());
    for (std::size_t i = 0; i < questions_.size(); i += 17) {
        const auto& q = questions_[i];
        const Answer store = ask("agent", q.question);
        const Answer down = ask("agent-down", q.question);
        EXPECT_EQ(names_sorted(down.answer), names_sorted(store.answer)) << q.id;
        ASSERT_FALSE(down.observations.empty()) << q.id;
        for (const auto& o : down.observations) {
            EXPECT_EQ(o.value("engine", ""), "store (fallback)") << o.dump();
            EXPECT_NE(o.value("engine_error", "").find("virtuoso at http://127.0.0.1:"),
                      std::string::npos)
                << o.dump();
        }
    }
}

// Each filter kind's SPARQL form selects on Virtuoso what the store's evaluation selects.
TEST_F(GraphQuerySparqlTest, EachFilterKindSelectsOnVirtuosoWhatTheStoreSelects) {
    const std::string ex = "https://glassbox.dev/sample/orrin/";
    const std::vector<json> filters = {
        {{"var", "?v"}, {"cmp", "<"}, {"value", 1860}},
        {{"var", "?v"}, {"cmp", ">="}, {"value", "1871"}},
        {{"var", "?v"}, {"cmp", "="}, {"value", 1852}},
        {{"var", "?v"}, {"cmp", "!="}, {"value", "1852"}},
        {{"var", "?v"}, {"cmp", "<="}, {"value", "1871-06-01"}},
    };
    for (const auto& f : filters) {
        const json body = {{"collection", kCollection},
                           {"match", {{{"s", "?x"}, {"p", "<" + ex + "yearBuilt>"}, {"o", "?v"}}}},
                           {"filter", {f}},
                           {"order_by", {{"var", "?v"}, {"dir", "asc"}}}};
        json store_body = body;
        store_body["op"] = "aggregate";
        const json from_store = cluster_->store(store_body);
        auto q = schema::decode_aggregate_query(body);
        ASSERT_TRUE(q);
        ClientEngine engine(server_->config());
        auto from_engine =
            agent::run_sparql_aggregate(engine, *q, schema::collection_graph_iri(kCollection));
        ASSERT_TRUE(from_engine) << from_engine.error().describe();
        EXPECT_EQ(rows_sorted((*from_engine)["rows"]), rows_sorted(from_store["rows"])) << f.dump();
        // In the same order of values.
        std::vector<std::string> engine_years, store_years;
        for (const auto& r : (*from_engine)["rows"])
            engine_years.push_back(r["bindings"]["?v"]["label"]);
        for (const auto& r : from_store["rows"])
            store_years.push_back(r["bindings"]["?v"]["label"]);
        EXPECT_EQ(engine_years, store_years) << f.dump();
        EXPECT_FALSE(from_store["rows"].empty()) << f.dump();
    }
    // A name compared by its label, and an entity whose label reads as a number.
    const json by_label = {{"collection", kCollection},
                           {"match", {{{"s", "?x"}, {"p", "<" + ex + "designedBy>"}, {"o", "?d"}}}},
                           {"filter", {{{"var", "?d"}, {"cmp", "="}, {"value", "ilse varrow"}}}}};
    json store_body = by_label;
    store_body["op"] = "aggregate";
    const json from_store = cluster_->store(store_body);
    auto q = schema::decode_aggregate_query(by_label);
    ASSERT_TRUE(q);
    ClientEngine engine(server_->config());
    auto from_engine =
        agent::run_sparql_aggregate(engine, *q, schema::collection_graph_iri(kCollection));
    ASSERT_TRUE(from_engine) << from_engine.error().describe();
    EXPECT_EQ(rows_sorted((*from_engine)["rows"]), rows_sorted(from_store["rows"]));
    EXPECT_EQ(from_store["rows"].size(), 2u);
}

}  // namespace
}  // namespace glassbox::integration
