// The two triple sinks agree: TripleJson writes exactly the bytes append_json writes for the
// triples TripleList collects, for every kind of object and for every explain builder.
#include "schema/triple_sink.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "schema/explain_builder.hpp"
#include "schema/json_fast.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::schema {
namespace {

using Build = std::function<void(TripleSink&)>;
using std::chrono::milliseconds;

// The JSON array both ways: TripleList's triples through append_json, and TripleJson directly.
std::pair<std::string, std::string> both(const Build& build, std::optional<std::string> graph) {
    TripleList list(graph);
    build(list);
    const auto triples = list.take();
    std::string expected;
    append_json(expected, std::span<const Triple>(triples));
    std::string written = "prefix:";  // appends, never overwrites
    {
        TripleJson json(written, graph ? std::optional<std::string_view>(*graph) : std::nullopt);
        build(json);
        EXPECT_EQ(json.size(), triples.size());
    }
    EXPECT_EQ(written.rfind("prefix:", 0), 0u);
    return {expected, written.substr(7)};
}

void every_kind_of_object(TripleSink& out) {
    out.iri("urn:s", "urn:p", "urn:o");
    out.literal("urn:s", "urn:p", "plain");
    out.literal("urn:s", "urn:p", "as xsd:string", kXsdString);  // a simple literal both ways
    out.literal("urn:s", "urn:p", "quote \" backslash \\ newline \n tab \t bell \x07 del \x7f");
    out.literal("urn:s", "urn:p", "caf\xc3\xa9, \xe2\x80\x94 and \xf0\x9f\x93\x9a");
    out.literal("urn:s", "urn:p", "broken \xc3 utf-8 \xff");  // replaced the same way
    out.literal("urn:s\"odd", "urn:p\\odd", "2025-01-02T03:04:05.678Z", kXsdDateTime);
    out.integer("urn:s", "urn:p", 0);
    out.integer("urn:s", "urn:p", std::numeric_limits<std::uint64_t>::max());
    for (double d : {0.875, 1e-7, -2.5e300, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
        out.number("urn:s", "urn:p", d);
    }
    out.term("urn:s", "urn:p", lang_literal("Dune", "en"));
    out.term("urn:s", "urn:p", blank("b0"));
    out.term("urn:s", "urn:p", typed_literal("12.50", kXsdDecimal));
    out.term("urn:s", "urn:p",
             quoted(make_triple(iri("urn:a"), iri("urn:b"), literal("c \"quoted\""))));
}

TEST(TripleSink, JsonMatchesAppendJsonForEveryKindOfObject) {
    for (const auto& graph :
         {std::optional<std::string>{}, std::optional<std::string>{"urn:graph:retrieval"}}) {
        const auto [expected, written] = both(every_kind_of_object, graph);
        EXPECT_EQ(written, expected) << "graph " << graph.value_or("(default)");
    }
}

TEST(TripleSink, NothingWrittenIsAnEmptyArray) {
    const auto [expected, written] = both([](TripleSink&) {}, std::string("urn:g"));
    EXPECT_EQ(written, "[]");
    EXPECT_EQ(expected, "[]");
}

TEST(TripleSink, ListNormalisesLikeTheTermHelpers) {
    TripleList list(std::nullopt);
    list.literal("urn:s", "urn:p", "x", kXsdString);
    list.integer("urn:s", "urn:p", 42);
    list.number("urn:s", "urn:p", 0.5);
    const auto ts = list.take();
    ASSERT_EQ(ts.size(), 3u);
    EXPECT_EQ(ts[0].o, literal("x"));
    EXPECT_EQ(ts[1].o, xsd_integer(42));
    EXPECT_EQ(ts[2].o, xsd_double(0.5));
    EXPECT_FALSE(ts[0].graph.has_value());
}

// Every builder, through both sinks and through encode_text, gives one and the same message.
TEST(TripleSink, EveryExplainBuilderWritesTheSameMessageBothWays) {
    namespace ex = explain;
    const auto run = *ex::RunUris::from_uuid("11111111-2222-4333-8444-555555555555");
    const ex::TimePoint t0{milliseconds(1'700'000'000'123)};
    ex::StepInfo info{
        t0, run.grounding(), milliseconds(7), 120, 30, std::string("extractive \"x\"")};
    const ex::SourceRef chunk{"urn:chunk:1", "urn:doc:1", 10, 20};
    const ex::SourceRef file{"", "file:///kg.nt", {}, {}};
    const std::vector<ex::SelectedEdge> edges{
        {make_triple(iri("urn:dune"), iri("urn:title"), lang_literal("Dune", "en")), 0.875, "book",
         "names it", chunk, 2},
        {make_triple(quoted(make_triple(iri("urn:a"), iri("urn:b"), iri("urn:c"))),
                     iri("urn:saidBy"), blank("n1")),
         0.5, "", "", file, 4},
        {make_triple(iri("urn:dune"), iri("urn:year"), xsd_integer(1965)), 0.25, "year", "", chunk,
         0},
    };
    ex::RetrievedChunk retrieved{chunk, 0.9, 1, 1, 0.8, 3, 12.5, std::nullopt, std::nullopt, 2};
    const std::vector<ex::Citation> citations{{0, 5, {run.edge_selection(0)}},
                                              {3, 2, {run.edge_selection(1)}},
                                              {0, 4, {"urn:elsewhere"}}};
    const std::vector<std::pair<const char*, Build>> builders{
        {"question",
         [&](TripleSink& o) {
             ex::question(o, run, "Who wrote \"Dune\"?", t0, "urn:agent", "urn:parent");
         }},
        {"trace_end", [&](TripleSink& o) { ex::trace_end(o, run, t0, TraceStatus::kError); }},
        {"grounding",
         [&](TripleSink& o) {
             ex::grounding(o, run, info, {"Dune", "author"});
         }},
        {"graph_exploration",
         [&](TripleSink& o) { ex::graph_exploration(o, run, info, {"urn:dune"}, 150); }},
        {"graph_exploration with explored edges",
         [&](TripleSink& o) {
             ex::graph_exploration(o, run, info, {"urn:dune"}, 150,
                                   {{edges[0].edge, 1}, {edges[1].edge, 2}, {edges[2].edge, 3}});
         }},
        {"graph_focus", [&](TripleSink& o) { ex::graph_focus(o, run, info, edges); }},
        {"document_exploration",
         [&](TripleSink& o) {
             ex::document_exploration(o, run, info, {retrieved, retrieved});
         }},
        {"document_focus",
         [&](TripleSink& o) {
             ex::document_focus(o, run, info, {{1, 0.7, "why"}});
         }},
        {"synthesis",
         [&](TripleSink& o) {
             ex::synthesis(o, run, info, {"Frank Herbert wrote it.", {}}, citations);
         }},
        {"analysis",
         [&](TripleSink& o) {
             ex::analysis(o, run, 2, info, {"think", "search", "{\"q\":1}"});
         }},
        {"observation",
         [&](TripleSink& o) {
             ex::observation(o, run, 2, info, {"seen", run.text("obs")});
         }},
        {"conclusion",
         [&](TripleSink& o) {
             ex::conclusion(o, run, info, {"done", {}});
         }},
        {"routing_decision",
         [&](TripleSink& o) {
             ex::routing_decision(o, run, info, {"rules", {"r1"}, 0.5, "graph-rag"});
         }},
        {"escalation",
         [&](TripleSink& o) {
             ex::escalation(o, run, 1, info, {"low", 0.1, "agent"});
         }},
        {"echo",
         [&](TripleSink& o) {
             ex::echo_question(o, run, "hi", t0, "urn:agent");
             ex::echo_synthesis(o, run, "hi", t0, milliseconds(3));
         }},
    };
    for (const auto& [name, build] : builders) {
        auto list = ex::triple_list();
        build(list);
        const auto triples = list.take();
        EXPECT_FALSE(triples.empty()) << name;
        ExplainMessage m;
        m.session = run.question();
        m.seq = 3;
        m.service = "graph-rag";
        m.worker = "w/1";
        m.explain_id = run.focus();
        const auto from_list = encode_text(m, triples);
        const auto from_sink = encode_text(m, [&build](std::string& out) {
            auto json = ex::triple_json(out);
            build(json);
        });
        EXPECT_EQ(from_sink, from_list) << name;
        auto decoded = decode_body<ExplainMessage>(from_sink);
        ASSERT_TRUE(decoded) << name << ": " << decoded.error().describe();
        EXPECT_EQ(decoded->explain_triples, triples) << name;
    }
}

}  // namespace
}  // namespace glassbox::schema
