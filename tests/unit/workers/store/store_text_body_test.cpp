// The store's load-triples and graph RAG's reads read from the body's text (the runtime leaves it
// unparsed for reads_body_as_text): the same answers as the tree path, escapes included, and text
// the cursor does not take goes the tree's way: InvalidJson for text that is not JSON, the usual
// typed error or result otherwise.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "schema/json_fast.hpp"
#include "schema/messages.hpp"
#include "schema/store_requests_text.hpp"
#include "schema/vector_query_text.hpp"
#include "tests/unit/workers/store/store_worker_fixture.hpp"
#include "workers/store/store_service.hpp"

namespace glassbox::store {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace cmd = schema::protocol::worker_cmd;

// The same body in a form reads_body_as_text does not take (a space after each key's colon):
// the runtime parses it and the handler reads the tree.
std::string as_tree_body(std::string body) {
    for (auto at = body.find("\":"); at != std::string::npos; at = body.find("\":", at + 3))
        body.insert(at + 2, " ");
    return body;
}

// The error's type, the text before its first colon.
std::string type_of(const std::string& error) { return error.substr(0, error.find(':')); }

class StoreTextBodyTest : public testing::StoreWorkerFixture {
protected:
    void SetUp() override { start_store("gb-store-text"); }

    // Sends a request; its FINAL body.
    json call(const std::string& body) {
        const std::string token = next_token();
        broker.send_request(identity_, token, body);
        auto reply = broker.expect(cmd::kReply);
        EXPECT_TRUE(reply) << body;
        if (!reply) return json();
        EXPECT_EQ(reply->frames[3], token);
        return json::parse(reply->frames[5]);
    }
    // Sends a request; its FINAL's text as it came.
    std::string reply_text(const std::string& body) {
        const std::string token = next_token();
        broker.send_request(identity_, token, body);
        auto reply = broker.expect(cmd::kReply);
        EXPECT_TRUE(reply) << body;
        if (!reply) return "";
        EXPECT_EQ(reply->frames[3], token);
        return reply->frames[5];
    }
    // Sends a request that must fail; "<type>: <message>".
    std::string error_text(const std::string& body) {
        const std::string token = next_token();
        broker.send_request(identity_, token, body);
        auto error = broker.expect(cmd::kError);
        EXPECT_TRUE(error) << body;
        if (!error) return "";
        EXPECT_EQ(error->frames[3], token);
        return error->frames[5] + ": " + (error->frames.size() > 6 ? error->frames[6] : "");
    }
    // Each body, read from its text, fails with its type, and with the error the same body gets
    // when the tree reads it (spaces added: see as_tree_body); for InvalidJson only the type,
    // since its message names the byte where parsing stopped, which the spaces move.
    void expect_errors_as_the_tree_gives(
        const std::vector<std::pair<std::string, std::string>>& bodies) {
        for (const auto& [body, type] : bodies) {
            ASSERT_TRUE(reads_body_as_text(body)) << body;
            const auto error = error_text(body);
            EXPECT_EQ(type_of(error), type) << error;
            const auto tree = error_text(as_tree_body(body));
            EXPECT_EQ(type == "InvalidJson" ? type_of(tree) : tree,
                      type == "InvalidJson" ? type : error)
                << body;
        }
    }
    // Sends a request that must fail; its error type.
    std::string error_of(const std::string& body) {
        const std::string token = next_token();
        broker.send_request(identity_, token, body);
        auto error = broker.expect(cmd::kError);
        EXPECT_TRUE(error) << body;
        if (!error) return "";
        EXPECT_EQ(error->frames[3], token);
        return error->frames[5];
    }
    std::string next_token() { return "t" + std::to_string(++requests_); }

    int requests_ = 0;
};

TEST_F(StoreTextBodyTest, ALoadTriplesBodyIsReadFromItsTextEscapesIncluded) {
    EXPECT_TRUE(reads_body_as_text(R"({"collection":"","op":"load-triples","nquads":""})"));
    EXPECT_FALSE(reads_body_as_text(R"({"op":"load-commit","load":"x"})"));
    // As `glassbox load` writes it: the op first, the N-Quads last, escaped.
    const std::string staged =
        R"({"collection":"","load":"text-1","op":"load-triples","source":{"uri":"urn:f","tier":2},)"
        R"("nquads":"<urn:a> <urn:p> \"caf\u00e9 \\\"q\\\"\"@fr .\n<urn:a> <urn:p> <urn:b> .\n"})";
    EXPECT_EQ(call(staged), (json{{"statements", 2}, {"added", 0}, {"present", 0}}));
    // The N-Quads before the op, and not staged: the same reading.
    const std::string direct =
        R"({"nquads":"<urn:a> <urn:p> <urn:b> .\n<urn:c> <urn:p> <urn:b> .\n",)"
        R"("op":"load-triples","source":{"uri":"urn:g"}})";
    EXPECT_EQ(call(direct), (json{{"statements", 2}, {"added", 2}, {"present", 0}}));
    EXPECT_EQ(call(R"({"op":"load-commit","load":"text-1"})"),
              (json{{"statements", 2}, {"added", 1}, {"present", 1}}));
    // The literal arrived unescaped: a pattern on its exact value finds it.
    const json query{{"op", "triples"},
                     {"o", {{"t", "l"}, {"v", "caf\xC3\xA9 \"q\""}, {"ln", "fr"}}}};
    EXPECT_EQ(call(query.dump())["count"], 1);
}

TEST_F(StoreTextBodyTest, ADictionaryEncodedBatchLoadsAsItsNQuadsDoAndBadOnesAreRefused) {
    // As `glassbox load` writes it: each distinct term once, the statements as indexes.
    const std::string prefix =
        R"({"collection":"","load":"dict-1","op":"load-triples","source":{"uri":"urn:f"},)";
    const std::string terms =
        R"("terms":"<urn:a>\n<urn:p>\n\"caf\u00e9 \\\"q\\\"\"@fr\n<urn:b>\n<urn:g>\n",)";
    const std::string good = prefix + terms + R"("statements":"0 1 2\n0 1 3\n3 1 0 4\n0 1 3"})";
    ASSERT_TRUE(reads_body_as_text(good));
    EXPECT_EQ(call(good), (json{{"statements", 4}, {"added", 0}, {"present", 0}}));
    // The same read from the tree (the runtime parsed it), not staged.
    const std::string direct = as_tree_body(R"({"op":"load-triples","source":{"uri":"urn:g"},)" +
                                            terms + R"("statements":"0 1 3\n"})");
    ASSERT_FALSE(reads_body_as_text(direct));
    EXPECT_EQ(call(direct), (json{{"statements", 1}, {"added", 1}, {"present", 0}}));

    // Malformed batches: typed errors, and nothing of them is staged.
    const std::vector<std::string> bad{
        R"("statements":"0 1 2\n0 1 9\n"})",  // a term index past the terms
        R"("statements":"0 1 2\n0 1"})",      // a truncated statement
        R"("statements":"2 1 0\n"})",         // a literal subject
        R"("statements":"0 1 x\n"})",         // not an index
    };
    for (const auto& tail : bad) {
        const std::string body = std::string(prefix).append(terms).append(tail);
        EXPECT_EQ(error_of(body), "InvalidRequest") << tail;
        EXPECT_EQ(error_of(as_tree_body(body)), "InvalidRequest") << tail;
    }
    EXPECT_EQ(error_of(prefix + R"("terms":"<urn:a>\n<urn:p> x\n","statements":"0 1 0\n"})"),
              "InvalidRequest")
        << "a bad term";
    EXPECT_EQ(error_of(prefix + R"("terms":"<a b>\n<urn:p>\n","statements":"0 1 0\n"})"),
              "InvalidRequest")
        << "an IRI with a space";
    EXPECT_EQ(error_of(prefix + terms + R"("nquads":"","statements":"0 1 2\n"})"), "InvalidRequest")
        << "both forms at once";
    EXPECT_EQ(error_of(prefix + terms.substr(0, terms.size() - 1) + "}"), "InvalidRequest")
        << "terms without statements";
    // The store kept serving; the commit holds the good batch alone.
    EXPECT_EQ(call(R"({"op":"load-commit","load":"dict-1"})"),
              (json{{"statements", 4}, {"added", 2}, {"present", 2}}));
    const json query{{"op", "triples"},
                     {"o", {{"t", "l"}, {"v", "caf\xC3\xA9 \"q\""}, {"ln", "fr"}}}};
    EXPECT_EQ(call(query.dump())["count"], 1);
}

TEST_F(StoreTextBodyTest, TextTheCursorDoesNotTakeIsReadAsATree) {
    // Not JSON: answered as the runtime answers any body that is not.
    EXPECT_EQ(error_of(R"({"op":"load-triples","nquads":"<urn:a> <urn:p> <urn:b> .\n")"),
              "InvalidJson");
    // An escaped key (the cursor compares keys as they stand): the tree reads it.
    const auto reply = call(R"({"op":"load-triples","source":{"uri":"urn:h"},)"
                            R"("nq\u0075ads":"<urn:x> <urn:p> <urn:y> .\n"})");
    EXPECT_EQ(reply["statements"], 1);
    EXPECT_EQ(reply["added"], 1);
    // No N-Quads: the tree's typed error, nothing loaded.
    EXPECT_EQ(error_of(R"({"op":"load-triples","source":{"uri":"urn:i"}})"), "InvalidRequest");
}

// entities and entities-batch read from the body's text (issue 33): the reply of the tree path
// byte for byte, and every error of the tree path, for well-formed, unusual and broken bodies.
TEST_F(StoreTextBodyTest, AVectorQueryReadFromItsTextAnswersAsTheTreeDoes) {
    EXPECT_EQ(
        call(
            R"({"op":"load-triples","source":{"uri":"urn:f"},"nquads":)"
            R"("<urn:a> <urn:p> <urn:b> .\n<urn:c> <urn:p> <urn:d> .\n<urn:e> <urn:q> <urn:a> .\n"})")
            ["added"],
        3);
    auto kb = service->bases().get("", false);
    ASSERT_TRUE(kb) << kb.error().message;
    {
        auto held = (*kb)->lock();
        ASSERT_TRUE(held);
        auto entities = (*kb)->graph().entities_after(0, 100);
        ASSERT_TRUE(entities);
        ASSERT_GE(entities->size(), 4u);
        std::vector<std::int64_t> keys;
        std::vector<std::vector<double>> vectors;
        for (std::size_t i = 0; i < entities->size(); ++i) {
            const auto x = static_cast<double>(i);
            keys.push_back((*entities)[i].id);
            vectors.push_back({1.0 + x, 0.5 * x, -0.25, 0.1 * x * x});
        }
        ASSERT_TRUE((*kb)->entity_vectors().add(keys, vectors, "test-model"));
    }
    const std::vector<std::string> bodies{
        R"({"collection":"","limit":2,"op":"entities-batch","vectors":[[1,0,0,0],)"
        R"([0.5,1,-0.25,0.0123456789],[3,3.5e-1,-0.25,1E1]]})",
        R"({"op":"entities","vectors":[[1,0,0,0],[0.5,1,-0.25,0.01]],"limit":3})",
        R"({"op":"entities-batch","vectors":[],"limit":2})",
        R"({"limit":0,"op":"entities-batch","vectors":[[2,1,0,1]],"x":{"k":[1,-0,"op"]}})",
    };
    for (const auto& body : bodies) {
        ASSERT_TRUE(reads_body_as_text(body)) << body;
        schema::VectorQueryText read;
        EXPECT_TRUE(schema::read_vector_query(body, read)) << body;
        const std::string tree = as_tree_body(body);
        ASSERT_FALSE(reads_body_as_text(tree)) << tree;
        EXPECT_EQ(reply_text(body), reply_text(tree)) << body;
    }
    EXPECT_EQ(reply_text(bodies[2]), R"({"results":[]})");
    const auto batch = json::parse(reply_text(bodies[0]))["results"];
    ASSERT_EQ(batch.size(), 3u);
    EXPECT_EQ(batch[0].size(), 2u);
    EXPECT_EQ(json::parse(reply_text(bodies[1]))["entities"].size(), 3u);
    // The op named inside another value: the reader reads the body's own op, the tree answers.
    const std::string labels = R"({"op":"labels","terms":[],"x":{"op":"entities-batch"}})";
    ASSERT_TRUE(reads_body_as_text(labels));
    EXPECT_EQ(reply_text(labels), R"({"labels":[]})");

    std::vector<std::pair<std::string, std::string>> bad{
        {R"({"op":"entities-batch","vectors":[[1,0]],"limit":2})", "InvalidRequest"},  // dim
        {R"({"op":"entities-batch","vectors":[[0,0,0,0]]})", "InvalidRequest"},        // zero
        {R"({"op":"entities-batch","vectors":[["x",1,2,3]]})", "DecodeError"},
        {R"({"op":"entities-batch","vectors":[[[1],2,3,4]]})", "DecodeError"},
        {R"({"op":"entities-batch","vectors":[1,2,3,4]})", "DecodeError"},
        {R"({"op":"entities-batch","vectors":[[1,2,3,4]],"limit":-1})", "DecodeError"},
        {R"({"op":"entities-batch","vectors":[[1e400,1,2,3]]})", "InvalidJson"},
        {R"({"op":"entities-batch","vectors":[[1,2,3,4]],"collection":"nowhere"})", "NotFound"},
        {R"({"op":"entities-batch","vectors":[[1,2,3,4]])", "InvalidJson"},
        {R"({"op":"entities-batch","vectors":[[1,2,3,4]]} x)", "InvalidJson"},
    };
    std::string many = R"({"op":"entities-batch","vectors":[[1,2,3,4])";
    for (int i = 0; i < 1'024; ++i) many += ",[1,2,3,4]";
    bad.emplace_back(many + "]}", "InvalidRequest");  // over max_vectors
    expect_errors_as_the_tree_gives(bad);
}

// As graph RAG writes a request: its encoding with "op" added, dumped (keys sorted).
template <typename Request>
std::string client_body(const Request& request, std::string_view op) {
    auto body = schema::encode(request);
    body["op"] = op;
    return schema::dump(body);
}

// triples-batch with `rows`: each result the first `rows` of what the limit alone answers, with
// their labels, and each pattern's count of matches up to the limit.
TEST_F(StoreTextBodyTest, ATriplesBatchWithRowsAnswersAPrefixAndEachPatternsCount) {
    std::string nquads = "<urn:a> <http://www.w3.org/2000/01/rdf-schema#label> \"Alpha\" .\n";
    for (int i = 0; i < 6; ++i) nquads += "<urn:a> <urn:p> <urn:n" + std::to_string(i) + "> .\n";
    nquads += "<urn:b> <urn:p> <urn:a> .\n";
    const json load{{"op", "load-triples"}, {"source", {{"uri", "urn:f"}}}, {"nquads", nquads}};
    ASSERT_EQ(call(load.dump())["added"], 8);
    const auto a = schema::iri("urn:a");
    schema::TriplesQueryBatch batch{
        {{a, {}, {}, ""}, {{}, {}, a, ""}, {schema::iri("urn:none"), {}, {}, ""}}, 5, "", true};
    auto whole = schema::decode_text<schema::TriplesBatchResponse>(
        reply_text(client_body(batch, "triples-batch")));
    ASSERT_TRUE(whole.ok());
    EXPECT_FALSE(whole->counts.has_value());
    for (const std::uint32_t rows : {0u, 2u, 5u, 9u}) {
        SCOPED_TRACE(rows);
        batch.rows = rows;
        for (const auto& body : {client_body(batch, "triples-batch"),
                                 as_tree_body(client_body(batch, "triples-batch"))}) {
            auto cut = schema::decode_text<schema::TriplesBatchResponse>(reply_text(body));
            ASSERT_TRUE(cut.ok());
            ASSERT_TRUE(cut->counts.has_value());
            EXPECT_EQ(*cut->counts, (std::vector<std::uint32_t>{5, 1, 0}));
            ASSERT_EQ(cut->results.size(), 3u);
            ASSERT_TRUE(cut->labels.has_value());
            for (std::size_t i = 0; i < 3; ++i) {
                const auto n = std::min<std::size_t>(rows, whole->results[i].size());
                EXPECT_EQ(cut->results[i],
                          std::vector<schema::Triple>(
                              whole->results[i].begin(),
                              whole->results[i].begin() + static_cast<std::ptrdiff_t>(n)));
                EXPECT_EQ((*cut->labels)[i],
                          std::vector<std::string>(
                              (*whole->labels)[i].begin(),
                              (*whole->labels)[i].begin() + static_cast<std::ptrdiff_t>(3 * n)));
            }
        }
    }
}

// Graph RAG's other reads (triples-batch, fact-sources, labels) read from the body's text (issue
// 33): the reply of the tree path byte for byte, and every error of the tree path, type and
// message, for bodies as graph RAG writes them, unusual ones the readers leave to the tree, and
// broken ones.
TEST_F(StoreTextBodyTest, GraphRagsReadsFromTheirTextAnswerAsTheTreeDoes) {
    const json load{{"op", "load-triples"},
                    {"source", {{"uri", "urn:f"}}},
                    {"nquads",
                     "<urn:a> <http://www.w3.org/2000/01/rdf-schema#label> \"Alpha\"@en .\n"
                     "<urn:a> <urn:p> <urn:b> .\n<urn:b> <urn:p> \"caf\xC3\xA9\"@fr .\n"
                     "<urn:b> <urn:q> <urn:c> <urn:g1> .\n<urn:c> <urn:p> _:n .\n"
                     "<urn:c> <http://www.w3.org/2000/01/rdf-schema#label> \"Gamma\" .\n"
                     "<urn:c> <urn:p> \"12\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n"}};
    ASSERT_EQ(call(load.dump())["added"], 7);
    using schema::iri;
    const auto a = iri("urn:a");
    const auto b = iri("urn:b");
    schema::TriplesQueryBatch batch{{{a, {}, {}, ""},
                                     {{}, {}, a, ""},
                                     {b, {}, {}, ""},
                                     {{}, {}, b, ""},
                                     {b, {}, {}, "urn:g1"},
                                     {{}, iri("urn:p"), {}, {}},
                                     {}},
                                    30,
                                    "",
                                    true};
    std::vector<std::string> bodies{client_body(batch, "triples-batch")};
    batch.rows = 1;
    bodies.push_back(client_body(batch, "triples-batch"));
    batch.rows.reset();
    batch.labels = false;
    batch.limit = 1;
    bodies.push_back(client_body(batch, "triples-batch"));
    const schema::FactSourcesRequest sources{
        "",
        {schema::make_triple(a, iri("urn:p"), b), schema::make_triple(a, iri("urn:p"), a),
         schema::make_triple(b, iri("urn:q"), iri("urn:c"), "urn:g1"),
         schema::make_triple(b, iri("urn:p"), schema::lang_literal("caf\xC3\xA9", "fr"))}};
    bodies.push_back(client_body(sources, "fact-sources"));
    const schema::LabelsRequest labels{
        "",
        {a, iri("urn:c"), iri("urn:none/Local_Name"), schema::literal("v"), schema::blank("n")}};
    bodies.push_back(client_body(labels, "labels"));
    for (const auto& body : bodies) {
        schema::TriplesQueryBatch q;
        schema::FactSourcesRequest f;
        schema::LabelsRequest l;
        EXPECT_TRUE(schema::read_triples_batch(body, q) || schema::read_fact_sources(body, f) ||
                    schema::read_labels_request(body, l))
            << body;
    }
    // Read from the text or left to the tree: the same answers.
    bodies.insert(
        bodies.end(),
        {R"({"op":"triples-batch","p\u0061tterns":[{"s":{"t":"i","i":"urn:a"}}],"limit":2})",
         R"({"op":"triples-batch","patterns":[{"s":{"t":"i","i":"urn:a"},"g":null}],"limit":-0})",
         R"({"op":"triples-batch","patterns":[{"o":{"i":"urn:b"}}],"labels":true})",
         R"({"op":"triples-batch","limit":1,"limit":3,"patterns":[{"s":{"t":"i","i":"urn:c"}}]})",
         R"({"op":"labels","terms":[{"t":"i","i":"urn:a"}],"collection":null})",
         R"({"op":"labels","terms":[],"x":{"op":"triples-batch"}})"});
    std::string untyped = R"({"op":"fact-sources","triples":[{"s":{"t":"i","i":"urn:a"},)";
    untyped +=
        R"("p":{"t":"i","i":"urn:p"},"o":{"i":"urn:b"},"g":null}]})";  // the IRI's "t" left out
    bodies.push_back(untyped);
    for (const auto& body : bodies) {
        ASSERT_TRUE(reads_body_as_text(body)) << body;
        const std::string tree = as_tree_body(body);
        ASSERT_FALSE(reads_body_as_text(tree)) << tree;
        EXPECT_EQ(reply_text(body), reply_text(tree)) << body;
    }
    const auto first = json::parse(reply_text(bodies[0]));
    EXPECT_EQ(first["results"][0].size(), 2u);  // urn:a's label and its edge to urn:b
    EXPECT_EQ(first["labels"][0][0], "Alpha");  // asked for labels: given
    EXPECT_EQ(first["results"][4].size(), 1u);  // in urn:g1 only
    EXPECT_EQ(json::parse(reply_text(bodies[2]))["sources"][1].size(), 0u);  // not a fact

    const std::vector<std::pair<std::string, std::string>> bad{
        {R"({"op":"triples-batch","patterns":[],"collection":"nowhere"})", "NotFound"},
        {R"({"op":"triples-batch","patterns":[],"limit":"5"})", "DecodeError"},
        {R"({"op":"triples-batch","patterns":[1]})", "DecodeError"},
        {R"({"op":"triples-batch","patterns":[{"s":{"x":1}}]})", "DecodeError"},
        {R"({"op":"triples-batch","patterns":[{"s":{"t":"i","i":""}}]})", "DecodeError"},
        {R"({"op":"triples-batch","patterns":[{"s":{"t":"q","i":"urn:a"}}]})", "DecodeError"},
        {R"({"op":"triples-batch","patterns":[],"limit":4294967296})", "DecodeError"},
        {R"({"op":"triples-batch","patterns":[],"labels":"yes"})", "DecodeError"},
        {R"({"op":"fact-sources","triples":[{"s":{"t":"i","i":"urn:a"},"p":{"t":"i","i":"p"}}]})",
         "DecodeError"},
        {R"({"op":"fact-sources","triples":[],"collection":"nowhere"})", "NotFound"},
        {R"({"op":"labels","terms":"x"})", "DecodeError"},
        {R"({"op":"labels","terms":[{"t":"l","v":"x","dt":"urn:d","ln":"en"}]})", "DecodeError"},
        {R"({"op":"labels","terms":[{"t":"i","i":"urn:a"}])", "InvalidJson"},
        {R"({"op":"fact-sources","triples":[]} x)", "InvalidJson"},
    };
    std::vector<std::pair<std::string, std::string>> bounded = bad;
    std::string many = R"({"op":"triples-batch","patterns":[{})";
    for (int i = 0; i < 20'000; ++i) many += ",{}";
    bounded.emplace_back(many + "]}", "InvalidRequest");  // over max_patterns
    expect_errors_as_the_tree_gives(bounded);
}

}  // namespace
}  // namespace glassbox::store
