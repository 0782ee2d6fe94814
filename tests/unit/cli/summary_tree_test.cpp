// The default `traces show` tree (a header, one line per step, kept edges by label, sub-runs
// nested to --depth), agent observations as short summaries, the -x labels, and the aligned
// tables of `traces stats` / `graph stats`. Traces are built with the explain builders in the
// shape the workers send: the one-hop sample question explores 109 edges and keeps 25.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/render/render_text.hpp"
#include "cli/render/table_render.hpp"
#include "cli/render/trace_render.hpp"
#include "schema/explain_builder.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages_trace.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::cli::render {
namespace {

namespace explain = schema::explain;
namespace vocab = schema::vocab;
using explain::RunUris;
using schema::TraceDetail;

constexpr std::string_view kOrrin = "https://glassbox.dev/sample/orrin/";

std::string orrin(std::string_view local) { return std::string(kOrrin) + std::string(local); }

explain::TimePoint at(int ms) {
    return explain::TimePoint(std::chrono::milliseconds(1'790'000'000'000 + ms));
}

explain::StepInfo step(int ms, std::optional<std::string> from, std::uint64_t in = 0,
                       std::uint64_t out = 0) {
    explain::StepInfo info;
    info.generated_at = at(ms);
    info.derived_from = std::move(from);
    info.duration = std::chrono::milliseconds{ms % 7 + 1};
    if (in != 0 || out != 0) {
        info.input_tokens = in;
        info.output_tokens = out;
        info.model = "glassbox-extractive-v1";
    }
    return info;
}

std::size_t count_lines(const std::string& text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// A run as `show` returns it: one event per step.
struct BuiltRun {
    RunUris uris = RunUris::generate();
    TraceDetail trace;

    BuiltRun(std::string kind, const std::string& question,
             std::optional<std::string> parent = std::nullopt, std::string_view collection = {}) {
        trace.session.session = uris.question();
        trace.session.kind = std::move(kind);
        trace.session.status = "complete";
        trace.session.question = question;
        trace.session.duration_ms = 29;
        trace.session.started = "2026-11-29T06:37:16.739Z";
        if (parent) trace.session.parent = RunUris::from_uri(*parent)->question();
        add(uris.question(),
            explain::question(uris, question, at(0), explain::worker_agent_uri(*trace.session.kind),
                              parent ? std::optional<std::string_view>(*parent) : std::nullopt,
                              std::nullopt, {}, collection));
    }
    void add(const std::string& id, std::vector<schema::Triple> triples) {
        schema::TraceEvent event;
        event.seq = trace.events.size();
        event.explain_id = id;
        event.state = "open";
        event.triples = std::move(triples);
        trace.events.push_back(std::move(event));
    }
};

schema::Triple kg(std::string_view s, std::string_view p, std::string_view o) {
    return schema::make_triple(schema::iri(orrin(s)), schema::iri(orrin(p)), schema::iri(orrin(o)));
}

// "Who designed Greyhollow Light?" as graph RAG answers it: 109 edges explored, 25 kept (the
// best at 0.4213), the short answer Ilse Varrow.
BuiltRun one_hop_graph_rag(std::optional<std::string> parent = std::nullopt,
                           std::string_view collection = {}) {
    BuiltRun run("graph-rag", "Who designed Greyhollow Light?", parent, collection);
    const auto& q = run.uris;
    run.add(q.grounding(),
            explain::grounding(q, step(3, std::nullopt, 87, 2), {"Greyhollow Light", "designed"}));
    std::vector<explain::ExploredEdge> explored;
    for (int i = 0; i < 109; ++i)
        explored.push_back(
            {kg("GreyhollowLight", "relatedTo", "Thing" + std::to_string(i)), i < 8 ? 1u : 2u});
    run.add(q.exploration(), explain::graph_exploration(q, step(7, q.grounding()),
                                                        {orrin("GreyhollowLight")}, 109, explored));
    std::vector<explain::SelectedEdge> kept;
    explain::SelectedEdge designed;
    designed.edge = kg("GreyhollowLight", "designedBy", "IlseVarrow");
    designed.score = 0.4213;
    designed.concept_label = "Greyhollow Light";
    designed.reasoning =
        "\"Greyhollow Light was designed by Ilse Varrow\": its subject is named in the question.";
    designed.source =
        explain::SourceRef{"", "file:///sample/orrin.ttl", std::nullopt, std::nullopt};
    designed.data_tier = 1;
    kept.push_back(designed);
    for (int i = 1; i < 25; ++i) {
        explain::SelectedEdge other = designed;
        other.edge = kg("Light" + std::to_string(i), "designedBy", "Person" + std::to_string(i));
        other.score = 0.36 - 0.01 * i;
        kept.push_back(other);
    }
    run.add(q.focus(), explain::graph_focus(q, step(27, q.exploration(), 357, 505), kept));
    auto synthesis = explain::synthesis(
        q, step(28, q.focus(), 226, 10),
        explain::StoredText{"Ilse Varrow designed Greyhollow Light.", std::nullopt},
        {explain::Citation{0, 37, {q.edge_selection(0)}}},
        explain::ShortAnswer{"Ilse Varrow", {q.edge_selection(0)}});
    for (auto& t : explain::trace_end(q, at(29), schema::TraceStatus::kComplete))
        synthesis.push_back(std::move(t));
    run.add(q.synthesis(), std::move(synthesis));
    return run;
}

// What the store answers for the sample's IRIs.
Labels sample_labels() {
    return {{orrin("GreyhollowLight"), "Greyhollow Light"},
            {orrin("designedBy"), "was designed by"},
            {orrin("IlseVarrow"), "Ilse Varrow"}};
}

TreeOptions with_labels(Labels labels) {
    TreeOptions options;
    options.labels = std::move(labels);
    return options;
}

// ---- the default tree ------------------------------------------------------------------------

TEST(SummaryTree, AOneHopGraphRagTraceIsShortAndNamesTheKeptEdgesByLabel) {
    const BuiltRun run = one_hop_graph_rag();
    const std::string tree = render_tree(run.trace, with_labels(sample_labels()));
    EXPECT_LT(count_lines(tree), 40u) << tree;
    // The full tree of the same trace: a block per explored edge.
    TreeOptions full;
    full.full = true;
    EXPECT_GT(count_lines(render_tree(run.trace, full)), 500u);

    EXPECT_TRUE(contains(tree, "Trace         " + run.uris.question() + " (graph-rag)\n")) << tree;
    EXPECT_TRUE(contains(tree, "Question      Who designed Greyhollow Light?\n")) << tree;
    EXPECT_TRUE(contains(tree, "Answer        Ilse Varrow\n")) << tree;
    EXPECT_TRUE(
        contains(tree, "Status        complete in 29 ms, started 2026-11-29T06:37:16.739Z\n"))
        << tree;
    EXPECT_TRUE(contains(tree, "Model         glassbox-extractive-v1; tokens 670 in / 517 out\n"))
        << tree;
    // One line per step; the explored edges as their count, the kept ones by label, rounded.
    EXPECT_TRUE(contains(tree, "109 edges explored")) << tree;
    EXPECT_TRUE(contains(tree, "25 of 109 explored edges kept")) << tree;
    EXPECT_TRUE(contains(tree, "\n        0.42  Greyhollow Light was designed by Ilse Varrow\n"))
        << tree;
    EXPECT_TRUE(contains(tree, "+15 more (--full lists them)")) << tree;
    EXPECT_TRUE(contains(tree, "seed Greyhollow Light")) << tree;
    EXPECT_TRUE(contains(tree, "short answer \"Ilse Varrow\"  1 citation")) << tree;
    EXPECT_FALSE(contains(tree, "0.4213")) << tree;
    EXPECT_FALSE(contains(tree, "exploration:edge:")) << tree;
    EXPECT_FALSE(contains(tree, kOrrin.data())) << "no raw IRIs:\n" << tree;
    for (const char* kind :
         {"] Question ", "] Grounding ", "] Exploration ", "] Focus ", "] Synthesis "})
        EXPECT_TRUE(contains(tree, kind)) << kind << "\n" << tree;
}

TEST(SummaryTree, WithoutLabelsKeptEdgesReadAsLocalNamesAndTheTracesOwnLabelsWin) {
    BuiltRun run = one_hop_graph_rag();
    std::string tree = render_tree(run.trace);
    EXPECT_TRUE(contains(tree, "0.42  GreyhollowLight designedBy IlseVarrow\n")) << tree;
    // An rdfs:label the trace carries names the entity, before the store's.
    run.trace.events[3].triples.push_back(schema::make_triple(schema::iri(orrin("IlseVarrow")),
                                                              schema::iri(vocab::kRdfsLabel),
                                                              schema::literal("Ilse V.")));
    tree = render_tree(run.trace, with_labels(sample_labels()));
    EXPECT_TRUE(contains(tree, "0.42  Greyhollow Light was designed by Ilse V.\n")) << tree;
}

TEST(SummaryTree, TheHeaderNamesTheCollectionTheQuestionRecords) {
    const std::string with = render_tree(one_hop_graph_rag(std::nullopt, "orrin").trace);
    EXPECT_TRUE(contains(with, "\nCollection    orrin\n")) << with;
    const std::string without = render_tree(one_hop_graph_rag().trace);
    EXPECT_FALSE(contains(without, "Collection")) << without;
}

// A query run that routed to graph RAG, which sits under the RoutingDecision.
BuiltRun routed_query() {
    BuiltRun query("query", "Who designed Greyhollow Light?");
    const auto& q = query.uris;
    query.add(q.routing_decision(),
              explain::routing_decision(q, step(6, std::nullopt),
                                        {"rules", {"graph-entity"}, 0.8, "graph-rag"}));
    query.add(q.conclusion(),
              explain::conclusion(q, step(9, q.routing_decision()),
                                  {"Ilse Varrow designed Greyhollow Light.", std::nullopt}, {},
                                  std::string("Ilse Varrow")));
    query.trace.subtraces.push_back(one_hop_graph_rag(q.routing_decision()).trace);
    return query;
}

TEST(SummaryTree, SubRunsNestUnderTheirCallingStepAndDepthLimitsHowManyLevelsExpand) {
    const BuiltRun query = routed_query();
    const std::string all = render_tree(query.trace, with_labels(sample_labels()));
    const auto routing =
        all.find("] RoutingDecision  route graph-rag by rules (graph-entity) (0.80)");
    const auto called = all.find("\n    \u2514\u2500 called from routing\n");
    const auto sub_focus = all.find("\n    [3] Focus ");
    const auto conclusion = all.find("] Conclusion ");
    ASSERT_NE(routing, std::string::npos) << all;
    ASSERT_NE(called, std::string::npos) << all;
    ASSERT_NE(sub_focus, std::string::npos) << all;
    EXPECT_LT(routing, called);
    EXPECT_LT(called, sub_focus);
    EXPECT_LT(sub_focus, conclusion);
    EXPECT_TRUE(contains(all, "\n    Question      Who designed Greyhollow Light?\n")) << all;
    EXPECT_TRUE(contains(all, "\n            0.42  Greyhollow Light was designed by Ilse Varrow\n"))
        << all;
    EXPECT_TRUE(contains(all, "tokens 670 in / 517 out (with sub-runs)")) << all;

    TreeOptions none;
    none.depth = 0;
    const std::string shallow = render_tree(query.trace, none);
    EXPECT_TRUE(contains(shallow, "\u2514\u2500 called from routing\n")) << shallow;
    EXPECT_TRUE(contains(
        shallow, "graph-rag " + query.trace.subtraces[0].session.session.substr(13, 36) +
                     " complete in 29 ms  \"Who designed Greyhollow Light?\"  (--depth to expand)"))
        << shallow;
    EXPECT_FALSE(contains(shallow, "Focus")) << shallow;
    EXPECT_LT(count_lines(shallow), count_lines(all));

    // --depth applies to --full too.
    none.full = true;
    const std::string full_shallow = render_tree(query.trace, none);
    EXPECT_FALSE(contains(full_shallow, "Focus")) << full_shallow;
    EXPECT_TRUE(contains(full_shallow, "(--depth to expand)")) << full_shallow;
}

TEST(SummaryTree, AnErrorRunEndsWithItsError) {
    BuiltRun run = one_hop_graph_rag();
    run.trace.session.status = "error";
    run.trace.events[3].error = schema::StoredError{"UpstreamError: the llm failed"};
    const std::string tree = render_tree(run.trace);
    EXPECT_TRUE(contains(tree, "Status        error")) << tree;
    EXPECT_TRUE(contains(tree, "error: UpstreamError: the llm failed")) << tree;
    EXPECT_TRUE(contains(tree, "\nERROR  UpstreamError: the llm failed\n")) << tree;
}

TEST(SummaryTree, AnAgentRunShowsItsToolCallsAndObservationsInOneLineEach) {
    BuiltRun agent("agent", "Where was the founder of the MV Gannet's yard born?");
    const auto& q = agent.uris;
    agent.add(q.analysis(0), explain::analysis(q, 0, step(1, std::nullopt, 346, 32),
                                               {"First resolve MV Gannet and read its facts.",
                                                "triples-query", R"({"subject":"MV Gannet"})"}));
    const std::string facts =
        R"({"entity":"MV Gannet","iri":"https://glassbox.dev/sample/orrin/MVGannet","facts":[)"
        R"({"dir":"out","o":"MV Gannet","p":"label","s":"MV Gannet"},)"
        R"({"dir":"out","o":"Brenn and Daughters Shipyard","p":"was built by","s":"MV Gannet"}]})";
    agent.add(q.observation(0),
              explain::observation(q, 0, step(3, q.analysis(0)), {facts, std::nullopt}));
    agent.add(q.conclusion(),
              explain::conclusion(q, step(4, q.observation(0)), {"Brinehaven.", std::nullopt},
                                  "final-answer", std::string("Brinehaven")));
    const std::string tree = render_tree(agent.trace);
    EXPECT_TRUE(contains(
        tree,
        "thought \"First resolve MV Gannet and read its facts.\"  -> triples-query \"MV Gannet\""))
        << tree;
    EXPECT_TRUE(contains(tree,
                         "] Observation       1 fact about MV Gannet: MV Gannet was built by Brenn "
                         "and Daughters Shipyard"))
        << tree;
    EXPECT_TRUE(contains(tree, "Answer        Brinehaven\n")) << tree;
    EXPECT_FALSE(contains(tree, "\"dir\"")) << tree;
}

// Issue 35: a source past its collection's revalidation age is marked where the summary names
// what it backs (a kept edge, an answer's source) with its own date and the collection's max
// age; the full tree with --show-sources gives every source's date, loading time, max age and
// the STALE mark. A fresh source carries no mark.
BuiltRun dated_graph_rag(bool stale) {
    BuiltRun run = one_hop_graph_rag();
    const schema::Term document = schema::iri("file:///sample/orrin.ttl");
    const auto add = [&](std::string_view p, schema::Term o) {
        run.trace.events[3].triples.push_back(
            schema::make_triple(document, schema::iri(std::string(p)), std::move(o)));
    };
    add(vocab::kDctermsDate,
        schema::typed_literal("2020-01-01", "http://www.w3.org/2001/XMLSchema#date"));
    add(vocab::kProvGeneratedAtTime,
        schema::typed_literal("2026-12-01T10:00:00Z", "http://www.w3.org/2001/XMLSchema#dateTime"));
    add(vocab::kMaxAge, schema::literal("30d"));
    add(vocab::kStale, schema::typed_literal(stale ? "true" : "false",
                                             "http://www.w3.org/2001/XMLSchema#boolean"));
    return run;
}

TEST(SummaryTree, AStaleSourceIsMarkedWithItsDateAndMaxAge) {
    const std::string tree = render_tree(dated_graph_rag(true).trace, with_labels(sample_labels()));
    EXPECT_TRUE(contains(tree,
                         "0.42  Greyhollow Light was designed by Ilse Varrow  STALE (dated "
                         "2020-01-01, max age 30d)\n"))
        << tree;
    const std::string fresh = render_tree(dated_graph_rag(false).trace);
    EXPECT_FALSE(contains(fresh, "STALE")) << fresh;

    TreeOptions sources;
    sources.full = true;
    sources.show_sources = true;
    const std::string full = render_tree(dated_graph_rag(true).trace, sources);
    EXPECT_TRUE(contains(full, "document <file:///sample/orrin.ttl>\n")) << full;
    EXPECT_TRUE(contains(full,
                         "  dated 2020-01-01, loaded 2026-12-01T10:00:00Z, max age 30d, "
                         "STALE\n"))
        << full;
    const std::string full_fresh = render_tree(dated_graph_rag(false).trace, sources);
    EXPECT_TRUE(contains(full_fresh,
                         "  dated 2020-01-01, loaded 2026-12-01T10:00:00Z, max age "
                         "30d\n"))
        << full_fresh;
    EXPECT_FALSE(contains(full_fresh, "STALE")) << full_fresh;
}

TEST(SummaryTree, AnAgentsConflictAndStaleAnswerSourceAreNamedOnItsConclusion) {
    BuiltRun agent("agent", "When was Saltspire Light built?");
    const auto& q = agent.uris;
    auto conclusion = explain::conclusion(q, step(4, std::nullopt), {"1879 [1].", std::nullopt},
                                          "final-answer", std::string("1879"));
    explain::AnswerProvenance provenance;
    provenance.engine = "agent";
    provenance.sources.push_back({"file:///register.ttl", 3, "agent", std::nullopt,
                                  "2026-12-01T10:00:00Z", "2020-01-01", true});
    provenance.sources.push_back(
        {"file:///orrin.ttl", 1, "agent", std::nullopt, "2026-12-01T10:00:00Z", "", false});
    auto sink = explain::triple_list();
    explain::answer_provenance(sink, q, provenance);
    explain::AnswerConfidence confidence;
    confidence.conflicts.push_back({"Saltspire Light",
                                    "was built in year",
                                    "1879",
                                    "1881",
                                    q.observation(0),
                                    "urn:sub:chunk:0",
                                    {"file:///register.ttl"},
                                    {"urn:chunk:harbour#0"}});
    explain::conclusion_confidence(sink, q, confidence);
    for (auto& t : sink.take()) conclusion.push_back(std::move(t));
    agent.add(q.conclusion(), std::move(conclusion));
    const std::string tree = render_tree(agent.trace);
    EXPECT_TRUE(contains(tree,
                         "stale source register.ttl (dated 2020-01-01, loaded "
                         "2026-12-01T10:00:00Z, STALE)"))
        << tree;
    EXPECT_FALSE(contains(tree, "stale source orrin.ttl")) << tree;
    EXPECT_TRUE(contains(tree, "sources disagree: \"1879\" against \"1881\"")) << tree;
}

// A `forget` as the store records it (docs/knowledge.md §10): the change on the run's first
// step, its removed facts (rdf:Statements invalidated by it) in a batch step of their own.
TEST(SummaryTree, AKnowledgeChangeSaysWhoChangedWhatAndListsTheRemovedFacts) {
    BuiltRun run("store", "forget source file:///data/orrin.ttl");
    const auto& q = run.uris;
    const auto node = schema::iri(q.question());
    const auto type = schema::iri(vocab::kRdfType);
    const auto user = schema::iri("urn:glassbox:agent:user:ada");
    run.trace.events[0].triples.push_back(
        schema::make_triple(node, type, schema::iri(vocab::kKnowledgeChange)));
    for (auto t :
         {schema::make_triple(node, schema::iri(vocab::kChangeKind),
                              schema::literal("forget-source")),
          schema::make_triple(node, schema::iri(vocab::kProvWasAssociatedWith), user),
          schema::make_triple(user, schema::iri(vocab::kRdfsLabel), schema::literal("ada")),
          schema::make_triple(node, schema::iri(vocab::kFactsAdded), schema::xsd_integer(0)),
          schema::make_triple(node, schema::iri(vocab::kFactsRemoved), schema::xsd_integer(2)),
          schema::make_triple(node, schema::iri(vocab::kRemovedSource),
                              schema::iri("file:///data/orrin.ttl"))})
        run.trace.events[0].triples.push_back(std::move(t));
    std::vector<schema::Triple> batch;
    for (std::size_t n = 0; n < 2; ++n) {
        const auto fact = schema::iri(q.removed_fact(n));
        run.trace.events[0].triples.push_back(
            schema::make_triple(node, schema::iri(vocab::kRemovedFact), fact));
        const auto edge =
            kg(n == 0 ? "GreyhollowLight" : "SaltspireLight", "designedBy", "IlseVarrow");
        batch.push_back(schema::make_triple(fact, schema::iri(vocab::kRdfSubject), edge.s));
        batch.push_back(schema::make_triple(fact, schema::iri(vocab::kRdfPredicate), edge.p));
        batch.push_back(schema::make_triple(fact, schema::iri(vocab::kRdfObject), edge.o));
        batch.push_back(schema::make_triple(fact, schema::iri(vocab::kSourceDocument),
                                            schema::iri("file:///data/orrin.ttl")));
        batch.push_back(schema::make_triple(fact, schema::iri(vocab::kProvWasInvalidatedBy), node));
    }
    run.add(q.removed_fact(0), std::move(batch));

    const std::string tree = render_tree(run.trace, with_labels(sample_labels()));
    EXPECT_TRUE(contains(tree, "forget-source  by ada  0 added, 2 removed  1 source removed"))
        << tree;
    EXPECT_TRUE(contains(
        tree, "\n        removed  Greyhollow Light was designed by Ilse Varrow  (orrin.ttl)"))
        << tree;
    EXPECT_TRUE(contains(tree, "removed source  orrin.ttl")) << tree;
    EXPECT_TRUE(contains(tree, "[1] RemovedFacts")) << tree;
    const auto iris = iris_to_label(run.trace);
    EXPECT_NE(std::find(iris.begin(), iris.end(), orrin("SaltspireLight")), iris.end());
}

TEST(SummaryTree, IrisToLabelAreTheSeedsAndTheKeptEdgesEnds) {
    const auto iris = iris_to_label(routed_query().trace);
    for (const auto* local : {"GreyhollowLight", "designedBy", "IlseVarrow", "Light24", "Person24"})
        EXPECT_NE(std::find(iris.begin(), iris.end(), orrin(local)), iris.end()) << local;
    EXPECT_EQ(std::find(iris.begin(), iris.end(), orrin("Thing5")), iris.end())
        << "explored, not kept";
}

// ---- -x lines --------------------------------------------------------------------------------

TEST(StepSummariesLabels, TheFocusLineNamesEdgesByTheLabelersNamesAskingEachIriOnce) {
    const BuiltRun run = one_hop_graph_rag();
    nlohmann::json triples = nlohmann::json::array();
    for (const auto& t : run.trace.events[3].triples) triples.push_back(schema::encode(t));
    const nlohmann::json body{{"explain_id", run.uris.focus()}, {"explain_triples", triples}};

    std::vector<std::string> asked;
    StepSummaries summaries;
    summaries.set_labeler([&asked](const std::vector<std::string>& iris) {
        asked.insert(asked.end(), iris.begin(), iris.end());
        return sample_labels();
    });
    const std::string line = summaries.next(body);
    EXPECT_TRUE(contains(line, "Greyhollow Light -was designed by-> Ilse Varrow (0.42)")) << line;
    const auto asked_first = asked.size();
    EXPECT_EQ(std::count(asked.begin(), asked.end(), orrin("IlseVarrow")), 1)
        << "asked once per message";
    (void)summaries.next(body);
    EXPECT_EQ(asked.size(), asked_first) << "a second message asks nothing already asked";
    // Without a labeler: the local names, as before.
    EXPECT_TRUE(
        contains(StepSummaries().next(body), "GreyhollowLight -designedBy-> IlseVarrow (0.42)"));
}

// Workers send the term-dictionary form (docs/protocol.md §8.1): every step reads the same.
TEST(StepSummariesLabels, ADictionaryBodyReadsAsItsPlainForm) {
    const BuiltRun run = one_hop_graph_rag();
    ASSERT_FALSE(run.trace.events.empty());
    for (const auto& event : run.trace.events) {
        schema::ExplainMessage m;
        m.session = run.uris.question();
        m.explain_id = event.explain_id;
        m.explain_triples = event.triples;
        const auto plain = nlohmann::json::parse(schema::encode_text(m));
        const auto dictionary = nlohmann::json::parse(
            schema::encode_text(m, event.triples, schema::TripleForm::kDictionary));
        ASSERT_TRUE(dictionary.contains("explain_terms"));
        EXPECT_EQ(StepSummaries().next(dictionary), StepSummaries().next(plain))
            << event.explain_id;
        EXPECT_EQ(step_type(dictionary), step_type(plain)) << event.explain_id;
        EXPECT_NE(step_type(dictionary), "-") << event.explain_id;
    }
}

// ---- observations ----------------------------------------------------------------------------

TEST(ObservationSummary, AFactLookupIsItsFactsInWords) {
    const std::string text = summarize_observation(
        R"({"entity":"Greyhollow Light","iri":"https://x/GL","facts":[)"
        R"({"dir":"out","o":"Greyhollow Light","p":"label","s":"Greyhollow Light"},)"
        R"({"dir":"out","o":"Ilse Varrow","p":"was designed by","s":"Greyhollow Light","other":"https://x/IV"},)"
        R"({"dir":"in","o":"Greyhollow Light","p":"is about","s":"Lamps Against the Dark"}],"omitted":2})");
    EXPECT_EQ(text,
              "4 facts about Greyhollow Light: Greyhollow Light was designed by Ilse Varrow; "
              "Lamps Against the Dark is about Greyhollow Light");
}

TEST(ObservationSummary, ARagAnswerIsItsShortAnswerFactsAndChunks) {
    EXPECT_EQ(
        summarize_observation(
            R"({"answer":"Ilse Varrow","response":"Ilse Varrow designed it.","citations":[)"
            R"({"n":1,"text":"Greyhollow Light was designed by Ilse Varrow","title":"","document":"file:///o.ttl"}]})"),
        "answer \"Ilse Varrow\"; 1 fact: Greyhollow Light was designed by Ilse Varrow");
    EXPECT_EQ(
        summarize_observation(R"({"answer":"","response":"The lamp was lit again.","citations":[)"
                              R"({"n":1,"text":"a","title":"Lighthouses","document":"urn:d:1"},)"
                              R"({"n":2,"text":"b","title":"The Great Gale","document":"urn:d:2"},)"
                              R"({"n":3,"text":"c","title":"Lighthouses","document":"urn:d:1"}]})"),
        "\"The lamp was lit again.\"; 3 chunks from Lighthouses, The Great Gale");
}

TEST(ObservationSummary, AnErrorIsItsMessageAndOtherTextIsKept) {
    EXPECT_EQ(
        summarize_observation("error: no entity of the knowledge graph matches \"Atlantis\"", true),
        "no entity of the knowledge graph matches \"Atlantis\"");
    EXPECT_EQ(summarize_observation("Tarnwick is on Little Tarn.\n"),
              "Tarnwick is on Little Tarn.");
    EXPECT_EQ(summarize_observation(R"({"status":"ok","rows":[1,2]})"),
              "rows: 2 items; status: ok");
}

TEST(ObservationSummary, ALongOneIsCutAtAWordWithAnEllipsisNeverMidJson) {
    std::string facts = R"({"entity":"Oskar Brenn","facts":[)";
    for (int i = 0; i < 40; ++i) {
        facts += std::string(i ? "," : "") +
                 R"({"dir":"out","s":"Oskar Brenn","p":"knew","o":"Person number )" +
                 std::to_string(i) + R"("})";
    }
    facts += "]}";
    const std::string text = summarize_observation(facts);
    EXPECT_LE(detail::code_points(text), kObservationWidth);
    ASSERT_GE(text.size(), 3u);
    EXPECT_EQ(text.substr(text.size() - 3), "\u2026") << text;
    EXPECT_EQ(text.find('{'), std::string::npos) << text;
    EXPECT_EQ(text.find("\"dir\""), std::string::npos) << text;
    EXPECT_TRUE(text.starts_with("40 facts about Oskar Brenn: Oskar Brenn knew Person number 0; "))
        << text;
    // The cut falls after a whole word.
    const std::string before = text.substr(0, text.size() - 3);
    EXPECT_TRUE(contains(facts, before.substr(before.rfind(' ') + 1) + "\"}") ||
                contains(facts, "\"" + before.substr(before.rfind(' ') + 1) + "\""))
        << before;
}

TEST(CutAtWord, CutsAtTheLastSpaceAndMarksTheCut) {
    EXPECT_EQ(detail::cut_at_word("short", 10), "short");
    EXPECT_EQ(detail::cut_at_word("one two three four", 12), "one two\u2026");
    EXPECT_EQ(detail::cut_at_word("one, two; three", 11), "one, two\u2026");
    // One long word: cut inside it, the width kept.
    EXPECT_EQ(detail::cut_at_word("abcdefghijklmnop", 6), "abcde\u2026");
    EXPECT_EQ(detail::code_points(
                  detail::cut_at_word("Greyhollow Light was designed by Ilse Varrow", 20)),
              17u);
}

// ---- tables ----------------------------------------------------------------------------------

TEST(RenderRows, NumbersLineUpByTheirLastDigitAndTextStartsTheColumn) {
    const std::string table = render_rows({{"Collection default", {}},
                                           {"", {"facts", "documents", "chunks"}},
                                           {"tier 1 authoritative", {"299", "6", "9"}},
                                           {"total", {"12,299", "16", "9"}},
                                           {"Vectors", {}},
                                           {"embedding model", {"glassbox-hashing-v1 (dim 384)"}},
                                           {"on disk (bytes)", {"1,912,966"}}});
    std::vector<std::string> lines;
    for (std::size_t start = 0; start < table.size();) {
        const auto end = table.find('\n', start);
        lines.push_back(table.substr(start, end - start));
        start = end + 1;
    }
    ASSERT_EQ(lines.size(), 8u) << table;
    EXPECT_EQ(lines[0], "Collection default");
    EXPECT_EQ(lines[4], "") << "a blank line before each heading but the first";
    EXPECT_EQ(lines[5], "Vectors");
    // The first column's numbers and its title end in one column; so do the others'.
    const auto end_of = [](const std::string& line, const std::string& cell) {
        const auto at = line.find(cell);
        return at == std::string::npos ? std::string::npos : at + cell.size();
    };
    EXPECT_EQ(end_of(lines[1], "facts"), end_of(lines[2], "299")) << table;
    EXPECT_EQ(end_of(lines[2], "299"), end_of(lines[3], "12,299")) << table;
    EXPECT_EQ(end_of(lines[3], "12,299"), end_of(lines[7], "1,912,966")) << table;
    EXPECT_EQ(end_of(lines[1], "documents"), end_of(lines[3], "16")) << table;
    EXPECT_EQ(end_of(lines[1], "chunks"), end_of(lines[2], "  9")) << table;
    // Labels start in one column; text starts where its column starts.
    EXPECT_TRUE(lines[2].starts_with("  tier 1 authoritative  ")) << table;
    EXPECT_EQ(lines[6].find("glassbox-hashing-v1"), lines[7].find("1,912,966")) << table;
}

}  // namespace
}  // namespace glassbox::cli::render
