// graph RAG's store and embeddings requests written as text against what the tree path sends:
// encode(m), the "op" key set, then dump() — byte for byte, on realistic and odd input.
#include "schema/service_requests_fast.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "schema/messages.hpp"
#include "tests/support/tricky_json_strings.hpp"

namespace glassbox::schema {
namespace {

using testing::tricky_strings;

// What ServiceCalls sent before the text writers: the tree with "op" (and the collection) set.
template <typename Request>
std::string tree_request(std::string_view op, const Request& request) {
    auto body = encode(request);
    body["op"] = op;
    body["collection"] = request.collection;
    return dump(body);
}

Term sample_term(std::size_t i) {
    const auto& s = tricky_strings();
    const std::string& text = s[i % s.size()];
    switch (i % 7) {
        case 0:
            return iri("http://example.org/entity/" + std::to_string(i));
        case 1:
            return blank("b" + std::to_string(i));
        case 2:
            return literal(text);
        case 3:
            return lang_literal(text, "en-GB");
        case 4:
            return typed_literal(text, "urn:dt:custom");
        case 5:
            return quoted(make_triple(iri("urn:a"), iri("urn:" + text), literal(text)));
        default:
            return iri("urn:x:" + text);
    }
}

Triple sample_triple(std::size_t i) {
    Triple t = make_triple(sample_term(i * 3 % 7 == 1 ? i : i + 6),
                           iri("urn:p:" + std::to_string(i)), sample_term(i + 2));
    if (i % 3 == 0) t.graph = i % 2 ? std::string("urn:g") : tricky_strings()[i % 11];
    return t;
}

// Doubles of every size and sign, the extremes, and those JSON cannot hold (written null).
std::vector<double> odd_doubles() {
    return {0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            1e-7,
            1e21,
            1e300,
            -1e-300,
            5e-324,
            2.2250738585072014e-308,
            1.7976931348623157e308,
            123456789.0,
            0.333333343267440796,
            static_cast<double>(0.1f),
            9007199254740993.0,
            std::nan(""),
            std::numeric_limits<double>::infinity(),
            -std::numeric_limits<double>::infinity()};
}

TEST(ServiceRequestsFast, EntitiesBatchIsWrittenAsTheTreePathWritesIt) {
    std::mt19937_64 rng(33);
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    std::uniform_int_distribution<int> exponent(-340, 310);
    GraphEmbeddingsQuery query{{}, 8, "default"};
    for (int v = 0; v < 12; ++v) {
        auto& vector = query.vectors.emplace_back();
        for (int j = 0; j < 384; ++j) {
            vector.push_back(j % 16 == 0 ? std::ldexp(unit(rng), exponent(rng)) : unit(rng));
        }
    }
    query.vectors.push_back(odd_doubles());
    query.vectors.emplace_back();
    EXPECT_EQ(encode_store_request("entities-batch", query), tree_request("entities-batch", query));
    for (const auto& collection : tricky_strings()) {
        const GraphEmbeddingsQuery odd{
            {{0.5}, {}}, std::numeric_limits<std::uint32_t>::max(), collection};
        EXPECT_EQ(encode_store_request("entities-batch", odd), tree_request("entities-batch", odd));
    }
    const GraphEmbeddingsQuery empty{};
    EXPECT_EQ(encode_store_request("entities-batch", empty), tree_request("entities-batch", empty));
    EXPECT_EQ(encode_store_request("entities-batch", empty),
              R"({"collection":"","limit":0,"op":"entities-batch","vectors":[]})");
}

TEST(ServiceRequestsFast, TriplesBatchIsWrittenAsTheTreePathWritesIt) {
    for (std::size_t v = 0; v < 16; ++v) {
        TriplesQueryBatch batch;
        batch.limit = static_cast<std::uint32_t>(v * 50);
        batch.collection = v % 4 == 0 ? tricky_strings()[v % 11] : "default";
        batch.labels = v % 2 == 0;
        if (v % 3 == 1) batch.rows = static_cast<std::uint32_t>(v * 2);
        for (std::size_t i = 0; i < v * 3; ++i) {
            TriplePattern pattern;
            // Every subset of the four positions.
            if ((i + v) & 1) pattern.s = sample_term(i);
            if ((i + v) & 2) pattern.p = iri("urn:p:" + std::to_string(i));
            if ((i + v) & 4) pattern.o = sample_term(i + v);
            if ((i + v) & 8) pattern.g = tricky_strings()[(i + 3) % 11];
            batch.patterns.push_back(pattern);
        }
        EXPECT_EQ(encode_store_request("triples-batch", batch),
                  tree_request("triples-batch", batch))
            << "variant " << v;
    }
    const TriplesQueryBatch one_empty{{TriplePattern{}}, 10, "c", true};
    EXPECT_EQ(
        encode_store_request("triples-batch", one_empty),
        R"({"collection":"c","labels":true,"limit":10,"op":"triples-batch","patterns":[{}]})");
    EXPECT_EQ(encode_store_request("triples-batch", one_empty),
              tree_request("triples-batch", one_empty));
    TriplesQueryBatch some_rows = one_empty;
    some_rows.rows = 0;
    EXPECT_EQ(encode_store_request("triples-batch", some_rows),
              R"({"collection":"c","labels":true,"limit":10,"op":"triples-batch","patterns":[{}],)"
              R"("rows":0})");
    EXPECT_EQ(encode_store_request("triples-batch", some_rows),
              tree_request("triples-batch", some_rows));
}

TEST(ServiceRequestsFast, FactSourcesAndLabelsAreWrittenAsTheTreePathWritesThem) {
    for (std::size_t v = 0; v < 12; ++v) {
        FactSourcesRequest facts{v % 5 == 0 ? tricky_strings()[v % 11] : "default", {}};
        LabelsRequest labels{facts.collection, {}};
        for (std::size_t i = 0; i < v * 4; ++i) {
            facts.triples.push_back(sample_triple(i + v));
            labels.terms.push_back(sample_term(i + v));
        }
        EXPECT_EQ(encode_store_request("fact-sources", facts), tree_request("fact-sources", facts))
            << "variant " << v;
        EXPECT_EQ(encode_store_request("labels", labels), tree_request("labels", labels))
            << "variant " << v;
    }
    EXPECT_EQ(encode_store_request("labels", LabelsRequest{}),
              R"({"collection":"","op":"labels","terms":[]})");
    EXPECT_EQ(encode_store_request("fact-sources", FactSourcesRequest{}),
              R"({"collection":"","op":"fact-sources","triples":[]})");
}

TEST(ServiceRequestsFast, EmbeddingsRequestIsWrittenAsTheTreeEncoderWritesIt) {
    EXPECT_EQ(encode_text(EmbeddingsRequest{tricky_strings()}),
              dump(encode(EmbeddingsRequest{tricky_strings()})));
    EXPECT_EQ(encode_text(EmbeddingsRequest{}), dump(encode(EmbeddingsRequest{})));
    EXPECT_EQ(encode_text(EmbeddingsRequest{{"Which river flows through Paris?"}}),
              R"({"texts":["Which river flows through Paris?"]})");
}

// The numbers of a vector keep the tree writer's text for random doubles across the whole range.
TEST(ServiceRequestsFast, RandomDoublesAreWrittenAsDumpWritesThem) {
    std::mt19937_64 rng(20261129);
    GraphEmbeddingsQuery query{{{}}, 1, "c"};
    for (int i = 0; i < 20'000; ++i) {
        const std::uint64_t bits = rng();
        double value;
        std::memcpy(&value, &bits, sizeof value);
        query.vectors[0].push_back(value);
    }
    EXPECT_EQ(encode_store_request("entities-batch", query), tree_request("entities-batch", query));
}

}  // namespace
}  // namespace glassbox::schema
