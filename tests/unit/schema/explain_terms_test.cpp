// The dictionary form of explain triples (docs/protocol.md §8.1): what it encodes decodes to the
// triples given, the same as the plain form; malformed dictionaries are typed errors; the JSON
// readers see the same triples in both forms.
#include "schema/explain_terms.hpp"

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <random>
#include <set>

#include "schema/explain_builder.hpp"
#include "schema/json_fast.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::schema {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr std::string_view kGraph = vocab::kRetrievalGraph;

ExplainMessage header() {
    ExplainMessage m;
    m.session = "urn:glassbox:run:1:question";
    m.seq = 2;
    m.service = "graph-rag";
    m.worker = "graph-rag/1";
    m.explain_id = "urn:glassbox:run:1:focus";
    return m;
}

// A random term from small pools, so terms repeat as in real steps; quoted triples nest.
Term random_term(std::mt19937_64& rng, int depth) {
    static const std::vector<std::string> iris{"urn:s", "urn:p", "urn:o", "urn:caf\xc3\xa9",
                                               "http://example.org/a#b"};
    static const std::vector<std::string> texts{"a",  "ab", "", "c\nd", "1965", "\xf0\x9f\x93\x9a",
                                                "bc", "\\"};
    switch (std::uniform_int_distribution<int>(0, depth < 3 ? 5 : 4)(rng)) {
        case 0:
        case 1:
            return iri(iris[rng() % iris.size()]);
        case 2:
            return literal(texts[rng() % texts.size()]);
        case 3:
            return rng() % 2 ? typed_literal(texts[rng() % texts.size()], "urn:dt:" + texts[1])
                             : lang_literal(texts[rng() % texts.size()], rng() % 2 ? "en" : "fr");
        case 4:
            return blank("b" + std::to_string(rng() % 3));
        default:
            return quoted(make_triple(random_term(rng, depth + 1), random_term(rng, depth + 1),
                                      random_term(rng, depth + 1)));
    }
}

std::vector<Triple> random_triples(std::mt19937_64& rng, std::size_t n) {
    std::vector<Triple> out;
    for (std::size_t i = 0; i < n; ++i) {
        Triple t = make_triple(random_term(rng, 0), random_term(rng, 0), random_term(rng, 0));
        switch (rng() % 3) {
            case 0:
                t.graph = std::string(kGraph);
                break;
            case 1:
                t.graph = "urn:graph:other";
                break;
            default:
                break;  // none: the message's graph
        }
        out.push_back(std::move(t));
    }
    return out;
}

// What a decoder gives for a triple the encoder was handed: without a graph, the message's.
std::vector<Triple> in_message_graph(std::vector<Triple> triples) {
    for (auto& t : triples) {
        if (!t.graph) t.graph = std::string(kGraph);
    }
    return triples;
}

std::size_t distinct_terms(const std::vector<Triple>& triples) {
    std::set<std::string> seen;
    for (const auto& t : triples) {
        for (const Term* term : {&t.s, &t.p, &t.o}) seen.insert(encode(*term).dump());
        if (t.graph && *t.graph != kGraph) seen.insert(encode(iri(*t.graph)).dump());
    }
    return seen.size();
}

TEST(ExplainTerms, RandomTriplesRoundTripAndMatchThePlainForm) {
    std::mt19937_64 rng(33);
    for (int round = 0; round < 200; ++round) {
        const auto triples = random_triples(rng, rng() % 40);
        ExplainMessage m = header();
        const auto dictionary = encode_text(m, triples, TripleForm::kDictionary);
        const auto plain = encode_text(m, in_message_graph(triples), TripleForm::kPlain);
        auto from_dictionary = decode_body<ExplainMessage>(dictionary);
        auto from_plain = decode_body<ExplainMessage>(plain);
        ASSERT_TRUE(from_dictionary) << from_dictionary.error().describe() << "\n" << dictionary;
        ASSERT_TRUE(from_plain) << from_plain.error().describe();
        EXPECT_EQ(from_dictionary->explain_triples, in_message_graph(triples)) << dictionary;
        EXPECT_EQ(*from_dictionary, *from_plain);
        // Each distinct term once.
        const json body = json::parse(dictionary);
        EXPECT_EQ(body["explain_terms"].size(), distinct_terms(triples)) << dictionary;
        EXPECT_FALSE(json::parse(plain).contains("explain_terms"));
        // The JSON readers see the same triples in both forms.
        EXPECT_EQ(plain_explain_body(body), json::parse(plain));
        std::size_t visited = 0;
        for_each_explain_triple(body, [&](const json& s, const json& p, const json& o) {
            const auto& t = from_plain->explain_triples[visited++];
            EXPECT_EQ(s, encode(t.s));
            EXPECT_EQ(p, encode(t.p));
            EXPECT_EQ(o, encode(t.o));
        });
        EXPECT_EQ(visited, triples.size());
        if (HasFailure()) return;
    }
}

// Keys are told apart by kind and length: no two of these terms may share an index.
TEST(ExplainTerms, TermsThatLookAlikeStayDistinct) {
    const std::vector<Triple> triples{
        make_triple(iri("urn:s"), iri("urn:p"), literal("urn:s")),
        make_triple(iri("urn:s"), iri("urn:p"), typed_literal("a", "urn:bc")),
        make_triple(iri("urn:s"), iri("urn:p"), typed_literal("au", "rn:bc")),
        make_triple(iri("urn:s"), iri("urn:p"), lang_literal("a", "en")),
        make_triple(iri("urn:s"), iri("urn:p"), typed_literal("a", "urn:en")),
        make_triple(iri("urn:s"), iri("urn:p"), blank("urn:s")),
        make_triple(iri("urn:s"), iri("urn:p"), literal(std::string("a\0b", 3))),
        make_triple(iri("urn:s"), iri("urn:p"), literal("a")),
    };
    const auto text = encode_text(header(), triples, TripleForm::kDictionary);
    EXPECT_EQ(json::parse(text)["explain_terms"].size(), 10u) << text;
    auto decoded = decode_body<ExplainMessage>(text);
    ASSERT_TRUE(decoded) << decoded.error().describe();
    EXPECT_EQ(decoded->explain_triples, in_message_graph(triples));
}

// Every builder through the dictionary sink gives the triples the list sink collects, and the
// dictionary body is several times smaller than the plain one for a step with many edges.
TEST(ExplainTerms, BuildersWriteTheSameTriplesInBothForms) {
    namespace ex = explain;
    const auto run = *ex::RunUris::from_uuid("11111111-2222-4333-8444-555555555555");
    const ex::TimePoint t0{milliseconds(1'700'000'000'123)};
    ex::StepInfo info{t0, run.grounding(), milliseconds(7), 120, 30, std::string("extractive")};
    std::vector<ex::ExploredEdge> explored;
    for (int i = 0; i < 200; ++i) {
        explored.push_back(
            {make_triple(iri("urn:kg:e" + std::to_string(i % 40)),
                         iri("urn:kg:rel" + std::to_string(i % 7)),
                         i % 3 ? iri("urn:kg:e" + std::to_string(i % 11))
                               : lang_literal("name \"" + std::to_string(i) + "\"", "en")),
             static_cast<std::uint32_t>(1 + i % 2)});
    }
    const std::vector<std::pair<const char*, std::function<void(TripleSink&)>>> builders{
        {"question",
         [&](TripleSink& o) { ex::question(o, run, "Who wrote \"Dune\"?", t0, "urn:agent"); }},
        {"exploration",
         [&](TripleSink& o) {
             ex::graph_exploration(o, run, info, {"urn:kg:e1", "bad iri <x>"}, 200, explored);
         }},
        {"synthesis",
         [&](TripleSink& o) {
             ex::synthesis(o, run, info, {"broken \xc3 utf-8", {}}, {});
         }},
    };
    for (const auto& [name, build] : builders) {
        auto list = ex::triple_list();
        build(list);
        const auto triples = list.take();
        const ExplainMessage m = header();
        const auto dictionary = encode_text(m, build, TripleForm::kDictionary);
        const auto plain = encode_text(m, build, TripleForm::kPlain);
        EXPECT_EQ(plain, encode_text(m, triples)) << name;  // kPlain: TripleJson's bytes
        auto a = decode_body<ExplainMessage>(dictionary);
        auto b = decode_body<ExplainMessage>(plain);
        ASSERT_TRUE(a) << name << ": " << a.error().describe();
        ASSERT_TRUE(b) << name << ": " << b.error().describe();
        EXPECT_EQ(*a, *b) << name;
        EXPECT_EQ(a->explain_triples.size(), triples.size()) << name;
        if (std::string_view(name) == "exploration") {
            EXPECT_LT(dictionary.size() * 3, plain.size())
                << dictionary.size() << " " << plain.size();
        }
    }
}

// The sink's own calls with subjects and objects from small pools, in random order: whichever
// of them its caches remember (the last subjects, the last IRI object), every triple decodes to
// the one the list sink collects.
TEST(ExplainTerms, SinkCallsInAnyOrderDecodeToTheTriplesGiven) {
    const std::vector<std::string> nodes{"urn:a", "urn:b", "urn:c", "urn:a:1", "urn:a:10", "urn:"};
    std::mt19937_64 rng(34);
    for (int round = 0; round < 100; ++round) {
        std::vector<std::array<std::size_t, 3>> calls(rng() % 60);
        for (auto& c : calls) c = {rng() % nodes.size(), rng() % nodes.size(), rng() % 3};
        const std::function<void(TripleSink&)> build = [&](TripleSink& o) {
            for (const auto& [s, x, kind] : calls) {
                if (kind == 0) o.iri(nodes[s], "urn:p", nodes[x]);
                if (kind == 1) o.literal(nodes[s], "urn:q", nodes[x]);
                if (kind == 2) o.term(nodes[s], "urn:r", iri(nodes[x]));
            }
        };
        auto list = explain::triple_list();
        build(list);
        const auto decoded =
            decode_body<ExplainMessage>(encode_text(header(), build, TripleForm::kDictionary));
        ASSERT_TRUE(decoded) << decoded.error().describe();
        EXPECT_EQ(decoded->explain_triples, in_message_graph(list.take())) << round;
        if (HasFailure()) return;
    }
}

TEST(ExplainTerms, MalformedDictionariesAreDecodeErrors) {
    const std::string head =
        R"({"message_type":"explain","session":"urn:s","explain_graph":"urn:g","explain_terms":)";
    const std::string terms = R"([{"t":"i","i":"urn:a"},{"t":"l","v":"x"}])";
    const std::vector<std::pair<std::string, std::string>> cases{
        {head + terms + R"(,"explain_triples":[[0,0,2]]})", "explain_triples[0][2]: index 2 out"},
        {head + terms + R"(,"explain_triples":[[0,-1,1]]})", "explain_triples[0][1]: negative"},
        {head + terms + R"(,"explain_triples":[[0,0.5,1]]})", "explain_triples[0][1]"},
        {head + terms + R"(,"explain_triples":[[0,"0",1]]})", "explain_triples[0][1]"},
        {head + terms + R"(,"explain_triples":[[0,0]]})", "explain_triples[0]: expected 3 or 4"},
        {head + terms + R"(,"explain_triples":[[0,0,1,0,0]]})", "explain_triples[0]: expected 3"},
        {head + terms + R"(,"explain_triples":[[0,0,1,1]]})", "explain_triples[0][3]: the graph"},
        {head + terms +
             R"(,"explain_triples":[{"s":{"t":"i","i":"urn:a"},"p":{"t":"i","i":"urn:a"},"o":{"t":"i","i":"urn:a"}}]})",
         "explain_triples[0]"},
        {head + terms + R"(,"explain_triples":{}})", "explain_triples"},
        {head + R"({},"explain_triples":[]})", "explain_terms"},
        {head + R"([{"t":"i","i":""}],"explain_triples":[]})", "explain_terms[0].i: empty IRI"},
        {head + R"([{"t":"q"}],"explain_triples":[]})", "explain_terms[0]"},
    };
    for (const auto& [body, expected] : cases) {
        auto decoded = decode_body<ExplainMessage>(body);
        ASSERT_FALSE(decoded) << body;
        EXPECT_EQ(decoded.error().type, base::ErrorType::kDecodeError) << body;
        EXPECT_NE(decoded.error().message.find(expected), std::string::npos)
            << body << " -> " << decoded.error().message;
        // The lenient readers skip what does not decode, and never throw.
        const json tree = json::parse(body);
        for_each_explain_triple(tree, [](const json&, const json&, const json&) {});
        (void)plain_explain_body(tree);
    }
    // Well formed: [s, p, o, g] with an IRI graph; no explain_triples at all.
    auto ok = decode_body<ExplainMessage>(head + terms + R"(,"explain_triples":[[0,0,1,0]]})");
    ASSERT_TRUE(ok) << ok.error().describe();
    EXPECT_EQ(ok->explain_triples,
              (std::vector<Triple>{Triple{iri("urn:a"), iri("urn:a"), literal("x"), "urn:a"}}));
    auto none = decode_body<ExplainMessage>(head + terms + "}");
    ASSERT_TRUE(none) << none.error().describe();
    EXPECT_TRUE(none->explain_triples.empty());
}

// A router forwards a sub-run's explain messages as PARTIAL data, which readers decode as the
// engine's reply: its triples come out the same in either form.
TEST(ExplainTerms, RepliesReadFromAnExplainBodyTakeBothForms) {
    const std::vector<Triple> triples{
        make_triple(iri("urn:s"), iri("urn:p"), lang_literal("x", "en")),
        Triple{iri("urn:s"), iri("urn:p"), iri("urn:o"), "urn:graph:other"}};
    ExplainMessage m = header();
    const json dictionary = json::parse(encode_text(m, triples, TripleForm::kDictionary));
    const json plain = json::parse(encode_text(m, in_message_graph(triples), TripleForm::kPlain));
    auto rag = decode<RagResponse>(dictionary);
    auto rag_plain = decode<RagResponse>(plain);
    ASSERT_TRUE(rag && rag_plain) << (rag ? rag_plain : rag).error().describe();
    EXPECT_EQ(rag->explain_triples, in_message_graph(triples));
    EXPECT_EQ(*rag, *rag_plain);
    EXPECT_EQ(rag->message_type, RagMessageType::kExplain);
    auto agent = decode<AgentResponse>(dictionary);
    ASSERT_TRUE(agent) << agent.error().describe();
    EXPECT_EQ(agent->explain_triples, in_message_graph(triples));
    json broken = dictionary;
    broken["explain_triples"][0][0] = 99;
    EXPECT_FALSE(decode<RagResponse>(broken));
}

}  // namespace
}  // namespace glassbox::schema
