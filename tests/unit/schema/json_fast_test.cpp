// The tree-free codecs against the tree-based ones they stand in for: the same bytes out, the
// same values and the same errors in, on valid, unusual and broken input alike.
#include "schema/json_fast.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "schema/messages.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/tricky_json_strings.hpp"

namespace glassbox::schema {
namespace {

using testing::tricky_strings;

Triple sample_triple(std::size_t i) {
    const auto& s = tricky_strings();
    const std::string text = s[i % s.size()];
    switch (i % 6) {
        case 0:
            return make_triple(iri("urn:s" + std::to_string(i)), iri("urn:p"), literal(text));
        case 1:
            return make_triple(blank("b" + std::to_string(i)), iri("urn:p"),
                               lang_literal(text, "en-GB"));
        case 2:
            return make_triple(iri("urn:s"), iri("urn:p"),
                               xsd_integer(static_cast<std::int64_t>(i)), "urn:g");
        case 3:
            return make_triple(quoted(make_triple(iri("urn:a"), iri("urn:b"), literal(text))),
                               iri("urn:q"), xsd_double(0.25), std::string(vocab::kRetrievalGraph));
        case 4:
            return make_triple(iri("urn:x:" + text), iri("urn:p"), iri("urn:o"));
        default:
            return make_triple(iri("urn:s"), iri("urn:p"), typed_literal(text, "urn:dt:custom"));
    }
}

std::vector<Triple> sample_triples(std::size_t n, std::size_t offset = 0) {
    std::vector<Triple> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(sample_triple(i + offset));
    return out;
}

ExplainMessage sample_explain(std::size_t variant) {
    ExplainMessage m;
    m.session = "urn:trustgraph:question:" + std::to_string(variant);
    m.seq = 7 + variant;
    m.service = "graph-rag";
    m.worker = "w-1";
    m.explain_id = "urn:step:" + std::to_string(variant);
    m.explain_triples = sample_triples(3 + variant * 5, variant);
    if (variant % 2) m.parent_uri = "urn:parent";
    if (variant % 3 == 1) {
        m.end_of_trace = true;
        m.trace_status = TraceStatus::kComplete;
    }
    if (variant % 3 == 2) {
        m.end_of_trace = true;
        m.trace_status = TraceStatus::kError;
        m.error = base::make_error(base::ErrorType::kUpstreamError, "store \"down\"\n");
    }
    return m;
}

RagResponse sample_rag(std::size_t variant) {
    RagResponse m;
    m.message_type = variant % 3 == 0   ? RagMessageType::kChunk
                     : variant % 3 == 1 ? RagMessageType::kExplain
                                        : RagMessageType::kError;
    m.response = tricky_strings()[variant % tricky_strings().size()];
    m.explain_id = "urn:e";
    m.explain_triples = sample_triples(variant * 3, variant);
    m.end_of_stream = variant % 2 == 0;
    m.end_of_session = variant % 4 == 0;
    m.in_token = variant * 1000;
    m.out_token = 18446744073709551615ULL - variant;
    m.model = "glassbox-extractive-v1";
    m.sources = {"urn:doc:1", tricky_strings()[(variant + 3) % tricky_strings().size()]};
    if (m.message_type == RagMessageType::kError)
        m.error = base::make_error(base::ErrorType::kDecodeError, "bad");
    if (variant % 2 == 0) {
        m.answer = variant % 4 == 0 ? std::string()
                                    : tricky_strings()[(variant + 1) % tricky_strings().size()];
        m.answer_selections = {"urn:e:focus:edge:0",
                               tricky_strings()[variant % tricky_strings().size()]};
        RagCitation c;
        c.n = 1;
        c.id = "c1";
        c.selection = "urn:e:exploration:chunk:0";
        c.kind = "chunk";
        c.document = "urn:doc:1";
        c.title = tricky_strings()[(variant + 2) % tricky_strings().size()];
        c.chunk = "urn:doc:1#chunk-0";
        if (variant % 4 == 0) {
            c.char_offset = 12;
            c.char_end = 40;
        }
        c.tier = 2;
        c.text = tricky_strings()[(variant + 5) % tricky_strings().size()];
        c.spans = {{0, 9}, {20, 31}};
        if (variant % 3 == 0) {  // freshness (issue 35)
            c.loaded_at = "2026-11-29T19:00:00Z";
            c.date = "2020-01-01";
            c.max_age = "90d";
            c.stale = variant % 2 == 0;
        }
        if (variant % 2 == 1) {  // an edge's fact in parts (issue 35)
            c.subject = tricky_strings()[(variant + 1) % tricky_strings().size()];
            c.predicate = "was designed by";
            c.object = tricky_strings()[(variant + 3) % tricky_strings().size()];
        }
        m.citations = {c, c};
        m.citations[1].n = 2;
        m.citations[1].spans.clear();
    }
    return m;
}

// The explain message as a tree, written field by field: the reference encode_text(ExplainMessage)
// must match byte for byte now that encode(ExplainMessage) is that text parsed.
nlohmann::json reference_explain(const ExplainMessage& m) {
    nlohmann::json triples = nlohmann::json::array();
    for (const auto& t : m.explain_triples) triples.push_back(encode(t));
    nlohmann::json j{{"message_type", "explain"},
                     {"session", m.session},
                     {"seq", m.seq},
                     {"service", m.service},
                     {"worker", m.worker},
                     {"explain_id", m.explain_id},
                     {"explain_graph", m.explain_graph},
                     {"explain_triples", std::move(triples)},
                     {"end_of_trace", m.end_of_trace},
                     {"trace_status", std::string(to_string(m.trace_status))}};
    if (m.parent_uri) j["parent_uri"] = *m.parent_uri;
    if (m.error) j["error"] = encode(*m.error);
    return j;
}

// decode_text must agree with decode_body on everything: success and value, or the error.
template <typename T>
void expect_same_decode(std::string_view text) {
    const auto fast = decode_text<T>(text);
    const auto slow = decode_body<T>(text);
    ASSERT_EQ(fast.ok(), slow.ok()) << "input: " << text;
    if (slow.ok()) {
        EXPECT_EQ(fast.value(), slow.value()) << "input: " << text;
    } else {
        EXPECT_EQ(fast.error(), slow.error()) << "input: " << text;
    }
}

TEST(JsonFast, StringsAreEscapedAsDumpEscapesThem) {
    for (const auto& s : tricky_strings()) {
        std::string out;
        append_json_string(out, s);
        EXPECT_EQ(out, dump(nlohmann::json(s))) << s;
    }
}

// The writer skips clean text eight bytes at a time: every character that needs escaping, at
// every position of strings around and across those words, is still escaped as dump() does.
TEST(JsonFast, EscapesAreFoundAtEveryPositionOfLongStrings) {
    const std::vector<std::string> specials{"\"",   "\\",       "\n",  std::string(1, '\0'),
                                            "\x1f", "\x7f",     "é",   "\xe2\x82\xac",
                                            "\xff", "\xe2\x82", "\xc3"};
    for (std::size_t length = 1; length <= 27; ++length) {
        for (std::size_t at = 0; at < length; ++at) {
            for (const auto& special : specials) {
                std::string text(length, 'a');
                text.replace(at, 1, special);
                std::string out = "x";
                append_json_string(out, text);
                ASSERT_EQ(out, "x" + dump(nlohmann::json(text)))
                    << "length " << length << " at " << at;
            }
        }
    }
}

TEST(JsonFast, EncodersWriteTheTreeEncodersBytes) {
    for (std::size_t v = 0; v < 8; ++v) {
        const auto triples = sample_triples(40, v);
        EXPECT_EQ(encode_text(TriplesResponse{triples}), dump(encode(TriplesResponse{triples})));
        const TriplesBatchResponse batch{{triples, {}, sample_triples(v, 3)}};
        EXPECT_EQ(encode_text(batch), dump(encode(batch)));
        EXPECT_EQ(encode_text(sample_explain(v)), dump(reference_explain(sample_explain(v))));
        EXPECT_EQ(encode_text(sample_rag(v)), dump(encode(sample_rag(v))));
    }
    EXPECT_EQ(encode_text(TriplesBatchResponse{}), R"({"results":[]})");
}

// triples-batch's labels (issue 33): written before the results, as dump() orders the keys.
// The llm worker's FINAL written directly: the tree encoder's bytes with and without the
// optional members, tricky strings, an empty list, and a JSON answer holding escapes, UTF-8,
// invalid UTF-8, nested arrays and doubles.
TEST(JsonFast, LlmResponseIsWrittenAsTheTreeEncoderWritesIt) {
    std::size_t v = 0;
    for (const auto& s : tricky_strings()) {
        LlmResponse m;
        m.text = s;
        m.model = v % 2 == 0 ? "extractive" : s;
        m.in_token = v * 1000;
        m.out_token = v == 3 ? std::numeric_limits<std::uint64_t>::max() : v;
        m.end_of_stream = v % 3 != 0;
        if (v % 2 == 1) m.answer = v % 4 == 1 ? std::string() : s;
        if (v % 3 == 1) m.answer_ids = {"e1", s, ""};
        if (v % 4 != 0) {
            m.json = nlohmann::json{
                {"scores",
                 nlohmann::json::array({{{"id", s}, {"score", 0.1 * static_cast<double>(v)}},
                                        {{"id", "e2"}, {"score", 1}},
                                        {{"id", "é\n\"q\""}, {"score", 1e-7}}})},
                {"reasons", nlohmann::json::array()},
                {s, nullptr}};
        }
        EXPECT_EQ(encode_text(m), dump(encode(m))) << "variant " << v;
        ++v;
    }
    LlmResponse null_json;
    null_json.json = nlohmann::json();
    EXPECT_EQ(encode_text(null_json), dump(encode(null_json)));
    EXPECT_EQ(encode_text(LlmResponse{}), dump(encode(LlmResponse{})));
}

// The extractive provider's FINAL (issue 33): its text is the answer's dump(), written as the
// `json` member instead of the tree dumped again; the same bytes as the tree encoder's, for every
// answer dump() takes (it refuses invalid UTF-8). Without the flag nothing is reused.
TEST(JsonFast, LlmResponseWhoseTextIsTheJsonDumpIsWrittenAsTheTreeEncoderWritesIt) {
    std::size_t v = 0;
    for (const auto& s : tricky_strings()) {
        LlmResponse m;
        m.json = nlohmann::json{{"scores", nlohmann::json::array({{{"id", s}, {"score", 0.25}}})},
                                {"concepts", {s, "e2"}}};
        try {
            m.text = m.json->dump();
        } catch (const nlohmann::json::type_error&) {
            continue;  // invalid UTF-8: the provider never has such a text
        }
        m.model = "extractive";
        m.in_token = v;
        m.end_of_stream = true;
        EXPECT_EQ(encode_text(m, true), dump(encode(m))) << "variant " << v;
        EXPECT_EQ(encode_text(m, false), encode_text(m)) << "variant " << v;
        ++v;
    }
    EXPECT_GE(v, 3U);
    // The flag makes the text the `json` member: a text that is not the dump would show.
    LlmResponse other;
    other.json = nlohmann::json{{"concepts", nlohmann::json::array()}};
    other.text = "not the dump";
    EXPECT_NE(encode_text(other, true), dump(encode(other)));
    EXPECT_EQ(encode_text(other, false), dump(encode(other)));
}

// graph-rag's llm request written directly: the tree encoder's bytes for tricky template names,
// variable names and values (escapes, UTF-8, invalid UTF-8), none, and both streaming values.
TEST(JsonFast, LlmRequestIsWrittenAsTheTreeEncoderWritesIt) {
    std::size_t v = 0;
    for (const auto& s : tricky_strings()) {
        LlmRequest m;
        m.template_name = v % 2 == 0 ? "kg-edge-scoring" : s;
        m.streaming = v % 3 == 1;
        m.variables = {{"question", s},
                       {"edges", R"([{"id":"e1","s":"a \"b\"","p":"q","o":"c"}])"}};
        if (v % 4 == 2) m.variables[s] = "value of " + s;
        if (v % 5 == 3) m.variables.clear();
        EXPECT_EQ(encode_text(m), dump(encode(m))) << "variant " << v;
        ++v;
    }
    EXPECT_EQ(encode_text(LlmRequest{}), dump(encode(LlmRequest{})));
}

// graph-rag reads the llm worker's FINAL from its text: as the tree decoder reads it, whatever
// the answer holds, and every odd input (null, wrong types, a key twice, deep or broken JSON)
// with the tree decoder's own result or error.
TEST(JsonFast, LlmResponseDecodesAsTheTreeDecoderDoes) {
    for (const auto& s : tricky_strings()) {
        LlmResponse m;
        m.text = s;
        m.model = "extractive";
        m.in_token = 12;
        m.out_token = 34;
        m.end_of_stream = true;
        m.answer = s;
        m.answer_ids = {"e1", s};
        m.json = nlohmann::json{{"scores", nlohmann::json::array({{{"id", s}, {"score", 0.25}}})},
                                {"n", -3},
                                {"big", 1e300}};
        expect_same_decode<LlmResponse>(dump(encode(m)));
        expect_same_decode<LlmResponse>(encode_text(m));
    }
    std::string deep = R"({"text":"t","json":)";
    for (int i = 0; i < 70; ++i) deep += '[';
    for (int i = 0; i < 70; ++i) deep += ']';
    deep += '}';
    for (const std::string& text : std::vector<std::string>{
             R"({"text":"a","json":null})", R"({"text":"a","json":{"x":[1,2.5,"\u00e9\n"]}})",
             R"({"json":{"a":1},"json":{"a":2}})", R"({"json":{"a":1,"a":2}})",
             R"({"text":"a","text":"b"})", R"({"text":5})", R"({"in_token":-1})",
             R"({"in_token":1.0})", R"({"answer":null,"answer_ids":null})",
             R"({"answer_ids":["e1",2]})", R"({"json":[1,}})", R"({"json":{"a":"\ud800"}})",
             R"({"json":"just text","unknown":{"deep":[{}]}})", R"({"end_of_stream":"yes"})",
             R"([])", R"({"json":{}} trailing)", "not json", "", deep}) {
        expect_same_decode<LlmResponse>(text);
    }
}

TEST(JsonFast, TriplesBatchLabelsAndCountsEncodeAndDecodeAsTheTreeCodecs) {
    TriplesBatchResponse batch{{sample_triples(2, 1), {}}};
    batch.labels = std::vector<std::vector<std::string>>{
        {"Earth", "related to", "a \"quoted\" name", "x", "y", "\xC3\xA9t\xC3\xA9"}, {}};
    // The counts of a request with `rows` come first, as dump() orders the keys.
    for (const bool counted : {false, true}) {
        if (counted) batch.counts = std::vector<std::uint32_t>{30, 0};
        const auto text = encode_text(batch);
        EXPECT_EQ(text, dump(encode(batch)));
        EXPECT_EQ(
            text.rfind(
                counted ? R"({"counts":[30,0],"labels":[["Earth",)" : R"({"labels":[["Earth",)", 0),
            0u)
            << text;
        expect_same_decode<TriplesBatchResponse>(text);
        auto decoded = decode_text<TriplesBatchResponse>(text);
        ASSERT_TRUE(decoded.ok()) << decoded.error().describe();
        EXPECT_EQ(*decoded, batch);
    }
    // Absent, or null, is no labels and no counts; a label that is not a string, or a count
    // that is not a 32-bit unsigned integer, is the tree decoder's error.
    auto plain = decode_text<TriplesBatchResponse>(R"({"results":[[]]})");
    ASSERT_TRUE(plain.ok());
    EXPECT_FALSE(plain->labels.has_value());
    EXPECT_FALSE(plain->counts.has_value());
    for (const std::string text :
         {R"({"labels":null,"results":[[]]})", R"({"counts":null,"results":[[]]})",
          R"({"counts":[4294967295],"results":[[]]})", R"({"counts":[4294967296],"results":[[]]})",
          R"({"counts":[-1],"results":[[]]})", R"({"counts":[1.5],"results":[[]]})",
          R"({"counts":["1"],"results":[[]]})"}) {
        expect_same_decode<TriplesBatchResponse>(text);
    }
    auto wrong = decode_text<TriplesBatchResponse>(R"({"labels":[[1]],"results":[[]]})");
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.error().type, base::ErrorType::kDecodeError);
    EXPECT_NE(wrong.error().message.find("labels[0][0]"), std::string::npos)
        << wrong.error().message;
}

// Six match lists of 0 to 15 entities, quoted triples among them, with `scores` in turn.
GraphEmbeddingsBatchResponse sample_match_lists(const std::vector<double>& scores) {
    GraphEmbeddingsBatchResponse batch;
    for (std::size_t v = 0; v < 6; ++v) {
        auto& list = batch.results.emplace_back();
        for (std::size_t i = 0; i < v * 3; ++i) {
            const auto t = sample_triple(i + v);
            list.push_back({i % 3 == 0   ? t.s
                            : i % 3 == 1 ? t.o
                                         : quoted(t),
                            scores[(i + v) % scores.size()]});
        }
    }
    return batch;
}

// The store's entity, provenance and label replies (issue 33): the tree encoder's bytes, with
// every kind of term, scores of every size and sign, tricky strings, and empty lists.
TEST(JsonFast, StoreRepliesAreWrittenAsTheTreeEncoderWritesThem) {
    const std::vector<double> scores{0.8731,       -0.0,
                                     0.0,          1.0,
                                     -0.25,        1e-7,
                                     0.1f,         3.4028234663852886e38,
                                     std::nan(""), 0.333333343267440796};
    const auto batch = sample_match_lists(scores);
    EXPECT_EQ(encode_text(batch), dump(encode(batch)));
    EXPECT_EQ(encode_text(GraphEmbeddingsBatchResponse{}), R"({"results":[]})");
    EXPECT_EQ(encode_text(GraphEmbeddingsBatchResponse{{{}, {}}}), R"({"results":[[],[]]})");
    for (const auto& list : batch.results) {
        const GraphEmbeddingsResponse merged{list};
        EXPECT_EQ(encode_text(merged), dump(encode(merged)));
    }
    EXPECT_EQ(encode_text(GraphEmbeddingsResponse{}), R"({"entities":[]})");

    FactSourcesResponse sources;
    std::size_t n = 0;
    for (const auto& s : tricky_strings()) {
        auto& list = sources.sources.emplace_back();
        FactSource source{"urn:file:" + s, n % 2 ? "chunk" : "file", std::nullopt,
                          static_cast<std::uint32_t>(n),
                          "2026-11-29T19:00:0" + std::to_string(n % 10) + "Z"};
        if (n % 2) source.document = "urn:doc:" + s;
        if (n % 3 == 1) {  // freshness (issue 35)
            source.date = "2020-01-0" + std::to_string(n % 9 + 1);
            source.max_age = "1d";
            source.stale = n % 2 == 1;
        }
        list.push_back(source);
        if (n % 3 == 0) list.push_back(source);
        if (n % 4 == 0) sources.sources.emplace_back();
        ++n;
    }
    sources.sources.back().back().tier = 4294967295u;
    EXPECT_EQ(encode_text(sources), dump(encode(sources)));
    EXPECT_EQ(encode_text(FactSourcesResponse{}), R"({"sources":[]})");

    const LabelsResponse labels{tricky_strings()};
    EXPECT_EQ(encode_text(labels), dump(encode(labels)));
    EXPECT_EQ(encode_text(LabelsResponse{}), R"({"labels":[]})");
    EXPECT_EQ(encode_text(LabelsResponse{{""}}), R"({"labels":[""]})");
}

// graph-rag reads the store's entities-batch, fact-sources and labels replies from their text
// (issue 33): as the tree decoder reads them, written by either encoder, and every odd input
// (nulls, wrong types, missing entities, a key twice, out-of-range tiers, broken JSON) with the
// tree decoder's own result or error.
TEST(JsonFast, StoreRepliesDecodeAsTheTreeDecoderDoes) {
    const auto batch = sample_match_lists({0.8731, -0.0, 1.0, 1e-7, 1e300, 5e-324, std::nan("")});
    FactSourcesResponse sources;
    std::size_t n = 0;
    for (const auto& s : tricky_strings()) {
        auto& list = sources.sources.emplace_back();
        FactSource source{"urn:file:" + s, n % 2 ? "chunk" : "file", std::nullopt,
                          n == 3 ? 4294967295u : static_cast<std::uint32_t>(n), "2026-11-29"};
        if (n % 2) source.document = "urn:doc:" + s;
        if (n % 3 == 2) {
            source.date = s;
            source.max_age = "2w";
            source.stale = true;
        }
        list.push_back(source);
        if (n % 4 == 0) sources.sources.emplace_back();
        ++n;
    }
    const LabelsResponse labels{tricky_strings()};
    for (const auto& text : {encode_text(batch), dump(encode(batch))})
        expect_same_decode<GraphEmbeddingsBatchResponse>(text);
    for (const auto& text : {encode_text(sources), dump(encode(sources))})
        expect_same_decode<FactSourcesResponse>(text);
    for (const auto& text : {encode_text(labels), dump(encode(labels))})
        expect_same_decode<LabelsResponse>(text);
    // Well-formed values read back exactly (the first six strings are valid UTF-8).
    const GraphEmbeddingsBatchResponse valid{
        {{{iri("urn:e"), 0.5}, {lang_literal("x", "en"), -2.0}}, {}}};
    const auto back = decode_text<GraphEmbeddingsBatchResponse>(encode_text(valid));
    ASSERT_TRUE(back.ok()) << back.error().describe();
    EXPECT_EQ(*back, valid);

    const std::string e = R"({"t":"i","i":"urn:e"})";
    for (const std::string& text : std::vector<std::string>{
             R"({"results":[[{"score":0.5,"entity":)" + e + R"(}]],"extra":[1,{"a":null}]})",
             R"({"results":[[{"entity":)" + e + R"(}]]})",
             R"({"results":[[{"score":0.5}]]})",
             R"({"results":[[{"entity":)" + e + R"(,"score":null}]]})",
             R"({"results":[[{"entity":)" + e + R"(,"score":"1"}]]})",
             R"({"results":[[{"entity":)" + e + R"(,"score":1,"score":2}]]})",
             R"({"results":[[{"entity":)" + e + R"(,"score":-0}]]})",
             R"({"results":[[{"entity":)" + e + R"(,"score":1e999}]]})",
             R"({"results":[[{"entity":{"t":"i","i":""},"score":1}]]})",
             R"({"results":[[{"entity":{"i":"urn:e"},"score":1}]]})",
             R"({"results":[[{"entity":null,"score":1}]]})",
             R"({"results":[null]})",
             R"({"results":null})",
             R"({"results":[],"results":[[]]})",
             R"({"results":[{}]})",
             R"({"results":[[]]} x)",
             R"({"results":[[],]})",
             R"([])",
             "",
             "not json"}) {
        expect_same_decode<GraphEmbeddingsBatchResponse>(text);
    }
    for (const std::string& text : std::vector<std::string>{
             R"({"sources":[[{"tier":2,"source":"s","kind":"file","loaded_at":"t","x":{}}]]})",
             R"({"sources":[[{"source":"s","document":null}]]})",
             R"({"sources":[[{"source":"s","document":"d","document":"e"}]]})",
             R"({"sources":[[{"tier":4294967296}]]})", R"({"sources":[[{"tier":-1}]]})",
             R"({"sources":[[{"tier":1.0}]]})", R"({"sources":[[{"tier":"1"}]]})",
             R"({"sources":[[{"kind":5}]]})", R"({"sources":[[{"source":"\u00e9\ud83d\ude80"}]]})",
             R"({"sources":[[null]]})", R"({"sources":[{}]})", R"({"sources":null})",
             R"({"sources":[[{}]],"sources":[]})", R"({"sources":[[{"source":"\ud800"}]]})",
             R"({"sources":[]}})", R"({})", "[1]"}) {
        expect_same_decode<FactSourcesResponse>(text);
    }
    for (const std::string& text : std::vector<std::string>{
             R"({"labels":["a","b\n\u00e9"]})", R"({"labels":["a",1]})", R"({"labels":[null]})",
             R"({"labels":null})", R"({"labels":[],"labels":["x"]})", R"({"labels":"a"})",
             R"({"x":1e999,"labels":[]})", R"({"labels":[]},)", R"({})"}) {
        expect_same_decode<LabelsResponse>(text);
    }
}

TEST(JsonFast, DecodersRoundTripEveryEncodedMessage) {
    for (std::size_t v = 0; v < 8; ++v) {
        const TriplesBatchResponse batch{{sample_triples(25, v), {}, sample_triples(v, 1)}};
        for (const auto& text : {encode_text(batch)}) {
            expect_same_decode<TriplesBatchResponse>(text);
        }
        expect_same_decode<TriplesResponse>(encode_text(TriplesResponse{sample_triples(30, v)}));
        expect_same_decode<RagResponse>(encode_text(sample_rag(v)));
        // Values survive where the text is well-formed (ill-formed UTF-8 was replaced on the way
        // out).
        const auto explain = decode_body<ExplainMessage>(encode_text(sample_explain(v)));
        ASSERT_TRUE(explain.ok()) << explain.error().describe();
        EXPECT_EQ(explain->explain_triples.size(), sample_explain(v).explain_triples.size());
        EXPECT_EQ(explain->session, sample_explain(v).session);
        EXPECT_EQ(explain->error, sample_explain(v).error);
    }
    const auto valid = sample_triples(6);  // the first six strings are well-formed UTF-8
    const auto back = decode_text<TriplesResponse>(encode_text(TriplesResponse{valid}));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->triples, valid);
}

TEST(JsonFast, UnusualButValidInputDecodesAsTheTreeDecoderDoes) {
    const std::vector<std::string> inputs{
        // keys in another order, whitespace, unknown keys holding every kind of value
        R"( { "results" : [ [ { "s":{"i":"urn:s","t":"i"} , "p" : {"t":"i","i":"urn:p"},
            "o":{"v":"x","t":"l","ln":"de","dt":"http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"},
            "extra":{"a":[1,-2.5e3,true,false,null,"s\u00e9"]} } ] ], "more": 0 } )",
        // escapes in values, a surrogate pair, an escaped slash
        R"({"results":[[{"s":{"t":"i","i":"urn:\u0073\ud83d\ude80\/x"},"p":{"t":"i","i":"urn:p"},"o":{"t":"l","v":"a\"b\\c\n"}}]]})",
        // xsd:string is the simple literal; an empty graph is the default graph
        R"({"results":[[{"s":{"t":"b","d":""},"p":{"t":"i","i":"urn:p"},"o":{"t":"l","v":"1","dt":"http://www.w3.org/2001/XMLSchema#string"},"g":""}]]})",
        // a term without "t" (recognised by its keys), nulls, duplicate keys
        R"({"results":[[{"s":{"i":"urn:s"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]]})",
        R"({"results":[[{"s":{"t":"i","i":"urn:s"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"},"g":null}]]})",
        R"({"results":[[{"s":{"t":"i","i":"urn:a","i":"urn:b"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]]})",
        R"({"results":[],"results":[[]]})",
        R"({"results":null})",
        // an IRI term carrying a stray literal key, a literal with both datatype and language
        R"({"results":[[{"s":{"t":"i","i":"urn:s","v":"x"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]]})",
        R"({"results":[[{"s":{"t":"i","i":"urn:s"},"p":{"t":"i","i":"urn:p"},"o":{"t":"l","v":"x","dt":"urn:d","ln":"en"}}]]})",
        // wrong types, missing parts, an empty IRI, unknown term type
        R"({"results":[[{"s":{"t":"i","i":5},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]]})",
        R"({"results":[[{"s":{"t":"i","i":"urn:s"},"p":{"t":"i","i":"urn:p"}}]]})",
        R"({"results":[[{"s":{"t":"i","i":""},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]]})",
        R"({"results":[[{"s":{"t":"q","i":"urn:s"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]]})",
        R"({"results":{}})",
        R"({"results":[{}]})",
        R"([])",
        R"("text")",
        // ill-formed JSON: trailing text, trailing commas, bad escapes, raw controls, lone
        // surrogates
        R"({"results":[]} x)",
        R"({"results":[],})",
        R"({"results":[[],]})",
        R"({"results":[[{"s":{"t":"i","i":"urn:\x"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]]})",
        "{\"results\":[[{\"s\":{\"t\":\"i\",\"i\":\"urn:\x01\"},\"p\":{\"t\":\"i\",\"i\":\"urn:p\"}"
        ",\"o\":{\"t\":\"i\",\"i\":\"urn:o\"}}]]}",
        R"({"results":[[{"s":{"t":"i","i":"urn:\ud800"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]]})",
        R"({"results":[[{"s":{"t":"i","i":"urn:\udc00"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:o"}}]]})",
        "{\"results\":[[{\"s\":{\"t\":\"i\",\"i\":\"urn:\xff\"},\"p\":{\"t\":\"i\",\"i\":\"urn:p\"}"
        ",\"o\":{\"t\":\"i\",\"i\":\"urn:o\"}}]]}",
        R"({"results":[01]})",
        R"({"x":-})",
        R"({"x":1.})",
        R"({"x":tru})",
        "",
    };
    for (const auto& text : inputs) expect_same_decode<TriplesBatchResponse>(text);
}

// Values the fast path skips are checked as strictly as the tree parser checks them: a number
// that overflows a double (which nlohmann refuses) is not skipped as well-formed; escaped and
// non-ASCII keys of skipped objects, and nesting up to the cursor's bound, are.
TEST(JsonFast, SkippedValuesAreCheckedAsTheTreeParserChecksThem) {
    const std::string nest = std::string(60, '[') + std::string(60, ']');
    const std::string too_deep = std::string(70, '[') + std::string(70, ']');
    const std::vector<std::string> skipped{
        "1e999",
        "-1e999",
        "1e-999",
        "1E5",
        "1" + std::string(400, '0'),
        "-1" + std::string(400, '0') + ".5",
        "1" + std::string(300, '0'),
        "0." + std::string(400, '0') + "1",
        "-0",
        R"({"\u0041":1,"é":[2,{"k\n":null}]})",
        R"(["\ud83d\ude80","\/"])",
        "\"\xff\"",
        nest,
        too_deep,
    };
    for (const auto& value : skipped) {
        expect_same_decode<TriplesBatchResponse>(R"({"results":[],"x":)" + value + "}");
        expect_same_decode<TriplesResponse>(R"({"x":)" + value + R"(,"triples":[]})");
        expect_same_decode<RagResponse>(R"({"message_type":"chunk","x":)" + value + "}");
        expect_same_decode<EmbeddingsResponse>(R"({"dim":1,"x":)" + value + "}");
    }
    for (const std::string key : {R"("\u00e9")", "\"é\"", R"("\u0074riples")"}) {
        expect_same_decode<TriplesResponse>("{" + key + R"(:1,"triples":[]})");
    }
}

// (The explain message has no decode_text: its unusual inputs are checked against the collector's
// scan in tests/unit/workers/trace_collector/explain_scan_test.cpp.)
TEST(JsonFast, MessageFieldsWithUnusualValuesDecodeAsTheTreeDecoderDoes) {
    const std::vector<std::string> rag_inputs{
        R"({"message_type":"chunk","response":"hi","end_of_stream":false})",
        R"({"message_type":"error","error":{"type":"Internal","message":"x"},"end_of_session":true})",
        R"({"message_type":"thought"})",
        R"({"sources":["a",1]})",
        R"({"sources":"a"})",
        R"({"in_token":5,"out_token":0,"model":"m"})",
    };
    for (const auto& text : rag_inputs) expect_same_decode<RagResponse>(text);
}

TEST(JsonFast, QuotedTriplesNestedToTheLimitAndBeyond) {
    for (const int depth :
         {1, kMaxQuotedTripleDepth - 1, kMaxQuotedTripleDepth, kMaxQuotedTripleDepth + 1}) {
        Term t = literal("leaf");
        for (int i = 0; i < depth; ++i) t = quoted(make_triple(iri("urn:s"), iri("urn:p"), t));
        const TriplesResponse m{{make_triple(iri("urn:s"), iri("urn:p"), t)}};
        expect_same_decode<TriplesResponse>(dump(encode(m)));
    }
}

// Nesting far past the bound, where the fast path skips a value and where it reads one: it
// recurses only to its own small bound, then the slow path refuses with the typed error.
TEST(JsonFast, DeepNestingIsLeftToTheSlowPathsTypedError) {
    constexpr std::size_t kDepth = 500'000;
    const std::string deep = std::string(kDepth, '[') + std::string(kDepth, ']');
    const std::string deep_object = [&] {
        std::string text;
        for (std::size_t i = 0; i < kDepth / 10; ++i) text += "{\"t\":\"t\",\"tr\":{\"o\":";
        return text;
    }();
    const std::vector<std::string> bodies = {
        "{\"unknown\":" + deep + "}",
        "{\"triples\":[{\"s\":{\"t\":\"i\",\"i\":\"urn:s\"},\"p\":{\"t\":\"i\",\"i\":\"urn:p\"},"
        "\"o\":" +
            deep_object,
        "{\"results\":" + deep + "}",
        "{\"vectors\":" + deep + "}",
        "{\"explain_triples\":" + deep + "}",
    };
    const std::string bound =
        "the JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    const auto expect_refused = [&](const auto& r) {
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.error().type, base::ErrorType::kInvalidJson);
        EXPECT_EQ(r.error().message, bound);
    };
    for (const auto& body : bodies) {
        expect_refused(decode_text<TriplesResponse>(body));
        expect_refused(decode_text<TriplesBatchResponse>(body));
        expect_refused(decode_text<RagResponse>(body));
        expect_refused(decode_text<EmbeddingsResponse>(body));
    }
}

// Every single-byte deletion and a sample of byte substitutions of real messages: the two
// decoders never disagree, whatever the damage.
TEST(JsonFast, DamagedMessagesDecodeAsTheTreeDecoderDoes) {
    std::mt19937 random(20261125);
    const std::string explain = encode_text(sample_explain(2));
    const std::string batch =
        encode_text(TriplesBatchResponse{{sample_triples(4), {}, sample_triples(3, 7)}});
    for (const auto* text : {&explain, &batch}) {
        for (std::size_t i = 0; i < text->size(); ++i) {
            std::string damaged = *text;
            damaged.erase(i, 1);
            expect_same_decode<TriplesBatchResponse>(damaged);
            if (HasFatalFailure()) return;
        }
        const std::string bytes = "{}[]\":,\\ tfn0-1.eu\x80\xc3\xff";
        for (int k = 0; k < 3000; ++k) {
            std::string damaged = *text;
            damaged[random() % damaged.size()] = bytes[random() % bytes.size()];
            expect_same_decode<TriplesBatchResponse>(damaged);
            if (HasFatalFailure()) return;
        }
    }
}

// Vectors compared bit for bit: -0.0 and +0.0 are equal under ==.
void expect_same_vectors(std::string_view text) {
    const auto fast = decode_text<EmbeddingsResponse>(text);
    const auto slow = decode_body<EmbeddingsResponse>(text);
    ASSERT_EQ(fast.ok(), slow.ok()) << "input: " << text;
    if (!slow.ok()) {
        EXPECT_EQ(fast.error(), slow.error()) << "input: " << text;
        return;
    }
    EXPECT_EQ(fast->model, slow->model);
    EXPECT_EQ(fast->dim, slow->dim);
    ASSERT_EQ(fast->vectors.size(), slow->vectors.size()) << "input: " << text;
    for (std::size_t i = 0; i < slow->vectors.size(); ++i) {
        ASSERT_EQ(fast->vectors[i].size(), slow->vectors[i].size());
        for (std::size_t j = 0; j < slow->vectors[i].size(); ++j) {
            EXPECT_EQ(std::bit_cast<std::uint64_t>(fast->vectors[i][j]),
                      std::bit_cast<std::uint64_t>(slow->vectors[i][j]))
                << "input: " << text << " at [" << i << "][" << j << "]";
        }
    }
}

TEST(JsonFast, EmbeddingVectorsDecodeToTheTreeDecodersDoublesBitForBit) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    std::uniform_int_distribution<int> exponent(-320, 300);
    EmbeddingsResponse m;
    m.model = "feature-hashing-384";
    m.dim = 64;
    for (int v = 0; v < 20; ++v) {
        auto& vector = m.vectors.emplace_back();
        for (int j = 0; j < 64; ++j) {
            vector.push_back(j % 8 == 0 ? std::ldexp(unit(rng), exponent(rng) * 3) : unit(rng));
        }
    }
    const std::string text = dump(encode(m));
    EXPECT_EQ(encode_text(m), text);
    expect_same_vectors(text);
    EmbeddingsResponse odd;  // what dump() writes for values JSON cannot hold, and the extremes
    odd.vectors = {{0.0, -0.0, 1.0, -1.0, 1e300, 5e-324, std::nan(""), HUGE_VAL, -HUGE_VAL, 0.1,
                    100.0, 1e21, 1e-7, 123456789.0},
                   {}};
    EXPECT_EQ(encode_text(odd), dump(encode(odd)));
    const auto back = decode_text<EmbeddingsResponse>(text);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, m);  // nlohmann writes doubles that read back exactly

    // Numbers the two parsers could disagree on, in every JSON spelling.
    for (const std::string number : {"0",
                                     "-0",
                                     "-0.0",
                                     "0.0",
                                     "1",
                                     "-1",
                                     "1E5",
                                     "1e+5",
                                     "2.5e-3",
                                     "1e-400",
                                     "-1e-400",
                                     "1e400",
                                     "4.9e-324",
                                     "2.2250738585072014e-308",
                                     "1.7976931348623157e308",
                                     "9007199254740993",
                                     "-9007199254740993",
                                     "18446744073709551615",
                                     "18446744073709551616",
                                     "-9223372036854775808",
                                     "-9223372036854775809",
                                     "123456789012345678901234567890",
                                     "0.1000000000000000055511151231257827",
                                     "3.14159265358979323846264338327950288"}) {
        expect_same_vectors(R"({"vectors":[[)" + number + R"(]],"model":"m","dim":1})");
    }
    for (const std::string text :
         {R"({"vectors":[],"dim":4294967296})", R"({"vectors":[],"dim":-1})",
          R"({"vectors":[],"dim":1.0})", R"({"vectors":[[1,"2"]]})", R"({"vectors":[[1,null]]})",
          R"({"vectors":[null]})", R"({"vectors":null})", R"({"vectors":[[1,2],[3]],"vectors":[]})",
          R"({"vectors":[[01]]})", R"({"vectors":[[1.]]})", R"({"vectors":[[+1]]})",
          R"({"vectors":[[NaN]]})", R"({"vectors":[[1,]]})", R"({"vectors":[[1]],"x":{}})",
          R"({"model":5})", R"({})", R"([])"}) {
        expect_same_vectors(text);
    }
}

}  // namespace
}  // namespace glassbox::schema
