// Trace renderers: decoding `show`/`list` replies, the tree, Turtle, N-Triples, N-Quads, JSON-LD,
// the table, tail lines.
#include "cli/render/trace_render.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <set>
#include <sstream>

#include "schema/vocabulary.hpp"
#include "tests/unit/cli/trace_fixtures.hpp"

namespace glassbox::cli::render {
namespace {

using nlohmann::json;
using schema::TraceDetail;
using testing::echo_show_reply;
using testing::graph_rag_show_reply;

constexpr const char* kEchoUuid = "5f0c1e2d-3b4a-4c5d-8e6f-7a8b9c0d1e2f";
constexpr const char* kRagUuid = "0b7c6a52-3f4e-4d1a-9c2b-5e8f7a6d4c3b";
constexpr const char* kSubUuid = "1c8d7b63-405f-4e2b-8d3c-6f9a8b7e5d4c";

// The full tree (`traces show --full`), with or without the sources.
TreeOptions full_tree(bool sources = false) {
    TreeOptions options;
    options.full = true;
    options.show_sources = sources;
    return options;
}

TraceDetail decoded(const json& reply) {
    auto trace = schema::decode<schema::TraceDetail>(reply);
    EXPECT_TRUE(trace) << (trace ? "" : trace.error().describe());
    return trace ? std::move(trace).value() : TraceDetail{};
}

std::size_t count_lines(const std::string& text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// Each of `needles` is in `haystack`: a missing one fails on its own, naming it.
void expect_contains_each(const std::string& haystack, std::initializer_list<std::string> needles) {
    for (const auto& needle : needles) EXPECT_TRUE(contains(haystack, needle)) << needle;
}

std::size_t event_triples(const TraceDetail& trace) {
    std::size_t n = 0;
    for (const auto& e : trace.events) n += e.triples.size();
    for (const auto& s : trace.subtraces) n += event_triples(s);
    return n;
}

// ---- decoding ---------------------------------------------------------------------------------

TEST(DecodeTraceTest, DecodesSummaryEventsAndSubtraces) {
    const TraceDetail trace = decoded(graph_rag_show_reply());
    EXPECT_EQ(trace.session.session, std::string("urn:glassbox:") + kRagUuid + ":question");
    EXPECT_EQ(trace.session.kind, "graph-rag");
    EXPECT_EQ(trace.session.status, "complete");
    EXPECT_EQ(trace.session.duration_ms, 31);
    EXPECT_FALSE(trace.session.parent);
    ASSERT_EQ(trace.events.size(), 5u);
    EXPECT_EQ(trace.events[3].explain_id, std::string("urn:glassbox:") + kRagUuid + ":focus");
    EXPECT_FALSE(trace.events[3].triples.empty());
    ASSERT_EQ(trace.subtraces.size(), 1u);
    EXPECT_EQ(trace.subtraces[0].session.parent,
              std::string("urn:glassbox:") + kRagUuid + ":question");
    EXPECT_EQ(trace.subtraces[0].events.size(), 2u);
}

TEST(DecodeTraceTest, SortsEventsBySeq) {
    json reply = echo_show_reply(kEchoUuid, "ping");
    std::swap(reply["events"][0], reply["events"][1]);
    const TraceDetail trace = decoded(reply);
    ASSERT_EQ(trace.events.size(), 2u);
    EXPECT_EQ(trace.events[0].seq, 0u);
    EXPECT_EQ(trace.events[1].seq, 1u);
}

TEST(DecodeTraceTest, RejectsWrongShapesWithTheirPath) {
    const json good = echo_show_reply(kEchoUuid, "ping");
    struct Case {
        json reply;
        std::string path;
    };
    std::vector<Case> cases;
    cases.push_back({json::array(), "$"});
    json no_session = good;
    no_session.erase("session");
    cases.push_back({no_session, "session"});
    json events_not_array = good;
    events_not_array["events"] = "x";
    cases.push_back({events_not_array, "events"});
    json bad_seq = good;
    bad_seq["events"][1]["seq"] = -1;
    cases.push_back({bad_seq, "events[1].seq"});
    json bad_triple = good;
    bad_triple["events"][1]["triples"][2]["s"] = "not a term";
    cases.push_back({bad_triple, "events[1].triples[2].s"});
    json bad_status = good;
    bad_status["session"]["status"] = 3;
    cases.push_back({bad_status, "session.status"});
    json bad_sub = good;
    bad_sub["subtraces"] = json::array({json{{"session", 1}}});
    cases.push_back({bad_sub, "subtraces[0].session"});
    for (const auto& c : cases) {
        auto trace = schema::decode<schema::TraceDetail>(c.reply);
        ASSERT_FALSE(trace) << c.path;
        EXPECT_EQ(trace.error().type, base::ErrorType::kDecodeError);
        EXPECT_TRUE(contains(trace.error().message, c.path))
            << trace.error().message << " / " << c.path;
    }
}

TEST(DecodeTraceTest, RefusesSubtracesNestedTooDeep) {
    json reply = echo_show_reply(kEchoUuid, "ping");
    for (int i = 0; i < 70; ++i) {
        json outer = echo_show_reply(kEchoUuid, "ping");
        outer["subtraces"] = json::array({reply});
        reply = std::move(outer);
    }
    auto trace = schema::decode<schema::TraceDetail>(reply);
    ASSERT_FALSE(trace);
    EXPECT_TRUE(contains(trace.error().message, "deeper"));
}

TEST(DecodeSessionListTest, DecodesRowsAndCounts) {
    json reply = {{"sessions", json::array({graph_rag_show_reply()["session"],
                                            echo_show_reply(kEchoUuid, "ping")["session"]})},
                  {"total", 7},
                  {"limit", 2},
                  {"offset", 4}};
    auto list = schema::decode<schema::TraceSessionList>(reply);
    ASSERT_TRUE(list) << list.error().describe();
    EXPECT_EQ(list->sessions.size(), 2u);
    EXPECT_EQ(list->total, 7);
    EXPECT_EQ(list->offset, 4);
    EXPECT_EQ(list->sessions[1].question, "ping");

    EXPECT_FALSE(schema::decode<schema::TraceSessionList>(json{{"total", 1}}));
    EXPECT_FALSE(schema::decode<schema::TraceSessionList>(
        json{{"sessions", json::array({json{{"kind", "echo"}}})}}));  // no session
    EXPECT_FALSE(schema::decode<schema::TraceSessionList>(
        json{{"sessions", json::array()}, {"total", "many"}}));
}

// ---- triples ----------------------------------------------------------------------------------

TEST(TraceTriplesTest, CollectsEveryEventAndSubtraceEachQuadOnce) {
    const TraceDetail trace = decoded(graph_rag_show_reply());
    const auto triples = trace_triples(trace);
    std::set<std::string> distinct;
    for (const auto& t : triples) distinct.insert(schema::to_nquads(t));
    EXPECT_EQ(distinct.size(), triples.size());
    // The model agent's triples are stored by four steps: fewer distinct triples than stored ones.
    EXPECT_LT(triples.size(), event_triples(trace));
    const std::string sub_question = std::string("urn:glassbox:") + kSubUuid + ":question";
    EXPECT_TRUE(std::any_of(triples.begin(), triples.end(), [&](const schema::Triple& t) {
        return t.s == schema::iri(sub_question);
    }));
    for (const auto& t : triples) EXPECT_EQ(t.graph, std::string(schema::vocab::kRetrievalGraph));
}

TEST(TraceTriplesTest, DistinctTriplesDropGraphsAndMerge) {
    const auto a = schema::make_triple(schema::iri("urn:a"), schema::iri("urn:p"),
                                       schema::literal("x"), "urn:g1");
    const auto b = schema::make_triple(schema::iri("urn:a"), schema::iri("urn:p"),
                                       schema::literal("x"), "urn:g2");
    const auto c =
        schema::make_triple(schema::iri("urn:a"), schema::iri("urn:p"), schema::literal("y"));
    const auto out = distinct_triples({a, b, c, a});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_FALSE(out[0].graph);
    EXPECT_EQ(count_lines(render_nquads({a, b, c, a})), 3u);
    EXPECT_EQ(count_lines(render_ntriples({a, b, c, a})), 2u);
}

TEST(TraceFormatTest, NamesRoundTrip) {
    for (auto name : {"tree", "json", "turtle", "ntriples", "nquads", "jsonld"}) {
        const auto format = trace_format_from_string(name);
        ASSERT_TRUE(format) << name;
        EXPECT_EQ(to_string(*format), name);
    }
    EXPECT_FALSE(trace_format_from_string("xml"));
}

// ---- tree -------------------------------------------------------------------------------------

TEST(RenderTreeTest, EchoShowsHeaderAndEachStep) {
    const std::string tree = render_tree(decoded(echo_show_reply(kEchoUuid, "ping")), full_tree());
    EXPECT_TRUE(
        contains(tree, std::string("Trace         urn:glassbox:") + kEchoUuid + ":question"));
    expect_contains_each(
        tree,
        {"Kind          echo", "Status        complete", "Question      ping", "Duration      3 ms",
         "[0] Question  urn:glassbox:", "[1] Synthesis  urn:glassbox:", "    answer        ping\n",
         "    duration      1 ms\n", "    worker        <urn:glassbox:agent:worker:echo>\n"});
    // trace_end's triples are shown with the Question step, not repeated.
    EXPECT_TRUE(contains(tree, "    ended         2025-01-02T03:04:05.003Z\n"));
    const std::string ended = "\n    ended         2025-01-02T03:04:05.003Z\n";
    EXPECT_EQ(tree.find(ended), tree.rfind(ended));
    EXPECT_FALSE(contains(tree, "    session "));
    EXPECT_FALSE(contains(tree, "ERROR"));
    // Steps appear in seq order.
    EXPECT_LT(tree.find("[0] "), tree.find("[1] "));
}

TEST(RenderTreeTest, GraphRagShowsFactsEdgesCitationsAndNestedSubtrace) {
    const std::string tree = render_tree(decoded(graph_rag_show_reply()), full_tree());
    expect_contains_each(tree,
                         {"[1] Grounding  ", "    concepts      \"Dune\", \"author\"\n",
                          "    model         extractive\n", "    tokens        120 in, 30 out\n",
                          "    seed entities <urn:kg:dune>\n", "    edge count    42\n",
                          "    derived from  grounding\n",
                          "    edge focus:edge:0  score 0.93  concept \"author\"\n"});
    EXPECT_TRUE(
        contains(tree, "        statement     <urn:kg:dune> <urn:kg:author> <urn:kg:herbert>\n"));
    EXPECT_TRUE(contains(tree, "        reasoning     states the author\n"));
    EXPECT_TRUE(contains(tree, "<urn:kg:published> \"1965\"^^xsd:gYear"));
    // A multi-line text keeps its lines, indented under its label.
    EXPECT_TRUE(contains(tree,
                         "        reasoning     line one\n                      line two "
                         "\"quoted\" \\ back\ttab\n"));
    EXPECT_TRUE(contains(tree, "    answer        Frank Herbert wrote Dune.\n"));
    EXPECT_TRUE(contains(tree, "    short answer  \"Frank Herbert\"\n")) << tree;
    EXPECT_TRUE(contains(tree, "    answer from   focus:edge:0\n")) << tree;
    EXPECT_TRUE(contains(
        tree,
        "    citation synthesis:citation:0  [0, 13) \"Frank Herbert\"  \u2190 focus:edge:0\n"));
    // Without --show-sources, no sources.
    EXPECT_FALSE(contains(tree, "urn:doc:dune"));
    EXPECT_FALSE(contains(tree, "tier"));
    // The sub-trace follows the step that called it, indented.
    const auto focus = tree.find("[3] Focus");
    const auto sub = tree.find("    \u2514\u2500 called from focus");
    const auto synthesis = tree.find("[4] Synthesis");
    ASSERT_NE(sub, std::string::npos);
    EXPECT_LT(focus, sub);
    EXPECT_LT(sub, synthesis);
    EXPECT_TRUE(contains(
        tree, std::string("\n    Trace         urn:glassbox:") + kSubUuid + ":question\n"));
    EXPECT_TRUE(contains(tree, "\n    [1] Synthesis  "));
    EXPECT_TRUE(contains(
        tree, "        called from   <urn:glassbox:" + std::string(kRagUuid) + ":focus>\n"));
}

TEST(RenderTreeTest, ShowSourcesAddsChunkDocumentAndTier) {
    const std::string tree = render_tree(decoded(graph_rag_show_reply()), full_tree(true));
    EXPECT_TRUE(contains(tree, "        source        tier 1\n"));
    EXPECT_TRUE(contains(
        tree,
        "                      chunk <urn:doc:dune/c3> (chars 1200+800) of <urn:doc:dune>\n"));
    expect_contains_each(
        tree, {"                      document <urn:doc:dune>\n", "        source        tier 3\n",
               "chunk <urn:doc:dune/c4> of <urn:doc:dune>\n"});
}

TEST(RenderTreeTest, UnknownPredicatesAndSubjectsAreShown) {
    json reply = graph_rag_show_reply();
    const std::string focus = std::string("urn:glassbox:") + kRagUuid + ":focus";
    reply["events"][3]["triples"].push_back(schema::encode(schema::make_triple(
        schema::iri(focus), schema::iri("urn:x:custom"), schema::lang_literal("bonjour", "fr"),
        std::string(schema::vocab::kRetrievalGraph))));
    reply["events"][3]["triples"].push_back(schema::encode(
        schema::make_triple(schema::blank("n1"), schema::iri("https://glassbox.dev/ns#futureTerm"),
                            schema::xsd_integer(7))));
    reply["events"][4]["triples"].push_back(schema::encode(
        schema::make_triple(schema::iri(focus + ":edge:0"), schema::iri("urn:x:weight"),
                            schema::typed_literal("2", "urn:x:unit"))));
    const std::string tree = render_tree(decoded(reply), full_tree());
    expect_contains_each(
        tree, {"    <urn:x:custom> \"bonjour\"@fr\n", "    also _:n1\n        gb:futureTerm 7\n",
               "        <urn:x:weight> \"2\"^^<urn:x:unit>\n"});
}

TEST(RenderTreeTest, EveryStoredTripleIsShownSomewhere) {
    // Each event's text mentions what it stored: a step whose triples are left out would show
    // neither its predicate labels nor values. Checked here by values every builder emits.
    const std::string tree = render_tree(decoded(graph_rag_show_reply()), full_tree(true));
    for (const auto* value :
         {"42", "0.5", "1200+800", "Frank Herbert wrote Dune.", "2025-01-02T03:04:05.031Z",
          "<urn:glassbox:agent:worker:graph-rag>", "2025-01-02T03:04:05.030Z"}) {
        EXPECT_TRUE(contains(tree, value)) << value;
    }
}

TEST(RenderTreeTest, ErrorStatusHasAFooterWithTheError) {
    json reply = echo_show_reply(kEchoUuid, "ping");
    reply["session"]["status"] = "error";
    reply["session"]["error"] = {{"type", "WorkerLost"}, {"message", "the worker died"}};
    std::string tree = render_tree(decoded(reply), full_tree());
    EXPECT_TRUE(contains(tree, "\nERROR  WorkerLost: the worker died\n"));

    reply["session"]["error"] =
        "SpoolFull: the spool is full";  // the trace store's describe() form
    tree = render_tree(decoded(reply), full_tree());
    EXPECT_TRUE(contains(tree, "\nERROR  SpoolFull: the spool is full\n"));

    reply["session"].erase("error");
    reply["events"][1]["error"] = {{"type", "DeadlineExceeded"}, {"message", "late"}};
    tree = render_tree(decoded(reply), full_tree());
    EXPECT_TRUE(contains(tree, "ERROR  DeadlineExceeded: late\n"));
    EXPECT_TRUE(contains(tree, "    error         DeadlineExceeded: late\n"));

    reply["events"][1].erase("error");
    tree = render_tree(decoded(reply), full_tree());
    EXPECT_TRUE(contains(tree, "ERROR  the trace ended with status error"));
}

TEST(RenderTreeTest, ControlCharactersAreEscaped) {
    const std::string tree = render_tree(
        decoded(echo_show_reply(kEchoUuid, "red \x1b[31m alert\r\x07 \xc2\x9b")), full_tree());
    EXPECT_EQ(tree.find('\x1b'), std::string::npos);
    EXPECT_EQ(tree.find('\r'), std::string::npos);
    EXPECT_EQ(tree.find('\x07'), std::string::npos);
    EXPECT_EQ(tree.find("\xc2\x9b"), std::string::npos);
    EXPECT_TRUE(contains(tree, "red \\x1B[31m alert\\x0D\\x07 \\u009B"));
}

// ---- Turtle -----------------------------------------------------------------------------------

TEST(RenderTurtleTest, PrefixesGroupingAndTypes) {
    const TraceDetail trace = decoded(echo_show_reply(kEchoUuid, "ping"));
    const std::string ttl = render_turtle(trace_triples(trace));
    for (const auto* prefix : {"@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .",
                               "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
                               "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .",
                               "@prefix owl: <http://www.w3.org/2002/07/owl#> .",
                               "@prefix prov: <http://www.w3.org/ns/prov#> .",
                               "@prefix gb: <https://glassbox.dev/ns#> ."}) {
        EXPECT_TRUE(contains(ttl, prefix)) << prefix;
    }
    EXPECT_TRUE(contains(ttl,
                         "# glassbox trace. Turtle has no named graphs: these are the triples of "
                         "<urn:graph:retrieval>."));
    const std::string q = std::string("<urn:glassbox:") + kEchoUuid + ":question>";
    EXPECT_TRUE(
        contains(ttl, "\n" + q + " a prov:Activity, gb:Question ;\n    gb:query \"ping\" ;\n"));
    expect_contains_each(ttl, {"prov:startedAtTime \"2025-01-02T03:04:05.000Z\"^^xsd:dateTime ;",
                               "gb:durationMs 1 ;", "gb:status \"complete\" .\n"});
    // Each subject is written once: trace_end's triples join the Question's block.
    EXPECT_EQ(ttl.find("\n" + q + " "), ttl.rfind("\n" + q + " "));
}

TEST(RenderTurtleTest, EscapesLiteralsAndWritesUnprefixableIrisInFull) {
    const std::string long_text(100'000, 'x');
    const std::vector<schema::Triple> triples = {
        schema::make_triple(schema::iri("urn:s"), schema::iri("https://glassbox.dev/ns#answerText"),
                            schema::literal("say \"hi\" \\ now\nnext\rcr\ttab")),
        schema::make_triple(schema::iri("urn:s"), schema::iri("https://glassbox.dev/ns#answerText"),
                            schema::literal(long_text)),
        schema::make_triple(schema::iri("urn:s"), schema::iri("https://glassbox.dev/ns#a.b"),
                            schema::lang_literal("chat", "fr")),
        schema::make_triple(schema::iri("urn:s"), schema::iri("https://glassbox.dev/ns#score"),
                            schema::xsd_double(0.93)),
        schema::make_triple(schema::iri("urn:s"), schema::iri("https://glassbox.dev/ns#n"),
                            schema::typed_literal("007", "urn:dt")),
        schema::make_triple(schema::iri("urn:s"), schema::iri("https://glassbox.dev/ns#n"),
                            schema::typed_literal("+5", schema::kXsdInteger)),
        schema::make_triple(schema::iri("urn:s"), schema::iri("https://glassbox.dev/ns#n"),
                            schema::typed_literal("5.0", schema::kXsdInteger)),
        schema::make_triple(schema::blank("b 1"), schema::iri("http://www.w3.org/ns/prov#used"),
                            schema::iri("urn:a b")),
    };
    const std::string ttl = render_turtle(triples);
    EXPECT_TRUE(
        contains(ttl, "<urn:s> gb:answerText \"say \\\"hi\\\" \\\\ now\\nnext\\rcr\\ttab\", \"" +
                          long_text + "\" ;"));
    expect_contains_each(
        ttl, {"<https://glassbox.dev/ns#a.b> \"chat\"@fr ;", "gb:score \"0.93\"^^xsd:double ;",
              "gb:n \"007\"^^<urn:dt>, +5, \"5.0\"^^xsd:integer .",
              "\n_:bx201 prov:used <urn:a\\u0020b> .\n"});
}

// ---- N-Triples, N-Quads -----------------------------------------------------------------------

TEST(RenderNTriplesTest, OneLinePerDistinctTriple) {
    const auto triples = trace_triples(decoded(graph_rag_show_reply()));
    const std::string nt = render_ntriples(triples);
    EXPECT_EQ(count_lines(nt), distinct_triples(triples).size());
    EXPECT_FALSE(contains(nt, "urn:graph:retrieval"));
    std::istringstream lines(nt);
    for (std::string line; std::getline(lines, line);)
        EXPECT_EQ(line.substr(line.size() - 2), " .") << line;
    const std::string nq = render_nquads(triples);
    EXPECT_EQ(count_lines(nq), triples.size());
    EXPECT_TRUE(contains(nq, " <urn:graph:retrieval> .\n"));
}

// ---- JSON-LD ----------------------------------------------------------------------------------

TEST(RenderJsonLdTest, ExpandedFormInTheNamedGraph) {
    const auto triples = trace_triples(decoded(echo_show_reply(kEchoUuid, "ping")));
    const json doc = render_jsonld(triples);
    ASSERT_TRUE(doc.is_array());
    ASSERT_EQ(doc.size(), 1u);
    EXPECT_EQ(doc[0]["@id"], "urn:graph:retrieval");
    const json& nodes = doc[0]["@graph"];
    ASSERT_TRUE(nodes.is_array());
    const std::string q = std::string("urn:glassbox:") + kEchoUuid + ":question";
    const auto node =
        std::find_if(nodes.begin(), nodes.end(), [&](const json& n) { return n["@id"] == q; });
    ASSERT_NE(node, nodes.end());
    EXPECT_EQ((*node)["@type"], json::array({"http://www.w3.org/ns/prov#Activity",
                                             "https://glassbox.dev/ns#Question"}));
    EXPECT_EQ((*node)["https://glassbox.dev/ns#query"], json::array({json{{"@value", "ping"}}}));
    EXPECT_EQ((*node)["http://www.w3.org/ns/prov#startedAtTime"],
              json::array({json{{"@value", "2025-01-02T03:04:05.000Z"},
                                {"@type", "http://www.w3.org/2001/XMLSchema#dateTime"}}}));
    EXPECT_EQ((*node)["http://www.w3.org/ns/prov#wasAssociatedWith"],
              json::array({json{{"@id", "urn:glassbox:agent:worker:echo"}}}));

    // Property values counted over every node give back every triple.
    std::size_t values = 0;
    for (const auto& n : nodes) {
        for (const auto& [key, value] : n.items()) {
            if (key == "@id") continue;
            values += value.size();
        }
    }
    EXPECT_EQ(values, triples.size());
}

TEST(RenderJsonLdTest, DefaultGraphBlankNodesAndLanguages) {
    const json doc = render_jsonld(
        {schema::make_triple(schema::blank("b1"), schema::iri("urn:p"),
                             schema::lang_literal("chat", "fr")),
         schema::make_triple(schema::blank("b1"), schema::iri(schema::vocab::kRdfType),
                             schema::blank("c")),
         schema::make_triple(schema::iri("urn:s"), schema::iri("urn:p"), schema::blank("b1"),
                             "urn:g")});
    ASSERT_EQ(doc.size(), 2u);
    EXPECT_EQ(doc[0]["@id"], "_:b1");
    EXPECT_EQ(doc[0]["urn:p"], json::array({json{{"@value", "chat"}, {"@language", "fr"}}}));
    EXPECT_EQ(doc[0]["@type"], json::array({"_:c"}));
    EXPECT_EQ(doc[1]["@id"], "urn:g");
    EXPECT_EQ(doc[1]["@graph"][0]["urn:p"], json::array({json{{"@id", "_:b1"}}}));
}

// ---- list table, durations ----------------------------------------------------------------------

TEST(RenderSessionTableTest, ColumnsUuidsTruncationAndCount) {
    json rag = graph_rag_show_reply()["session"];
    rag["question"] = std::string(60, 'q') + " \u00e9t\u00e9";
    rag["collection"] = "islands";
    rag["input_tokens"] = 657;
    rag["output_tokens"] = 490;
    json running = echo_show_reply(kEchoUuid, "ping")["session"];
    running["status"] = "running";
    running.erase("duration_ms");
    running["ended"] = nullptr;
    running["session"] = "urn:other:session";
    running["pinned"] = true;
    auto list = schema::decode<schema::TraceSessionList>(
        json{{"sessions", json::array({rag, running})}, {"total", 12}, {"offset", 3}});
    ASSERT_TRUE(list) << list.error().describe();
    const std::string table = render_session_table(*list);
    std::istringstream in(table);
    std::string header;
    std::getline(in, header);
    EXPECT_EQ(header.find("SESSION"), 0u);
    std::size_t last = 0;
    for (const auto* title :
         {"KIND", "COLLECTION", "QUESTION", "STARTED", "DURATION", "TOKENS", "STATUS"}) {
        const auto at = header.find(title);
        ASSERT_NE(at, std::string::npos) << title;
        EXPECT_GT(at, last);
        last = at;
    }
    EXPECT_TRUE(contains(table, std::string(kRagUuid) + "  graph-rag"));
    EXPECT_TRUE(contains(table, std::string(47, 'q') + "\u2026"));
    EXPECT_FALSE(contains(table, std::string(48, 'q')));
    EXPECT_TRUE(contains(table, "31 ms"));
    EXPECT_TRUE(contains(table, "  islands  ")) << table;
    EXPECT_TRUE(contains(table, "  657/490  ")) << table;
    expect_contains_each(table, {"urn:other:session", "running PINNED", "4-5 of 12 sessions\n"});
    EXPECT_EQ(table.find("PINNED"), table.rfind("PINNED")) << table;  // the pinned run's only
    EXPECT_EQ(count_lines(table), 4u);
    EXPECT_EQ(render_session_table(schema::TraceSessionList{}), "(no sessions)\n");
}

TEST(FormatDurationTest, Units) {
    EXPECT_EQ(format_duration(std::nullopt), "-");
    EXPECT_EQ(format_duration(0), "0 ms");
    EXPECT_EQ(format_duration(999), "999 ms");
    EXPECT_EQ(format_duration(1250), "1.25 s");
    EXPECT_EQ(format_duration(125'000), "2 min 5 s");
    EXPECT_EQ(format_duration(7'260'000), "2 h 1 min");
}

TEST(SessionTable, CappedTotalReadsAsAtLeastAndNamesTheNextCursor) {
    json one = echo_show_reply(kEchoUuid, "ping")["session"];
    auto capped =
        schema::decode<schema::TraceSessionList>(json{{"sessions", json::array({one})},
                                                      {"total", 10000},
                                                      {"total_exact", false},
                                                      {"next", "2026-11-22T05:00:00Z|42"}});
    ASSERT_TRUE(capped) << capped.error().describe();
    EXPECT_FALSE(capped->total_exact);
    const std::string table = render_session_table(*capped);
    EXPECT_TRUE(contains(table, "1-1 of 10000+ sessions\n")) << table;
    EXPECT_TRUE(contains(table, "next page: --after 2026-11-22T05:00:00Z|42\n")) << table;
    auto exact = schema::decode<schema::TraceSessionList>(
        json{{"sessions", json::array({one})}, {"total", 1}, {"next", nullptr}});
    ASSERT_TRUE(exact);
    EXPECT_TRUE(exact->total_exact) << "an older service without the field counts exactly";
    EXPECT_FALSE(contains(render_session_table(*exact), "next page"))
        << "no cursor on the last page";
}

// Evaluations (docs/evaluation.md): an EVAL column only when a run of the page has one, with the
// latest's verdict and F1 and how many there are; `show`'s header has a line per evaluation.
TEST(SessionTable, EvaluatedRunsShowTheirLatestScore) {
    json plain = echo_show_reply(kEchoUuid, "ping")["session"];
    EXPECT_FALSE(contains(render_session_table(schema::decode<schema::TraceSessionList>(
                                                   json{{"sessions", json::array({plain})}})
                                                   .value()),
                          "EVAL"))
        << "no evaluated run, no column";
    const json wrong{{"run", "r1"}, {"set", "capitals"},    {"correct", false},
                     {"f1", 0.4},   {"answers", {"Paris"}}, {"evaluated", "2026-11-30T09:00:00Z"}};
    const json right{{"run", "r2"},
                     {"set", "capitals"},
                     {"question_id", "q7"},
                     {"correct", true},
                     {"hit", true},
                     {"exact_match", 1.0},
                     {"f1", 1.0},
                     {"confidence", 0.96},
                     {"answers", {"Paris", "Paris\x1b[2J"}},
                     {"evaluated", "2026-11-30T10:00:00Z"}};
    json twice = plain;
    twice["evaluations"] = json::array({wrong, right});
    json once = echo_show_reply(kEchoUuid, "pong")["session"];
    once["evaluations"] = json::array({wrong});
    auto list = schema::decode<schema::TraceSessionList>(
        json{{"sessions", json::array({twice, once, plain})}});
    ASSERT_TRUE(list) << list.error().describe();
    const std::string table = render_session_table(*list);
    std::istringstream in(table);
    std::string header;
    std::getline(in, header);
    EXPECT_GT(header.find("EVAL"), header.find("SUB-RUNS")) << table;
    EXPECT_TRUE(contains(table, "\u2713 F1 1.00 (2)\n")) << table;
    EXPECT_TRUE(contains(table, "\u2717 F1 0.40\n")) << table;
    EXPECT_TRUE(contains(table, "  -\n")) << "an unevaluated row: " << table;

    const auto evaluation = schema::decode<schema::TraceEvaluation>(right).value();
    EXPECT_EQ(
        evaluation_line(evaluation),
        "\u2713 correct, hit, exact 1.00, F1 1.00, confidence 0.96; set capitals #q7, run r2, "
        "2026-11-30T10:00:00Z; accepted: Paris | Paris\x1b[2J");
    auto shown = schema::decode<schema::TraceDetail>(echo_show_reply(kEchoUuid, "ping"));
    ASSERT_TRUE(shown);
    shown->session.evaluations = {evaluation};
    for (const bool full : {false, true}) {
        TreeOptions options;
        options.full = full;
        const std::string tree = render_tree(*shown, options);
        EXPECT_TRUE(contains(tree, "Evaluation    \u2713 correct, hit")) << tree;
        EXPECT_FALSE(contains(tree, "\x1b")) << "a stored answer cannot drive the terminal";
    }
}

// ---- tail ---------------------------------------------------------------------------------------

TEST(RenderEventTest, LineAndJsonNameTheStep) {
    const json reply = graph_rag_show_reply();
    bus::ExplainEvent event;
    event.topic = "explain.graph-rag";
    event.service = "graph-rag";
    event.session = reply["session"]["session"];
    event.seq = 3;
    event.state = "open";
    event.body = {{"explain_id", reply["events"][3]["explain_id"]},
                  {"explain_triples", reply["events"][3]["triples"]},
                  {"trace_status", ""}};
    EXPECT_EQ(step_type(event.body), "Focus");
    const std::string line = render_event_line(event, "2025-01-02T03:04:05.123Z");
    EXPECT_EQ(line.find("2025-01-02T03:04:05.123Z  graph-rag  urn:glassbox:"), 0u);
    EXPECT_TRUE(contains(line, "  #3  open  Focus  urn:glassbox:"));
    EXPECT_TRUE(contains(
        line, ":focus  " + std::to_string(reply["events"][3]["triples"].size()) + " triples"));
    const json j = event_json(event, "t");
    EXPECT_EQ(j["step_type"], "Focus");
    EXPECT_EQ(j["seq"], 3);
    EXPECT_EQ(j["kind"], "graph-rag");
    EXPECT_EQ(j["triples"], reply["events"][3]["triples"].size());

    EXPECT_EQ(step_type(json{{"explain_id", 3}}), "-");
    EXPECT_EQ(step_type(json::array()), "-");
    event.body = json{{"explain_id", "urn:x"},
                      {"explain_triples", json::array({json{{"s", 1}}})},
                      {"trace_status", "error"}};
    EXPECT_TRUE(contains(render_event_line(event, "t"), "  -  urn:x  1 triples  trace error"));
}

}  // namespace
}  // namespace glassbox::cli::render
