// FeatureHashingEmbedder: deterministic, unit norm, similarity that means something, a pinned hash.
#include "workers/embeddings/feature_hashing_embedder.hpp"

#include "base/fnv.hpp"

#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

#include <gtest/gtest.h>

namespace glassbox::embeddings {
namespace {

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

double norm(const std::vector<double>& v) { return std::sqrt(dot(v, v)); }

TEST(FeatureHashing, SameTextSameVectorAcrossInstances) {
    FeatureHashingEmbedder a;
    FeatureHashingEmbedder b;
    const std::string text = "Knowledge graphs make retrieval explainable.";
    EXPECT_EQ(a.embed_one(text), a.embed_one(text));
    EXPECT_EQ(a.embed_one(text), b.embed_one(text));
    EXPECT_NE(a.embed_one(text), a.embed_one("Something else entirely."));
}

TEST(FeatureHashing, VectorsHaveTheDimensionAndUnitNorm) {
    for (const std::uint32_t dim : {1u, 7u, 384u, 1024u}) {
        FeatureHashingEmbedder embedder(dim);
        const std::vector<std::string> texts{"a", "The quick brown fox", "ÜBER naïve café — 東京"};
        auto result = embedder.embed(texts);
        ASSERT_TRUE(result) << result.error().describe();
        EXPECT_EQ(result->dim, dim);
        EXPECT_EQ(result->model, "glassbox-hashing-v1");
        ASSERT_EQ(result->vectors.size(), texts.size());
        for (const auto& v : result->vectors) {
            ASSERT_EQ(v.size(), dim);
            EXPECT_NEAR(norm(v), 1.0, 1e-9) << "dim " << dim;
        }
    }
}

TEST(FeatureHashing, SimilarTextsScoreHigherThanUnrelatedOnes) {
    FeatureHashingEmbedder e;
    struct Case {
        const char* text;
        const char* similar;
        const char* unrelated;
    };
    for (const Case& c : {
             Case{"The cat sat on the mat.", "A cat was sitting on the mat",
                  "Quarterly revenue grew in Europe."},
             Case{"How do vector embeddings work?", "How does an embedding vector work",
                  "Paris is the capital of France"},
             Case{"retrieval augmented generation", "retrieval-augmented generator",
                  "photosynthesis in green plants"},
             Case{"Marie Curie won the Nobel Prize", "marie curie nobel prize winner",
                  "the stock market fell today"},
         }) {
        const auto a = e.embed_one(c.text);
        const double near = dot(a, e.embed_one(c.similar));
        const double far = dot(a, e.embed_one(c.unrelated));
        EXPECT_GT(near, far + 0.1) << c.text;
        EXPECT_GT(near, 0.2) << c.text;
    }
}

TEST(FeatureHashing, CharacterTrigramsMatchTyposAndInflections) {
    FeatureHashingEmbedder e;
    const auto word = e.embed_one("embeddings");
    EXPECT_GT(dot(word, e.embed_one("embedding")), 0.3) << "no shared word, only shared trigrams";
    EXPECT_LT(std::abs(dot(word, e.embed_one("kangaroo"))), 0.2);
}

TEST(FeatureHashing, TextWithoutFeaturesIsTheZeroVectorNeverNaN) {
    FeatureHashingEmbedder e(64);
    for (const char* text :
         {"", "   ", "!!! ... ???", "\t\n", "\xE2\x80\x94"}) {  // the last: an em dash
        const auto v = e.embed_one(text);
        ASSERT_EQ(v.size(), 64u);
        for (const double x : v) {
            EXPECT_TRUE(std::isfinite(x)) << '"' << text << '"';
            EXPECT_EQ(x, 0.0) << '"' << text << '"';
        }
    }
}

TEST(FeatureHashing, AsciiIsCaseFoldedAndPunctuationSeparates) {
    FeatureHashingEmbedder e;
    EXPECT_EQ(e.embed_one("Hello World"), e.embed_one("hello world"));
    EXPECT_EQ(e.embed_one("hello, world!"), e.embed_one("hello world"));
    // General Punctuation (em dash, curly quote) and no-break space separate like ASCII does.
    EXPECT_EQ(e.embed_one("hello\xE2\x80\x94world"), e.embed_one("hello world"));
    EXPECT_EQ(e.embed_one("hello\xC2\xA0world"), e.embed_one("hello world"));
    EXPECT_EQ(e.embed_one("\xE2\x80\x9Chello\xE2\x80\x9D"), e.embed_one("hello"));
    // Other UTF-8 is kept byte for byte (no Unicode case folding): É and é differ.
    EXPECT_NE(e.embed_one("\xC3\x89"
                          "cole"),
              e.embed_one("\xC3\xA9"
                          "cole"));
}

TEST(FeatureHashing, InvalidUtf8IsEmbeddedWithoutHarm) {
    FeatureHashingEmbedder e(128);
    for (const std::string& text : {std::string("caf\xC3"), std::string("\x80\x80 abc \xFF\xFE"),
                                    std::string("a\xE2\x82") + "b", std::string("\xF0\x9F\x98")}) {
        const auto v = e.embed_one(text);
        ASSERT_EQ(v.size(), 128u);
        EXPECT_NEAR(norm(v), 1.0, 1e-9);
    }
}

TEST(FeatureHashing, HashFunctionIsPinned) {
    // FNV-1a 64 reference vectors (Fowler/Noll/Vo test suite).
    EXPECT_EQ(base::fnv1a64(""), 0xcbf29ce484222325ull);
    EXPECT_EQ(base::fnv1a64("a"), 0xaf63dc4c8601ec8cull);
    EXPECT_EQ(base::fnv1a64("foobar"), 0x85944171f73967e8ull);
    // Persisted vectors depend on these: changing the hash or the slot rule must fail here
    // (and needs a new model name).
    EXPECT_EQ(text::word_feature_hash("glassbox"), 0x6768ca53c98cac9full);
    const auto slot = text::feature_slot(text::word_feature_hash("glassbox"), 384);
    EXPECT_EQ(slot.bucket, 159u);
    EXPECT_EQ(slot.sign, -1);
    const auto cafe = text::feature_slot(text::word_feature_hash("caf\xC3\xA9"), 384);
    EXPECT_EQ(cafe.bucket, 260u);
    EXPECT_EQ(cafe.sign, 1);
    // The word's own feature carries the largest weight of a one-word text.
    FeatureHashingEmbedder e(384);
    const auto v = e.embed_one("GlassBox");
    std::size_t largest = 0;
    for (std::size_t i = 1; i < v.size(); ++i) {
        if (std::abs(v[i]) > std::abs(v[largest])) largest = i;
    }
    EXPECT_EQ(largest, 159u);
    EXPECT_LT(v[159], 0.0);
}

TEST(FeatureHashing, RepeatedWordsWeighSublinearly) {
    FeatureHashingEmbedder e;
    const auto once = e.embed_one("apple banana");
    const auto many = e.embed_one("apple apple apple apple apple apple apple apple banana");
    const auto banana = e.embed_one("banana");
    // Eight apples do not drown the banana: linear tf would push this near zero.
    EXPECT_GT(dot(many, banana), 0.25);
    EXPECT_GT(dot(once, banana), dot(many, banana));
}

TEST(FeatureHashing, ThroughputOnThousandCharacterTexts) {
    std::mt19937 rng(42);
    const std::vector<std::string> vocabulary{
        "knowledge", "graph",  "retrieval", "the",    "of",     "model",
        "embedding", "vector", "question",  "answer", "entity", "relation",
        "document",  "chunk",  "search",    "score",  "a",      "explain"};
    std::vector<std::string> texts(1000);
    for (auto& t : texts) {
        while (t.size() < 1000) {
            t += vocabulary[rng() % vocabulary.size()];
            t += rng() % 9 == 0 ? ". " : " ";
        }
        t.resize(1000);
    }
    FeatureHashingEmbedder e;
    const auto start = std::chrono::steady_clock::now();
    auto result = e.embed(texts);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(result);
    ASSERT_EQ(result->vectors.size(), texts.size());
    for (const auto& v : result->vectors) ASSERT_NEAR(norm(v), 1.0, 1e-9);
    const double rate = static_cast<double>(texts.size()) / seconds;
    std::cout << "[ figures  ] feature hashing, 1000-character texts: "
              << static_cast<long long>(rate) << " texts/s\n";
    RecordProperty("texts_per_second", static_cast<int>(rate));
}

}  // namespace
}  // namespace glassbox::embeddings
