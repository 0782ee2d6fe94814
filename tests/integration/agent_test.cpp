// The agent end to end: the broker, trace collector, embeddings, store, llm (extractive planner),
// graph-rag, document-rag and agent workers as processes on loopback, ops/sample loaded with
// `glassbox load`. The agent's chain is checked like the RAG chains; a tool's worker killed
// mid-call becomes an error Observation and the agent goes on; the agent's own worker killed
// mid-run leaves a trace ended with status error after the step it reached; a chain that ends at
// several entities names them all, and the answer carries its calibrated confidence;
// `invoke agent`.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/vocabulary.hpp"
#include "tests/integration/rag_trace_checks.hpp"
#include "tests/integration/sample_knowledge.hpp"
#include "tests/support/cluster.hpp"

namespace glassbox::integration::rag {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
namespace vocab = schema::vocab;

// The agent's stream split: its own explain/final/error messages (a RagRun) and its step
// PARTIALs by message_type.
struct AgentRun {
    RagRun run;
    std::vector<json> partials;
    std::vector<json> of(const std::string& type) const {
        std::vector<json> out;
        for (const auto& p : partials)
            if (p.value("message_type", "") == type) out.push_back(p);
        return out;
    }
};

class AgentTest : public ClusterTest {
protected:
    // The pipeline; `rag_service` is the service the agent's knowledge-query calls.
    // A killed worker's request is not retried (--max-retries 0): it ends with WorkerLost.
    // `more` workers start after the agent (the router, for a test that asks through it).
    void start_pipeline(const std::string& rag_service = "graph-rag",
                        const std::vector<WorkerSpec>& more = {}) {
        broker_ = start_broker({.extra = {"--max-retries", "0"}});
        std::vector<WorkerSpec> workers = {
            {"trace-collector", {"--home", (dir() / "collector-home").string()}},
            {"embeddings"},
            {"store", {"--home", (dir() / "store-home").string()}},
            {"llm"},
            {"graph-rag"},
            {"document-rag"},
            {"agent", {"--graph-rag-service", rag_service}}};
        workers.insert(workers.end(), more.begin(), more.end());
        const auto started = start_workers(broker_.endpoint, workers);
        agent_ = started[6];
        ASSERT_FALSE(HasFailure()) << "the pipeline did not start";
        load_sample(broker_.endpoint, kSample, false);
        ASSERT_FALSE(HasFailure()) << "ops/sample did not load";
    }

    CommandResult glassbox(std::vector<std::string> args) {
        args.push_back("--broker");
        args.push_back(broker_.endpoint);
        return run_glassbox(std::move(args), milliseconds{120'000});
    }

    static AgentRun split(std::vector<GbcMessage> messages) {
        AgentRun out;
        std::vector<GbcMessage> own;
        for (auto& m : messages) {
            if (m.is_partial("data")) {
                out.partials.push_back(m.json());
            } else {
                own.push_back(std::move(m));
            }
        }
        out.run = rag::decode_run(std::move(own));
        return out;
    }

    AgentRun ask(const json& body, const std::string& service = "agent") {
        GbcClient client(context_, broker_.endpoint);
        return split(client.call(service, body.dump(), 60'000, milliseconds{65'000}));
    }

    // Collection "dispute": a fact file (dated 2020) giving Saltspire Light 1879 and a document
    // giving 1881; it revalidates after 30 days.
    void load_dispute() {
        const auto register_file = dir() / "register.ttl";
        std::ofstream(register_file) << R"ttl(@prefix dcterms: <http://purl.org/dc/terms/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix : <https://glassbox.dev/sample/orrin/> .
<> dcterms:modified "2020-01-01"^^xsd:date .
:yearBuilt rdfs:label "was built in year" .
:SaltspireLight rdfs:label "Saltspire Light" ; :yearBuilt "1879"^^xsd:gYear .
)ttl";
        const auto docs = dir() / "dispute-docs";
        std::filesystem::create_directories(docs);
        std::ofstream(docs / "harbour-register.md")
            << "# Harbour register\n\nSaltspire Light on Solen Island was built in 1881, after "
               "two winters of work on the rock.\n";
        for (std::vector<std::string> command :
             {std::vector<std::string>{"load", "rdf", register_file.string(), "--tier", "1",
                                       "--collection", "dispute"},
              std::vector<std::string>{"load", "docs", docs.string(), "--collection", "dispute"},
              std::vector<std::string>{"collections", "set", "dispute", "--max-age", "30d"}}) {
            const auto done = glassbox(command);
            ASSERT_TRUE(done.status.exited && done.status.code == 0)
                << command[0] << ": " << done.err;
        }
    }

    RunningBroker broker_;
    ChildProcess* agent_ = nullptr;
};

TEST_F(AgentTest, AThreeHopSampleQuestionIsAnsweredStepByStepWithACheckedChain) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const auto a =
        ask({{"question",
              "Where was the founder of the company that built the Meridian Telescope born?"},
             {"streaming", true}});
    ASSERT_TRUE(a.run.final.has_value()) << a.run.describe();
    const json& final = *a.run.final;
    EXPECT_EQ(final.value("answer", ""), "Port Aldous") << final.dump();
    EXPECT_EQ(final.value("termination", ""), "final-answer");
    const int iterations = final.value("iterations", 0);
    EXPECT_EQ(iterations, 4);  // resolve, built by, founded by, born in … then the answer
    EXPECT_EQ(a.of("thought").size(), static_cast<std::size_t>(iterations));
    EXPECT_EQ(a.of("observation").size(), static_cast<std::size_t>(iterations - 1));

    ChainExpectation expected;
    expected.service = "agent";
    expected.steps.push_back("Question");
    for (int n = 0; n + 1 < iterations; ++n) {
        expected.steps.push_back("Analysis");
        expected.steps.push_back("Observation");
    }
    expected.steps.push_back("Analysis");
    expected.steps.push_back("Conclusion");
    ASSERT_NO_FATAL_FAILURE(rag::check_chain(a.run, expected));
    const TraceGraph graph(a.run.explains);
    const auto steps = rag::step_uris(a.run);
    EXPECT_TRUE(graph.has_type(schema::iri(steps[1]), vocab::kToolUse));
    EXPECT_EQ(graph.text(schema::iri(steps[1]), vocab::kAction),
              std::optional<std::string>("triples-query"));
    EXPECT_EQ(graph.values(schema::iri(steps[1]), vocab::kToolCandidate).size(), 5u);
    EXPECT_EQ(graph.text(schema::iri(steps.back()), vocab::kTerminationReason),
              std::optional<std::string>("final-answer"));
    EXPECT_EQ(graph.text(schema::iri(steps.back()), vocab::kShortAnswer),
              std::optional<std::string>("Port Aldous"));
    // What the answer rests on: the chain's facts (built by, founded by, born in), cited with the
    // file they were loaded from at tier 1, in the FINAL and on the Conclusion.
    ASSERT_EQ(final["citations"].size(), 3u) << final.dump();
    for (const auto& citation : final["citations"]) {
        EXPECT_EQ(citation["kind"], "edge") << citation.dump();
        EXPECT_EQ(citation["tier"], 1) << citation.dump();
    }
    ASSERT_EQ(final["sources"].size(), 1u) << final.dump();
    EXPECT_NE(final["sources"][0].get<std::string>().find("orrin.ttl"), std::string::npos)
        << final.dump();
    EXPECT_EQ(graph.text(schema::iri(steps.back()), vocab::kAggregateTier),
              std::optional<std::string>("1"));
    EXPECT_EQ(graph.values(schema::iri(steps.back()), vocab::kAnswerSourceProperty).size(), 1u);
}

// A chain that ends at two entities names both, counted, each cited; the answer carries its
// calibrated confidence in the FINAL and on the Conclusion, as a RAG Synthesis does (issue 35).
TEST_F(AgentTest, AListAnswerNamesEveryEndAndCarriesItsConfidence) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const auto a = ask({{"question", "What damage did the Great Gale of 1887 do?"}});
    ASSERT_TRUE(a.run.final.has_value()) << a.run.describe();
    const json& final = *a.run.final;
    EXPECT_EQ(final.value("answer", ""), "Cobble Quay and Saltspire Light") << final.dump();
    const std::string response = final.value("response", "");
    EXPECT_NE(response.find("2 things: Cobble Quay and Saltspire Light"), std::string::npos)
        << response;
    EXPECT_EQ(response.find("Also reached"), std::string::npos) << response;
    ASSERT_EQ(final["citations"].size(), 2u) << final.dump();
    EXPECT_NE(final["citations"][0].value("text", "").find("Cobble Quay"), std::string::npos);
    EXPECT_NE(final["citations"][1].value("text", "").find("Saltspire Light"), std::string::npos);

    ASSERT_TRUE(final.contains("confidence") && final["confidence"].is_number()) << final.dump();
    const double p = final["confidence"].get<double>();
    EXPECT_GE(p, 0.0);
    EXPECT_LE(p, 1.0);
    EXPECT_TRUE(final.value("confidence_words", "") == "very likely" ||
                final.value("confidence_words", "") == "likely" ||
                final.value("confidence_words", "") == "uncertain" ||
                final.value("confidence_words", "") == "unlikely")
        << final.dump();
    const std::string calibrator = final.value("calibrator", "");
    EXPECT_TRUE(calibrator.ends_with("/agent")) << calibrator;
    ASSERT_TRUE(final["evidence"].is_array() && !final["evidence"].empty()) << final.dump();
    bool ends_seen = false;
    for (const auto& f : final["evidence"]) {
        if (f.value("name", "") != "answer_ends") continue;
        ends_seen = true;
        EXPECT_NEAR(f["value"].get<double>(), std::log1p(2.0), 1e-9) << f.dump();
    }
    EXPECT_TRUE(ends_seen) << final["evidence"].dump();
    EXPECT_EQ(final.value("abstained", false), p < 0.25);

    const TraceGraph graph(a.run.explains);
    const auto conclusion = schema::iri(rag::step_uris(a.run).back());
    ASSERT_TRUE(graph.has_type(conclusion, vocab::kConclusion));
    const auto stated = graph.text(conclusion, vocab::kAnswerConfidence);
    ASSERT_TRUE(stated.has_value()) << "no gb:answerConfidence on the Conclusion";
    EXPECT_NEAR(std::stod(*stated), p, 1e-9);
    EXPECT_EQ(graph.text(conclusion, vocab::kCalibrator), std::optional<std::string>(calibrator));
    const auto features = graph.values(conclusion, vocab::kEvidenceFeatureProperty);
    EXPECT_EQ(features.size(), final["evidence"].size());
    for (const auto& node : features) {
        EXPECT_TRUE(graph.has_type(node, vocab::kEvidenceFeature));
        EXPECT_TRUE(graph.text(node, vocab::kFeatureName).has_value());
        EXPECT_TRUE(graph.text(node, vocab::kFeatureValue).has_value());
    }
}

// Issue 35: in a collection where a loaded fact gives Saltspire Light one year and a loaded
// document another, the agent's chain ends at the fact's value, checks it against the documents,
// and reports the dispute: the answer says it with both citations, the FINAL lists it, the
// confidence is lowered (feature `conflict`), and the Conclusion records a gb:Conflict linking
// the Observation that showed the fact and the document's chunk selection. The fact's file is
// dated 2020 in a collection that revalidates after 30 days: the answer ends with the stale note.
// The same question through the gateway's stream (the router passing the agent's answer on)
// carries the conflict and both notes.
TEST_F(AgentTest, AFactAndADocumentThatDisagreeAreReportedAndAStaleFactIsNoted) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline("graph-rag", {{"query"}}));
    ASSERT_NO_FATAL_FAILURE(load_dispute());
    const std::string question = "When was Saltspire Light built?";
    const auto a = ask({{"question", question}, {"collection", "dispute"}, {"streaming", true}});
    ASSERT_TRUE(a.run.final.has_value()) << a.run.describe();
    const json& final = *a.run.final;
    EXPECT_EQ(final.value("answer", ""), "1879") << final.dump();
    bool asked_documents = false;
    for (const auto& action : a.of("action"))
        asked_documents = asked_documents || action.value("tool", "") == "document-query";
    EXPECT_TRUE(asked_documents) << "the chain's value is checked against the documents";

    ASSERT_EQ(final["conflicts"].size(), 1u) << final.dump();
    const json& conflict = final["conflicts"][0];
    EXPECT_EQ(conflict.value("stated", ""), "1879") << conflict.dump();
    EXPECT_EQ(conflict.value("rival", ""), "1881") << conflict.dump();
    EXPECT_EQ(conflict.value("subject", ""), "Saltspire Light") << conflict.dump();
    ASSERT_EQ(conflict["rival_sources"].size(), 1u) << conflict.dump();
    EXPECT_NE(conflict["rival_sources"][0].get<std::string>().find("harbour-register"),
              std::string::npos)
        << conflict.dump();

    // Both citations named: the fact is [1]; the document's passage is cited after it.
    const std::string response = final.value("response", "");
    const std::string said = "Sources disagree on this: [1] gives 1879; [";
    const auto at = response.find(said);
    ASSERT_NE(at, std::string::npos) << response;
    const std::size_t n = std::stoul(response.substr(at + said.size()));
    EXPECT_GT(n, 1u) << response;
    EXPECT_NE(response.find("[" + std::to_string(n) + "] gives 1881."), std::string::npos)
        << response;
    EXPECT_EQ(response.find("[" + std::to_string(n) + "]"), at + said.size() - 1)
        << "the passage that disagrees is cited by the note, not as support: " << response;
    ASSERT_GE(final["citations"].size(), n) << final.dump();
    EXPECT_NE(final["citations"][n - 1].value("chunk", "").find("harbour-register"),
              std::string::npos)
        << final["citations"][n - 1].dump();
    // The fact's file is past the collection's revalidation age.
    EXPECT_TRUE(final["citations"][0].value("stale", false)) << final["citations"][0].dump();
    EXPECT_NE(response.find("Note: [1] dates from 2020-01-01"), std::string::npos) << response;
    EXPECT_NE(response.find("past this collection's revalidation age of 30d."), std::string::npos)
        << response;

    bool lowered = false;
    for (const auto& f : final["evidence"])
        lowered = lowered || (f.value("name", "") == "conflict" && f.value("value", 1.0) == 0.5 &&
                              f.value("effect", 0.0) < 0.0);
    EXPECT_TRUE(lowered) << final["evidence"].dump();
    EXPECT_LE(final.value("confidence", 1.0), 0.5) << "one source against one halves it";

    // The Conclusion's gb:Conflict: both values, the Observation that showed the fact and the
    // document's chunk selection (in the document-rag sub-run), each with its source.
    const TraceGraph graph(a.run.explains);
    const auto conclusion = schema::iri(rag::step_uris(a.run).back());
    const auto conflicts = graph.values(conclusion, vocab::kConflictProperty);
    ASSERT_EQ(conflicts.size(), 1u);
    EXPECT_TRUE(graph.has_type(conflicts[0], vocab::kConflict));
    EXPECT_EQ(graph.text(conflicts[0], vocab::kStatedValue), std::optional<std::string>("1879"));
    EXPECT_EQ(graph.text(conflicts[0], vocab::kRivalValue), std::optional<std::string>("1881"));
    const auto stated = graph.values(conflicts[0], vocab::kStatedSelection);
    ASSERT_EQ(stated.size(), 1u);
    EXPECT_NE(stated[0].as_iri().value.find(":observation:"), std::string::npos)
        << stated[0].as_iri().value;
    const auto rival = graph.values(conflicts[0], vocab::kRivalSelection);
    ASSERT_EQ(rival.size(), 1u);
    EXPECT_NE(rival[0].as_iri().value, stated[0].as_iri().value);
    EXPECT_EQ(graph.values(conflicts[0], vocab::kStatedSource).size(), 1u);
    EXPECT_EQ(graph.values(conflicts[0], vocab::kRivalSource).size(), 1u);

    // Through the gateway's stream: the router passes the agent's answer on, notes and all.
    const auto ready = dir() / "gateway.ready.json";
    auto& gateway =
        start_process("gateway", {glassbox_binary(), "gateway", "--listen", "127.0.0.1:0",
                                  "--broker", broker_.endpoint, "--ready-file", ready.string()});
    const auto info = wait_for_ready_file(ready, gateway, milliseconds{10'000});
    ASSERT_TRUE(info) << "the gateway wrote no ready file: " << gateway.stderr_text();
    const auto probed = run_command(
        {"/usr/bin/python3", std::string(GLASSBOX_SOURCE_DIR) + "/tests/support/http_probe.py",
         "POST", info->value("url", "") + "/api/v1/query", "--body",
         json{{"query", question}, {"mode", "agent"}, {"collection", "dispute"}}.dump(), "--header",
         "Accept: text/event-stream"},
        dir(), milliseconds{90'000});
    const json out = json::parse(probed.out, nullptr, false);
    ASSERT_TRUE(out.is_object() && out.value("status", 0) == 200) << probed.out << probed.err;
    json done;
    for (const auto& e : out.value("events", json::array()))
        if (e.value("event", "") == "answer.done") done = e["data"];
    ASSERT_TRUE(done.is_object()) << out.dump().substr(0, 4000);
    ASSERT_EQ(done["conflicts"].size(), 1u) << done.dump();
    EXPECT_EQ(done["conflicts"][0].value("rival", ""), "1881") << done.dump();
    const std::string streamed = done.value("answer", "");
    EXPECT_NE(streamed.find("Sources disagree on this: [1] gives 1879; ["), std::string::npos)
        << streamed;
    EXPECT_NE(streamed.find("past this collection's revalidation age of 30d."), std::string::npos)
        << streamed;
}

// Issue 35: the same dispute reached through the knowledge-query tool (graph RAG) rather than
// lookups: graph RAG answers the fact's year, the planner checks it against the documents, and
// the agent reports the conflict with both citations, lowers its confidence, and records the
// gb:Conflict with the graph-rag sub-run's Focus edge selection as the stated side. Asked
// through the query router, the router's own Conclusion carries the agent's gb:Conflict too.
TEST_F(AgentTest, AGraphRagAnswerADocumentDisputesIsReportedAndTheRouterConcludesWithIt) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline("graph-rag", {{"query"}}));
    ASSERT_NO_FATAL_FAILURE(load_dispute());
    const std::string question = "When was Saltspire Light built?";
    const auto a = ask({{"question", question},
                        {"collection", "dispute"},
                        {"tools", {"knowledge-query", "document-query"}},
                        {"streaming", true}});
    ASSERT_TRUE(a.run.final.has_value()) << a.run.describe();
    const json& final = *a.run.final;
    EXPECT_EQ(final.value("answer", ""), "1879") << final.dump();
    std::vector<std::string> tools;
    for (const auto& action : a.of("action")) tools.push_back(action.value("tool", ""));
    EXPECT_EQ(tools, (std::vector<std::string>{"knowledge-query", "document-query"}))
        << "graph RAG's year is checked against the documents";

    ASSERT_EQ(final["conflicts"].size(), 1u) << final.dump();
    const json& conflict = final["conflicts"][0];
    EXPECT_EQ(conflict.value("stated", ""), "1879") << conflict.dump();
    EXPECT_EQ(conflict.value("rival", ""), "1881") << conflict.dump();
    EXPECT_NE(conflict.value("subject", "").find("Saltspire Light"), std::string::npos)
        << conflict.dump();
    const std::string response = final.value("response", "");
    // Graph RAG's answer passed on keeps its marker, numbered as the agent numbers the edge.
    std::uint32_t edge_n = 0;
    for (const auto& c : final["citations"])
        if (c.value("kind", "") == "edge") edge_n = c.value("n", 0u);
    EXPECT_TRUE(
        response.starts_with("Saltspire Light was built in 1879 [" + std::to_string(edge_n) + "]."))
        << response << "\n"
        << final["citations"].dump();
    EXPECT_NE(response.find("Sources disagree on this: ["), std::string::npos) << response;
    EXPECT_NE(response.find("gives 1879; ["), std::string::npos) << response;
    EXPECT_NE(response.find("gives 1881."), std::string::npos) << response;
    bool lowered = false;
    for (const auto& f : final["evidence"])
        lowered = lowered || (f.value("name", "") == "conflict" && f.value("effect", 0.0) < 0.0);
    EXPECT_TRUE(lowered) << final["evidence"].dump();
    bool rag_answer = false;
    for (const auto& f : final["evidence"])
        rag_answer =
            rag_answer || (f.value("name", "") == "rag_answer" && f.value("value", 0.0) == 1.0);
    EXPECT_TRUE(rag_answer) << "still graph RAG's answer after the check: "
                            << final["evidence"].dump();
    double iterations = 0.0;
    for (const auto& f : final["evidence"])
        if (f.value("name", "") == "iterations") iterations = f.value("value", 0.0);
    EXPECT_EQ(iterations, 2.0) << "the documents' check is not a step toward the answer: "
                               << final["evidence"].dump();

    const TraceGraph graph(a.run.explains);
    const auto conclusion = schema::iri(rag::step_uris(a.run).back());
    const auto conflicts = graph.values(conclusion, vocab::kConflictProperty);
    ASSERT_EQ(conflicts.size(), 1u);
    EXPECT_EQ(graph.text(conflicts[0], vocab::kStatedValue), std::optional<std::string>("1879"));
    EXPECT_EQ(graph.text(conflicts[0], vocab::kRivalValue), std::optional<std::string>("1881"));
    const auto stated = graph.values(conflicts[0], vocab::kStatedSelection);
    ASSERT_EQ(stated.size(), 1u);
    EXPECT_NE(stated[0].as_iri().value.find(":focus:edge:"), std::string::npos)
        << "the graph-rag sub-run's edge selection: " << stated[0].as_iri().value;
    const auto rival = graph.values(conflicts[0], vocab::kRivalSelection);
    ASSERT_EQ(rival.size(), 1u);
    EXPECT_NE(rival[0].as_iri().value.find(":chunk:"), std::string::npos)
        << rival[0].as_iri().value;

    // Through the router (its engine the agent, whose lookups reach the same dispute): the
    // router's FINAL and its own Conclusion carry the conflict.
    const auto routed =
        ask({{"query", question}, {"mode", "agent"}, {"collection", "dispute"}}, "query");
    ASSERT_TRUE(routed.run.final.has_value()) << routed.run.describe();
    const json& answer = *routed.run.final;
    EXPECT_EQ(answer.value("engine", ""), "agent") << answer.dump();
    ASSERT_EQ(answer["conflicts"].size(), 1u) << answer.dump();
    const auto run = schema::explain::RunUris::from_uri(answer.value("session", ""));
    ASSERT_TRUE(run);
    const TraceGraph routed_graph(routed.run.explains);
    const auto router_conflicts =
        routed_graph.values(schema::iri(run->conclusion()), vocab::kConflictProperty);
    ASSERT_EQ(router_conflicts.size(), 1u) << "the router's Conclusion records the conflict";
    EXPECT_EQ(router_conflicts[0], schema::iri(run->conflict("conclusion", 0)));
    EXPECT_TRUE(routed_graph.has_type(router_conflicts[0], vocab::kConflict));
    EXPECT_EQ(routed_graph.text(router_conflicts[0], vocab::kStatedValue),
              std::optional<std::string>("1879"));
    EXPECT_EQ(routed_graph.text(router_conflicts[0], vocab::kRivalValue),
              std::optional<std::string>("1881"));
    EXPECT_EQ(routed_graph.values(router_conflicts[0], vocab::kStatedSelection).size(), 1u);
    EXPECT_EQ(routed_graph.values(router_conflicts[0], vocab::kRivalSelection).size(), 1u);
    const auto confidence =
        routed_graph.text(schema::iri(run->conclusion()), vocab::kAnswerConfidence);
    ASSERT_TRUE(confidence.has_value());
    EXPECT_NEAR(std::stod(*confidence), answer.value("confidence", -1.0), 1e-9);
    EXPECT_LE(answer.value("confidence", 1.0), 0.5) << "the agent's lowered confidence";
}

// Issue 35: graph RAG finds two of its own facts disagreeing (the sample's 1879 and a second
// file's 1881 for Saltspire Light); the agent, asked with the knowledge-query tool alone, states
// graph RAG's answer and carries the conflict over: both values with their citations in its
// answer, the conflict in its FINAL and on its Conclusion (both sides graph-rag's edge
// selections), and its confidence lowered by the "conflict" feature once.
TEST_F(AgentTest, AConflictGraphRagFoundAmongItsFactsIsCarriedIntoTheAgentsAnswer) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const auto file = dir() / "later-register.ttl";
    std::ofstream(file) << R"ttl(@prefix : <https://glassbox.dev/sample/orrin/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:SaltspireLight :yearBuilt "1881"^^xsd:gYear .
)ttl";
    const auto loaded = glassbox({"load", "rdf", file.string(), "--tier", "3"});
    ASSERT_TRUE(loaded.status.exited && loaded.status.code == 0) << loaded.err;
    const auto a = ask({{"question", "When was Saltspire Light built?"},
                        {"tools", {"knowledge-query"}},
                        {"streaming", true}});
    ASSERT_TRUE(a.run.final.has_value()) << a.run.describe();
    const json& final = *a.run.final;
    // Graph RAG states one value, the better supported (the sample's file is tier 1, the second
    // file tier 3), and gives the other as another source's, each cited (not "1879 and 1881").
    const std::string answer = final.value("answer", "");
    ASSERT_EQ(final["conflicts"].size(), 1u) << final.dump();
    const json& conflict = final["conflicts"][0];
    const std::string stated = conflict.value("stated", "");
    const std::string other = conflict.value("rival", "");
    EXPECT_EQ(stated, "1879") << conflict.dump();
    EXPECT_EQ(other, "1881") << conflict.dump();
    EXPECT_EQ(answer, stated) << final.dump();
    EXPECT_NE(conflict.value("subject", "").find("Saltspire Light"), std::string::npos);
    const std::string response = final.value("response", "");
    // The first sentence (graph RAG's, passed on) shows the dispute already, each value with the
    // marker graph RAG cited it by, numbered as the agent's citations number that edge.
    const auto number_of = [&](const std::string& value) {
        for (const auto& c : final["citations"])
            if (c.value("text", "").ends_with(" " + value)) return c.value("n", 0);
        return 0;
    };
    EXPECT_TRUE(response.starts_with(
        "Saltspire Light was built in 1879 [" + std::to_string(number_of(stated)) +
        "]; another source gives 1881 [" + std::to_string(number_of(other)) + "]."))
        << response << "\n"
        << final["citations"].dump();
    EXPECT_NE(response.find("Sources disagree on this: ["), std::string::npos) << response;
    EXPECT_NE(response.find("gives " + stated + "; ["), std::string::npos) << response;
    EXPECT_NE(response.find("gives " + other + "."), std::string::npos) << response;
    ASSERT_EQ(final["citations"].size(), 2u) << final.dump();
    for (const auto& c : final["citations"])
        EXPECT_NE(response.find("[" + std::to_string(c.value("n", 0)) + "] gives"),
                  std::string::npos)
            << "each side cited by its number: " << response;
    EXPECT_EQ(response.find("Sources disagree"), response.rfind("Sources disagree"))
        << "said once: " << response;
    std::size_t lowered = 0;
    for (const auto& f : final["evidence"])
        if (f.value("name", "") == "conflict" && f.value("effect", 0.0) < 0.0) ++lowered;
    EXPECT_EQ(lowered, 1u) << final["evidence"].dump();

    const TraceGraph graph(a.run.explains);
    const auto conclusion = schema::iri(rag::step_uris(a.run).back());
    const auto conflicts = graph.values(conclusion, vocab::kConflictProperty);
    ASSERT_EQ(conflicts.size(), 1u);
    EXPECT_EQ(graph.text(conflicts[0], vocab::kRivalValue), std::optional<std::string>(other));
    for (const auto* side : {&vocab::kStatedSelection, &vocab::kRivalSelection}) {
        const auto selection = graph.values(conflicts[0], *side);
        ASSERT_EQ(selection.size(), 1u);
        EXPECT_NE(selection[0].as_iri().value.find(":focus:edge:"), std::string::npos)
            << "a graph-rag sub-run's edge selection: " << selection[0].as_iri().value;
    }
}

// Issue 35: graph RAG's name answer against a document sentence. In a collection whose fact file
// says Ilse Varrow designed Greyhollow Light and whose document says Oskar Brenn did, the agent
// (knowledge-query and document-query offered) takes graph RAG's answer, a name that is one fact's
// value, checks it against the documents, and reports the dispute: both citations in its answer,
// the conflict in its FINAL with the fact's subject and predicate (graph RAG's edge citation
// gives them as parts), a gb:Conflict on its Conclusion from graph RAG's edge selection to the
// document's chunk selection, and its confidence lowered by the "conflict" feature.
TEST_F(AgentTest, AGraphRagNameADocumentSentenceDisputesIsReportedWithBothCitations) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const auto facts = dir() / "designers.ttl";
    std::ofstream(facts) << R"ttl(@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix : <https://glassbox.dev/sample/orrin/> .
:designedBy rdfs:label "was designed by" .
:GreyhollowLight rdfs:label "Greyhollow Light" ; :designedBy :IlseVarrow .
:IlseVarrow rdfs:label "Ilse Varrow" .
)ttl";
    const auto docs = dir() / "name-dispute-docs";
    std::filesystem::create_directories(docs);
    std::ofstream(docs / "keepers-notes.md")
        << "# Keeper's notes\n\nGreyhollow Light was designed by Oskar Brenn, whose drawings "
           "still hang in the keeper's room.\n";
    for (std::vector<std::string> command :
         {std::vector<std::string>{"load", "rdf", facts.string(), "--tier", "1", "--collection",
                                   "namedispute"},
          std::vector<std::string>{"load", "docs", docs.string(), "--collection", "namedispute"}}) {
        const auto done = glassbox(command);
        ASSERT_TRUE(done.status.exited && done.status.code == 0) << command[0] << ": " << done.err;
    }
    const auto a = ask({{"question", "Who designed Greyhollow Light?"},
                        {"collection", "namedispute"},
                        {"tools", {"knowledge-query", "document-query"}},
                        {"streaming", true}});
    ASSERT_TRUE(a.run.final.has_value()) << a.run.describe();
    const json& final = *a.run.final;
    EXPECT_EQ(final.value("answer", ""), "Ilse Varrow") << final.dump();
    std::vector<std::string> tools;
    for (const auto& action : a.of("action")) tools.push_back(action.value("tool", ""));
    EXPECT_EQ(tools, (std::vector<std::string>{"knowledge-query", "document-query"}))
        << "graph RAG's name is checked against the documents";

    ASSERT_EQ(final["conflicts"].size(), 1u) << final.dump();
    const json& conflict = final["conflicts"][0];
    EXPECT_EQ(conflict.value("stated", ""), "Ilse Varrow") << conflict.dump();
    EXPECT_EQ(conflict.value("rival", ""), "Oskar Brenn") << conflict.dump();
    EXPECT_EQ(conflict.value("subject", ""), "Greyhollow Light") << conflict.dump();
    EXPECT_EQ(conflict.value("predicate", ""), "was designed by") << conflict.dump();
    ASSERT_EQ(conflict["rival_sources"].size(), 1u) << conflict.dump();
    EXPECT_NE(conflict["rival_sources"][0].get<std::string>().find("keepers-notes"),
              std::string::npos)
        << conflict.dump();

    // Both citations named: graph RAG's edge (its fact in parts) and the document's passage.
    const std::string response = final.value("response", "");
    const std::string said = "Sources disagree on this: [";
    const auto at = response.find(said);
    ASSERT_NE(at, std::string::npos) << response;
    const std::size_t stated_n = std::stoul(response.substr(at + said.size()));
    const auto rival_at = response.find("; [", at);
    ASSERT_NE(rival_at, std::string::npos) << response;
    const std::size_t rival_n = std::stoul(response.substr(rival_at + 3));
    EXPECT_NE(response.find("[" + std::to_string(rival_n) + "] gives Oskar Brenn."),
              std::string::npos)
        << response;
    ASSERT_GE(final["citations"].size(), std::max(stated_n, rival_n)) << final.dump();
    const json& edge = final["citations"][stated_n - 1];
    EXPECT_EQ(edge.value("kind", ""), "edge") << edge.dump();
    EXPECT_EQ(edge.value("subject", ""), "Greyhollow Light") << edge.dump();
    EXPECT_EQ(edge.value("predicate", ""), "was designed by") << edge.dump();
    EXPECT_EQ(edge.value("object", ""), "Ilse Varrow") << edge.dump();
    EXPECT_NE(final["citations"][rival_n - 1].value("chunk", "").find("keepers-notes"),
              std::string::npos)
        << final["citations"][rival_n - 1].dump();
    bool lowered = false;
    for (const auto& f : final["evidence"])
        lowered = lowered || (f.value("name", "") == "conflict" && f.value("effect", 0.0) < 0.0);
    EXPECT_TRUE(lowered) << final["evidence"].dump();
    EXPECT_LE(final.value("confidence", 1.0), 0.5) << "one source against one halves it";

    const TraceGraph graph(a.run.explains);
    const auto conclusion = schema::iri(rag::step_uris(a.run).back());
    const auto conflicts = graph.values(conclusion, vocab::kConflictProperty);
    ASSERT_EQ(conflicts.size(), 1u);
    EXPECT_EQ(graph.text(conflicts[0], vocab::kStatedValue),
              std::optional<std::string>("Ilse Varrow"));
    EXPECT_EQ(graph.text(conflicts[0], vocab::kRivalValue),
              std::optional<std::string>("Oskar Brenn"));
    const auto stated = graph.values(conflicts[0], vocab::kStatedSelection);
    ASSERT_EQ(stated.size(), 1u);
    EXPECT_NE(stated[0].as_iri().value.find(":focus:edge:"), std::string::npos)
        << "the graph-rag sub-run's edge selection: " << stated[0].as_iri().value;
    const auto rival = graph.values(conflicts[0], vocab::kRivalSelection);
    ASSERT_EQ(rival.size(), 1u);
    EXPECT_NE(rival[0].as_iri().value.find(":chunk:"), std::string::npos)
        << rival[0].as_iri().value;

    // The same facts without documents: nothing to check the name against, so no check (document
    // RAG would fail NotFound, a tool error that would lower the answer's confidence).
    const auto loaded = glassbox({"load", "rdf", facts.string(), "--collection", "namenodocs"});
    ASSERT_TRUE(loaded.status.exited && loaded.status.code == 0) << loaded.err;
    const auto alone = ask({{"question", "Who designed Greyhollow Light?"},
                            {"collection", "namenodocs"},
                            {"tools", {"knowledge-query", "document-query"}},
                            {"streaming", true}});
    ASSERT_TRUE(alone.run.final.has_value()) << alone.run.describe();
    std::vector<std::string> asked;
    for (const auto& action : alone.of("action")) asked.push_back(action.value("tool", ""));
    EXPECT_EQ(asked, std::vector<std::string>{"knowledge-query"});
    EXPECT_EQ(alone.run.final->value("answer", ""), "Ilse Varrow");
    EXPECT_FALSE(alone.run.final->contains("conflicts")) << alone.run.final->dump();
}

// Issue 35: the router asked graph RAG (1879, from the fact file) and, its answer below the
// certainty asked for (threshold 1), escalated (past an agent no worker serves) to document RAG
// (1881, from the harbour register). The two engines' answers disagree: the router's answer says so
// with both engines' citations, its FINAL and Conclusion carry the gb:Conflict, and its confidence
// is the winner's lowered by the "engine_conflict" feature.
TEST_F(AgentTest, TwoEnginesThatDisagreeAfterAnEscalationAreReportedByTheRouter) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline(
        "graph-rag",
        {{"query", {"--confidence-threshold", "1", "--agent-service", "no-agent-here"}}}));
    ASSERT_NO_FATAL_FAILURE(load_dispute());
    const auto routed = ask({{"query", "When was Saltspire Light built?"},
                             {"mode", "graph-rag"},
                             {"collection", "dispute"}},
                            "query");
    ASSERT_TRUE(routed.run.final.has_value()) << routed.run.describe();
    const json& answer = *routed.run.final;
    ASSERT_EQ(answer["escalations"].size(), 2u) << answer.dump();
    const std::string engine = answer.value("engine", "");
    ASSERT_TRUE(engine == "graph-rag" || engine == "document-rag") << answer.dump();
    const std::string stated = engine == "graph-rag" ? "1879" : "1881";
    const std::string rival = engine == "graph-rag" ? "1881" : "1879";
    ASSERT_EQ(answer["conflicts"].size(), 1u) << answer.dump();
    EXPECT_EQ(answer["conflicts"][0].value("stated", ""), stated) << answer.dump();
    EXPECT_EQ(answer["conflicts"][0].value("rival", ""), rival) << answer.dump();
    const std::string response = answer.value("response", "");
    EXPECT_NE(response.find("The engines disagree: " + engine + " gives " + stated),
              std::string::npos)
        << response;
    const std::string other = engine == "graph-rag" ? "document-rag" : "graph-rag";
    const auto said = response.find("; " + other + " gives " + rival + " [");
    ASSERT_NE(said, std::string::npos) << response;
    const std::size_t n = std::stoul(response.substr(response.find('[', said) + 1));
    ASSERT_EQ(answer["citations"].size(), n) << "the rival engine's citation, added last";
    EXPECT_NE(answer["citations"][n - 1].dump().find(engine == "graph-rag" ? "harbour-register"
                                                                           : "register.ttl"),
              std::string::npos)
        << answer["citations"].dump();
    double winner_confidence = -1.0;
    for (const auto& run : answer["runs"])
        if (run.value("engine", "") == engine && run.contains("confidence"))
            winner_confidence = run.value("confidence", -1.0);
    bool lowered = false;
    for (const auto& f : answer["evidence"])
        lowered =
            lowered || (f.value("name", "") == "engine_conflict" && f.value("effect", 0.0) < 0.0);
    EXPECT_TRUE(lowered) << answer["evidence"].dump();
    ASSERT_GE(winner_confidence, 0.0) << answer["runs"].dump();
    EXPECT_LT(answer.value("confidence", 1.0), winner_confidence) << answer.dump();

    const auto run = schema::explain::RunUris::from_uri(answer.value("session", ""));
    ASSERT_TRUE(run);
    const TraceGraph graph(routed.run.explains);
    const auto conflicts = graph.values(schema::iri(run->conclusion()), vocab::kConflictProperty);
    ASSERT_EQ(conflicts.size(), 1u) << "the router's Conclusion records the engines' conflict";
    EXPECT_EQ(graph.text(conflicts[0], vocab::kStatedValue), std::optional<std::string>(stated));
    EXPECT_EQ(graph.text(conflicts[0], vocab::kRivalValue), std::optional<std::string>(rival));
    EXPECT_EQ(graph.values(conflicts[0], vocab::kStatedSelection).size(), 1u);
    EXPECT_EQ(graph.values(conflicts[0], vocab::kRivalSelection).size(), 1u);
    const auto confidence = graph.text(schema::iri(run->conclusion()), vocab::kAnswerConfidence);
    ASSERT_TRUE(confidence.has_value());
    EXPECT_NEAR(std::stod(*confidence), answer.value("confidence", -1.0), 1e-9);
}

// Issue 35: the same disagreement, asked of a router whose floor (--min-confidence 0.9) lies
// between the confidence the disagreement leaves and the winning engine's own: the router's
// answer abstains. It says it does not know and that the engines disagree, gives both values with
// their citations, states no short answer, and its Conclusion records the abstention. The same
// floor given by the request abstains the same way (the router asks its engines with floor 0, so
// document-rag still states its rival value); a request's floor below the lowered confidence
// overrides the worker's: the answer stands.
TEST_F(AgentTest, BelowTheFloorAfterTheEnginesDisagreeTheRouterAbstains) {
    ASSERT_NO_FATAL_FAILURE(
        start_pipeline("graph-rag", {{"query",
                                      {"--confidence-threshold", "1", "--agent-service",
                                       "no-agent-here", "--min-confidence", "0.9"}}}));
    ASSERT_NO_FATAL_FAILURE(load_dispute());
    json question = {{"query", "When was Saltspire Light built?"},
                     {"mode", "graph-rag"},
                     {"collection", "dispute"}};
    const auto routed = ask(question, "query");
    ASSERT_TRUE(routed.run.final.has_value()) << routed.run.describe();
    const json& answer = *routed.run.final;
    const std::string engine = answer.value("engine", "");
    ASSERT_TRUE(engine == "graph-rag" || engine == "document-rag") << answer.dump();
    double own = -1.0;  // the winning engine's own confidence
    for (const auto& run : answer["runs"])
        if (run.value("engine", "") == engine) own = run.value("confidence", -1.0);
    const double lowered = answer.value("confidence", 1.0);
    ASSERT_TRUE(lowered < 0.9 && own >= 0.9)
        << "the floor is not between them: " << answer["runs"].dump();
    EXPECT_EQ(answer.value("abstained", false), true) << answer.dump();
    EXPECT_EQ(answer.value("answer", "?"), "");
    const std::string stated_value = engine == "graph-rag" ? "1879" : "1881";
    const std::string rival = engine == "graph-rag" ? "1881" : "1879";
    const std::string response = answer.value("response", "");
    EXPECT_TRUE(response.starts_with("I do not know for sure. The evidence points to " +
                                     stated_value + ", but its confidence"))
        << response;
    EXPECT_NE(response.find("is below the 90 % asked for; what lowered it most: the engines "
                            "disagree on it. What was found: "),
              std::string::npos)
        << response;
    EXPECT_NE(response.find("The engines disagree: " + engine + " gives " + stated_value),
              std::string::npos)
        << response;
    const std::string other = engine == "graph-rag" ? "document-rag" : "graph-rag";
    const auto said = response.find("; " + other + " gives " + rival + " [");
    ASSERT_NE(said, std::string::npos) << response;
    const std::size_t n = std::stoul(response.substr(response.find('[', said) + 1));
    ASSERT_EQ(answer["citations"].size(), n) << "the rival engine's citation, added last";
    ASSERT_EQ(answer["conflicts"].size(), 1u) << answer.dump();

    const auto run = schema::explain::RunUris::from_uri(answer.value("session", ""));
    ASSERT_TRUE(run);
    const TraceGraph graph(routed.run.explains);
    const auto conclusion = schema::iri(run->conclusion());
    EXPECT_EQ(graph.text(conclusion, vocab::kAbstained), std::optional<std::string>("true"));
    EXPECT_EQ(graph.text(conclusion, vocab::kShortAnswer), std::optional<std::string>(""));
    EXPECT_EQ(graph.text(conclusion, vocab::kAnswerText), std::optional<std::string>(response));
    EXPECT_EQ(graph.values(conclusion, vocab::kConflictProperty).size(), 1u);

    // The request's floor, the same 0.9: the same abstention, the rival value still stated.
    question["min_confidence"] = 0.9;
    const auto asked = ask(question, "query");
    ASSERT_TRUE(asked.run.final.has_value()) << asked.run.describe();
    EXPECT_EQ(asked.run.final->value("abstained", false), true) << asked.run.final->dump();
    EXPECT_NE(asked.run.final->value("response", "").find("The engines disagree: "),
              std::string::npos)
        << asked.run.final->dump();

    // The request's floor, under the lowered confidence: the answer stands.
    question["min_confidence"] = lowered / 2;
    const auto stands = ask(question, "query");
    ASSERT_TRUE(stands.run.final.has_value()) << stands.run.describe();
    EXPECT_FALSE(stands.run.final->contains("abstained")) << stands.run.final->dump();
    EXPECT_EQ(stands.run.final->value("answer", ""), stated_value);
}

// Issue 36: a count is a graph-query (the store's aggregate op), answered "2" with the count's
// members named and the rows' facts cited.
TEST_F(AgentTest, ACountIsAnsweredByAGraphQueryCitingTheRowsFacts) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const auto a =
        ask({{"question", "How many ships did Halden Ironworks build?"}, {"streaming", true}});
    ASSERT_TRUE(a.run.final.has_value()) << a.run.describe();
    const json& final = *a.run.final;
    EXPECT_EQ(final.value("answer", ""), "2") << final.dump();
    const std::string response = final.value("response", "");
    EXPECT_NE(response.find("2 ships: "), std::string::npos) << response;
    EXPECT_NE(response.find("MV Petrel"), std::string::npos) << response;
    EXPECT_NE(response.find("Good Hope"), std::string::npos) << response;
    const auto actions = a.of("action");
    ASSERT_EQ(actions.size(), 1u);
    EXPECT_EQ(actions[0].value("tool", ""), "graph-query");
    const auto observations = a.of("observation");
    ASSERT_EQ(observations.size(), 1u);
    EXPECT_NE(observations[0].value("content", "").find("COUNT(DISTINCT ?x)"), std::string::npos)
        << observations[0].dump();
    // The facts behind the rows: each ship built by Halden Ironworks, and that it is a ship.
    ASSERT_EQ(final["citations"].size(), 4u) << final.dump();
    std::size_t built = 0;
    for (const auto& c : final["citations"])
        if (c.value("text", "").find("was built by Halden Ironworks") != std::string::npos) ++built;
    EXPECT_EQ(built, 2u) << final["citations"].dump();
    const TraceGraph graph(a.run.explains);
    const auto steps = rag::step_uris(a.run);
    EXPECT_EQ(graph.text(schema::iri(steps[1]), vocab::kAction),
              std::optional<std::string>("graph-query"));
}

// A query that returns nothing is refined and asked again, each attempt a step of the trace:
// "children" read from Oskar Brenn finds none; the other direction finds Elin Brenn.
TEST_F(AgentTest, AGraphQueryThatFindsNothingIsRefinedAndEachAttemptIsTraced) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const auto a =
        ask({{"question", "How many children does Oskar Brenn have?"}, {"streaming", true}});
    ASSERT_TRUE(a.run.final.has_value()) << a.run.describe();
    const json& final = *a.run.final;
    EXPECT_EQ(final.value("answer", ""), "1") << final.dump();
    EXPECT_NE(final.value("response", "").find("Elin Brenn"), std::string::npos) << final.dump();
    const auto actions = a.of("action");
    ASSERT_EQ(actions.size(), 2u);
    EXPECT_EQ(actions[0].value("tool", ""), "graph-query");
    EXPECT_EQ(actions[1].value("tool", ""), "graph-query");
    EXPECT_NE(actions[0]["args"], actions[1]["args"]);
    const auto observations = a.of("observation");
    ASSERT_EQ(observations.size(), 2u);
    EXPECT_NE(observations[0].value("content", "").find("\"value\":0"), std::string::npos)
        << observations[0].dump();
    const auto thoughts = a.of("thought");
    ASSERT_GE(thoughts.size(), 2u);
    EXPECT_NE(thoughts[1].value("content", "").find("found nothing"), std::string::npos)
        << thoughts[1].dump();
    // Question, (Analysis, Observation) × 2, Analysis, Conclusion.
    EXPECT_EQ(rag::step_uris(a.run).size(), 7u);
}

TEST_F(AgentTest, AFollowUpsPronounIsReadAsThePreviousTurnsEntityOffline) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const std::string conversation = "follow-up-" + port_of(broker_.endpoint);
    const auto first =
        ask({{"question", "What is Saltspire Light?"}, {"session_id", conversation}});
    ASSERT_TRUE(first.run.final.has_value()) << first.run.describe();
    ASSERT_TRUE(wait_for_turns(broker_.endpoint, conversation, 1))
        << "the first turn was never indexed";
    // "it" is the entity the previous question named; the extractive planner plans for the
    // rewritten question and says so in its first thought.
    const auto second =
        ask({{"question", "Who designed it?"}, {"session_id", conversation}, {"streaming", true}});
    ASSERT_TRUE(second.run.final.has_value()) << second.run.describe();
    EXPECT_EQ(second.run.final->value("answer", ""), "Ilse Varrow") << second.run.final->dump();
    const auto thoughts = second.of("thought");
    ASSERT_FALSE(thoughts.empty());
    EXPECT_NE(thoughts.front().value("content", "").find("Reading \"it\" as Saltspire Light"),
              std::string::npos)
        << thoughts.front().dump();
    // Without the conversation the same words resolve nothing: no answer about Saltspire Light.
    const auto alone = ask({{"question", "Who designed it?"}});
    ASSERT_TRUE(alone.run.final.has_value()) << alone.run.describe();
    EXPECT_NE(alone.run.final->value("answer", ""), "Ilse Varrow") << alone.run.final->dump();
}

TEST_F(AgentTest, AKnowledgeQueryIsASubTraceOfItsAnalysis) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const auto a = ask({{"question", "Who designed Greyhollow Light?"},
                        {"streaming", true},
                        {"tools", {"knowledge-query"}}});
    ASSERT_TRUE(a.run.final.has_value()) << a.run.describe();
    EXPECT_EQ(a.run.final->value("answer", ""), "Ilse Varrow");
    const auto forwarded = a.of("explain");
    ASSERT_FALSE(forwarded.empty());
    const auto steps = rag::step_uris(a.run);
    ASSERT_GE(steps.size(), 3u);
    const std::string& analysis = steps[1];
    for (const auto& f : forwarded) EXPECT_EQ(f["explain"].value("parent_uri", ""), analysis);
    const std::string sub_last = forwarded.back()["explain"].value("explain_id", "");
    EXPECT_TRUE(sub_last.ends_with(":synthesis")) << sub_last;
    const TraceGraph graph(a.run.explains);
    const auto derived = graph.values(schema::iri(steps[2]), vocab::kProvWasDerivedFrom);
    EXPECT_NE(std::find(derived.begin(), derived.end(), schema::iri(sub_last)), derived.end());
}

TEST_F(AgentTest, AToolWorkerKilledMidCallIsAnErrorObservationAndTheAgentGoesOn) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline("slow-rag"));
    auto& slow = start_test_worker(broker_.endpoint, "slow-rag", 20'000);
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "slow-rag"));
    GbcClient client(context_, broker_.endpoint);
    const auto rid = client.request("agent",
                                    json{{"question", "Who designed Greyhollow Light?"},
                                         {"streaming", true},
                                         {"tools", {"knowledge-query"}}}
                                        .dump(),
                                    60'000);
    ASSERT_TRUE(wait_until_busy(broker_.endpoint, "slow-rag", 1, milliseconds{20'000}));
    slow.kill();
    const auto a = split(client.collect(rid, milliseconds{60'000}));
    ASSERT_TRUE(a.run.final.has_value()) << a.run.describe();
    const auto observations = a.of("observation");
    ASSERT_FALSE(observations.empty());
    EXPECT_TRUE(observations.front().value("error", false)) << observations.front().dump();
    EXPECT_NE(observations.front().value("content", "").find("WorkerLost"), std::string::npos)
        << observations.front().dump();
    const TraceGraph graph(a.run.explains);
    const auto steps = rag::step_uris(a.run);
    ASSERT_GE(steps.size(), 3u);
    EXPECT_EQ(graph.text(schema::iri(steps[2]), vocab::kToolStatus),
              std::optional<std::string>("error"));
    EXPECT_EQ(graph.text(schema::iri(steps.back()), vocab::kTerminationReason),
              std::optional<std::string>("final-answer"));
}

TEST_F(AgentTest, TheAgentKilledMidRunLeavesAnErrorTraceAfterTheStepItReached) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline("slow-rag"));
    start_test_worker(broker_.endpoint, "slow-rag", 20'000);
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "slow-rag"));
    GbcClient client(context_, broker_.endpoint);
    const auto rid = client.request(
        "agent",
        json{{"question", "Who designed Greyhollow Light?"}, {"tools", {"knowledge-query"}}}.dump(),
        60'000);
    ASSERT_TRUE(wait_until_busy(broker_.endpoint, "slow-rag", 1, milliseconds{20'000}));
    agent_->kill();
    const auto a = split(client.collect(rid, milliseconds{30'000}));
    EXPECT_EQ(a.run.error_type, "WorkerLost") << a.run.describe();
    ASSERT_GE(a.run.explains.size(), 3u) << a.run.describe();
    const auto& end = a.run.explains.back();
    EXPECT_TRUE(end.end_of_trace);
    EXPECT_EQ(schema::to_string(end.trace_status), "error");
    // The step reached: Analysis 0, calling knowledge-query.
    const auto& reached = a.run.explains[a.run.explains.size() - 2];
    EXPECT_TRUE(reached.explain_id.ends_with(":analysis:0")) << reached.explain_id;
    const TraceGraph graph(a.run.explains);
    EXPECT_EQ(graph.text(schema::iri(reached.explain_id), vocab::kAction),
              std::optional<std::string>("knowledge-query"));
}

TEST_F(AgentTest, InvokeAgentShowsTheStepsAsTheyHappenThenTheAnswer) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const auto r =
        glassbox({"invoke", "agent", "-q",
                  "In which town was the founder of the shipyard that built the MV Gannet born?"});
    ASSERT_TRUE(r.status.exited && r.status.code == 0) << r.err;
    EXPECT_NE(r.out.find("[0] thought:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("[0] action: triples-query"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("[0] observation:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Answer: Brinehaven"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("(final-answer after"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\nconfidence: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("glassbox traces show"), std::string::npos) << r.out;
}

TEST_F(AgentTest, AnUnknownCollectionIsNotFoundNotAnEmptyAnswer) {
    // Issue 31: `invoke agent --collection nope` answered "The lookups did not answer the
    // question." with exit 0.
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const AgentRun asked =
        ask({{"question", "Who designed Greyhollow Light?"}, {"collection", "nope"}});
    ASSERT_FALSE(asked.run.ok());
    EXPECT_EQ(asked.run.error_type, "NotFound") << asked.run.describe();
    EXPECT_NE(asked.run.error_message.find("\"nope\""), std::string::npos)
        << asked.run.error_message;
    EXPECT_TRUE(asked.of("action").empty()) << "no lookups in a collection that does not exist";
    ASSERT_FALSE(asked.run.explains.empty());
    ASSERT_NO_FATAL_FAILURE(rag::check_chain(
        asked.run, ChainExpectation{{"Question"}, "error", "NotFound", {}, "agent"}));

    const auto r = glassbox(
        {"invoke", "agent", "-q", "Who designed Greyhollow Light?", "--collection", "nope"});
    EXPECT_TRUE(r.status.exited && r.status.code == 2) << r.status.describe() << "\n" << r.out;
    EXPECT_TRUE(r.err.starts_with("NotFound")) << r.err;
    EXPECT_NE(r.err.find("\"nope\""), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(dir().string()), std::string::npos) << "no server path: " << r.err;
}

}  // namespace
}  // namespace glassbox::integration::rag
