// decode_triples_batch_terms: the triples and labels decode_text<TriplesBatchResponse> reads, each
// distinct term once.
#include "schema/triples_batch_terms.hpp"

#include <gtest/gtest.h>

#include "schema/json_fast.hpp"
#include "schema/messages.hpp"

namespace glassbox::schema {
namespace {

Term iri(std::string v) { return Term(Iri{std::move(v)}); }

// The reply as TriplesBatchResponse, rebuilt from the terms and labels read (graphs none).
TriplesBatchResponse expanded(const TriplesBatchTerms& read) {
    TriplesBatchResponse out;
    for (const auto& list : read.results) {
        auto& triples = out.results.emplace_back();
        for (const auto& t : list) {
            triples.push_back(
                Triple{read.terms.at(t.s), read.terms.at(t.p), read.terms.at(t.o), std::nullopt});
        }
    }
    if (read.labelled) {
        auto& lists = out.labels.emplace();
        for (const auto& names : read.labels) {
            auto& strings = lists.emplace_back();
            for (const auto& n : names) strings.push_back(n.str());
        }
    }
    return out;
}

// decode_text's reply with the graphs dropped, as decode_triples_batch_terms keeps none.
TriplesBatchResponse tree_read(std::string_view text) {
    auto decoded = decode_text<TriplesBatchResponse>(text);
    EXPECT_TRUE(decoded.ok()) << text;
    if (!decoded) return {};
    for (auto& list : decoded->results) {
        for (auto& t : list) t.graph.reset();
    }
    return std::move(decoded).value();
}

TriplesBatchResponse sample_batch() {
    const Term hub = iri("http://ex.org/Ana_Ferreira");
    const Term plays = iri("http://ex.org/plays_for");
    const Term label = iri("http://www.w3.org/2000/01/rdf-schema#label");
    TriplesBatchResponse batch;
    batch.results.push_back({
        Triple{hub, plays, iri("http://ex.org/FC_Porto"), std::nullopt},
        Triple{hub, plays, iri("http://ex.org/Benfica"), std::string("urn:g")},
        Triple{hub, label, Term(Literal{"Ana \"A\" Ferreira\n", "", "pt"}), std::nullopt},
        Triple{hub, iri("http://ex.org/born"), Term(Literal{"1990", std::string(kXsdInteger), ""}),
               std::nullopt},
    });
    batch.results.push_back({});
    batch.results.push_back({
        Triple{Term(BlankNode{"b0"}), plays, hub, std::nullopt},
        Triple{quoted(Triple{hub, plays, iri("http://ex.org/FC_Porto"), std::nullopt}),
               iri("http://ex.org/source"), Term(Literal{"\xC3\xA9t\xC3\xA9", "", ""}),
               std::nullopt},
    });
    batch.labels = std::vector<std::vector<std::string>>{};
    for (const auto& list : batch.results) {
        auto& names = batch.labels->emplace_back();
        for (std::size_t i = 0; i < 3 * list.size(); ++i)
            names.push_back(i % 4 == 0 ? "a \"quoted\"\tname" : "label " + std::to_string(i));
    }
    return batch;
}

TEST(TriplesBatchTerms, ReadsWhatTheDecoderReadsEachTermOnce) {
    const auto text = encode_text(sample_batch());
    auto read = decode_triples_batch_terms(text);
    ASSERT_TRUE(read.ok()) << read.error().describe();
    EXPECT_EQ(expanded(*read), tree_read(text));
    EXPECT_TRUE(read->owned.empty());  // the fast read: labels are views of the text
    // 6 triples, 18 term places, 12 distinct terms (the hub and plays_for repeat).
    EXPECT_EQ(read->terms.size(), 12u);
    EXPECT_EQ(read->results[0][0].s, read->results[0][1].s);
    EXPECT_EQ(read->results[0][0].p, read->results[2][0].p);
}

TEST(TriplesBatchTerms, WithoutLabelsNoneAreRead) {
    auto batch = sample_batch();
    batch.labels.reset();
    const auto text = encode_text(batch);
    auto read = decode_triples_batch_terms(text);
    ASSERT_TRUE(read.ok()) << read.error().describe();
    EXPECT_FALSE(read->labelled);
    EXPECT_EQ(expanded(*read), tree_read(text));
    auto empty = decode_triples_batch_terms(R"({"results":[]})");
    ASSERT_TRUE(empty.ok());
    EXPECT_TRUE(empty->results.empty());
}

// What the fast reader leaves to the tree decoder is read alike, the labels owned.
TEST(TriplesBatchTerms, TextTheFastReaderRefusesIsReadByTheTree) {
    for (
        const std::string text : {
            R"({"labels":[["a","b","c"]],"results":[[{"s":{"t":"i","i":"x"},"p":{"\u0074":"i","i":"p"},"o":{"t":"l","v":"1","dt":"http://www.w3.org/2001/XMLSchema#string","ln":""}}]]})",
            R"({"results":[[{"s":{"t":"i","i":"x"},"p":{"t":"i","i":"p"},"o":{"t":"i","i":"y"},"extra":[1,{"a":null}]}]],"labels":[["s\u00e9","p","o"]]})",
            R"({"labels":null,"results":[[{"s":{"t":"i","i":"x"},"p":{"t":"i","i":"p"},"o":{"t":"i","i":"y"}}]]})",
        }) {
        auto read = decode_triples_batch_terms(text);
        ASSERT_TRUE(read.ok()) << text << ": " << read.error().describe();
        EXPECT_EQ(expanded(*read), tree_read(text)) << text;
    }
    // An escaped key: the tree's read, whose labels the result owns.
    const std::string escaped =
        R"({"labels":[["a","b","c"]],"results":[[{"s":{"\u0074":"i","i":"x"},"p":{"t":"i","i":"p"},"o":{"t":"i","i":"y"}}]]})";
    auto read = decode_triples_batch_terms(escaped);
    ASSERT_TRUE(read.ok()) << read.error().describe();
    EXPECT_EQ(read->owned.size(), 3u);
    EXPECT_EQ(expanded(*read), tree_read(escaped));
}

TEST(TriplesBatchTerms, ErrorsAreTheDecodersErrors) {
    for (const std::string text :
         {R"({"results":[[{"s":{"t":"i","i":""},"p":{"t":"i","i":"p"},"o":{"t":"i","i":"y"}}]]})",
          R"({"labels":[[1]],"results":[[]]})", R"({"results":[[{"s":{"t":"i","i":"x"}}]]})",
          "not json", ""}) {
        auto read = decode_triples_batch_terms(text);
        auto tree = decode_text<TriplesBatchResponse>(text);
        ASSERT_FALSE(tree.ok()) << text;
        ASSERT_FALSE(read.ok()) << text;
        EXPECT_EQ(read.error().type, tree.error().type) << text;
        EXPECT_EQ(read.error().message, tree.error().message) << text;
    }
}

}  // namespace
}  // namespace glassbox::schema
