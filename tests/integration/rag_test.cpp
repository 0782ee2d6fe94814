// Graph RAG and document RAG end to end: the real broker, trace collector, embeddings, store,
// llm (extractive), graph-rag and document-rag workers as processes on loopback, the sample
// knowledge of ops/sample loaded with `glassbox load`. Each chain's trace is checked against the
// rules of docs/vocabulary.md and docs/rag.md and against the store; failure paths end the
// trace as error with a typed error and leave the workers serving; `glassbox invoke` and
// `glassbox up` are checked as a user runs them.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "schema/explain_builder.hpp"
#include "schema/messages.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"
#include "tests/integration/rag_trace_checks.hpp"
#include "tests/integration/sample_knowledge.hpp"
#include "tests/support/cluster.hpp"

namespace glassbox::integration::rag {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
namespace vocab = schema::vocab;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// The chain of a complete graph-RAG run: its five steps, a sub-trace of `parent` when given.
ChainExpectation complete_graph_rag_chain(std::optional<std::string> parent = std::nullopt) {
    return {{"Question", "Grounding", "Exploration", "Focus", "Synthesis"},
            "complete",
            "",
            std::move(parent),
            "graph-rag"};
}

// The triple the reified statement `edge` names (its rdf:subject, rdf:predicate and
// rdf:object); nothing when one of them is missing.
std::optional<schema::Triple> statement_of(const TraceGraph& graph, const schema::Term& edge) {
    const auto s = graph.one(edge, vocab::kRdfSubject);
    const auto p = graph.one(edge, vocab::kRdfPredicate);
    const auto o = graph.one(edge, vocab::kRdfObject);
    if (!s || !p || !o) return std::nullopt;
    return schema::make_triple(*s, *p, *o);
}

struct PipelineOptions {
    std::vector<std::string> llm_extra;  // more `glassbox worker llm` options
    std::vector<std::string> rag_extra;  // more options of both RAG workers
    bool load_sample = true;
};

class RagTest : public ClusterTest {
protected:
    void start_pipeline(const PipelineOptions& options = {}) {
        broker_ = start_broker();
        const std::string hb = std::to_string(kHeartbeatMs);
        start_trace_collector(broker_.endpoint);
        start_process("embeddings", {glassbox_binary(), "worker", "embeddings", "--broker",
                                     broker_.endpoint, "--heartbeat-ms", hb});
        start_store();
        std::vector<std::string> llm = {glassbox_binary(), "worker",         "llm", "--broker",
                                        broker_.endpoint,  "--heartbeat-ms", hb};
        llm.insert(llm.end(), options.llm_extra.begin(), options.llm_extra.end());
        start_process("llm", llm);
        for (const std::string service : {"graph-rag", "document-rag"}) {
            std::vector<std::string> argv = {
                glassbox_binary(), "worker", service,     "--broker", broker_.endpoint,
                "--heartbeat-ms",  hb,       "--threads", "2"};
            argv.insert(argv.end(), options.rag_extra.begin(), options.rag_extra.end());
            start_process(service, argv);
        }
        for (const char* service :
             {"trace", "embeddings", "store", "llm", "graph-rag", "document-rag"}) {
            ASSERT_TRUE(wait_for_service(broker_.endpoint, service))
                << service << " did not register";
        }
        if (!options.load_sample) return;
        const auto rdf = glassbox({"load", "rdf", (kSample / "orrin.ttl").string(), "--tier", "1"});
        ASSERT_TRUE(exited_with(rdf, 0)) << rdf.err;
        const auto docs = glassbox({"load", "docs", (kSample / "docs").string()});
        ASSERT_TRUE(exited_with(docs, 0)) << docs.err;
    }

    ChildProcess& start_store() {
        return start_process(
            "store-" + std::to_string(processes_.size()),
            {glassbox_binary(), "worker", "store", "--broker", broker_.endpoint, "--home",
             (dir() / "store-home").string(), "--heartbeat-ms", std::to_string(kHeartbeatMs)});
    }

    CommandResult glassbox(std::vector<std::string> args,
                           milliseconds timeout = milliseconds{120'000}) {
        args.push_back("--broker");
        args.push_back(broker_.endpoint);
        return run_glassbox(std::move(args), timeout);
    }

    // One request, every reply decoded.
    RagRun ask(const std::string& service, const json& body,
               milliseconds timeout = milliseconds{60'000}) {
        GbcClient client(context_, broker_.endpoint);
        return rag::decode_run(client.call(service, body.dump(),
                                           static_cast<std::uint64_t>(timeout.count()),
                                           timeout + milliseconds{5'000}));
    }
    RagRun ask_graph(const std::string& question, const json& extra = json::object()) {
        json body = {{"query", question}, {"streaming", true}};
        body.update(extra);
        return ask("graph-rag", body);
    }
    RagRun ask_documents(const std::string& question, const json& extra = json::object()) {
        json body = {{"query", question}, {"streaming", true}};
        body.update(extra);
        return ask("document-rag", body);
    }

    // The FINAL body of one store request (fails the test on an error).
    json store(const json& request) {
        GbcClient client(context_, broker_.endpoint);
        const auto replies = client.call("store", request.dump(), 20'000, milliseconds{25'000});
        EXPECT_FALSE(replies.empty());
        if (replies.empty() || !replies.back().is_final()) {
            ADD_FAILURE() << "store " << request.dump() << ": "
                          << (replies.empty() ? "nothing" : replies.back().describe());
            return json::object();
        }
        return replies.back().json();
    }

    // The trace the collector stored, once it shows `status` with `events` events; null if never.
    json stored_trace(const std::string& session, const std::string& status, std::size_t events) {
        json shown;
        if (wait_for_trace_answer(
                broker_.endpoint, {{"op", "show"}, {"session", session}},
                [&](json s) {
                    return s["session"].value("status", "") == status &&
                           s["events"].size() == events;
                },
                shown))
            return shown;
        ADD_FAILURE() << "the collector never stored " << session << " as " << status << " with "
                      << events << " events; last: " << shown.dump().substr(0, 2000);
        return json();
    }

    // Every triple the run sent is stored, and nothing else.
    void expect_stored_exactly(const RagRun& run, const std::string& status) {
        const json shown = stored_trace(run.explains.front().session, status, run.explains.size());
        ASSERT_TRUE(shown.is_object());
        std::set<std::string> sent;
        for (const auto& e : run.explains) {
            for (const auto& t : e.explain_triples) sent.insert(schema::to_nquads(t));
        }
        std::set<std::string> stored;
        for (const auto& event : shown["events"]) {
            for (const auto& value : event["triples"]) {
                auto t = schema::decode_triple(value);
                ASSERT_TRUE(t.ok()) << value.dump();
                stored.insert(schema::to_nquads(*t));
            }
        }
        EXPECT_EQ(stored, sent);
    }

    // The final reply's common fields: the Synthesis, the session, the answer streamed whole.
    void check_final(const RagRun& run, bool streamed) {
        ASSERT_TRUE(run.final.has_value()) << run.describe();
        const json& f = *run.final;
        const auto steps = rag::step_uris(run);
        ASSERT_FALSE(steps.empty());
        EXPECT_EQ(f.value("explain_id", ""), steps.back());
        EXPECT_TRUE(steps.back().ends_with(":synthesis"));
        EXPECT_EQ(f.value("session", ""), run.explains.front().session);
        EXPECT_EQ(f.value("message_type", ""), "chunk");
        EXPECT_TRUE(f.value("end_of_stream", false));
        EXPECT_TRUE(f.value("end_of_session", false));
        const std::string answer = f.value("response", "");
        EXPECT_FALSE(answer.empty());
        EXPECT_EQ(f.value("model", ""), "glassbox-extractive-v1");
        EXPECT_GT(f.value("in_token", 0), 0);
        EXPECT_GT(f.value("out_token", 0), 0);
        if (streamed) {
            EXPECT_GT(run.data_partials, 0);
            EXPECT_EQ(run.streamed, answer);
        } else {
            EXPECT_EQ(run.data_partials, 0);
        }
        // The answer in the trace is the answer returned, and has no citation marker left.
        const TraceGraph graph(run.explains);
        EXPECT_EQ(graph.text(schema::iri(steps.back()), vocab::kAnswerText),
                  std::optional<std::string>(answer));
        EXPECT_EQ(answer.find("[e"), std::string::npos) << answer;
        EXPECT_EQ(answer.find("[c"), std::string::npos) << answer;
        // The short answer (the extractive writer's, split off its Answer line by the llm
        // service) is in the FINAL and in the Synthesis, the same; so are its selections.
        ASSERT_TRUE(f.contains("answer") && f["answer"].is_string()) << f.dump();
        const auto short_answer = f["answer"].get<std::string>();
        const auto recorded_answer = graph.text(schema::iri(steps.back()), vocab::kShortAnswer);
        if (short_answer.empty()) {
            // None found, or withheld (docs/confidence.md §4): the Synthesis states none.
            EXPECT_EQ(recorded_answer.value_or(""), "");
        } else {
            EXPECT_EQ(recorded_answer, std::optional<std::string>(short_answer));
        }
        ASSERT_TRUE(f.contains("answer_selections") && f["answer_selections"].is_array());
        std::set<std::string> recorded;
        for (const auto& s :
             graph.values(schema::iri(steps.back()), vocab::kShortAnswerSupportedBy))
            recorded.insert(s.as_iri().value);
        const auto selections = f["answer_selections"].get<std::vector<std::string>>();
        EXPECT_EQ(std::set<std::string>(selections.begin(), selections.end()), recorded);
        if (f["answer"].get<std::string>().empty()) {
            EXPECT_TRUE(selections.empty());
        }
    }

    // Citations: spans inside the answer, each supported by selections of this run in `allowed`.
    static std::size_t check_citations(const RagRun& run, const std::set<std::string>& allowed) {
        const TraceGraph graph(run.explains);
        const auto synthesis = schema::iri(rag::step_uris(run).back());
        const std::size_t length = rag::code_points(run.final->value("response", ""));
        const auto citations = graph.values(synthesis, vocab::kCitationProperty);
        for (const auto& citation : citations) {
            EXPECT_TRUE(graph.has_type(citation, vocab::kCitation));
            const auto start = graph.text(citation, vocab::kSpanStart);
            const auto end = graph.text(citation, vocab::kSpanEnd);
            if (!start || !end) {
                ADD_FAILURE() << "citation without a span";
                continue;
            }
            EXPECT_LT(std::stoull(*start), std::stoull(*end));
            EXPECT_LE(std::stoull(*end), length);
            const auto support = graph.values(citation, vocab::kSupportedBy);
            EXPECT_FALSE(support.empty());
            for (const auto& s : support) {
                EXPECT_TRUE(s.is_iri() && allowed.count(s.as_iri().value))
                    << schema::to_ntriples(s);
            }
        }
        return citations.size();
    }

    RunningBroker broker_;
};

// ---- graph RAG ----------------------------------------------------------------------------------

TEST_F(RagTest, GraphRagTraceIsCompleteAndTracesBackToTheStore) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const RagRun run = ask_graph("Who founded the shipyard that built the MV Curlew?");
    ASSERT_TRUE(run.ok()) << run.describe();
    ASSERT_NO_FATAL_FAILURE(check_chain(run, complete_graph_rag_chain()));
    ASSERT_NO_FATAL_FAILURE(check_final(run, true));

    const TraceGraph graph(run.explains);
    const auto steps = rag::step_uris(run);
    const schema::Term grounding = schema::iri(steps[1]);
    const schema::Term exploration = schema::iri(steps[2]);
    const schema::Term focus = schema::iri(steps[3]);
    EXPECT_FALSE(graph.values(grounding, vocab::kConcept).empty());
    EXPECT_FALSE(graph.values(exploration, vocab::kSeedEntity).empty());
    const auto explored = graph.text(exploration, vocab::kEdgeCount);
    ASSERT_TRUE(explored.has_value());

    // Every kept edge is a real fact of the store, with its literal objects still literals.
    const auto edges = graph.values(focus, vocab::kSelectedEdge);
    ASSERT_FALSE(edges.empty());
    EXPECT_EQ(graph.text(focus, vocab::kEdgeCount),
              std::optional<std::string>(std::to_string(edges.size())));
    EXPECT_LE(edges.size(), std::stoull(*explored));
    std::set<std::string> edge_uris;
    json facts = json::array();
    for (const auto& edge : edges) {
        ASSERT_TRUE(edge.is_iri());
        edge_uris.insert(edge.as_iri().value);
        EXPECT_TRUE(graph.has_type(edge, vocab::kEdgeSelection));
        EXPECT_TRUE(graph.has_type(edge, vocab::kRdfStatement));
        const auto fact = statement_of(graph, edge);
        ASSERT_TRUE(fact) << edge.as_iri().value;
        const auto score = graph.text(edge, vocab::kScore);
        ASSERT_TRUE(score.has_value());
        EXPECT_GE(std::stod(*score), 0.0);
        EXPECT_LE(std::stod(*score), 1.0);
        EXPECT_EQ(graph.text(edge, vocab::kDataTier), std::optional<std::string>("1"));
        const auto found = store({{"op", "triples"},
                                  {"s", schema::encode(fact->s)},
                                  {"p", schema::encode(fact->p)},
                                  {"o", schema::encode(fact->o)},
                                  {"g", ""}});
        EXPECT_EQ(found.value("triples", json::array()).size(), 1u)
            << "not a fact of the store: " << schema::to_ntriples(*fact);
        facts.push_back(schema::encode(*fact));
    }
    EXPECT_GT(check_citations(run, edge_uris), 0u);

    // The explored subgraph: the Exploration records every edge it reached (fewer than the cap
    // here), each a statement with its hop, and every kept edge is one of them.
    const auto explored_edges = graph.values(exploration, vocab::kExploredEdgeProperty);
    EXPECT_EQ(explored_edges.size(),
              std::min<std::size_t>(std::stoull(*explored), schema::explain::kMaxExploredEdges));
    std::set<std::string> explored_facts;
    for (const auto& edge : explored_edges) {
        EXPECT_TRUE(graph.has_type(edge, vocab::kExploredEdge));
        EXPECT_TRUE(graph.has_type(edge, vocab::kRdfStatement));
        const auto fact = statement_of(graph, edge);
        ASSERT_TRUE(fact) << edge.as_iri().value;
        const auto hop = graph.text(edge, vocab::kHop);
        ASSERT_TRUE(hop.has_value());
        EXPECT_GE(std::stoi(*hop), 1);
        explored_facts.insert(schema::to_ntriples(*fact));
    }
    for (const auto& edge : edges) {
        const auto kept = schema::to_ntriples(*statement_of(graph, edge));
        EXPECT_TRUE(explored_facts.contains(kept)) << "a kept edge that was not explored: " << kept;
    }

    // sources: exactly the distinct sources the store records for the kept edges.
    const auto recorded = store({{"op", "fact-sources"}, {"triples", facts}});
    std::set<std::string> expected_sources;
    for (const auto& per_fact : recorded.value("sources", json::array())) {
        for (const auto& source : per_fact) expected_sources.insert(source.value("source", ""));
    }
    const auto sources = run.final->value("sources", std::vector<std::string>{});
    EXPECT_EQ(std::set<std::string>(sources.begin(), sources.end()), expected_sources);
    EXPECT_EQ(std::set<std::string>(sources.begin(), sources.end()).size(), sources.size())
        << "distinct";
    ASSERT_FALSE(sources.empty());
    EXPECT_TRUE(sources.front().ends_with("/ops/sample/orrin.ttl")) << sources.front();

    ASSERT_NO_FATAL_FAILURE(expect_stored_exactly(run, "complete"));
}

TEST_F(RagTest, GraphRagKeepsLiteralObjectsAsTypedLiterals) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const RagRun run = ask_graph("What is the population of Brinehaven?", {{"streaming", false}});
    ASSERT_TRUE(run.ok()) << run.describe();
    ASSERT_NO_FATAL_FAILURE(check_chain(run, complete_graph_rag_chain()));
    ASSERT_NO_FATAL_FAILURE(check_final(run, false));
    const TraceGraph graph(run.explains);
    int literals = 0;
    for (const auto& edge :
         graph.values(schema::iri(rag::step_uris(run)[3]), vocab::kSelectedEdge)) {
        const auto o = graph.one(edge, vocab::kRdfObject);
        ASSERT_TRUE(o.has_value());
        if (!o->is_literal()) continue;
        ++literals;
        const auto p = graph.one(edge, vocab::kRdfPredicate);
        if (p && p->is_iri() &&
            p->as_iri().value == "https://glassbox.dev/sample/orrin/population") {
            EXPECT_EQ(o->as_literal().datatype, schema::kXsdInteger);
        }
    }
    EXPECT_GT(literals, 0) << "no kept edge with a literal object";
    EXPECT_NE(run.final->value("response", "").find("5600"), std::string::npos)
        << run.final->dump();
}

// The quick start's question: the answer first, in few sentences, none repeated.
TEST_F(RagTest, GraphRagAnswerLeadsWithTheAnswerOnce) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const RagRun run =
        ask_graph("Who founded the shipyard that built the MV Curlew?", {{"streaming", false}});
    ASSERT_TRUE(run.ok()) << run.describe();
    ASSERT_NO_FATAL_FAILURE(check_final(run, false));
    const std::string response = run.final->value("response", "");
    EXPECT_TRUE(response.starts_with("Oskar Brenn")) << response;
    std::vector<std::string> sentences;
    for (std::size_t from = 0; from < response.size();) {
        std::size_t end = response.find(". ", from);
        end = end == std::string::npos ? response.size() : end + 1;
        sentences.push_back(response.substr(from, end - from));
        from = end + (end < response.size() ? 1 : 0);
    }
    EXPECT_LE(sentences.size(), 3u) << response;
    EXPECT_EQ(std::set<std::string>(sentences.begin(), sentences.end()).size(), sentences.size())
        << "a sentence twice: " << response;
    if (run.final->contains("answer")) {
        EXPECT_EQ(run.final->value("answer", ""), "Oskar Brenn") << run.final->dump();
    }
}

TEST_F(RagTest, GraphRagSubTraceLinksToItsCaller) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const std::string caller_uuid = "0b6f1a52-7c1e-4d2a-9f3b-5e8d2c4a1b70";
    const std::string parent = "urn:glassbox:" + caller_uuid + ":routing";
    const RagRun run = ask_graph("Who designed Greyhollow Light?", {{"parent_uri", parent}});
    ASSERT_TRUE(run.ok()) << run.describe();
    ASSERT_NO_FATAL_FAILURE(check_chain(run, complete_graph_rag_chain(parent)));
    const json shown = stored_trace(run.explains.front().session, "complete", run.explains.size());
    ASSERT_TRUE(shown.is_object());
    // The store links the sub-trace to the calling run's session.
    EXPECT_EQ(shown["session"].value("parent", ""), "urn:glassbox:" + caller_uuid + ":question");
}

// Issue 35: a collection that declares a revalidation age of a day, loaded from a file that says
// it was last changed in 2020. The answer cites it and says it is stale (after the answer), its
// FINAL citation and the trace's source entity carry the dates and the flag, and `graph stats`
// lists the collection as stale.
TEST_F(RagTest, AStaleSourceIsFlaggedInTheAnswerTheTraceAndGraphStats) {
    PipelineOptions options;
    options.load_sample = false;
    ASSERT_NO_FATAL_FAILURE(start_pipeline(options));
    const auto file = dir() / "harbour.ttl";
    std::ofstream(file) << R"ttl(@prefix dcterms: <http://purl.org/dc/terms/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix ex: <https://example.org/harbour/> .
<> dcterms:modified "2020-01-01"^^xsd:date ; rdfs:label "harbour records" .
ex:curlew rdfs:label "MV Curlew" ; ex:builtBy ex:yard .
ex:builtBy rdfs:label "built by" .
ex:yard rdfs:label "Harrow Yard" ; ex:foundedBy ex:quill .
ex:foundedBy rdfs:label "founded by" .
ex:quill rdfs:label "Ada Quill" .
)ttl";
    const auto loaded =
        glassbox({"load", "rdf", file.string(), "--collection", "harbour", "--tier", "1"});
    ASSERT_TRUE(exited_with(loaded, 0)) << loaded.err;
    const auto bad = glassbox({"collections", "set", "harbour", "--max-age", "1y"});
    EXPECT_TRUE(exited_with(bad, 2)) << bad.status.describe() << bad.err;
    EXPECT_NE(bad.err.find("\"1y\""), std::string::npos) << bad.err;
    const auto set = glassbox({"collections", "set", "harbour", "--max-age", "1d"});
    ASSERT_TRUE(exited_with(set, 0)) << set.err;
    EXPECT_NE(set.out.find("max age 1d, 1 source past it"), std::string::npos) << set.out;

    const RagRun run = ask_graph("Who built the MV Curlew?", {{"collection", "harbour"}});
    ASSERT_TRUE(run.ok()) << run.describe();
    ASSERT_NO_FATAL_FAILURE(check_final(run, true));
    const json& f = *run.final;
    json stale_citation;
    for (const auto& c : f.value("citations", json::array()))
        if (c.value("stale", false)) stale_citation = c;
    ASSERT_TRUE(stale_citation.is_object()) << f.dump();
    EXPECT_EQ(stale_citation.value("date", ""), "2020-01-01");
    EXPECT_EQ(stale_citation.value("max_age", ""), "1d");
    EXPECT_TRUE(stale_citation.value("loaded_at", "").starts_with("20")) << stale_citation.dump();
    const std::string document = stale_citation.value("document", "");
    EXPECT_TRUE(document.starts_with("file://")) << stale_citation.dump();
    const std::string response = f.value("response", "");
    const std::string note =
        "Note: [" + std::to_string(stale_citation.value("n", 0)) + "] dates from 2020-01-01";
    const auto at = response.find(note);
    ASSERT_NE(at, std::string::npos) << response;
    EXPECT_GT(at, 0u) << "the answer leads, the note follows: " << response;
    EXPECT_NE(response.find("past this collection's revalidation age of 1d."), std::string::npos)
        << response;

    // The source entity in the trace: when it was loaded, its own date, the age and the flag.
    const TraceGraph graph(run.explains);
    const auto source = schema::iri(document);
    EXPECT_EQ(graph.text(source, vocab::kStale), std::optional<std::string>("true"));
    EXPECT_EQ(graph.text(source, vocab::kDctermsDate), std::optional<std::string>("2020-01-01"));
    EXPECT_EQ(graph.text(source, vocab::kMaxAge), std::optional<std::string>("1d"));
    EXPECT_EQ(graph.text(source, vocab::kProvGeneratedAtTime),
              std::optional<std::string>(stale_citation.value("loaded_at", "")));

    const auto stats = glassbox({"graph", "stats", "--collection", "harbour", "--json"});
    ASSERT_TRUE(exited_with(stats, 0)) << stats.err;
    const json counted = json::parse(stats.out, nullptr, false);
    EXPECT_EQ(counted.value("max_age", ""), "1d") << stats.out;
    EXPECT_EQ(counted.value("stale_sources", 0), 1) << stats.out;
    EXPECT_EQ(counted.value("stale_collections", json()),
              (json::array({{{"collection", "harbour"}, {"max_age", "1d"}, {"stale_sources", 1}}})))
        << stats.out;
    const auto table = glassbox({"graph", "stats", "--collection", "harbour"});
    ASSERT_TRUE(exited_with(table, 0)) << table.err;
    EXPECT_NE(table.out.find("Stale collections"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("1 source past max age 1d"), std::string::npos) << table.out;
}

// ---- document RAG -------------------------------------------------------------------------------

// Issue 35, document RAG: a document dated at load (`--date`) in a collection with a revalidation
// age of 30 days is cited stale, in the FINAL, the answer's note and the trace.
TEST_F(RagTest, DocumentRagFlagsADocumentPastItsCollectionsRevalidationAge) {
    PipelineOptions options;
    options.load_sample = false;
    ASSERT_NO_FATAL_FAILURE(start_pipeline(options));
    const auto file = dir() / "ledger.md";
    std::ofstream(file) << "# Harbour ledger\n\nThe MV Curlew was built by Harrow Yard in 1961.\n";
    const auto loaded =
        glassbox({"load", "docs", file.string(), "--collection", "ledger", "--date", "2021-03-04"});
    ASSERT_TRUE(exited_with(loaded, 0)) << loaded.err;
    const auto set = glassbox({"collections", "set", "ledger", "--max-age", "30d"});
    ASSERT_TRUE(exited_with(set, 0)) << set.err;

    const RagRun run = ask_documents("Who built the MV Curlew?", {{"collection", "ledger"}});
    ASSERT_TRUE(run.ok()) << run.describe();
    ASSERT_NO_FATAL_FAILURE(check_final(run, true));
    json stale_citation;
    for (const auto& c : run.final->value("citations", json::array()))
        if (c.value("stale", false)) stale_citation = c;
    ASSERT_TRUE(stale_citation.is_object()) << run.final->dump();
    EXPECT_EQ(stale_citation.value("date", ""), "2021-03-04");
    EXPECT_EQ(stale_citation.value("max_age", ""), "30d");
    const std::string response = run.final->value("response", "");
    EXPECT_NE(response.find("] dates from 2021-03-04"), std::string::npos) << response;
    EXPECT_FALSE(response.starts_with("Note:")) << response;
    const TraceGraph graph(run.explains);
    const auto document = schema::iri(stale_citation.value("document", ""));
    EXPECT_EQ(graph.text(document, vocab::kStale), std::optional<std::string>("true"));
    EXPECT_EQ(graph.text(document, vocab::kDctermsDate), std::optional<std::string>("2021-03-04"));
}

TEST_F(RagTest, DocumentRagTraceIsCompleteAndTracesBackToTheStore) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    for (const bool reranked : {false, true}) {
        SCOPED_TRACE(reranked ? "with Focus (doc_limit < fetch_limit)"
                              : "without Focus (defaults)");
        // The re-ranked run is also a sub-trace of a caller's step.
        const std::string parent = "urn:glassbox:5d0c7e1a-2b3f-4c8d-9e6f-a1b2c3d4e5f6:analysis:0";
        const json extra = reranked
                               ? json{{"doc_limit", 3}, {"fetch_limit", 8}, {"parent_uri", parent}}
                               : json::object();
        const RagRun run =
            ask_documents("What happened to Saltspire Light in the Great Gale?", extra);
        ASSERT_TRUE(run.ok()) << run.describe();
        std::vector<std::string> steps = {"Question", "Grounding", "Exploration"};
        if (reranked) steps.push_back("Focus");
        steps.push_back("Synthesis");
        ASSERT_NO_FATAL_FAILURE(check_chain(
            run, ChainExpectation{steps, "complete", "",
                                  reranked ? std::optional<std::string>(parent) : std::nullopt,
                                  "document-rag"}));
        ASSERT_NO_FATAL_FAILURE(check_final(run, true));

        const TraceGraph graph(run.explains);
        const auto uris = rag::step_uris(run);
        const schema::Term exploration = schema::iri(uris[2]);
        const auto retrieved = graph.values(exploration, vocab::kRetrievedChunk);
        ASSERT_FALSE(retrieved.empty());
        EXPECT_EQ(graph.text(exploration, vocab::kChunkCount),
                  std::optional<std::string>(std::to_string(retrieved.size())));
        if (reranked) {
            EXPECT_LE(retrieved.size(), 8u);
        }

        // Every retrieved chunk is a chunk of the store, at the offsets the store has.
        std::map<std::string, std::string> chunk_of;  // selection URI -> chunk URI
        json ids = json::array();
        for (const auto& selection : retrieved) {
            EXPECT_TRUE(graph.has_type(selection, vocab::kChunkSelection));
            ASSERT_TRUE(graph.text(selection, vocab::kScore).has_value());
            const auto chunk = graph.one(selection, vocab::kSourceChunk);
            ASSERT_TRUE(chunk && chunk->is_iri()) << schema::to_ntriples(selection);
            chunk_of[selection.as_iri().value] = chunk->as_iri().value;
            ids.push_back(chunk->as_iri().value);
        }
        const auto fetched = store({{"op", "chunks-fetch"}, {"chunk_ids", ids}});
        ASSERT_EQ(fetched.value("chunks", json::array()).size(), ids.size())
            << fetched.dump().substr(0, 2000);
        for (const auto& chunk : fetched["chunks"]) {
            const schema::Term node = schema::iri(chunk["chunk_id"].get<std::string>());
            if (auto offset = graph.text(node, vocab::kCharOffset)) {
                EXPECT_EQ(*offset, std::to_string(chunk["char_offset"].get<std::uint64_t>()));
            }
            if (auto length = graph.text(node, vocab::kCharLength)) {
                EXPECT_EQ(*length, std::to_string(chunk["char_length"].get<std::uint64_t>()));
            }
        }

        // What synthesis got: the Focus picks (each from a retrieved chunk), else the retrieved.
        std::set<std::string> given;
        std::set<std::string> given_chunks;
        if (reranked) {
            const schema::Term focus = schema::iri(uris[3]);
            const auto picked = graph.values(focus, vocab::kSelectedChunk);
            ASSERT_FALSE(picked.empty());
            EXPECT_LE(picked.size(), 3u);
            for (const auto& selection : picked) {
                given.insert(selection.as_iri().value);
                std::string from;
                for (const auto& d : graph.values(selection, vocab::kProvWasDerivedFrom)) {
                    if (d.is_iri() && chunk_of.count(d.as_iri().value)) from = d.as_iri().value;
                }
                ASSERT_FALSE(from.empty())
                    << selection.as_iri().value << " is not derived from a retrieved chunk";
                given_chunks.insert(chunk_of[from]);
            }
        } else {
            for (const auto& [selection, chunk] : chunk_of) {
                given.insert(selection);
                given_chunks.insert(chunk);
            }
        }
        EXPECT_GT(check_citations(run, given), 0u);
        const auto sources = run.final->value("sources", std::vector<std::string>{});
        EXPECT_EQ(std::set<std::string>(sources.begin(), sources.end()), given_chunks);
        EXPECT_EQ(sources.size(), given_chunks.size());
        ASSERT_NO_FATAL_FAILURE(expect_stored_exactly(run, "complete"));
    }
}

// ---- failure paths ------------------------------------------------------------------------------

// A failed request: the typed error, the trace opened and ended as error, the error stored.
void expect_failed(const RagRun& run, const std::string& service, const std::string& type,
                   std::vector<std::string> steps = {"Question"}) {
    EXPECT_FALSE(run.ok()) << run.describe();
    EXPECT_EQ(run.error_type, type) << run.describe();
    ASSERT_NO_FATAL_FAILURE(
        check_chain(run, ChainExpectation{std::move(steps), "error", type, {}, service}));
}

TEST_F(RagTest, DocumentRagLeadsWithTheSentenceThatAnswers) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    // Issue 17: the sentence holding the answer (a year, for "in which year") comes first.
    const RagRun run = ask_documents("In which year was the Halden Ironworks founded?");
    ASSERT_TRUE(run.ok()) << run.describe();
    ASSERT_TRUE(run.final.has_value()) << run.describe();
    const std::string answer = run.final->value("response", "");
    const auto year = answer.find("1858");
    ASSERT_NE(year, std::string::npos) << answer;
    const auto first_end = answer.find(". ");
    EXPECT_TRUE(first_end == std::string::npos || year < first_end)
        << "the year is not in the first sentence: " << answer;
}

TEST_F(RagTest, InvalidRequestsEndTheTraceAsErrorAndTheWorkersKeepServing) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const std::vector<std::pair<std::string, json>> bad = {
        {"graph-rag", {{"query", "Who designed Greyhollow Light?"}, {"max_path_length", 99}}},
        {"graph-rag",
         {{"query", "Who designed Greyhollow Light?"}, {"edge_score_limit", 5}, {"edge_limit", 6}}},
        {"graph-rag", {{"query", "Who designed Greyhollow Light?"}, {"entity_limit", "many"}}},
        {"graph-rag", {{"query", ""}}},
        {"document-rag", {{"query", "What is Saltspire?"}, {"doc_limit", 10}, {"fetch_limit", 5}}},
        {"document-rag", {{"query", "What is Saltspire?"}, {"doc_limit", 5000}}},
    };
    for (const auto& [service, body] : bad) {
        SCOPED_TRACE(service + " " + body.dump());
        const RagRun run = ask(service, body);
        EXPECT_FALSE(run.ok()) << run.describe();
        EXPECT_EQ(run.error_type, "InvalidRequest") << run.describe();
        // A body the worker can still read a question from opens and ends a trace.
        if (!run.explains.empty()) {
            ASSERT_NO_FATAL_FAILURE(check_chain(
                run, ChainExpectation{{"Question"}, "error", "InvalidRequest", {}, service}));
            ASSERT_NO_FATAL_FAILURE(expect_stored_exactly(run, "error"));
        }
    }
    EXPECT_TRUE(ask_graph("Who designed Greyhollow Light?").ok());
    EXPECT_TRUE(ask_documents("Who kept Saltspire Light?").ok());
}

TEST_F(RagTest, AQuestionOf100KBIsRefusedAndStoredCut) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    std::string question;
    while (question.size() < std::size_t{100} * 1024) question += "Who designed Greyhollow Light? ";
    for (const std::string service : {"graph-rag", "document-rag"}) {
        SCOPED_TRACE(service);
        const RagRun run = ask(service, {{"query", question}});
        ASSERT_NO_FATAL_FAILURE(expect_failed(run, service, "InvalidRequest"));
        const TraceGraph graph(run.explains);
        const auto stored = graph.text(schema::iri(run.explains.front().session), vocab::kQuery);
        ASSERT_TRUE(stored.has_value());
        EXPECT_EQ(rag::code_points(*stored), 1000u);
        EXPECT_EQ(*stored, question.substr(0, 1000));
        ASSERT_NO_FATAL_FAILURE(expect_stored_exactly(run, "error"));
    }
    EXPECT_TRUE(ask_graph("Who designed Greyhollow Light?").ok());
    EXPECT_TRUE(ask_documents("Who kept Saltspire Light?").ok());
}

TEST_F(RagTest, AnEmptyKnowledgeBaseIsNotFound) {
    ASSERT_NO_FATAL_FAILURE(
        start_pipeline({.llm_extra = {}, .rag_extra = {}, .load_sample = false}));
    for (const std::string service : {"graph-rag", "document-rag"}) {
        SCOPED_TRACE(service);
        const RagRun run = ask(service, {{"query", "Who designed Greyhollow Light?"}});
        EXPECT_FALSE(run.ok());
        EXPECT_EQ(run.error_type, "NotFound") << run.describe();
        ASSERT_FALSE(run.explains.empty());
        // The trace ends as error after the steps done before the store said there is nothing.
        const auto steps = rag::step_uris(run);
        std::vector<std::string> types;
        const std::vector<std::string> order = {"Question", "Grounding", "Exploration"};
        for (std::size_t i = 0; i < steps.size() && i < order.size(); ++i)
            types.push_back(order[i]);
        ASSERT_NO_FATAL_FAILURE(
            check_chain(run, ChainExpectation{types, "error", "NotFound", {}, service}));
        ASSERT_NO_FATAL_FAILURE(expect_stored_exactly(run, "error"));
    }
    // Loading the sample afterwards: the same workers answer.
    ASSERT_TRUE(
        exited_with(glassbox({"load", "rdf", (kSample / "orrin.ttl").string(), "--tier", "1"}), 0));
    EXPECT_TRUE(ask_graph("Who designed Greyhollow Light?").ok());
}

TEST_F(RagTest, LlmEndpointDownIsATypedErrorAndTheTraceEndsAsError) {
    // An llm worker whose OpenAI-compatible endpoint refuses connections: a port just closed.
    int closed_port = 0;
    {
        zmq::socket_t probe(context_, zmq::socket_type::rep);
        probe.bind("tcp://127.0.0.1:*");
        closed_port = std::stoi(port_of(probe.get(zmq::sockopt::last_endpoint)));
    }
    ASSERT_NO_FATAL_FAILURE(start_pipeline(
        {.llm_extra = {"--provider", "openai", "--base-url",
                       "http://127.0.0.1:" + std::to_string(closed_port), "--model", "none",
                       "--api-key-env", "-", "--max-retries", "0", "--timeout-ms", "3000"},
         .rag_extra = {},
         .load_sample = true}));
    for (const std::string service : {"graph-rag", "document-rag"}) {
        SCOPED_TRACE(service);
        const RagRun run = ask(service, {{"query", "Who designed Greyhollow Light?"}});
        EXPECT_FALSE(run.ok());
        EXPECT_TRUE(run.error_type == "ServiceUnavailable" || run.error_type == "UpstreamError")
            << run.describe();
        ASSERT_NO_FATAL_FAILURE(
            check_chain(run, ChainExpectation{{"Question"}, "error", run.error_type, {}, service}));
        ASSERT_NO_FATAL_FAILURE(expect_stored_exactly(run, "error"));
    }
    // The RAG workers still serve: the same failure again, typed, not a hang or a crash ...
    const RagRun again = ask("graph-rag", {{"query", "Who founded the Tidewater Observatory?"}});
    EXPECT_FALSE(again.ok());
    EXPECT_FALSE(again.error_type.empty()) << again.describe();
    // ... and once a working llm worker replaces the broken one, the same RAG workers answer.
    for (auto& p : processes_) {
        if (p->name() == "llm") p->terminate();
    }
    start_process("llm-extractive",
                  {glassbox_binary(), "worker", "llm", "--broker", broker_.endpoint,
                   "--heartbeat-ms", std::to_string(kHeartbeatMs), "--provider", "extractive"});
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "llm"));
    EXPECT_TRUE(ask_graph("Who founded the Tidewater Observatory?").ok());
    EXPECT_TRUE(ask_documents("Who founded the Tidewater Observatory?").ok());
}

TEST_F(RagTest, StoreKilledMidQueryIsATypedErrorAndAFollowingQuerySucceeds) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline(
        {.llm_extra = {}, .rag_extra = {"--call-timeout-ms", "3000"}, .load_sample = true}));
    for (const std::string service : {"graph-rag", "document-rag"}) {
        SCOPED_TRACE(service);
        // The store worker is frozen, so the query's store request is inside it when it is
        // killed (the newest store process: each round starts a new one).
        ChildProcess* store_process = nullptr;
        for (auto& p : processes_) {
            if (p->name().rfind("store-", 0) == 0) store_process = p.get();
        }
        ASSERT_NE(store_process, nullptr);
        store_process->send_signal(SIGSTOP);
        GbcClient client(context_, broker_.endpoint);
        const std::string id = client.request(
            service, json{{"query", "Who designed Greyhollow Light?"}}.dump(), 30'000);
        ASSERT_TRUE(wait_for_service_entry(broker_.endpoint, "store", [](const json& e) {
            return e.value("in_flight", 0) >= 1;
        })) << "the query's store request never reached the frozen store";
        store_process->kill();
        const RagRun run = rag::decode_run(client.collect(id, milliseconds{30'000}));
        EXPECT_FALSE(run.ok()) << run.describe();
        EXPECT_TRUE(run.error_type == "DeadlineExceeded" || run.error_type == "Timeout" ||
                    run.error_type == "ServiceUnavailable" || run.error_type == "WorkerLost")
            << run.describe();
        ASSERT_FALSE(run.explains.empty()) << run.describe();
        ASSERT_NO_FATAL_FAILURE(check_chain(
            run,
            ChainExpectation{{"Question", "Grounding"}, "error", run.error_type, {}, service}));
        ASSERT_NO_FATAL_FAILURE(expect_stored_exactly(run, "error"));

        // A new store worker on the same home: the same RAG worker answers again.
        start_store();
        ASSERT_TRUE(wait_for_service(broker_.endpoint, "store"));
        const RagRun good =
            ask(service, {{"query", "Who designed Greyhollow Light?"}, {"streaming", true}});
        EXPECT_TRUE(good.ok()) << good.describe();
    }
}

// ---- the CLI ------------------------------------------------------------------------------------

TEST_F(RagTest, InvokeStreamsExplainsAndPrintsSourcesAndTrace) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    // Text with -x: one line per step in order, the answer, sources, the trace to show.
    const auto text = glassbox(
        {"invoke", "graph-rag", "-x", "-q", "Who founded the shipyard that built the MV Curlew?"});
    ASSERT_TRUE(exited_with(text, 0)) << text.err;
    const auto lines = lines_of(text.out);
    std::vector<std::string> step_lines;
    std::string trace_line;
    bool sources = false;
    for (const auto& line : lines) {
        if (line.starts_with("[") && line.find("] urn:glassbox:") != std::string::npos)
            step_lines.push_back(line);
        if (line.starts_with("trace: ")) trace_line = line.substr(7);
        if (line.starts_with("sources:")) sources = true;
    }
    ASSERT_EQ(step_lines.size(), 5u) << text.out;
    const std::vector<std::string> order = {"[Question]", "[Grounding]", "[Exploration]", "[Focus]",
                                            "[Synthesis]"};
    for (std::size_t i = 0; i < order.size(); ++i)
        EXPECT_TRUE(step_lines[i].starts_with(order[i])) << step_lines[i];
    EXPECT_NE(step_lines[0].find("question \"Who founded"), std::string::npos) << step_lines[0];
    EXPECT_NE(step_lines[1].find("concepts "), std::string::npos) << step_lines[1];
    EXPECT_NE(step_lines[2].find("seeds "), std::string::npos) << step_lines[2];
    EXPECT_NE(step_lines[3].find(" -"), std::string::npos) << "kept edges shown: " << step_lines[3];
    EXPECT_NE(step_lines[4].find("citations "), std::string::npos) << step_lines[4];
    EXPECT_NE(step_lines[4].find("trace complete"), std::string::npos) << step_lines[4];
    EXPECT_NE(step_lines[4].find("model glassbox-extractive-v1"), std::string::npos)
        << step_lines[4];
    EXPECT_TRUE(sources) << text.out;
    EXPECT_NE(text.out.find("orrin.ttl"), std::string::npos) << text.out;
    // Sources as a reader wants them: the answer carries [n] markers, the list numbers them and
    // says what each fact states and where it was loaded from, with its tier.
    EXPECT_NE(text.out.find(" [1]"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("\n  [1] "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("fact from file://"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find(", tier 1\n"), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find("sources: none"), std::string::npos) << text.out;
    ASSERT_FALSE(rag::run_uuid(trace_line).empty()) << text.out;
    // The trace it names is the one `traces show` finds.
    ASSERT_FALSE(stored_trace(trace_line, "complete", 5).is_null());
    const auto shown = glassbox({"traces", "show", trace_line});
    ASSERT_TRUE(exited_with(shown, 0)) << shown.err;
    EXPECT_NE(shown.out.find("Focus"), std::string::npos);

    // Document RAG with -x: chunks named by file and fragment, the re-ranked ones too.
    const auto docs = glassbox({"invoke", "document-rag", "-x", "--doc-limit", "2", "--fetch-limit",
                                "4", "-q", "Who rescued the crew of the Good Hope?"});
    ASSERT_TRUE(exited_with(docs, 0)) << docs.err;
    int chunk_lines = 0;
    for (const auto& line : lines_of(docs.out)) {
        if (line.starts_with("[Exploration] ") || line.starts_with("[Focus] ")) {
            ++chunk_lines;
            EXPECT_NE(line.find(".md#chunk-"), std::string::npos) << line;
        }
    }
    EXPECT_EQ(chunk_lines, 2) << docs.out;

    // Without -x: no step lines, the answer and the footer.
    const auto plain = glassbox(
        {"invoke", "document-rag", "-q", "Who rescued the crew of the Good Hope?", "--no-stream"});
    ASSERT_TRUE(exited_with(plain, 0)) << plain.err;
    EXPECT_EQ(plain.out.find("[Question]"), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find("trace: urn:glassbox:"), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find("sources:"), std::string::npos) << plain.out;
    // A chunk source: its title, document, chunk, character offsets and tier, then the sentence.
    EXPECT_NE(plain.out.find(".md#chunk-"), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find(", characters "), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find("      \""), std::string::npos) << plain.out;

    // --json: every message as received, one JSON object per line, the FINAL last.
    const auto as_json = glassbox({"invoke", "document-rag", "--json", "-q",
                                   "Why was Westfall chosen for the observatory?", "--doc-limit",
                                   "3", "--fetch-limit", "6"});
    ASSERT_TRUE(exited_with(as_json, 0)) << as_json.err;
    std::vector<json> messages;
    for (const auto& line : lines_of(as_json.out)) {
        auto parsed = json::parse(line, nullptr, false);
        ASSERT_TRUE(parsed.is_object()) << line;
        messages.push_back(parsed);
    }
    ASSERT_FALSE(messages.empty());
    EXPECT_EQ(messages.back().value("kind", ""), "final");
    int explains = 0;
    int data = 0;
    std::string streamed;
    for (const auto& m : messages) {
        if (m.value("kind", "") == "explain") {
            ++explains;
            EXPECT_TRUE(m["body"]["explain_triples"].is_array());
        }
        if (m.value("kind", "") == "data") {
            ++data;
            streamed += m["body"].value("response", "");
        }
    }
    EXPECT_EQ(explains, 5);  // Question, Grounding, Exploration, Focus, Synthesis
    EXPECT_GT(data, 0);
    EXPECT_EQ(streamed, messages.back()["body"].value("response", ""));
    EXPECT_EQ(messages.back()["body"].value("session", "").substr(0, 13), "urn:glassbox:");
    // The FINAL's structured citations: numbered from 1, each naming its selection.
    const json citations = messages.back()["body"].value("citations", json::array());
    ASSERT_TRUE(citations.is_array() && !citations.empty()) << messages.back().dump();
    for (std::size_t i = 0; i < citations.size(); ++i) {
        EXPECT_EQ(citations[i].value("n", 0), static_cast<int>(i + 1));
        EXPECT_NE(citations[i].value("selection", "").find(":chunk:"), std::string::npos)
            << citations[i].dump();
        EXPECT_EQ(citations[i].value("kind", ""), "chunk");
    }

    // Errors: the typed message on stderr, exit 2 for a collection that is not there.
    const auto missing =
        glassbox({"invoke", "graph-rag", "-q", "Who?", "--collection", "nothing-here"});
    EXPECT_TRUE(exited_with(missing, 2)) << missing.status.describe();
    EXPECT_TRUE(missing.err.starts_with("NotFound")) << missing.err;
    const auto bad = glassbox({"invoke", "graph-rag", "-q", "Who?", "--max-path-length", "99"});
    EXPECT_TRUE(exited_with(bad, 2)) << bad.status.describe();
    EXPECT_TRUE(bad.err.starts_with("InvalidRequest")) << bad.err;
    const auto nobody = run_glassbox({"invoke", "graph-rag", "-q", "Who?", "--broker",
                                      "tcp://127.0.0.1:1", "--timeout-ms", "1500"});
    EXPECT_FALSE(exited_with(nobody, 0));
    EXPECT_FALSE(nobody.err.empty());
}

// `glassbox chat` over a pipe: one question a line, all turns of one session, which
// `glassbox sessions` lists, shows (oldest first, with their traces) and deletes.
TEST_F(RagTest, ChatOverAPipeKeepsOneConversationThatSessionsShows) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const auto chat = [&](const std::string& questions, const std::string& extra) {
        return run_command({"/bin/sh", "-c",
                            "printf '" + questions + "' | '" + glassbox_binary() +
                                "' chat --broker " + broker_.endpoint + extra},
                           dir(), milliseconds{120'000});
    };
    const auto first = chat(
        "Who founded the shipyard that built the MV Curlew?\\n/sources\\n\\n"
        "What is the population of Brinehaven?\\n",
        " --target graph-rag");
    ASSERT_TRUE(exited_with(first, 0)) << first.out << first.err;
    const auto lines = lines_of(first.out);
    ASSERT_FALSE(lines.empty());
    ASSERT_TRUE(lines[0].starts_with("session chat-")) << first.out;
    const std::string session = lines[0].substr(8, lines[0].find(' ', 8) - 8);
    std::vector<std::string> traces;
    for (const auto& line : lines) {
        if (line.starts_with("trace: ")) traces.push_back(line.substr(7));
    }
    ASSERT_EQ(traces.size(), 2u) << first.out;
    EXPECT_NE(first.out.find("Brenn"), std::string::npos) << first.out;
    EXPECT_NE(first.out.find("fact from file://"), std::string::npos) << "/sources: " << first.out;
    // The same session continued by a second chat, its target chosen: no agent or query
    // worker is up, so graph-rag.
    const auto second = chat("Who designed Greyhollow Light?\\n", " --session " + session);
    ASSERT_TRUE(exited_with(second, 0)) << second.out << second.err;
    EXPECT_TRUE(second.out.starts_with("session " + session + " (graph-rag)\n")) << second.out;

    // The collector indexes each run as it ends: wait for the three turns.
    json shown;
    for (int i = 0; i < 100; ++i) {
        const auto r = glassbox({"sessions", "show", session, "--json"});
        // NotFound (exit 2) until the first turn is indexed.
        ASSERT_TRUE(exited_with(r, 0) || exited_with(r, 2)) << r.err;
        shown = json::parse(r.out, nullptr, false);
        if (shown.is_object() && shown["turns"].size() == 3) break;
        std::this_thread::sleep_for(milliseconds{100});
    }
    ASSERT_EQ(shown["turns"].size(), 3u) << shown.dump();
    EXPECT_EQ(shown["session_id"], session);
    EXPECT_EQ(shown["turns"][0]["question"], "Who founded the shipyard that built the MV Curlew?");
    EXPECT_EQ(shown["turns"][1]["question"], "What is the population of Brinehaven?");
    EXPECT_EQ(shown["turns"][2]["question"], "Who designed Greyhollow Light?");
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(shown["turns"][i]["trace"], traces[i]);
        EXPECT_EQ(shown["turns"][i]["status"], "complete");
    }
    EXPECT_NE(shown["turns"][0].value("answer", "").find("Brenn"), std::string::npos)
        << shown.dump();
    EXPECT_TRUE(shown["turns"][0]["short_answer"].is_string()) << shown.dump();

    const auto human = glassbox({"sessions", "show", session});
    ASSERT_TRUE(exited_with(human, 0)) << human.err;
    EXPECT_NE(human.out.find("[3] "), std::string::npos) << human.out;
    EXPECT_NE(human.out.find("  Q: What is the population of Brinehaven?"), std::string::npos)
        << human.out;
    const auto listed = glassbox({"sessions", "list"});
    ASSERT_TRUE(exited_with(listed, 0)) << listed.err;
    EXPECT_NE(listed.out.find(session + "  "), std::string::npos) << listed.out;

    const auto deleted = glassbox({"sessions", "delete", session});
    ASSERT_TRUE(exited_with(deleted, 0)) << deleted.err;
    EXPECT_NE(deleted.out.find("deleted 3 turns"), std::string::npos) << deleted.out;
    // A forgotten conversation is no conversation: NotFound, as a misspelt id.
    const auto after = glassbox({"sessions", "show", session, "--json"});
    EXPECT_TRUE(exited_with(after, 2)) << after.out << after.err;
    EXPECT_TRUE(after.err.starts_with("NotFound")) << after.err;
    // The traces stay.
    EXPECT_TRUE(exited_with(glassbox({"traces", "show", traces[0]}), 0));
}

// `glassbox up` starts every worker of the pipeline.
TEST_F(RagTest, UpStartsEveryWorker) {
    const auto home = dir() / "up-home";
    const auto ready = dir() / "up.ready";
    auto& up = start_up(home, ready);
    const auto info = wait_for_ready_file(ready, up, milliseconds{20'000});
    ASSERT_TRUE(info.has_value());
    const std::string endpoint = (*info)["endpoint"];
    use_curve_for(endpoint, home_curve_keys(home.string()));
    for (const char* service :
         {"echo", "trace", "embeddings", "store", "llm", "graph-rag", "document-rag", "agent"}) {
        EXPECT_TRUE(wait_for_service(endpoint, service, milliseconds{20'000})) << service;
    }
    const auto stopped = up.terminate(milliseconds{20'000});
    EXPECT_TRUE(stopped.exited && stopped.code == 0) << stopped.describe();
}

// ---- output at human scale (issue 31, points 5 and 6)
// --------------------------------------------

// The column where `cell` ends on `line` (npos when absent).
std::size_t end_column(const std::string& line, const std::string& cell) {
    const auto at = line.find(cell);
    return at == std::string::npos ? std::string::npos : at + cell.size();
}

std::string line_starting(const std::string& text, const std::string& start) {
    for (const auto& line : lines_of(text))
        if (line.starts_with(start)) return line;
    return {};
}

// Issue 31: `traces show` of the one-hop sample question was 912 lines (109 explored-edge lines,
// then 109 blocks of raw IRIs). The default is now a summary naming the kept edges by label;
// --full keeps every fact; --depth bounds the sub-runs expanded.
TEST_F(RagTest, TracesShowIsAShortTreeByDefaultEverythingWithFullAndDepthBoundsSubRuns) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const RagRun run = ask_graph("Who designed Greyhollow Light?");
    ASSERT_TRUE(run.ok()) << run.describe();
    const std::string session = run.explains.front().session;
    ASSERT_TRUE(stored_trace(session, "complete", run.explains.size()).is_object());

    const auto tree = glassbox({"traces", "show", session});
    ASSERT_TRUE(exited_with(tree, 0)) << tree.err;
    EXPECT_LT(lines_of(tree.out).size(), 40u) << tree.out;
    EXPECT_TRUE(tree.out.starts_with("Trace         " + session + " (graph-rag)\n")) << tree.out;
    EXPECT_NE(tree.out.find("\nQuestion      Who designed Greyhollow Light?\n"), std::string::npos)
        << tree.out;
    EXPECT_NE(tree.out.find("\nAnswer        Ilse Varrow\n"), std::string::npos) << tree.out;
    EXPECT_NE(tree.out.find("\nCollection    default\n"), std::string::npos) << tree.out;
    EXPECT_NE(tree.out.find("\nStatus        complete in "), std::string::npos) << tree.out;
    EXPECT_NE(tree.out.find("\nModel         glassbox-extractive-v1; tokens "), std::string::npos)
        << tree.out;
    EXPECT_NE(tree.out.find(" edges explored"), std::string::npos) << tree.out;
    EXPECT_NE(tree.out.find(" explored edges kept"), std::string::npos) << tree.out;
    // The kept edges by the store's labels, each with its score to 2 decimals.
    const std::string kept = line_starting(tree.out, "        0.");
    EXPECT_EQ(kept.substr(12, 2), "  ") << "a score of 2 decimals: " << kept;
    EXPECT_NE(tree.out.find("  Greyhollow Light was designed by Ilse Varrow\n"), std::string::npos)
        << tree.out;
    EXPECT_EQ(tree.out.find("https://glassbox.dev/sample/orrin/"), std::string::npos)
        << "no raw IRIs:\n"
        << tree.out;
    EXPECT_EQ(tree.out.find("exploredEdge"), std::string::npos) << tree.out;

    const auto full = glassbox({"traces", "show", session, "--full"});
    ASSERT_TRUE(exited_with(full, 0)) << full.err;
    EXPECT_GT(lines_of(full.out).size(), 300u);
    EXPECT_NE(full.out.find("gb:exploredEdge exploration:edge:0"), std::string::npos);
    EXPECT_NE(full.out.find("<https://glassbox.dev/sample/orrin/GreyhollowLight>"),
              std::string::npos);
    // The RDF formats are the exact triples whatever the tree shows.
    const auto turtle = glassbox({"traces", "show", session, "--format", "turtle"});
    ASSERT_TRUE(exited_with(turtle, 0)) << turtle.err;
    EXPECT_NE(turtle.out.find("gb:exploredEdge"), std::string::npos);

    // A second run called from the first's Focus step: a sub-run, expanded unless --depth 0.
    const RagRun sub =
        ask_graph("Who designed Saltspire Light?", {{"parent_uri", run.explains[3].explain_id}});
    ASSERT_TRUE(sub.ok()) << sub.describe();
    ASSERT_TRUE(
        stored_trace(sub.explains.front().session, "complete", sub.explains.size()).is_object());
    const auto nested = glassbox({"traces", "show", session});
    ASSERT_TRUE(exited_with(nested, 0)) << nested.err;
    EXPECT_NE(nested.out.find("\n    \u2514\u2500 called from focus\n"), std::string::npos)
        << nested.out;
    EXPECT_NE(nested.out.find("\n    Question      Who designed Saltspire Light?\n"),
              std::string::npos)
        << nested.out;
    EXPECT_NE(nested.out.find("\n    [3] Focus "), std::string::npos) << nested.out;
    const auto shallow = glassbox({"traces", "show", session, "--depth", "0"});
    ASSERT_TRUE(exited_with(shallow, 0)) << shallow.err;
    EXPECT_NE(shallow.out.find("\u2514\u2500 called from focus\n        graph-rag " +
                               rag::run_uuid(sub.explains.front().session) + " complete in "),
              std::string::npos)
        << shallow.out;
    EXPECT_NE(shallow.out.find("(--depth to expand)"), std::string::npos) << shallow.out;
    EXPECT_EQ(shallow.out.find("Saltspire Light?\n"), std::string::npos)
        << "the sub-run is one line:\n"
        << shallow.out;
    EXPECT_LT(lines_of(shallow.out).size(), lines_of(nested.out).size());
    EXPECT_FALSE(exited_with(glassbox({"traces", "show", session, "--depth", "-1"}), 0));
}

// Issue 31 (point 5): -x printed IRI local names ("GreyhollowLight -designedBy-> IlseVarrow")
// where the docs promise labels.
TEST_F(RagTest, InvokeExplainNamesKeptEdgesByLabel) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const auto r = glassbox({"invoke", "graph-rag", "-x", "-q", "Who designed Greyhollow Light?"});
    ASSERT_TRUE(exited_with(r, 0)) << r.err;
    const std::string focus = line_starting(r.out, "[Focus] ");
    EXPECT_NE(focus.find("Greyhollow Light -was designed by-> Ilse Varrow ("), std::string::npos)
        << focus;
    EXPECT_EQ(focus.find("GreyhollowLight"), std::string::npos) << focus;
}

// Issue 31 (point 5): `traces list --limit` accepted up to 100,000 and the trace store refused
// above 10,000; the CLI now names the store's range itself.
TEST_F(RagTest, TracesListLimitIsTheTraceStoresRangeAndCollectionIsAccepted) {
    PipelineOptions empty;
    empty.load_sample = false;
    ASSERT_NO_FATAL_FAILURE(start_pipeline(empty));
    const auto over = glassbox({"traces", "list", "--limit", "10001"});
    EXPECT_FALSE(exited_with(over, 0));
    EXPECT_NE(over.err.find("10000"), std::string::npos) << over.err;
    EXPECT_EQ(over.err.find("100000"), std::string::npos) << over.err;
    EXPECT_TRUE(exited_with(glassbox({"traces", "list", "--limit", "10000"}), 0));
    const auto by_collection = glassbox({"traces", "list", "--collection", "default", "--json"});
    EXPECT_TRUE(exited_with(by_collection, 0)) << by_collection.err;
}

// Issue 31: `traces stats` and `graph stats` print aligned, labelled tables; graph stats counts
// documents and chunks per tier too.
TEST_F(RagTest, TracesStatsAndGraphStatsAreAlignedTables) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    const RagRun run = ask_graph("Who designed Greyhollow Light?");
    ASSERT_TRUE(run.ok()) << run.describe();
    ASSERT_TRUE(
        stored_trace(run.explains.front().session, "complete", run.explains.size()).is_object());
    const auto traces = glassbox({"traces", "stats"});
    ASSERT_TRUE(exited_with(traces, 0)) << traces.err;
    const std::string sessions = line_starting(traces.out, "  sessions ");
    const std::string events = line_starting(traces.out, "  events ");
    const std::string triples = line_starting(traces.out, "  triples ");
    ASSERT_FALSE(sessions.empty() || events.empty() || triples.empty()) << traces.out;
    EXPECT_EQ(sessions.size(), events.size()) << "numbers end in one column:\n" << traces.out;
    EXPECT_EQ(events.size(), triples.size()) << traces.out;
    EXPECT_NE(line_starting(traces.out, "    complete ").find(" 1"), std::string::npos)
        << traces.out;
    EXPECT_TRUE(traces.out.starts_with("Trace store\n")) << traces.out;

    const auto graph = glassbox({"graph", "stats"});
    ASSERT_TRUE(exited_with(graph, 0)) << graph.err;
    const auto lines = lines_of(graph.out);
    ASSERT_GE(lines.size(), 7u) << graph.out;
    EXPECT_EQ(lines[0], "Collection default");
    const std::string& titles = lines[1];
    const std::string tier1 = line_starting(graph.out, "  tier 1 authoritative ");
    const std::string tier3 = line_starting(graph.out, "  tier 3 crowd-sourced ");
    const std::string total = line_starting(graph.out, "  total ");
    ASSERT_FALSE(tier1.empty() || tier3.empty() || total.empty()) << graph.out;
    // The sample: 299 facts at tier 1; its 6 documents (9 chunks) at the default tier 3.
    EXPECT_EQ(end_column(titles, "facts"), end_column(tier1, "299")) << graph.out;
    EXPECT_EQ(end_column(titles, "facts"), end_column(total, "299")) << graph.out;
    EXPECT_EQ(end_column(titles, "documents"), end_column(tier3, "6")) << graph.out;
    EXPECT_EQ(end_column(titles, "chunks"), tier3.size()) << graph.out;
    EXPECT_TRUE(tier3.ends_with(" 9")) << graph.out;
    EXPECT_TRUE(total.ends_with(" 9")) << graph.out;
    EXPECT_EQ(tier1.size(), tier3.size()) << graph.out;
}

// Issue 31: `invoke agent` cut observations mid-JSON without "…" (chat printed them whole). An
// observation is a short summary: facts in words, cut at a word with "…".
TEST_F(RagTest, InvokeAgentShowsObservationsAsShortSummaries) {
    ASSERT_NO_FATAL_FAILURE(start_pipeline());
    start_process("agent", {glassbox_binary(), "worker", "agent", "--broker", broker_.endpoint,
                            "--heartbeat-ms", std::to_string(kHeartbeatMs)});
    ASSERT_TRUE(wait_for_service(broker_.endpoint, "agent"));
    const auto r =
        glassbox({"invoke", "agent", "-x", "-q",
                  "In which town was the founder of the shipyard that built the MV Gannet born?"});
    ASSERT_TRUE(exited_with(r, 0)) << r.err;
    std::size_t observations = 0;
    std::size_t cut = 0;
    for (const auto& line : lines_of(r.out)) {
        const auto at = line.find("] observation: ");
        if (!line.starts_with("[") || at == std::string::npos) continue;
        ++observations;
        const std::string text = line.substr(at + 15);
        EXPECT_EQ(text.find('{'), std::string::npos) << "no JSON: " << line;
        EXPECT_EQ(text.find("\"dir\""), std::string::npos) << line;
        EXPECT_NE(text.find(" facts about "), std::string::npos) << line;
        if (text.ends_with("\u2026")) {
            ++cut;
            // Cut after a whole word, never inside a quoted value.
            EXPECT_NE(text[text.size() - 4], ' ') << line;
            EXPECT_EQ(std::count(text.begin(), text.end(), '"') % 2, 0) << line;
        }
    }
    EXPECT_GE(observations, 3u) << r.out;
    EXPECT_GE(cut, 1u) << "the sample's fact lists are longer than a line:\n" << r.out;
    EXPECT_NE(r.out.find("Answer: Brinehaven"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace glassbox::integration::rag
