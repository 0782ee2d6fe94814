// The vector query's one-pass reader against the tree it stands in for: what it accepts decodes
// through parse + decode<GraphEmbeddingsQuery> to the same query, doubles bit for bit; what it
// refuses (left to the tree) includes everything the tree reads differently or refuses.
#include "schema/vector_query_text.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "schema/messages.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::schema {
namespace {

// The reader's answer for `text` agrees with the tree's: when it reads the text, the tree decodes
// it to the same query and op. Returns whether the reader took it.
bool expect_agrees_with_tree(const std::string& text) {
    VectorQueryText fast;
    fast.values = {9.0};  // left from an earlier read: cleared
    fast.ends = {1};
    const bool read = read_vector_query(text, fast);
    const auto tree = parse_untrusted_json(text);
    if (!read) return false;
    EXPECT_TRUE(tree.ok()) << "the reader took what the parser refuses: " << text;
    if (!tree.ok()) return true;
    const auto slow = decode<GraphEmbeddingsQuery>(*tree);
    EXPECT_TRUE(slow.ok()) << "the reader took what the decoder refuses: " << text;
    if (!slow.ok()) return true;
    EXPECT_EQ(fast.op, (*tree)["op"].get<std::string>()) << text;
    EXPECT_EQ(fast.collection, slow->collection) << text;
    EXPECT_EQ(fast.limit, slow->limit) << text;
    EXPECT_EQ(fast.size(), slow->vectors.size()) << text;
    for (std::size_t i = 0; i < std::min(fast.size(), slow->vectors.size()); ++i) {
        const auto vector = fast.vector(i);
        EXPECT_EQ(vector.size(), slow->vectors[i].size()) << text << " vector " << i;
        for (std::size_t j = 0; j < std::min(vector.size(), slow->vectors[i].size()); ++j) {
            EXPECT_EQ(std::bit_cast<std::uint64_t>(vector[j]),
                      std::bit_cast<std::uint64_t>(slow->vectors[i][j]))
                << text << " at [" << i << "][" << j << "]";
        }
    }
    return true;
}

// As graph-rag writes it: encode(GraphEmbeddingsQuery) with "op" added, dumped (sorted keys).
std::string client_body(const GraphEmbeddingsQuery& q, std::string_view op = "entities-batch") {
    auto body = encode(q);
    body["op"] = op;
    return dump(body);
}

TEST(VectorQueryText, AClientsBodyReadsAsTheTreeDecodesIt) {
    std::mt19937_64 rng(33);
    std::normal_distribution<double> normal(0.0, 0.05);
    GraphEmbeddingsQuery q;
    q.collection = "pathquestion";
    q.limit = 30;
    for (int v = 0; v < 7; ++v) {
        auto& vector = q.vectors.emplace_back();
        for (int d = 0; d < 384; ++d) vector.push_back(normal(rng));
    }
    const std::string text = client_body(q);
    EXPECT_TRUE(expect_agrees_with_tree(text));
    VectorQueryText read;
    ASSERT_TRUE(read_vector_query(text, read));
    EXPECT_EQ(read.op, "entities-batch");
    ASSERT_EQ(read.size(), 7u);
    EXPECT_EQ(read.values.size(), 7u * 384u);
    for (std::size_t i = 0; i < 7; ++i) {
        EXPECT_TRUE(std::equal(read.vector(i).begin(), read.vector(i).end(), q.vectors[i].begin(),
                               q.vectors[i].end()))
            << i;  // nlohmann writes doubles that read back exactly
    }
    // Vectors of different lengths, an empty one, and none at all.
    q.vectors = {{1.0}, {}, {0.5, -0.25, 3.0}};
    EXPECT_TRUE(expect_agrees_with_tree(client_body(q, "entities")));
    q.vectors.clear();
    EXPECT_TRUE(expect_agrees_with_tree(client_body(q)));
    ASSERT_TRUE(read_vector_query(client_body(q), read));
    EXPECT_EQ(read.size(), 0u);
    EXPECT_TRUE(read.values.empty());
}

TEST(VectorQueryText, KeysInAnyOrderUnknownOnesSkippedWhitespaceAllowed) {
    EXPECT_TRUE(expect_agrees_with_tree(
        R"({"vectors":[[1,2]],"op":"entities-batch","x":{"a":[1,{"b":null}]},"limit":3})"));
    EXPECT_TRUE(expect_agrees_with_tree(
        " {\n\t\"op\" : \"entities\" , \"vectors\" : [ [ 1.5 , -2e-3 ] ] ,\"collection\":\"k\"} "));
    EXPECT_TRUE(expect_agrees_with_tree(R"({"op":"entities-batch"})"));
    EXPECT_TRUE(expect_agrees_with_tree(R"({"op":"x","limit":4294967295})"));
    EXPECT_TRUE(expect_agrees_with_tree(R"({"op":"entities\u002dbatch","vectors":[]})"));
}

// Every spelling of a number the parsers could round differently: what the reader takes is the
// tree's double; what it leaves ("-0", out of double's range) the tree reads or refuses itself.
TEST(VectorQueryText, NumbersAreTheTreesDoublesBitForBit) {
    for (const std::string number : {"0",
                                     "0.0",
                                     "-0.0",
                                     "1",
                                     "-1",
                                     "1E5",
                                     "1e+5",
                                     "2.5e-3",
                                     "1.7976931348623157e308",
                                     "9007199254740993",
                                     "-9007199254740993",
                                     "18446744073709551615",
                                     "18446744073709551616",
                                     "-9223372036854775808",
                                     "-9223372036854775809",
                                     "123456789012345678901234567890",
                                     "0.1000000000000000055511151231257827",
                                     "3.14159265358979323846264338327950288",
                                     "0.030517578125",
                                     "-0.0123456789012345678"}) {
        EXPECT_TRUE(
            expect_agrees_with_tree(R"({"op":"entities-batch","vectors":[[)" + number + "]]}"))
            << number;
    }
    // Subnormal and underflowing numbers: taken or left, never read differently.
    for (const std::string number : {"4.9e-324", "2.2250738585072014e-308", "1e-400", "-1e-400"})
        (void)expect_agrees_with_tree(R"({"op":"entities-batch","vectors":[[)" + number + "]]}");
    // -0 is an integer zero for the tree (+0.0); numbers beyond double's range are its errors.
    for (const std::string number : {"-0", "1e400", "-1e400"}) {
        EXPECT_FALSE(
            expect_agrees_with_tree(R"({"op":"entities-batch","vectors":[[)" + number + "]]}"))
            << number;
    }
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    std::uniform_int_distribution<int> exponent(-300, 300);
    GraphEmbeddingsQuery q;
    auto& vector = q.vectors.emplace_back();
    for (int j = 0; j < 2000; ++j)
        vector.push_back(j % 4 == 0 ? std::ldexp(unit(rng), exponent(rng)) : unit(rng));
    EXPECT_TRUE(expect_agrees_with_tree(client_body(q)));
}

// Input the tree decodes differently or refuses is never taken: the store then parses the tree,
// which answers with its own result or typed error.
TEST(VectorQueryText, WhatTheTreeReadsDifferentlyOrRefusesIsLeftToIt) {
    for (const std::string text : {
             R"({"op":"entities-batch","vectors":[["x"]]})",     // not a number
             R"({"op":"entities-batch","vectors":[[1,null]]})",  // null component
             R"({"op":"entities-batch","vectors":[null]})",      // null vector
             R"({"op":"entities-batch","vectors":null})",        // null list (the tree: none)
             R"({"op":"entities-batch","vectors":[1,2]})",       // not nested
             R"({"op":"entities-batch","vectors":[[[1]]]})",     // nested too deep
             R"({"op":"entities-batch","vectors":[{"a":1}]})",   // an object for a vector
             R"({"op":"entities-batch","vectors":{}})",          // an object for the list
             R"({"op":"entities-batch","vectors":[[true]]})",    // a boolean
             R"({"op":"entities-batch","limit":-1})",            // limit out of range
             R"({"op":"entities-batch","limit":4294967296})",
             R"({"op":"entities-batch","limit":1.0})",  // a float limit
             R"({"op":"entities-batch","limit":null})",
             R"({"op":"entities-batch","collection":5})",
             R"({"op":"entities-batch","collection":null})",
             R"({"op":7,"vectors":[]})",                                 // op not a string
             R"({"vectors":[]})",                                        // no op
             R"({"op":"entities-batch","vectors":[],"vectors":[[1]]})",  // duplicate key
             R"({"op":"entities-batch","vect\u006frs":[[1]]})",          // escaped key
             R"({"op":"entities-batch","vectors":[[01]]})",              // not JSON numbers
             R"({"op":"entities-batch","vectors":[[1.]]})",
             R"({"op":"entities-batch","vectors":[[+1]]})",
             R"({"op":"entities-batch","vectors":[[NaN]]})",
             R"({"op":"entities-batch","vectors":[[1,]]})",
             R"({"op":"entities-batch","vectors":[[1]]} trailing)",
             R"({"op":"entities-batch","vectors":[[1]])",  // cut short
             R"([{"op":"entities-batch"}])",
             "",
             "\"op\"",
         }) {
        EXPECT_FALSE(expect_agrees_with_tree(text)) << text;
    }
}

}  // namespace
}  // namespace glassbox::schema
