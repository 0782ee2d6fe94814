// Explain builders: chain shapes, derivation links, typed literals, citations, sub-traces.
#include "schema/explain_builder.hpp"
#include "base/time_format.hpp"

#include <algorithm>
#include <set>
#include <span>

#include <gtest/gtest.h>

#include "schema/triple_sink.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::schema::explain {
namespace {

namespace v = vocab;
using std::chrono::milliseconds;

const RunUris kRun = *RunUris::from_uuid("11111111-2222-4333-8444-555555555555");

TimePoint at_ms(std::int64_t ms) { return TimePoint(milliseconds(ms)); }

bool has(const std::vector<Triple>& ts, std::string_view s, std::string_view p, const Term& o) {
    return std::any_of(ts.begin(), ts.end(),
                       [&](const Triple& t) { return t.s == iri(s) && t.p == iri(p) && t.o == o; });
}

std::vector<Term> objects(const std::vector<Triple>& ts, std::string_view s, std::string_view p) {
    std::vector<Term> out;
    for (const auto& t : ts) {
        if (t.s == iri(s) && t.p == iri(p)) out.push_back(t.o);
    }
    return out;
}

std::set<std::string> types(const std::vector<Triple>& ts, std::string_view s) {
    std::set<std::string> out;
    for (const auto& o : objects(ts, s, v::kRdfType)) out.insert(o.as_iri().value);
    return out;
}

void expect_all_in_retrieval_graph(const std::vector<Triple>& ts) {
    for (const auto& t : ts) {
        ASSERT_TRUE(t.graph.has_value()) << to_ntriples(t);
        EXPECT_EQ(*t.graph, "urn:graph:retrieval");
        EXPECT_FALSE(t.s.is_triple() || t.o.is_triple()) << "not plain RDF 1.1: " << to_ntriples(t);
    }
}

TEST(Datetime, MillisecondsAndZ) {
    EXPECT_EQ(base::format_xsd_datetime(at_ms(0)), "1970-01-01T00:00:00.000Z");
    EXPECT_EQ(base::format_xsd_datetime(at_ms(1735787045678)), "2025-01-02T03:04:05.678Z");
    EXPECT_EQ(datetime_literal(at_ms(5)).as_literal().datatype, kXsdDateTime);
}

TEST(Question, IsTheRunActivity) {
    const auto worker = worker_agent_uri("graph-rag");
    const auto ts = question(kRun, "Who wrote Dune?", at_ms(1000), worker);
    expect_all_in_retrieval_graph(ts);
    const auto q = kRun.question();
    EXPECT_EQ(types(ts, q),
              (std::set<std::string>{std::string(v::kProvActivity), std::string(v::kQuestion)}));
    EXPECT_TRUE(has(ts, q, v::kQuery, literal("Who wrote Dune?")));
    EXPECT_TRUE(has(ts, q, v::kProvStartedAtTime, xsd_datetime("1970-01-01T00:00:01.000Z")));
    EXPECT_TRUE(has(ts, q, v::kProvWasAssociatedWith, iri(worker)));
    EXPECT_TRUE(types(ts, worker).contains(std::string(v::kProvSoftwareAgent)));
    EXPECT_TRUE(objects(ts, q, v::kProvUsed).empty());
    EXPECT_TRUE(objects(ts, q, v::kProvEndedAtTime).empty());

    const auto end = trace_end(kRun, at_ms(2500), TraceStatus::kError);
    EXPECT_TRUE(has(end, q, v::kProvEndedAtTime, xsd_datetime("1970-01-01T00:00:02.500Z")));
    EXPECT_TRUE(has(end, q, v::kStatus, literal("error")));
}

TEST(Question, SubTraceLinksToTheCallingStepAndRun) {
    const auto parent = RunUris::generate();
    const auto ts =
        question(kRun, "q", at_ms(0), worker_agent_uri("graph-rag"), parent.routing_decision());
    EXPECT_TRUE(has(ts, kRun.question(), v::kProvUsed, iri(parent.routing_decision())));
    EXPECT_TRUE(has(ts, kRun.question(), v::kProvWasInformedBy, iri(parent.question())));
    // A foreign parent URI is used, but no calling run can be named.
    const auto foreign = question(kRun, "q", at_ms(0), "", std::string_view("https://x.org/step"));
    EXPECT_TRUE(has(foreign, kRun.question(), v::kProvUsed, iri("https://x.org/step")));
    EXPECT_TRUE(objects(foreign, kRun.question(), v::kProvWasInformedBy).empty());
}

TEST(Question, RecordsTheConversationItIsATurnOf) {
    const auto q = kRun.question();
    const auto turn = question(kRun, "And its author?", at_ms(0), worker_agent_uri("agent"),
                               std::nullopt, std::string_view("chat-7f3a"));
    EXPECT_EQ(objects(turn, q, v::kConversation), (std::vector<Term>{literal("chat-7f3a")}));
    // No session, or an empty one: no gb:conversation at all.
    EXPECT_TRUE(objects(question(kRun, "q", at_ms(0), ""), q, v::kConversation).empty());
    EXPECT_TRUE(objects(question(kRun, "q", at_ms(0), "", std::nullopt, std::string_view("")), q,
                        v::kConversation)
                    .empty());
    // The sink form writes the same triple (the RAG workers' hot path).
    std::string wire;
    {
        auto out = triple_json(wire);
        question(out, kRun, "q", at_ms(0), "", std::nullopt, std::string_view("s\"1"));
    }
    EXPECT_NE(wire.find(std::string(v::kConversation)), std::string::npos) << wire;
    EXPECT_NE(wire.find(R"("s\"1")"), std::string::npos) << wire;
}

TEST(Question, RecordsTheRequestItCameInWith) {
    const auto q = kRun.question();
    const auto asked = question(kRun, "q", at_ms(0), "", std::nullopt, std::nullopt, "gw-0123abcd");
    EXPECT_EQ(objects(asked, q, v::kRequestId), (std::vector<Term>{literal("gw-0123abcd")}));
    EXPECT_TRUE(objects(question(kRun, "q", at_ms(0), ""), q, v::kRequestId).empty());
}

// A replayed run (`glassbox traces replay`) names the run it asks again: prov:wasRevisionOf.
TEST(Question, RecordsTheRunItRevises) {
    const auto q = kRun.question();
    const std::string original = "urn:glassbox:99999999-2222-4333-8444-555555555555:question";
    const auto asked =
        question(kRun, "q", at_ms(0), "", std::nullopt, std::nullopt, {}, "default", original);
    EXPECT_EQ(objects(asked, q, v::kProvWasRevisionOf), (std::vector<Term>{iri(original)}));
    EXPECT_TRUE(objects(question(kRun, "q", at_ms(0), ""), q, v::kProvWasRevisionOf).empty());
}

// Every IRI of the triples (subjects, objects, literal datatypes) is fit for N-Triples.
void expect_only_valid_iris(const std::vector<Triple>& ts) {
    for (const auto& t : ts) {
        for (const Term* term : {&t.s, &t.o}) {
            if (term->is_iri()) {
                EXPECT_FALSE(iri_problem(term->as_iri().value)) << to_ntriples(t);
            } else if (term->is_literal() && !term->as_literal().datatype.empty()) {
                EXPECT_FALSE(iri_problem(term->as_literal().datatype)) << to_ntriples(t);
            }
        }
    }
}

TEST(Question, AnIriNTriplesRejectsNeverEntersTheTrace) {
    const std::string bad = "not a uri <>\"\n";
    const auto ts = question(kRun, "q", at_ms(0), worker_agent_uri("echo"), std::string_view(bad));
    expect_only_valid_iris(ts);
    EXPECT_TRUE(has(ts, kRun.question(), v::kProvUsed, iri(writable_iri(bad))))
        << "written as the valid IRI that stands for it";

    // IRIs from a store: an edge's terms, its source chunk and document.
    SelectedEdge edge;
    edge.edge = Triple{iri("urn:entity:a b"), iri("urn:p"),
                       typed_literal("1", "urn:type with space"), std::nullopt};
    edge.source = SourceRef{"urn:chunk:<1>", "doc without scheme", std::nullopt, std::nullopt};
    StepInfo step;
    step.derived_from = kRun.exploration();
    const auto focus = graph_focus(kRun, step, {edge});
    expect_only_valid_iris(focus);
    std::string text;
    {
        auto sink = triple_json(text);
        graph_focus(sink, kRun, step, {edge});
    }
    EXPECT_EQ(text.find("a b"), std::string::npos) << text;
    EXPECT_EQ(text.find("<1>"), std::string::npos) << text;
}

TEST(Steps, SharedShapeCostAndModel) {
    StepInfo step{at_ms(1500), kRun.grounding(), milliseconds(42), 100, 7, "extractive"};
    const auto ts = graph_exploration(kRun, step, {"urn:e:1", "urn:e:2"}, 17);
    expect_all_in_retrieval_graph(ts);
    const auto uri = kRun.exploration();
    EXPECT_EQ(types(ts, uri),
              (std::set<std::string>{std::string(v::kProvEntity), std::string(v::kExploration)}));
    EXPECT_TRUE(has(ts, uri, v::kProvWasGeneratedBy, iri(kRun.question())));
    EXPECT_TRUE(has(ts, uri, v::kProvGeneratedAtTime, xsd_datetime("1970-01-01T00:00:01.500Z")));
    EXPECT_TRUE(has(ts, uri, v::kProvWasDerivedFrom, iri(kRun.grounding())));
    EXPECT_TRUE(has(ts, uri, v::kDurationMs, xsd_integer(42)));
    EXPECT_TRUE(has(ts, uri, v::kInputTokens, xsd_integer(100)));
    EXPECT_TRUE(has(ts, uri, v::kOutputTokens, xsd_integer(7)));
    EXPECT_TRUE(has(ts, uri, v::kEdgeCount, xsd_integer(17)));
    EXPECT_TRUE(has(ts, uri, v::kSeedEntity, iri("urn:e:2")));
    const auto model = model_agent_uri("extractive");
    EXPECT_TRUE(has(ts, uri, v::kProvWasAttributedTo, iri(model)));
    EXPECT_TRUE(has(ts, uri, v::kModelName, literal("extractive")));
    EXPECT_TRUE(types(ts, model).contains(std::string(v::kProvSoftwareAgent)));
}

// The embeddings call a step made: typed literals on the step, and nothing when it made none.
TEST(Steps, RecordTheirEmbeddingsCall) {
    StepInfo step{at_ms(1500), kRun.grounding(), milliseconds(42)};
    const auto without = document_exploration(kRun, step, {});
    step.embeddings = EmbeddingsCall{"glassbox-hashing-v1", 3, 256, at_ms(1461), milliseconds(7)};
    const auto ts = document_exploration(kRun, step, {});
    expect_all_in_retrieval_graph(ts);
    const auto uri = kRun.exploration();
    EXPECT_TRUE(has(ts, uri, v::kEmbeddingModel, literal("glassbox-hashing-v1")));
    EXPECT_TRUE(has(ts, uri, v::kEmbeddingInputs, xsd_integer(3)));
    EXPECT_TRUE(has(ts, uri, v::kEmbeddingDimensions, xsd_integer(256)));
    EXPECT_TRUE(has(ts, uri, v::kEmbeddingStartedAt, xsd_datetime("1970-01-01T00:00:01.461Z")));
    EXPECT_TRUE(has(ts, uri, v::kEmbeddingDurationMs, xsd_integer(7)));
    EXPECT_EQ(ts.size(), without.size() + 5);
    EXPECT_TRUE(objects(without, uri, v::kEmbeddingModel).empty());
    // The embedder is no agent of the step: no prov:wasAttributedTo, no gb:model.
    EXPECT_TRUE(objects(ts, uri, v::kProvWasAttributedTo).empty());
    EXPECT_TRUE(objects(ts, uri, v::kModelName).empty());
}

TEST(Exploration, ExploredEdgesAreReifiedStatementsWithTheirHop) {
    const std::vector<ExploredEdge> explored{
        {make_triple(iri("urn:dune"), iri("urn:author"), iri("urn:herbert")), 1},
        {make_triple(iri("urn:herbert"), iri("urn:born"), lang_literal("Tacoma", "en")), 2},
        {make_triple(quoted(make_triple(iri("urn:a"), iri("urn:b"), iri("urn:c"))),
                     iri("urn:saidBy"), iri("urn:d")),
         3}};
    const auto ts =
        graph_exploration(kRun, StepInfo{at_ms(0), kRun.grounding()}, {"urn:dune"}, 3, explored);
    expect_all_in_retrieval_graph(ts);
    const auto x = kRun.exploration();
    const auto e0 = kRun.explored_edge(0), e1 = kRun.explored_edge(1), e2 = kRun.explored_edge(2);
    EXPECT_EQ(e0, "urn:glassbox:11111111-2222-4333-8444-555555555555:exploration:edge:0");
    EXPECT_EQ(objects(ts, x, v::kExploredEdgeProperty),
              (std::vector<Term>{iri(e0), iri(e1), iri(e2)}));
    for (const auto& e : {e0, e1, e2}) {
        EXPECT_EQ(types(ts, e), (std::set<std::string>{std::string(v::kExploredEdge),
                                                       std::string(v::kRdfStatement)}))
            << e;
    }
    EXPECT_TRUE(has(ts, e0, v::kRdfSubject, iri("urn:dune")));
    EXPECT_TRUE(has(ts, e0, v::kRdfPredicate, iri("urn:author")));
    EXPECT_TRUE(has(ts, e0, v::kRdfObject, iri("urn:herbert")));
    EXPECT_TRUE(has(ts, e0, v::kHop, xsd_integer(1)));
    EXPECT_TRUE(has(ts, e1, v::kRdfObject, lang_literal("Tacoma", "en")));
    EXPECT_TRUE(has(ts, e1, v::kHop, xsd_integer(2)));
    // A quoted subject is a further statement, as a kept edge's is.
    EXPECT_TRUE(has(ts, e2, v::kRdfSubject, iri(e2 + ":s")));
    EXPECT_TRUE(has(ts, e2 + ":s", v::kRdfObject, iri("urn:c")));
    EXPECT_TRUE(has(ts, e2, v::kHop, xsd_integer(3)));
    // Not selections: nothing may cite them, and they carry no score.
    EXPECT_FALSE(kRun.is_selection(e0));
    EXPECT_TRUE(objects(ts, e0, v::kScore).empty());
}

TEST(Exploration, RecordsTheFirstExploredEdgesUpToTheCapAndCountsThemAll) {
    std::vector<ExploredEdge> explored;
    for (std::size_t i = 0; i < kMaxExploredEdges + 20; ++i) {
        explored.push_back(
            {make_triple(iri("urn:hub"), iri("urn:rel"), iri("urn:n:" + std::to_string(i))), 1});
    }
    const auto ts =
        graph_exploration(kRun, StepInfo{at_ms(0)}, {"urn:hub"}, explored.size(), explored);
    const auto x = kRun.exploration();
    EXPECT_EQ(objects(ts, x, v::kExploredEdgeProperty).size(), kMaxExploredEdges);
    EXPECT_TRUE(
        has(ts, x, v::kEdgeCount, xsd_integer(static_cast<std::int64_t>(kMaxExploredEdges + 20))));
    // The first ones, in order.
    const auto last = kRun.explored_edge(kMaxExploredEdges - 1);
    EXPECT_TRUE(
        has(ts, last, v::kRdfObject, iri("urn:n:" + std::to_string(kMaxExploredEdges - 1))));
    EXPECT_TRUE(objects(ts, kRun.explored_edge(kMaxExploredEdges), v::kRdfObject).empty());
    // Without explored edges, the step is as before: the count and the seeds.
    const auto bare = graph_exploration(kRun, StepInfo{at_ms(0)}, {"urn:hub"}, 7);
    EXPECT_TRUE(objects(bare, x, v::kExploredEdgeProperty).empty());
    EXPECT_TRUE(has(bare, x, v::kEdgeCount, xsd_integer(7)));
}

TEST(Exploration, EdgesHeldByTheCallerWriteTheSameTriplesAsCopiedOnes) {
    // More than ten edges: the edge URIs' numbers grow a digit, and a quoted triple is reified.
    std::vector<ExploredEdge> explored;
    for (std::size_t i = 0; i < 23; ++i) {
        explored.push_back({make_triple(iri("urn:hub"), iri("urn:rel:" + std::to_string(i % 3)),
                                        iri("urn:n:" + std::to_string(i))),
                            static_cast<std::uint32_t>(1 + i % 4)});
    }
    explored[7].edge.o = quoted(make_triple(iri("urn:a"), iri("urn:b"), literal("c")));
    std::vector<ExploredEdgeRef> refs;
    refs.reserve(explored.size());
    for (const auto& e : explored) refs.push_back({&e.edge, e.hop});
    const StepInfo step{at_ms(0), kRun.grounding()};
    TripleList copied(std::nullopt);
    graph_exploration(copied, kRun, step, {"urn:hub"}, 40, explored);
    TripleList held(std::nullopt);
    graph_exploration(held, kRun, step, {"urn:hub"}, 40, std::span<const ExploredEdgeRef>(refs));
    const auto ts = held.take();
    EXPECT_EQ(ts, copied.take());
    EXPECT_TRUE(has(ts, kRun.explored_edge(22), v::kRdfObject, iri("urn:n:22")));
    EXPECT_TRUE(has(ts, kRun.explored_edge(10), v::kHop, xsd_integer(3)));
    EXPECT_TRUE(has(ts, kRun.explored_edge(7) + ":o", v::kRdfObject, literal("c")));
    EXPECT_EQ(objects(ts, kRun.exploration(), v::kExploredEdgeProperty).size(), 23u);
}

TEST(Steps, FirstStepIsNotDerivedFromTheActivity) {
    const auto ts = grounding(kRun, StepInfo{at_ms(0)}, {"dune", "author"});
    EXPECT_TRUE(objects(ts, kRun.grounding(), v::kProvWasDerivedFrom).empty());
    EXPECT_EQ(objects(ts, kRun.grounding(), v::kConcept).size(), 2u);
    EXPECT_TRUE(objects(ts, kRun.grounding(), v::kDurationMs).empty());
    EXPECT_TRUE(objects(ts, kRun.grounding(), v::kProvWasAttributedTo).empty());
}

TEST(Focus, EdgesAreReifiedStatements) {
    SelectedEdge literal_edge{
        make_triple(iri("urn:dune"), iri("urn:title"), lang_literal("Dune", "en")),
        0.875,
        "book",
        "names the book",
        SourceRef{"urn:chunk:1", "urn:doc:1", 120, 400},
        2};
    SelectedEdge quoted_edge{
        make_triple(quoted(make_triple(iri("urn:a"), iri("urn:b"), iri("urn:c"))),
                    iri("urn:saidBy"), iri("urn:d")),
        0.5,
        "",
        "",
        std::nullopt,
        9};
    const auto ts =
        graph_focus(kRun, StepInfo{at_ms(0), kRun.exploration()}, {literal_edge, quoted_edge});
    expect_all_in_retrieval_graph(ts);
    const auto e0 = kRun.edge_selection(0);
    EXPECT_TRUE(has(ts, kRun.focus(), v::kSelectedEdge, iri(e0)));
    EXPECT_TRUE(types(ts, e0).contains(std::string(v::kRdfStatement)));
    EXPECT_TRUE(types(ts, e0).contains(std::string(v::kEdgeSelection)));
    EXPECT_TRUE(has(ts, e0, v::kRdfObject, lang_literal("Dune", "en")));  // literal stays literal
    EXPECT_TRUE(has(ts, e0, v::kScore, xsd_double(0.875)));
    EXPECT_TRUE(has(ts, e0, v::kConcept, literal("book")));
    EXPECT_TRUE(has(ts, e0, v::kReasoning, literal("names the book")));
    EXPECT_TRUE(has(ts, e0, v::kDataTier, xsd_integer(2)));
    EXPECT_TRUE(has(ts, e0, v::kSourceChunk, iri("urn:chunk:1")));
    EXPECT_TRUE(has(ts, e0, v::kSourceDocument, iri("urn:doc:1")));
    EXPECT_TRUE(has(ts, "urn:chunk:1", v::kProvWasDerivedFrom, iri("urn:doc:1")));
    EXPECT_TRUE(has(ts, "urn:chunk:1", v::kCharOffset, xsd_integer(120)));
    const auto e1 = kRun.edge_selection(1);
    EXPECT_TRUE(has(ts, e1, v::kRdfSubject, iri(e1 + ":s")));
    EXPECT_TRUE(has(ts, e1 + ":s", v::kRdfObject, iri("urn:c")));
    EXPECT_TRUE(objects(ts, e1, v::kDataTier).empty());  // tier 9 is not a tier
}

// Several selections from one chunk or one file: each points at it, and it is described once.
TEST(Focus, ASharedSourceIsDescribedOnce) {
    const auto edge = [](std::string_view object, std::optional<SourceRef> source) {
        return SelectedEdge{make_triple(iri("urn:dune"), iri("urn:rel"), iri(object)),
                            0.5,
                            "",
                            "",
                            std::move(source),
                            1};
    };
    const SourceRef chunk{"urn:chunk:1", "urn:doc:1", 10, 20};
    const SourceRef file{"", "file:///kg.nt", {}, {}};
    const auto ts = graph_focus(
        kRun, StepInfo{at_ms(0), kRun.exploration()},
        {edge("urn:a", chunk), edge("urn:b", file), edge("urn:c", chunk), edge("urn:d", file)});
    const auto count = [&](std::string_view s, std::string_view p) {
        return objects(ts, s, p).size();
    };
    for (std::size_t i : {0u, 2u}) {
        EXPECT_TRUE(has(ts, kRun.edge_selection(i), v::kSourceChunk, iri("urn:chunk:1")));
        EXPECT_TRUE(has(ts, kRun.edge_selection(i), v::kSourceDocument, iri("urn:doc:1")));
        EXPECT_TRUE(has(ts, kRun.edge_selection(i), v::kProvWasDerivedFrom, iri("urn:chunk:1")));
    }
    for (std::size_t i : {1u, 3u}) {
        EXPECT_TRUE(has(ts, kRun.edge_selection(i), v::kSourceDocument, iri("file:///kg.nt")));
        EXPECT_TRUE(has(ts, kRun.edge_selection(i), v::kProvWasDerivedFrom, iri("file:///kg.nt")));
    }
    EXPECT_EQ(count("urn:chunk:1", v::kRdfType), 2u);
    EXPECT_EQ(count("urn:chunk:1", v::kCharOffset), 1u);
    EXPECT_EQ(count("urn:chunk:1", v::kProvWasDerivedFrom), 1u);
    EXPECT_EQ(count("urn:doc:1", v::kRdfType), 2u);
    EXPECT_EQ(count("file:///kg.nt", v::kRdfType), 2u);
    EXPECT_EQ(types(ts, "file:///kg.nt"),
              (std::set<std::string>{std::string(v::kProvEntity), std::string(v::kDocument)}));
}

// Issue 35: a source says how fresh it is, once, on its document: when it was loaded, its own
// date typed as what it is, its collection's revalidation age and whether it is past it.
TEST(Focus, ASourceRecordsItsLoadTimeOwnDateAndStaleness) {
    SourceRef file{"", "file:///old.ttl", {}, {}};
    file.loaded_at = "2026-11-29T10:00:00Z";
    file.date = "2020-01-01";
    file.max_age = "1d";
    file.stale = true;
    SourceRef fresh{"urn:chunk:9", "urn:doc:9", 0, 5};
    fresh.loaded_at = "2026-11-29T10:00:00Z";
    fresh.date = "2026-11-29T09:00:00Z";
    fresh.stale = false;
    const auto edge = [](std::string_view object, const SourceRef& source) {
        return SelectedEdge{
            make_triple(iri("urn:dune"), iri("urn:rel"), iri(object)), 0.5, "", "", source, 1};
    };
    const auto ts = graph_focus(kRun, StepInfo{at_ms(0), kRun.exploration()},
                                {edge("urn:a", file), edge("urn:b", file), edge("urn:c", fresh)});
    EXPECT_EQ(objects(ts, "file:///old.ttl", v::kProvGeneratedAtTime),
              (std::vector<Term>{typed_literal("2026-11-29T10:00:00Z", kXsdDateTime)}));
    EXPECT_EQ(objects(ts, "file:///old.ttl", v::kDctermsDate),
              (std::vector<Term>{typed_literal("2020-01-01", kXsdDate)}));
    EXPECT_EQ(objects(ts, "file:///old.ttl", v::kMaxAge), (std::vector<Term>{literal("1d")}));
    EXPECT_EQ(objects(ts, "file:///old.ttl", v::kStale),
              (std::vector<Term>{typed_literal("true", kXsdBoolean)}));
    EXPECT_EQ(objects(ts, "urn:doc:9", v::kDctermsDate),
              (std::vector<Term>{typed_literal("2026-11-29T09:00:00Z", kXsdDateTime)}));
    EXPECT_EQ(objects(ts, "urn:doc:9", v::kStale),
              (std::vector<Term>{typed_literal("false", kXsdBoolean)}));
    EXPECT_TRUE(objects(ts, "urn:doc:9", v::kMaxAge).empty());
    EXPECT_TRUE(objects(ts, "urn:chunk:9", v::kStale).empty()) << "on the document, not the chunk";
}

TEST(Synthesis, OnlyResolvableCitationsAreEmitted) {
    const std::string answer = "Frank Herbert wrote Dune — in 1965.";  // 35 code points
    const std::vector<Citation> cites{
        {0, 13, {kRun.edge_selection(0)}},                    // ok
        {20, 35, {kRun.edge_selection(1), "urn:elsewhere"}},  // ok, one support kept
        {5, 5, {kRun.edge_selection(0)}},                     // empty span
        {30, 36, {kRun.edge_selection(0)}},                   // past the end
        {0, 4, {"urn:elsewhere"}},                            // no support in this run
        {0, 4, {RunUris::generate().edge_selection(0)}},      // another run's selection
    };
    const auto ts =
        synthesis(kRun, StepInfo{at_ms(0), kRun.focus()}, StoredText{answer, {}}, cites);
    const auto syn = kRun.synthesis();
    EXPECT_TRUE(has(ts, syn, v::kAnswerText, literal(answer)));
    EXPECT_EQ(objects(ts, syn, v::kCitationProperty).size(), 2u);
    const auto c1 = kRun.citation(1);
    EXPECT_TRUE(has(ts, c1, v::kSpanStart, xsd_integer(20)));
    EXPECT_TRUE(has(ts, c1, v::kSpanEnd, xsd_integer(35)));
    EXPECT_EQ(objects(ts, c1, v::kSupportedBy), std::vector<Term>{iri(kRun.edge_selection(1))});

    const auto stored =
        synthesis(kRun, StepInfo{at_ms(0)}, StoredText{answer, kRun.text("answer")});
    EXPECT_TRUE(has(stored, syn, v::kAnswerRef, iri(kRun.text("answer"))));
    EXPECT_TRUE(objects(stored, syn, v::kAnswerText).empty());
}

TEST(Synthesis, StatesTheAnswersConfidenceAndItsFeatures) {
    AnswerConfidence confidence;
    confidence.probability = 0.82;
    confidence.calibrator = "2026-11-30/graph-rag";
    confidence.abstained = true;
    confidence.features = {{"margin", 0.3, 1.25}, {"path_hops", 2.0, std::nullopt}};
    const auto ts = synthesis(kRun, StepInfo{at_ms(0), kRun.focus()}, StoredText{"x", {}}, {},
                              std::nullopt, &confidence);
    const auto syn = kRun.synthesis();
    EXPECT_TRUE(has(ts, syn, v::kAnswerConfidence, xsd_double(0.82)));
    EXPECT_TRUE(has(ts, syn, v::kCalibrator, literal("2026-11-30/graph-rag")));
    EXPECT_TRUE(has(ts, syn, v::kAbstained, typed_literal("true", kXsdBoolean)));
    const auto f0 = kRun.evidence_feature("synthesis", 0);
    const auto f1 = kRun.evidence_feature("synthesis", 1);
    EXPECT_EQ(objects(ts, syn, v::kEvidenceFeatureProperty), (std::vector<Term>{iri(f0), iri(f1)}));
    EXPECT_EQ(types(ts, f0), (std::set<std::string>{std::string(v::kProvEntity),
                                                    std::string(v::kEvidenceFeature)}));
    EXPECT_TRUE(has(ts, f0, v::kFeatureName, literal("margin")));
    EXPECT_TRUE(has(ts, f0, v::kFeatureValue, xsd_double(0.3)));
    EXPECT_TRUE(has(ts, f0, v::kFeatureEffect, xsd_double(1.25)));
    EXPECT_TRUE(objects(ts, f1, v::kFeatureEffect).empty()) << "no calibrator term: no effect";

    // The FINAL's form of it reads back the same.
    const auto read = answer_confidence_of(
        nlohmann::json{{"confidence", 0.82},
                       {"calibrator", "2026-11-30/graph-rag"},
                       {"abstained", true},
                       {"evidence",
                        {{{"name", "margin"}, {"value", 0.3}, {"effect", 1.25}},
                         {{"name", "path_hops"}, {"value", 2.0}},
                         {{"name", 7}}}}});
    ASSERT_TRUE(read);
    EXPECT_EQ(read->probability, confidence.probability);
    EXPECT_EQ(read->calibrator, confidence.calibrator);
    EXPECT_TRUE(read->abstained);
    ASSERT_EQ(read->features.size(), 2u) << "a malformed feature is left out";
    EXPECT_EQ(read->features[0].effect, 1.25);
    EXPECT_FALSE(answer_confidence_of(nlohmann::json{{"response", "x"}}));
    const auto concluded = conclusion_confidence(kRun, *read);
    EXPECT_TRUE(has(concluded, kRun.conclusion(), v::kAnswerConfidence, xsd_double(0.82)));
    EXPECT_FALSE(objects(concluded, kRun.conclusion(), v::kEvidenceFeatureProperty).empty());
    EXPECT_TRUE(objects(concluded, kRun.conclusion(), v::kConflictProperty).empty());

    // Issue 35: its conflicts too, so a router's Conclusion records the engine's gb:Conflict.
    const auto disputed =
        answer_confidence_of(nlohmann::json{{"confidence", 0.4},
                                            {"conflicts",
                                             {{{"subject", "Saltspire Light"},
                                               {"predicate", "year built"},
                                               {"stated", "1879"},
                                               {"rival", "1881"},
                                               {"stated_sources", {"file:///register.ttl", 7}},
                                               {"rival_sources", {"urn:chunk:harbour#0"}},
                                               {"stated_selection", "urn:sub:observation:0"},
                                               {"rival_selection", "urn:doc:focus:chunk:0"}},
                                              {{"stated", "1879"}},
                                              "not an object"}}});
    ASSERT_TRUE(disputed);
    ASSERT_EQ(disputed->conflicts.size(), 1u) << "a conflict without both values is left out";
    const auto& c = disputed->conflicts[0];
    EXPECT_EQ(c.subject, "Saltspire Light");
    EXPECT_EQ(c.predicate, "year built");
    EXPECT_EQ(c.stated_sources, std::vector<std::string>{"file:///register.ttl"});
    EXPECT_EQ(c.rival_sources, std::vector<std::string>{"urn:chunk:harbour#0"});
    const auto routed = conclusion_confidence(kRun, *disputed);
    const auto nodes = objects(routed, kRun.conclusion(), v::kConflictProperty);
    ASSERT_EQ(nodes.size(), 1u);
    EXPECT_EQ(nodes[0], iri(kRun.conflict("conclusion", 0)));
    const auto node = kRun.conflict("conclusion", 0);
    EXPECT_TRUE(has(routed, node, v::kStatedValue, literal("1879")));
    EXPECT_TRUE(has(routed, node, v::kRivalValue, literal("1881")));
    EXPECT_TRUE(has(routed, node, v::kStatedSelection, iri("urn:sub:observation:0")));
    EXPECT_TRUE(has(routed, node, v::kRivalSelection, iri("urn:doc:focus:chunk:0")));
    EXPECT_TRUE(has(routed, node, v::kRivalSource, iri("urn:chunk:harbour#0")));
}

TEST(DocumentRag, ExplorationAndRerankedFocus) {
    const auto ex =
        document_exploration(kRun, StepInfo{at_ms(0), kRun.grounding()},
                             {RetrievedChunk{SourceRef{"urn:c:1", "urn:d:1", {}, {}}, 0.7, 1},
                              RetrievedChunk{SourceRef{"urn:c:2", "", {}, {}}, 0.6, 3}});
    EXPECT_TRUE(has(ex, kRun.exploration(), v::kChunkCount, xsd_integer(2)));
    EXPECT_TRUE(has(ex, kRun.exploration(), v::kRetrievedChunk, iri(kRun.retrieved_chunk(1))));
    EXPECT_TRUE(has(ex, kRun.retrieved_chunk(0), v::kSourceChunk, iri("urn:c:1")));
    EXPECT_TRUE(objects(ex, kRun.retrieved_chunk(1), v::kSourceDocument).empty());
    const auto fo =
        document_focus(kRun, StepInfo{at_ms(0), kRun.exploration()}, {RankedChunk{1, 0.9, "best"}});
    EXPECT_TRUE(has(fo, kRun.focus(), v::kSelectedChunk, iri(kRun.ranked_chunk(0))));
    EXPECT_TRUE(
        has(fo, kRun.ranked_chunk(0), v::kProvWasDerivedFrom, iri(kRun.retrieved_chunk(1))));
}

TEST(Agent, IterationsChainAndToolUse) {
    const auto a0 = analysis(kRun, 0, StepInfo{at_ms(0)},
                             AgentAction{"look it up", "search", R"({"q":"dune"})"});
    EXPECT_TRUE(types(a0, kRun.analysis(0)).contains(std::string(v::kToolUse)));
    EXPECT_TRUE(has(a0, kRun.analysis(0), v::kArguments, literal(R"({"q":"dune"})")));
    const auto o0 =
        observation(kRun, 0, StepInfo{at_ms(1), kRun.analysis(0)}, StoredText{"found", {}});
    EXPECT_TRUE(has(o0, kRun.observation(0), v::kProvWasDerivedFrom, iri(kRun.analysis(0))));
    EXPECT_TRUE(has(o0, kRun.observation(0), v::kObservationText, literal("found")));
    const auto a1 =
        analysis(kRun, 1, StepInfo{at_ms(2), kRun.observation(0)}, AgentAction{"done", "", ""});
    EXPECT_FALSE(types(a1, kRun.analysis(1)).contains(std::string(v::kToolUse)));
    const auto c =
        conclusion(kRun, StepInfo{at_ms(3), kRun.analysis(1)}, StoredText{"Herbert", {}});
    EXPECT_TRUE(has(c, kRun.conclusion(), v::kAnswerText, literal("Herbert")));
}

TEST(Agent, CandidatesSeveralCallsToolStatusAndTermination) {
    AgentAction action{"two lookups", "knowledge-query",
                       R"([{"tool":"knowledge-query"},{"tool":"triples-query"}])"};
    action.more_actions = {"triples-query"};
    action.candidates = {"knowledge-query", "triples-query"};
    const auto a0 = analysis(kRun, 0, StepInfo{at_ms(0)}, action);
    EXPECT_EQ(objects(a0, kRun.analysis(0), v::kAction).size(), 2u);
    EXPECT_EQ(objects(a0, kRun.analysis(0), v::kToolCandidate).size(), 2u);
    const std::string sub = "urn:glassbox:99999999-2222-4333-8444-555555555555:synthesis";
    const auto o0 = observation(kRun, 0, StepInfo{at_ms(1), kRun.analysis(0)},
                                StoredText{"error: gone", {}}, ObservationInfo{true, {sub}});
    EXPECT_TRUE(has(o0, kRun.observation(0), v::kToolStatus, literal("error")));
    EXPECT_TRUE(has(o0, kRun.observation(0), v::kProvWasDerivedFrom, iri(sub)));
    EXPECT_TRUE(has(o0, kRun.observation(0), v::kProvWasDerivedFrom, iri(kRun.analysis(0))));
    const auto ok =
        observation(kRun, 1, StepInfo{at_ms(2), kRun.analysis(1)}, StoredText{"found", {}});
    EXPECT_TRUE(has(ok, kRun.observation(1), v::kToolStatus, literal("ok")));
    const auto c = conclusion(kRun, StepInfo{at_ms(3), kRun.observation(1)},
                              StoredText{"Dune.", {}}, "max-iterations", std::string("Dune"));
    EXPECT_TRUE(has(c, kRun.conclusion(), v::kTerminationReason, literal("max-iterations")));
    EXPECT_TRUE(has(c, kRun.conclusion(), v::kShortAnswer, literal("Dune")));
    const auto plain = conclusion(kRun, StepInfo{at_ms(3)}, StoredText{"Dune.", {}});
    EXPECT_TRUE(objects(plain, kRun.conclusion(), v::kTerminationReason).empty());
}

TEST(Routing, DecisionAndEscalation) {
    const auto r = routing_decision(kRun, StepInfo{at_ms(0)},
                                    Routing{"rules", {"who-question"}, 0.75, "graph-rag"});
    EXPECT_TRUE(has(r, kRun.routing_decision(), v::kConfidence, xsd_double(0.75)));
    EXPECT_TRUE(has(r, kRun.routing_decision(), v::kRuleFired, literal("who-question")));
    EXPECT_TRUE(objects(r, kRun.routing_decision(), v::kQuestionType).empty())
        << "no rule said: no type";
    Routing typed{"rules", {"graph-entity"}, 0.8, "graph-rag"};
    typed.question_type = "entity-lookup";
    EXPECT_TRUE(has(routing_decision(kRun, StepInfo{at_ms(0)}, typed), kRun.routing_decision(),
                    v::kQuestionType, literal("entity-lookup")));
    const auto sub = RunUris::generate();
    const auto e = escalation(kRun, 0, StepInfo{at_ms(1), sub.synthesis()},
                              EscalationInfo{"low relevance", 0.2, "agent"});
    EXPECT_TRUE(has(e, kRun.escalation(0), v::kProvWasDerivedFrom, iri(sub.synthesis())));
    EXPECT_TRUE(has(e, kRun.escalation(0), v::kRelevance, xsd_double(0.2)));
    EXPECT_TRUE(objects(e, kRun.escalation(0), v::kReflectionProperty).empty());
}

TEST(Routing, AnEscalationsReflectionAndRephrasing) {
    ReflectionInfo judged{"llm", 0.15, "names no country", "", "judge-1", 40, 9, milliseconds(12)};
    const auto e = escalation(
        kRun, 1, StepInfo{at_ms(1)},
        EscalationInfo{"low", 0.15, "agent", "graph-rag", judged, "In which country?", ""});
    const std::string node = kRun.escalation(1) + ":reflection";
    EXPECT_TRUE(has(e, kRun.escalation(1), v::kReflectionProperty, iri(node)));
    EXPECT_TRUE(has(e, kRun.escalation(1), v::kRephrasedQuestion, literal("In which country?")));
    EXPECT_TRUE(objects(e, kRun.escalation(1), v::kRephraseFallback).empty());
    EXPECT_TRUE(has(e, node, v::kRdfType, iri(v::kReflection)));
    EXPECT_TRUE(has(e, node, v::kReflectionMethod, literal("llm")));
    EXPECT_TRUE(has(e, node, v::kReflectionScore, xsd_double(0.15)));
    EXPECT_TRUE(has(e, node, v::kInputTokens, xsd_integer(40)));
    EXPECT_TRUE(has(e, node, v::kDurationMs, xsd_integer(12)));
    EXPECT_TRUE(has(e, node, v::kProvWasAttributedTo, iri(model_agent_uri("judge-1"))));
    // A model-free fallback names no model and says why.
    const auto c = reflection(kRun.conclusion(),
                              ReflectionInfo{"model-free", 0.5, "coverage 0.50", "llm failed"});
    const std::string fallback = kRun.conclusion() + ":reflection";
    EXPECT_TRUE(has(c, fallback, v::kReflectionFallback, literal("llm failed")));
    EXPECT_TRUE(objects(c, fallback, v::kModelName).empty());
    EXPECT_TRUE(objects(c, fallback, v::kInputTokens).empty());
}

TEST(Echo, QuestionThenSynthesis) {
    const auto run = RunUris::generate();
    const auto q = echo_question(run, "ping", at_ms(10), worker_agent_uri("echo"));
    const auto s = echo_synthesis(run, "ping", at_ms(12), milliseconds(2));
    EXPECT_TRUE(has(q, run.question(), v::kQuery, literal("ping")));
    EXPECT_TRUE(has(s, run.synthesis(), v::kProvWasGeneratedBy, iri(run.question())));
    EXPECT_TRUE(has(s, run.synthesis(), v::kDurationMs, xsd_integer(2)));
    EXPECT_TRUE(objects(s, run.synthesis(), v::kProvWasDerivedFrom).empty());
    // One UUID per run: every URI subject of the chain belongs to the run (or is an agent).
    for (const auto* ts : {&q, &s}) {
        for (const auto& t : *ts) {
            const auto& subject = t.s.as_iri().value;
            EXPECT_TRUE(run.owns(subject) || subject.starts_with("urn:glassbox:agent:")) << subject;
        }
    }
}

TEST(Vocabulary, EveryTermIsInTheGbNamespace) {
    std::set<std::string_view> seen;
    for (auto term : v::glassbox_terms()) {
        EXPECT_TRUE(term.starts_with(v::kGbNs)) << term;
        EXPECT_TRUE(seen.insert(term).second) << "duplicate " << term;
    }
    EXPECT_GE(seen.size(), 50u);
}

}  // namespace
}  // namespace glassbox::schema::explain
