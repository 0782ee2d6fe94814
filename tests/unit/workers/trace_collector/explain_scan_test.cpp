// The DOM-free explain scan against the JSON DOM decoder: it reads what the decoder reads, and
// never accepts a body the decoder refuses (mutated bodies, a fixed seed).
#include "workers/trace_collector/explain_scan.hpp"

#include <random>

#include <gtest/gtest.h>

#include "schema/json_fast.hpp"
#include "schema/services.hpp"
#include "schema/term_json.hpp"
#include "schema/untrusted_json.hpp"
#include "tests/support/rag_cluster.hpp"
#include "tests/support/trace_fixture.hpp"
#include "workers/trace_collector/triple_blob.hpp"

namespace glassbox::trace::testing {
namespace {

using nlohmann::json;
using schema::TraceStatus;

constexpr std::int64_t kT0 = 1'790'000'000'000;

// A message with every kind of term and field the scan reads, strings that need escapes.
schema::ExplainMessage rich_message() {
    const auto run = FakeRun::make("graph-rag", "what is \"ünïcödé\" \\ 🚀\ttab?", kT0,
                                   "urn:glassbox:parent-run");
    auto m = run.end(TraceStatus::kError, std::string(700, 'x') + "\n\u0001é");
    m.parent_uri = "urn:glassbox:00000000-0000-4000-8000-000000000009:question";
    // Escaped when dumped as ASCII (a graph IRI holding '"' is no IRI: the decoder rewrites it).
    m.explain_graph = "urn:graph:quotéd";
    const std::string s = run.session();
    auto& t = m.explain_triples;
    t.push_back(schema::make_triple(schema::blank("b0"), schema::iri("urn:p"), schema::blank("")));
    t.push_back(schema::make_triple(schema::iri(s), schema::iri("urn:p"),
                                    schema::typed_literal("3", schema::kXsdInteger)));
    t.push_back(schema::make_triple(schema::iri(s), schema::iri("urn:p"),
                                    schema::lang_literal("chat", "fr")));
    t.push_back(schema::make_triple(schema::iri(s), schema::iri("urn:p"),
                                    schema::typed_literal("x", schema::kRdfLangString)));
    t.push_back(schema::make_triple(schema::iri(s), schema::iri("urn:p"), schema::literal(""),
                                    "urn:graph:other"));
    auto inner =
        schema::make_triple(schema::iri("urn:a"), schema::iri("urn:b"), schema::literal("c"));
    auto nested = schema::quoted(inner);
    for (int i = 0; i < 5; ++i)
        nested =
            schema::quoted(schema::make_triple(nested, schema::iri("urn:q"), schema::blank("n")));
    t.push_back(schema::make_triple(nested, schema::iri("urn:says"), schema::quoted(inner)));
    return m;
}

// A scanned triple's JSON as the store keeps it: a plain body's as received, a dictionary body's
// written out (its graph's or the message's explain graph's token added) as the store's reader
// writes it out.
std::string record_of(const ScannedExplain& m, const ScannedTriple& t) {
    if (!m.dictionary) return std::string(t.text);
    std::string graph;
    if (t.g_at) {
        graph = "\"" + std::string(m.terms[*t.g_at].term.value.raw) + "\"";
    } else if (t.has_graph) {
        graph = m.explain_graph_token;
    }
    std::string out;
    append_triple_record(out, graph, m.terms[t.o_at].text, m.terms[t.p_at].text,
                         m.terms[t.s_at].text);
    return out;
}

// The literal object's "v" token, quotes included.
std::string_view object_value_token(const ScannedExplain& m, const ScannedTriple& t) {
    if (m.dictionary) return m.terms[t.o_at].value_token;
    return t.text.substr(t.object_value_at, t.object_value_size);
}

// The scan's result equals the decoded message, each slice decoding to the decoded triple in
// its canonical encoding.
void expect_same(const ScannedExplain& scanned, const schema::ExplainMessage& decoded) {
    EXPECT_EQ(scanned.session, decoded.session);
    EXPECT_EQ(scanned.seq, decoded.seq);
    EXPECT_EQ(scanned.service, decoded.service);
    EXPECT_EQ(scanned.worker, decoded.worker);
    EXPECT_EQ(scanned.parent_uri, decoded.parent_uri);
    EXPECT_EQ(scanned.explain_id, decoded.explain_id);
    EXPECT_EQ(json::parse(scanned.explain_graph_token), json(decoded.explain_graph));
    EXPECT_EQ(scanned.end_of_trace, decoded.end_of_trace);
    EXPECT_EQ(scanned.trace_status, decoded.trace_status);
    EXPECT_EQ(scanned.error, decoded.error);
    ASSERT_EQ(scanned.triples.size(), decoded.explain_triples.size());
    for (std::size_t i = 0; i < scanned.triples.size(); ++i) {
        const auto& slice = scanned.triples[i];
        const auto& triple = decoded.explain_triples[i];
        const std::string text = record_of(scanned, slice);
        const json parsed = json::parse(text, nullptr, false);
        ASSERT_FALSE(parsed.is_discarded()) << text;
        EXPECT_EQ(parsed, schema::encode(triple)) << "canonical: " << text;
        EXPECT_EQ(json::parse(slice.object_text), schema::encode(triple.o)) << slice.object_text;
        EXPECT_EQ(slice.has_graph, triple.graph.has_value());
        const auto term_value = [](const schema::Term& term) -> std::string {
            if (term.is_iri()) return term.as_iri().value;
            if (term.is_blank()) return term.as_blank().id;
            if (term.is_literal()) return term.as_literal().value;
            return "";
        };
        EXPECT_EQ(slice.s.value.str(), term_value(triple.s));
        EXPECT_EQ(slice.p.value.str(), term_value(triple.p));
        EXPECT_EQ(slice.o.value.str(), term_value(triple.o));
        EXPECT_EQ(slice.o.kind == ScannedKind::kLiteral, triple.o.is_literal());
        if (triple.o.is_literal()) {
            const auto token = object_value_token(scanned, slice);
            EXPECT_EQ(json::parse(token), json(triple.o.as_literal().value)) << token;
        }
    }
}

TEST(ExplainScan, ReadsWhatTheDecoderReadsFromEncodedMessages) {
    const auto message = rich_message();
    ScannedExplain scanned;
    for (const int indent : {-1, 2}) {
        for (const bool ascii : {false, true}) {
            const std::string body = schema::encode(message).dump(indent, ' ', ascii);
            ASSERT_TRUE(scan_explain(body, scanned)) << body.substr(0, 300);
            auto decoded = schema::decode_body<schema::ExplainMessage>(body);
            ASSERT_TRUE(decoded.ok());
            EXPECT_EQ(*decoded, message);
            expect_same(scanned, *decoded);
        }
    }
    // Fields the decoder does not read are skipped; absent ones keep their defaults.
    json body = schema::encode(message);
    body["extra"] = {{"nested", {1, 2.5, -0.25, true, nullptr, "s"}}};
    body.erase("explain_graph");
    body.erase("worker");
    // The scan's slices view the body: it must outlive them.
    const std::string text = body.dump();
    ASSERT_TRUE(scan_explain(text, scanned));
    auto decoded = schema::decode_body<schema::ExplainMessage>(text);
    ASSERT_TRUE(decoded.ok());
    expect_same(scanned, *decoded);
    EXPECT_TRUE(scan_explain("{}", scanned));
    EXPECT_EQ(scanned.explain_graph_token, "\"urn:graph:retrieval\"");
}

TEST(ExplainScan, RefusesWhatTheDecoderRefuses) {
    const std::string good = schema::dump(schema::encode(FakeRun::make("echo", "q", kT0).open()));
    ScannedExplain scanned;
    ASSERT_TRUE(scan_explain(good, scanned));
    const std::string tail = good.substr(1);  // after the root '{'
    const std::vector<std::string> bad = {
        "",
        "{not json",
        "[]",
        good + "x",
        good + "{}",
        "{\"session\":\"a\xff\"}",
        "{\"session\":\"\xed\xa0\x80\"}",  // an encoded surrogate
        "{\"session\":\"\xc0\xaf\"}",      // overlong
        "{\"session\":\"\\ud800\"}",
        "{\"session\":\"\\udc00\\ud800\"}",
        "{\"session\":\"a\nb\"}",
        "{\"session\":\"\\x\"}",
        "{\"seq\":-1}",
        "{\"seq\":1.0}",
        "{\"seq\":01}",
        "{\"seq\":\"0\"}",
        "{\"seq\":18446744073709551616}",
        "{\"message_type\":\"other\"}",
        "{\"trace_status\":\"done\"}",
        "{\"end_of_trace\":1}",
        "{\"error\":{\"type\":\"NoSuchType\"}}",
        "{\"explain_triples\":{}}",
        "{\"explain_triples\":[{\"s\":{\"t\":\"i\",\"i\":\"\"},\"p\":{\"t\":\"i\",\"i\":\"urn:p\"},"
        "\"o\":{\"t\":\"i\",\"i\":\"urn:o\"}}]}",
        "{\"explain_triples\":[{\"s\":{\"t\":\"i\",\"i\":\"urn:s\"},\"p\":{\"t\":\"i\",\"i\":\"urn:"
        "p\"}}]}",
        "{\"explain_triples\":[{\"s\":{\"t\":\"x\",\"i\":\"urn:s\"},\"p\":{\"t\":\"i\",\"i\":\"urn:"
        "p\"},\"o\":{\"t\":\"i\",\"i\":\"urn:o\"}}]}",
        "{\"explain_triples\":[{\"s\":{\"t\":\"i\",\"i\":\"urn:s\"},\"p\":{\"t\":\"i\",\"i\":\"urn:"
        "p\"},\"o\":{\"t\":\"l\",\"v\":\"x\",\"dt\":\"urn:d\",\"ln\":\"en\"}}]}",
        "{\"session\":\"s\",}",
        "{\"session\" \"s\"}",
        // numbers nlohmann refuses (they overflow a double) in a field the decoder skips
        "{\"x\":1e999}",
        "{\"x\":1" + std::string(400, '0') + "}",
        "{\"x\":[-1" + std::string(400, '0') + ".5]}",
    };
    for (const auto& body : bad) {
        EXPECT_FALSE(scan_explain(body, scanned)) << body;
    }
    // Quoted triples nested deeper than the decoder allows.
    auto deep = schema::quoted(
        schema::make_triple(schema::iri("urn:a"), schema::iri("urn:b"), schema::iri("urn:c")));
    for (int i = 0; i < schema::kMaxQuotedTripleDepth; ++i) {
        deep =
            schema::quoted(schema::make_triple(deep, schema::iri("urn:b"), schema::iri("urn:c")));
    }
    json too_deep = {{"explain_triples", json::array({schema::encode(schema::make_triple(
                                             deep, schema::iri("urn:p"), schema::iri("urn:o")))})}};
    EXPECT_FALSE(schema::decode_body<schema::ExplainMessage>(too_deep.dump()).ok());
    EXPECT_FALSE(scan_explain(too_deep.dump(), scanned));
}

// Issue 30: nesting far past schema::kMaxJsonDepth, in a field the scan skips and in a term it
// reads. The scan recurses only to its own small bounds and gives up; the decoder refuses with
// the typed error naming the bound, and a delivery of it is quarantined with that reason.
TEST(ExplainScan, DeepNestingIsLeftToTheDecodersTypedError) {
    constexpr std::size_t kDepth = 500'000;
    std::string quoting;
    for (std::size_t i = 0; i < kDepth / 10; ++i) quoting += "{\"t\":\"t\",\"tr\":{\"s\":";
    const std::vector<std::string> bodies = {
        "{\"unknown\":" + std::string(kDepth, '[') + std::string(kDepth, ']') + "}",
        "{\"explain_triples\":[{\"s\":" + quoting,
    };
    const std::string bound =
        "the JSON nests deeper than " + std::to_string(schema::kMaxJsonDepth) + " levels";
    ScannedExplain scanned;
    for (const auto& body : bodies) {
        EXPECT_FALSE(scan_explain(body, scanned));
        const auto decoded = schema::decode_body<schema::ExplainMessage>(body);
        ASSERT_FALSE(decoded.ok());
        EXPECT_EQ(decoded.error().type, base::ErrorType::kInvalidJson);
        EXPECT_EQ(decoded.error().message, bound);
        Delivery d = delivery_of(FakeRun::make("echo", "q", kT0).open(), 1);
        d.body = body;
        const auto checked = validate_delivery(d);
        ASSERT_FALSE(checked.ok());
        EXPECT_EQ(checked.error().message, "not JSON: " + bound);
    }
}

TEST(ExplainScan, LeavesNonCanonicalFormsToTheDecoder) {
    const std::string s = "urn:glassbox:s";
    const json iri = {{"t", "i"}, {"i", s}};
    const json p = {{"t", "i"}, {"i", "urn:p"}};
    const std::vector<json> triples = {
        {{"s", {{"i", s}}}, {"p", p}, {"o", iri}},
        {{"s", iri},
         {"p", p},
         {"o", {{"t", "l"}, {"v", "x"}, {"dt", std::string(schema::kXsdString)}}}},
        {{"s", iri}, {"p", p}, {"o", {{"t", "l"}, {"v", "y"}, {"ln", ""}}}},
        {{"s", iri}, {"p", p}, {"o", {{"t", "l"}, {"v", "y"}, {"dt", ""}}}},
        {{"s", iri},
         {"p", p},
         {"o",
          {{"t", "l"}, {"v", "y"}, {"ln", "en"}, {"dt", std::string(schema::kRdfLangString)}}}},
        {{"s", iri}, {"p", p}, {"o", iri}, {"g", ""}},
        {{"s", iri}, {"p", p}, {"o", iri}, {"extra", 1}},
        {{"s", iri}, {"p", p}, {"o", iri}, {"g", nullptr}},
        {{"s", iri},
         {"p", p},
         {"o", {{"t", "t"}, {"tr", {{"s", iri}, {"p", p}, {"o", iri}, {"g", "urn:g"}}}}}},
    };
    ScannedExplain scanned;
    for (const auto& triple : triples) {
        const json body = {{"session", s}, {"explain_triples", json::array({triple})}};
        EXPECT_TRUE(schema::decode_body<schema::ExplainMessage>(body.dump()).ok()) << triple.dump();
        EXPECT_FALSE(scan_explain(body.dump(), scanned)) << triple.dump();
    }
    // A duplicated or escaped field name, a null field: the decoder's reading is not the scan's.
    for (const std::string body :
         {R"({"seq":1,"seq":2})", R"({"se\u0071":1})", R"({"worker":null})", R"({"a":1e5})"}) {
        EXPECT_TRUE(schema::decode_body<schema::ExplainMessage>(body).ok()) << body;
        EXPECT_FALSE(scan_explain(body, scanned)) << body;
    }
}

// Mutated bodies: whenever the scan accepts one, the decoder accepts it too and reads the
// same message; whenever the decoder accepts one, its re-encoding scans (the store's path for
// bodies the scan leaves to the decoder).
TEST(ExplainScan, NeverAcceptsWhatTheDecoderRefusesUnderMutation) {
    const auto base = schema::encode(rich_message()).dump(-1, ' ', true);
    const std::string pieces[] = {"\"",
                                  "\\",
                                  "{",
                                  "}",
                                  "[",
                                  "]",
                                  ",",
                                  ":",
                                  "null",
                                  "\"t\":\"l\"",
                                  "\\u00e9",
                                  "\\ud83d\\ude80",
                                  "\xc3\xa9",
                                  "\xff",
                                  "1e3",
                                  "-",
                                  " ",
                                  "\"g\":\"urn:x\",",
                                  "\"v\":\"\",",
                                  "\"ln\":\"en\",",
                                  "\"dt\":\"urn:d\","};
    std::mt19937_64 rng(20261122);
    ScannedExplain scanned;
    int accepted = 0;
    int decoded_ok = 0;
    for (int round = 0; round < 8000; ++round) {
        std::string body = base;
        const int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits && !body.empty(); ++e) {
            const std::size_t at = rng() % body.size();
            switch (rng() % 4) {
                case 0:
                    body.erase(at, 1 + rng() % 8);
                    break;
                case 1:
                    body.insert(at, pieces[rng() % std::size(pieces)]);
                    break;
                case 2:
                    body[at] = static_cast<char>(rng() % 256);
                    break;
                default: {
                    const std::size_t from = rng() % body.size();
                    body.insert(at, body.substr(from, 1 + rng() % 40));
                }
            }
        }
        const bool scans = scan_explain(body, scanned);
        auto decoded = schema::decode_body<schema::ExplainMessage>(body);
        if (scans) {
            ++accepted;
            ASSERT_TRUE(decoded.ok()) << "scan accepted what the decoder refuses: " << body;
            expect_same(scanned, *decoded);
            if (::testing::Test::HasFailure()) FAIL() << body;
        }
        if (decoded.ok()) {
            ++decoded_ok;
            const std::string canonical = schema::dump(schema::encode(*decoded));
            ASSERT_TRUE(scan_explain(canonical, scanned)) << canonical;
            expect_same(scanned, *decoded);
        }
    }
    // The mutations reach both sides of the line.
    EXPECT_GT(accepted, 100);
    EXPECT_GT(decoded_ok, accepted);
}

// The scan is an accelerator of the one explain decoder (schema::decode<ExplainMessage>): on any
// body it accepts, it reads what the decoder reads; on any body the decoder accepts, the canonical
// re-encoding (what the collector falls back to) scans.
void expect_scan_agrees(const std::string& body) {
    ScannedExplain scanned;
    const bool scans = scan_explain(body, scanned);
    const auto decoded = schema::decode_body<schema::ExplainMessage>(body);
    if (scans) {
        ASSERT_TRUE(decoded.ok()) << "scan accepted what the decoder refuses: " << body;
        expect_same(scanned, *decoded);
    }
    if (decoded.ok()) {
        const std::string canonical = schema::encode_text(*decoded);
        ASSERT_TRUE(scan_explain(canonical, scanned)) << canonical;
        expect_same(scanned, *decoded);
    }
}

TEST(ExplainScan, AgreesWithTheDecoderOnEdgeCases) {
    const std::vector<std::string> bodies{
        // missing optional fields, in any order
        R"({"message_type":"explain","seq":3,"session":"urn:s","explain_triples":[]})",
        R"({"seq":3})",
        R"({})",
        R"({"explain_triples":[{"s":{"t":"i","i":"urn:s"},"p":{"t":"i","i":"urn:p"},"o":{"t":"l","v":"x"}}]})",
        // wrong types and out-of-range values
        R"({"seq":-1})",
        R"({"seq":1.5})",
        R"({"seq":1e2})",
        R"({"seq":18446744073709551616})",
        R"({"seq":"3"})",
        R"({"message_type":"chunk"})",
        R"({"trace_status":"complete","end_of_trace":true})",
        R"({"trace_status":"bogus"})",
        R"({"end_of_trace":1})",
        R"({"parent_uri":null,"explain_graph":null})",
        R"({"parent_uri":"urn:p","parent_uri":"urn:q"})",
        // error bodies: known and unknown types, missing parts, wrong shapes
        R"({"error":{"type":"Cancelled","message":"stop"},"trace_status":"error","end_of_trace":true})",
        R"({"error":{"type":"Nope","message":"stop"}})",
        R"({"error":{"message":"no type"}})",
        R"({"error":{"type":"Internal"}})",
        R"({"error":"a string"})",
        R"({"error":{"type":"UpstreamError","message":"store \"down\"\n\u00e9"},"trace_status":"error"})",
        // escapes and unicode in every string field
        R"({"session":"urn:\u0073\ud83d\ude80\/x","service":"a\"b\\c\n","worker":"w\t1","explain_id":"é🚀"})",
        R"({"explain_triples":[{"s":{"t":"i","i":"urn:\u00e9"},"p":{"t":"i","i":"urn:p"},"o":{"t":"l","v":"a\"b\\c\n\u0001","ln":"en"}}]})",
        R"({"explain_triples":[{"s":{"t":"b","d":"b0"},"p":{"t":"i","i":"urn:p"},"o":{"t":"l","v":"1","dt":"http://www.w3.org/2001/XMLSchema#integer"},"g":"urn:g"}]})",
        R"({"explain_graph":"urn:graph:\"q\"","explain_triples":[]})",
        // IRIs N-Triples rejects (a third-party worker's): rewritten by the decoder, so the scan
        // leaves them to it; every IRI-valued place, quoted triples and datatypes included
        R"({"session":"not a uri <>\"\n","explain_id":"urn:x y","parent_uri":"relative/step"})",
        R"({"explain_triples":[{"s":{"t":"i","i":"not a uri <>\"\n"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]})",
        R"({"explain_triples":[{"s":{"t":"i","i":"urn:s"},"p":{"t":"i","i":"urn:x y"},"o":{"t":"i","i":"urn:o"}}]})",
        R"({"explain_triples":[{"s":{"t":"i","i":"urn:s"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"o"}}]})",
        R"({"explain_triples":[{"s":{"t":"i","i":"urn:s"},"p":{"t":"i","i":"urn:p"},"o":{"t":"l","v":"1","dt":"urn:d{t}"}}]})",
        R"({"explain_triples":[{"s":{"t":"i","i":"urn:s"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"},"g":"urn:g|h"}]})",
        R"({"explain_triples":[{"s":{"t":"t","tr":{"s":{"t":"i","i":"urn:a"},"p":{"t":"i","i":"urn:b"},"o":{"t":"i","i":"urn:c\u0000"}}},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]})",
        R"({"session":"urn:s\u0020t","explain_graph":"graph"})",
        // lone surrogates, bad escapes, invalid UTF-8, trailing text
        R"({"session":"urn:\ud800"})",
        R"({"session":"urn:\x"})",
        "{\"session\":\"urn:\xff\"}",
        R"({"seq":1} x)",
        R"({"seq":1,})",
        "",
        // skipped fields: escaped and non-ASCII keys, numbers at double's edge, nesting
        R"({"x":{"\u0041":[1,-0.5,"\ud83d\ude80"],"é":null},"seq":2})",
        "{\"x\":1" + std::string(300, '0') + ",\"seq\":2}",
        "{\"x\":1" + std::string(400, '0') + ",\"seq\":2}",
        "{\"x\":0." + std::string(400, '0') + "1,\"seq\":2}",
        R"({"x":1e999,"seq":2})",
        "{\"x\":" + std::string(31, '[') + std::string(31, ']') + ",\"seq\":2}",
        "{\"x\":" + std::string(40, '[') + std::string(40, ']') + ",\"seq\":2}",
    };
    for (const auto& body : bodies) {
        expect_scan_agrees(body);
        if (HasFatalFailure()) return;
    }
    // Real messages of a run, every end of it, with the tricky strings of rich_message.
    const auto run = FakeRun::make("echo", "q \u00e9 \"x\"", kT0);
    expect_scan_agrees(schema::encode_text(run.open()));
    expect_scan_agrees(schema::encode_text(run.end(TraceStatus::kComplete)));
    expect_scan_agrees(schema::encode_text(run.end(TraceStatus::kError, "the worker died")));
    expect_scan_agrees(schema::encode_text(rich_message()));
}

// The dictionary form (docs/protocol.md §8.1): what the scan accepts it reads as the decoder
// does, the triples written out as plain objects; whatever the decoder refuses, it refuses.
TEST(ExplainScan, AgreesWithTheDecoderOnDictionaryBodies) {
    const std::string terms =
        R"("explain_terms":[{"t":"i","i":"urn:s"},{"i":"urn:p","t":"i"},{"t":"l","v":"a\"b","ln":"en"},)"
        R"({"t":"i","i":"urn:g2"},{"t":"b","d":"b0"},{"t":"l","v":"1","dt":"urn:dt"}])";
    const std::vector<std::pair<std::string, bool>> bodies{
        // accepted: any key order, either graph, every kind of term
        {"{" + terms + R"(,"explain_triples":[[0,1,2],[4,1,5,3],[0,1,0]]})", true},
        {R"({"explain_triples":[[0,1,2]],"explain_graph":"urn:g",)" + terms + "}", true},
        {R"({"explain_graph":"",)" + terms + R"(,"explain_triples":[[0,1,2]]})", true},
        {"{" + terms + R"(,"explain_triples":[]})", true},
        {"{" + terms + "}", true},
        // refused by both
        {"{" + terms + R"(,"explain_triples":[[0,1,6]]})", false},
        {"{" + terms + R"(,"explain_triples":[[0,1,-1]]})", false},
        {"{" + terms + R"(,"explain_triples":[[0,1,1.0]]})", false},
        {"{" + terms + R"(,"explain_triples":[[0,1]]})", false},
        {"{" + terms + R"(,"explain_triples":[[0,1,2,3,3]]})", false},
        {"{" + terms + R"(,"explain_triples":[[0,1,2,2]]})", false},
        {"{" + terms +
             R"(,"explain_triples":[[0,1,2],{"s":{"t":"i","i":"urn:s"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]})",
         false},
        {R"({"explain_triples":[[0,1,2]]})", false},
        {R"({"explain_terms":{},"explain_triples":[]})", false},
        {R"({"explain_terms":[{"t":"i","i":""}],"explain_triples":[]})", false},
        {R"({"explain_terms":[1],"explain_triples":[]})", false},
        // a term the decoder rewrites: left to it
        {R"({"explain_terms":[{"t":"i","i":"urn:x y"}],"explain_triples":[[0,0,0]]})", true},
    };
    for (const auto& [body, valid] : bodies) {
        EXPECT_EQ(schema::decode_body<schema::ExplainMessage>(body).ok(), valid) << body;
        expect_scan_agrees(body);
        if (HasFatalFailure()) return;
    }
    ScannedExplain scanned;
    ASSERT_TRUE(scan_explain(bodies[0].first, scanned));
    ASSERT_EQ(scanned.triples.size(), 3u);
    EXPECT_TRUE(scanned.dictionary);
    EXPECT_EQ(
        record_of(scanned, scanned.triples[1]),
        R"({"g":"urn:g2","o":{"t":"l","v":"1","dt":"urn:dt"},"p":{"i":"urn:p","t":"i"},"s":{"t":"b","d":"b0"}})");
}

// The messages the RAG chains really produce (graph-rag and document-rag, streaming or not, on a
// real in-process bus), byte for byte as the collector receives them.
TEST(ExplainScan, AgreesWithTheDecoderOnRealRagTraces) {
    rag::testing::RagCluster cluster;
    cluster.load_triples("kg", "file:///test/kb.nt", R"(
<urn:kg:cruz_azul> <urn:kg:is_in_country> <urn:kg:mexico> .
<urn:kg:cruz_azul> <urn:kg:founded> "1927"^^<http://www.w3.org/2001/XMLSchema#gYear> .
<urn:kg:cruz_azul> <http://www.w3.org/2000/01/rdf-schema#label> "Cruz Azul FC" .
<urn:kg:mexico> <http://www.w3.org/2000/01/rdf-schema#label> "México \"MX\"" .
<urn:kg:is_in_country> <http://www.w3.org/2000/01/rdf-schema#label> "is in country" .
)");
    cluster.load_documents(
        "docs", {{"urn:doc:alu", "Alu", "Alu is a demon of Akkadian mythology.\nSee Lilu."},
                 {"urn:doc:lilu", "Lilu \"spirit\"", "A lilu is a spirit, related to Alu. 🚀"}});
    const std::vector<std::pair<std::string_view, nlohmann::json>> requests{
        {schema::services::kGraphRag,
         {{"query", "Which country is Cruz Azul FC in?"}, {"collection", "kg"}}},
        {schema::services::kGraphRag,
         {{"query", "Where is Cruz Azul FC?"}, {"collection", "kg"}, {"streaming", true}}},
        {schema::services::kDocumentRag, {{"query", "Who is Alu?"}, {"collection", "docs"}}},
        {schema::services::kDocumentRag,
         {{"query", "What is a lilu?"}, {"collection", "docs"}, {"streaming", true}}},
    };
    std::size_t messages = 0;
    for (const auto& [service, body] : requests) {
        for (const auto& reply : cluster.request(std::string(service), body)) {
            if (reply.kind != bus::ReplyKind::kExplain) continue;
            ++messages;
            const std::string text = schema::dump(reply.body);
            ScannedExplain scanned;
            ASSERT_TRUE(scan_explain(text, scanned)) << text.substr(0, 300);
            expect_scan_agrees(text);
            if (HasFatalFailure()) return;
        }
    }
    // Each run is several steps (question, grounding/exploration, focus, synthesis ...).
    EXPECT_GE(messages, 4u * 4u);
}

}  // namespace
}  // namespace glassbox::trace::testing
