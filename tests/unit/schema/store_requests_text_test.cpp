// The store's triples-batch, fact-sources and labels readers against the tree they stand in for:
// what they take decodes through parse + decode<T> to the same request; what they leave (to the
// tree, which gives the result or the error) includes everything the tree reads differently or
// refuses.
#include "schema/store_requests_text.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "schema/json_cursor.hpp"
#include "schema/messages.hpp"
#include "schema/term_text.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::schema {
namespace {

// A request struct with every field set, so a reader that forgot to reset `out` shows it.
TriplesQueryBatch stale_batch() {
    return TriplesQueryBatch{{TriplePattern{iri("urn:stale"), {}, {}, "g"}}, 7, "stale", true};
}

// The reader's answer for `text` agrees with the tree's: when it takes the text, the tree parses
// it with "op" `op` and decodes it to the same request. Returns whether the reader took it.
template <typename T>
bool agrees_with_tree(const std::string& text, std::string_view op,
                      bool (*read)(std::string_view, T&), T fast) {
    if (!read(text, fast)) return false;
    const auto tree = parse_untrusted_json(text);
    EXPECT_TRUE(tree.ok()) << "the reader took what the parser refuses: " << text;
    if (!tree.ok()) return true;
    const auto op_field = tree->find("op");
    EXPECT_TRUE(op_field != tree->end() && op_field->is_string() &&
                op_field->get<std::string>() == op)
        << text;
    const auto slow = decode<T>(*tree);
    EXPECT_TRUE(slow.ok()) << "the reader took what the decoder refuses: " << text << " ("
                           << slow.error().message << ")";
    if (!slow.ok()) return true;
    EXPECT_TRUE(fast == *slow) << "read differently from the tree: " << text;
    return true;
}

bool batch_agrees(const std::string& text) {
    return agrees_with_tree<TriplesQueryBatch>(text, "triples-batch", read_triples_batch,
                                               stale_batch());
}
bool sources_agrees(const std::string& text) {
    return agrees_with_tree<FactSourcesRequest>(text, "fact-sources", read_fact_sources,
                                                FactSourcesRequest{"stale", {Triple{}}});
}
bool labels_agrees(const std::string& text) {
    return agrees_with_tree<LabelsRequest>(text, "labels", read_labels_request,
                                           LabelsRequest{"stale", {iri("urn:stale")}});
}

// Every reader on `text`: whichever takes it agrees with the tree. How many took it.
int all_agree(const std::string& text) {
    return int{batch_agrees(text)} + int{sources_agrees(text)} + int{labels_agrees(text)};
}

// As graph RAG writes a request: its encoding with "op" added, dumped (keys sorted).
template <typename T>
std::string client_body(const T& request, std::string_view op) {
    auto body = encode(request);
    body["op"] = op;
    return dump(body);
}

// Entity IRIs as a PathQuestion-like knowledge base names them, some with escapes and non-ASCII.
std::string entity(std::size_t i) {
    static const std::vector<std::string> names{
        "Barack_Obama",  "Z\xC3\xBCrich", "Caf\xC3\xA9_\"Central\"",
        "New_York_City", "back\\slash",   "\xE6\x9D\xB1\xE4\xBA\xAC",
        "tab\there",     "Marie_Curie"};
    return "http://pathquestion.example/entity/" + names[i % names.size()] + "_" +
           std::to_string(i);
}

// Graph RAG's frontier: each node asked as subject and as object, in the default graph ("g":
// "", the graph the pattern names even though it is empty).
TriplesQueryBatch frontier_batch(std::size_t nodes, std::size_t offset = 0) {
    TriplesQueryBatch q;
    q.collection = "pathquestion";
    q.limit = 30;
    q.labels = true;
    for (std::size_t i = 0; i < nodes; ++i) {
        q.patterns.push_back(TriplePattern{iri(entity(i + offset)), {}, {}, std::string()});
        q.patterns.push_back(TriplePattern{{}, {}, iri(entity(i + offset)), std::string()});
    }
    return q;
}

// Terms of every kind and spelling the wire carries.
std::vector<Term> sample_terms() {
    const Triple inner = make_triple(iri("urn:a"), iri("urn:b"), literal("quoted \"text\"\n"));
    return {iri(entity(1)),
            iri("urn:x"),
            blank("b0"),
            blank(""),
            literal(""),
            literal("plain"),
            literal("controls \b\f\n\r\t \x01\x1f end"),
            literal(std::string("nul \0 inside", 12)),
            literal("\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x9A\x80"),
            lang_literal("Zurich", "en-GB"),
            typed_literal("42", std::string(kXsdInteger)),
            typed_literal("text", std::string(kXsdString)),
            xsd_double(0.25),
            typed_literal("x", "urn:dt:custom"),
            quoted(inner),
            quoted(make_triple(quoted(inner), iri("urn:q"), blank("b1")))};
}

std::vector<Triple> sample_facts(std::size_t n) {
    const auto terms = sample_terms();
    std::vector<Triple> out;
    for (std::size_t i = 0; i < n; ++i) {
        std::optional<std::string> graph;
        if (i % 4 == 1) graph = "urn:graph:" + std::to_string(i);
        out.push_back(make_triple(iri(entity(i)),
                                  iri("http://pathquestion.example/rel/r" + std::to_string(i % 5)),
                                  terms[i % terms.size()], graph));
    }
    return out;
}

TEST(StoreRequestsText, GraphRagsBodiesReadAsTheTreeDecodesThem) {
    const auto batch = frontier_batch(7);
    const std::string batch_text = client_body(batch, "triples-batch");
    EXPECT_TRUE(batch_agrees(batch_text));
    TriplesQueryBatch read;
    ASSERT_TRUE(read_triples_batch(batch_text, read));
    EXPECT_EQ(read, batch);  // the graph "" of every pattern kept
    ASSERT_EQ(read.patterns.size(), 14u);
    EXPECT_EQ(read.patterns[0].g, std::optional<std::string>(""));
    FactSourcesRequest other_op;
    EXPECT_FALSE(read_fact_sources(batch_text, other_op));

    const FactSourcesRequest sources{"pathquestion", sample_facts(20)};
    const std::string sources_text = client_body(sources, "fact-sources");
    EXPECT_TRUE(sources_agrees(sources_text));
    FactSourcesRequest read_sources;
    ASSERT_TRUE(read_fact_sources(sources_text, read_sources));
    EXPECT_EQ(read_sources, sources);

    const LabelsRequest labels{"pathquestion", sample_terms()};
    const std::string labels_text = client_body(labels, "labels");
    EXPECT_TRUE(labels_agrees(labels_text));
    LabelsRequest read_labels;
    ASSERT_TRUE(read_labels_request(labels_text, read_labels));
    EXPECT_EQ(read_labels, labels);

    // Patterns of every shape, and empty lists.
    TriplesQueryBatch shapes;
    const auto terms = sample_terms();
    for (std::size_t i = 0; i < terms.size(); ++i) {
        shapes.patterns.push_back(TriplePattern{terms[i], {}, {}, {}});
        shapes.patterns.push_back(TriplePattern{{}, terms[(i + 1) % terms.size()], terms[i], "g"});
    }
    shapes.patterns.emplace_back();
    EXPECT_TRUE(batch_agrees(client_body(shapes, "triples-batch")));
    EXPECT_TRUE(batch_agrees(client_body(TriplesQueryBatch{}, "triples-batch")));
    TriplesQueryBatch some_rows = frontier_batch(3);
    some_rows.rows = 7;
    EXPECT_TRUE(batch_agrees(client_body(some_rows, "triples-batch")));
    TriplesQueryBatch read_rows;
    ASSERT_TRUE(read_triples_batch(client_body(some_rows, "triples-batch"), read_rows));
    EXPECT_EQ(read_rows, some_rows);
    EXPECT_TRUE(sources_agrees(client_body(FactSourcesRequest{}, "fact-sources")));
    EXPECT_TRUE(labels_agrees(client_body(LabelsRequest{}, "labels")));
}

TEST(StoreRequestsText, KeysInAnyOrderUnknownOnesSkippedWhitespaceAllowed) {
    for (const std::string text : {
             R"({"patterns":[{"g":"","s":{"i":"urn:a","t":"i"}}],"op":"triples-batch"})",
             " {\n\t\"op\" : \"triples-batch\" , \"limit\" : 4294967295 ,\"labels\":false,"
             "\"patterns\" : [ { } , {\"o\" : {\"t\":\"b\",\"d\":\"\"} } ] } ",
             R"({"op":"triples-batch","x":{"a":[1,{"b":null}],"op":"labels"},"limit":0})",
             R"({"op":"triples\u002dbatch","collection":"k\u00e9","patterns":[]})",
             R"({"op":"triples-batch","patterns":[{"s":{"t":"i","i":"urn:a","x":[1]},"y":2}]})",
             R"({"op":"triples-batch","patterns":[{"p":{"t":"l","v":"1","dt":"urn:t","ln":""}}]})",
             R"({"op":"triples-batch","patterns":[{"o":{"v":"x","t":"l","ln":"en",)"
             R"("dt":"http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"}}]})",
             R"({"op":"triples-batch","patterns":[{"s":{"t":"\u0069","i":"urn:\u00e9"}}]})",
             R"({"op":"triples-batch","rows":4294967295,"patterns":[]})",
             R"({"op":"triples-batch","rows":0,"limit":3,"patterns":[]})",
         }) {
        EXPECT_TRUE(batch_agrees(text)) << text;
    }
    for (const std::string text : {
             R"({"triples":[{"o":{"t":"l","v":""},"g":"","p":{"t":"i","i":"urn:p"},)"
             R"("s":{"t":"b","d":"x"},"z":{}}],"op":"fact-sources","collection":""})",
             R"({"op":"fact-sources","triples":[{"s":{"t":"i","i":"urn:s"},"p":{"t":"i","i":"u"},)"
             R"("o":{"t":"t","tr":{"s":{"t":"i","i":"a"},"p":{"t":"i","i":"b"},)"
             R"("o":{"t":"i","i":"c"},"g":"urn:g-of-the-quoted-triple"}},"g":"urn:g"}]})",
         }) {
        EXPECT_TRUE(sources_agrees(text)) << text;
    }
    EXPECT_TRUE(labels_agrees(R"({"terms":[{"t":"i","i":"urn:a"}],"op":"labels","n":-0})"));
    EXPECT_TRUE(
        labels_agrees(R"({"op":"labels","terms":[{"t":"l","v":"a\"b\\c\/d\ud83d\ude80"}]})"));
}

// Input the tree decodes differently or refuses is never taken: the store then parses the tree,
// which answers with its own result or typed error.
TEST(StoreRequestsText, WhatTheTreeReadsDifferentlyOrRefusesIsLeftToIt) {
    // A fact-sources body of one triple: its subject and predicate, then `rest`.
    const auto fact = [](std::string_view rest) {
        std::string text =
            R"({"op":"fact-sources","triples":[{"s":{"t":"i","i":"urn:s"},"p":{"t":"i","i":"p"})";
        text += rest;
        text += "}]}";
        return text;
    };
    for (
        const std::string& text : std::vector<std::string>{
            // nulls (the tree reads them as absent)
            R"({"op":"triples-batch","limit":null})",
            R"({"op":"triples-batch","labels":null})",
            R"({"op":"triples-batch","collection":null})",
            R"({"op":"triples-batch","patterns":null})",
            R"({"op":"triples-batch","patterns":[{"s":null}]})",
            R"({"op":"triples-batch","patterns":[{"g":null}]})",
            R"({"op":"triples-batch","patterns":[null]})",
            R"({"op":"triples-batch","patterns":[{"s":{"t":"l","v":"x","dt":null}}]})",
            // wrong types and numbers the tree converts or refuses
            R"({"op":"triples-batch","limit":"5"})",
            R"({"op":"triples-batch","limit":5.0})",
            R"({"op":"triples-batch","limit":5e0})",
            R"({"op":"triples-batch","limit":-1})",
            R"({"op":"triples-batch","limit":-0})",
            R"({"op":"triples-batch","limit":4294967296})",
            R"({"op":"triples-batch","limit":18446744073709551616})",
            R"({"op":"triples-batch","limit":05})",
            R"({"op":"triples-batch","rows":null})",
            R"({"op":"triples-batch","rows":-1})",
            R"({"op":"triples-batch","rows":4294967296})",
            R"({"op":"triples-batch","rows":"5"})",
            R"({"op":"triples-batch","labels":1})",
            R"({"op":"triples-batch","labels":"true"})",
            R"({"op":"triples-batch","collection":5})",
            R"({"op":"triples-batch","patterns":{}})",
            R"({"op":"triples-batch","patterns":[1]})",
            R"({"op":"triples-batch","patterns":[[]]})",
            R"({"op":"triples-batch","patterns":[[{"s":{"t":"i","i":"urn:s"}}]]})",
            R"({"op":"triples-batch","patterns":[{"s":"urn:s"}]})",
            R"({"op":"triples-batch","patterns":[{"g":5}]})",
            // duplicate and escaped keys
            R"({"op":"triples-batch","op":"triples-batch"})",
            R"({"op":"triples-batch","limit":1,"limit":2})",
            R"({"op":"triples-batch","rows":1,"rows":2})",
            R"({"op":"triples-batch","patterns":[],"patterns":[]})",
            R"({"op":"triples-batch","p\u0061tterns":[]})",
            R"({"op":"triples-batch","patterns":[{"s":{"t":"i","i":"a"},"s":{"t":"i","i":"b"}}]})",
            R"({"op":"triples-batch","patterns":[{"s":{"t":"i","t":"i","i":"a"}}]})",
            R"({"op":"triples-batch","patterns":[{"s":{"\u0074":"i","i":"a"}}]})",
            // terms the tree reads by other rules or refuses
            R"({"op":"triples-batch","patterns":[{"s":{"i":"urn:s"}}]})",
            R"({"op":"triples-batch","patterns":[{"s":{"t":"","i":"urn:s"}}]})",
            R"({"op":"triples-batch","patterns":[{"s":{"t":"x","i":"urn:s"}}]})",
            R"({"op":"triples-batch","patterns":[{"s":{"t":"i","i":""}}]})",
            R"({"op":"triples-batch","patterns":[{"s":{"t":"i","i":"a","v":"b"}}]})",
            R"({"op":"triples-batch","patterns":[{"s":{"t":"b"}}]})",
            R"({"op":"triples-batch","patterns":[{"s":{"t":"l","v":"x","dt":"urn:d","ln":"en"}}]})",
            R"({"op":"triples-batch","patterns":[{"s":{"t":"t"}}]})",
            R"({"op":"triples-batch","patterns":[{"s":{"t":"t","tr":{"s":{"t":"i","i":"a"}}}}]})",
            // another op, no op, not a string
            R"({"op":"labels","patterns":[]})",
            R"({"patterns":[]})",
            R"({"op":5,"patterns":[]})",
            R"({"op":"triples-batch ","patterns":[]})",
            // not one JSON object
            R"([{"op":"triples-batch"}])",
            R"("triples-batch")",
            "",
            R"({"op":"triples-batch"} {})",
            R"({"op":"triples-batch","patterns":[)",
            R"({"op":"triples-batch","collection":"\ud800"})",
            "{\"op\":\"triples-batch\",\"collection\":\"bad \xff byte\"}",
            "{\"op\":\"triples-batch\",\"collection\":\"raw\nnewline\"}",
            R"({"op":"triples-batch","x":1e400})",
        }) {
        EXPECT_FALSE(batch_agrees(text)) << text;
    }
    for (const std::string& text : std::vector<std::string>{
             fact(""),
             fact(R"(,"o":{"t":"i","i":"urn:o"},"g":null)"),
             fact(R"(,"o":null)"),
             fact(R"(,"o":{"t":"i","i":"urn:o"},"o":{"t":"i","i":"urn:o"})"),
             R"({"op":"fact-sources","triples":{}})",
             R"({"op":"fact-sources","triples":[[]]})",
             R"({"op":"fact-sources","collection":[]})",
             R"({"op":"labels","terms":[null]})",
             R"({"op":"labels","terms":[{"t":"i","i":"a"}],"terms":[]})",
             R"({"op":"labels","terms":[{"t":"i"}]})",
             R"({"op":"labels","terms":"x"})",
             R"({"op":"labels","terms":[{"t":"i","i":"a"}]]})",
         }) {
        EXPECT_EQ(all_agree(text), 0) << text;
    }
}

// A quoted triple of `levels` nested quoting levels as a term's JSON.
std::string nested_quote(int levels) {
    std::string text = R"({"t":"i","i":"urn:leaf"})";
    for (int i = 0; i < levels; ++i) {
        text.insert(0, R"({"t":"t","tr":{"s":)");
        text += R"(,"p":{"t":"i","i":"urn:p"},"o":{"t":"b","d":"n"}}})";
    }
    return text;
}

// The readers take quoted triples exactly as deep as the tree decoder does, and skipped values
// only as deep as the cursor's bound: never a text the parser refuses for its depth.
TEST(StoreRequestsText, QuotedTriplesAsDeepAsTheTreeTakesThem) {
    for (const int levels : {1, kMaxQuotedTripleDepth - 1, kMaxQuotedTripleDepth}) {
        EXPECT_TRUE(labels_agrees(R"({"op":"labels","terms":[)" + nested_quote(levels) + "]}"))
            << levels;
    }
    const std::string too_deep =
        R"({"op":"labels","terms":[)" + nested_quote(kMaxQuotedTripleDepth + 1) + "]}";
    EXPECT_FALSE(labels_agrees(too_deep));
    const auto tree = parse_untrusted_json(too_deep);
    ASSERT_TRUE(tree.ok());
    EXPECT_FALSE(decode<LabelsRequest>(*tree).ok());

    std::string deep_unknown = "0";
    for (int i = 0; i < kMaxJsonSkipDepth; ++i) {
        deep_unknown.insert(0, 1, '[');
        deep_unknown += ']';
    }
    // A body of labels' op with `value` under an unknown key.
    const auto with_unknown = [](std::string_view value) {
        std::string text = R"({"op":"labels","x":)";
        text += value;
        text += '}';
        return text;
    };
    EXPECT_TRUE(labels_agrees(with_unknown(deep_unknown)));
    EXPECT_FALSE(labels_agrees(with_unknown("[" + deep_unknown + "]")));
    // As deep in the innermost quoted triple's term: still within the parser's bound.
    std::string at_depth = nested_quote(kMaxQuotedTripleDepth);
    at_depth.insert(at_depth.find(R"({"t":"i","i":"urn:leaf"})") + 1,
                    R"("x":)" + deep_unknown + ",");
    EXPECT_TRUE(labels_agrees(R"({"op":"labels","terms":[)" + at_depth + "]}"));
}

// Graph RAG's bodies with one random edit each (a byte dropped, replaced, inserted or a span
// repeated): whatever a reader takes, the tree reads the same; both outcomes occur.
TEST(StoreRequestsText, EditedBodiesAreTakenOnlyWhenTheTreeAgrees) {
    const std::vector<std::string> bodies{
        client_body(frontier_batch(3, 5), "triples-batch"),
        client_body(FactSourcesRequest{"pq", sample_facts(6)}, "fact-sources"),
        client_body(LabelsRequest{"pq", sample_terms()}, "labels"),
    };
    const std::string alphabet = std::string("{}[]\",:\\ 0123456789-+.eEtfnuil\xff\xc3") + '\0';
    std::mt19937_64 rng(33);
    int taken = 0;
    int left = 0;
    for (int round = 0; round < 6'000; ++round) {
        std::string text = bodies[static_cast<std::size_t>(round) % bodies.size()];
        const std::size_t at = rng() % text.size();
        const char c = alphabet[rng() % alphabet.size()];
        switch (rng() % 4) {
            case 0:
                text.erase(at, 1);
                break;
            case 1:
                text[at] = c;
                break;
            case 2:
                text.insert(at, 1, c);
                break;
            default:
                text.insert(at, text.substr(at, 1 + rng() % 40));
                break;
        }
        (all_agree(text) > 0 ? taken : left) += 1;
    }
    EXPECT_GT(taken, 100);
    EXPECT_GT(left, 100);
}

TEST(StoreRequestsText, TermReadersStopAtTheEndOfTheirValue) {
    JsonCursor r(R"({"t":"i","i":"urn:a"}, {"s":{"t":"b","d":"x"},"p":{"t":"i","i":"p"},)"
                 R"("o":{"t":"l","v":"v","ln":"fr"},"g":"urn:g"} rest)");
    Term term;
    ASSERT_TRUE(read_json_term(r, term));
    EXPECT_EQ(term, iri("urn:a"));
    ASSERT_TRUE(r.eat(','));
    Triple triple;
    ASSERT_TRUE(read_json_triple(r, triple));
    EXPECT_EQ(triple, make_triple(blank("x"), iri("p"), lang_literal("v", "fr"), "urn:g"));
    EXPECT_TRUE(r.eat('r'));
}

}  // namespace
}  // namespace glassbox::schema
