// Feature hashing: deterministic, L2-normalised, the zero vector without features, pinned hashes.
#include "text/feature_hashing.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "text/similarity.hpp"

namespace glassbox::text {
namespace {

double norm(const std::vector<double>& v) {
    double s = 0.0;
    for (const double x : v) s += x * x;
    return std::sqrt(s);
}

TEST(FeatureHashing, SameTextSameVector) {
    const std::string text = "Cruz Azul FC is a football club in Mexico City";
    const auto a = feature_vector(text, 384);
    const auto b = feature_vector(text, 384);
    EXPECT_EQ(a, b);  // bit for bit
    // Other texts hashed in between leave no trace (the scratch buffers are reused).
    (void)feature_vector("something else entirely, with many more words in it", 384);
    EXPECT_EQ(feature_vector(text, 384), a);
}

TEST(FeatureHashing, VectorsHaveTheDimensionAndUnitNorm) {
    for (const std::uint32_t dim : {1u, 7u, 64u, 384u}) {
        for (const char* text : {"a", "Hello, world!", "Z\xC3\xBCrich Schweiz", "x y z x y z"}) {
            const auto v = feature_vector(text, dim);
            ASSERT_EQ(v.size(), dim);
            EXPECT_NEAR(norm(v), 1.0, 1e-12) << text << " dim " << dim;
        }
    }
}

TEST(FeatureHashing, TextWithoutFeaturesIsTheZeroVector) {
    for (const char* text : {"", "   ", "?!.,;", "\xE2\x80\x94"}) {  // the last: an em dash
        const auto v = feature_vector(text, 32);
        ASSERT_EQ(v.size(), 32u);
        for (const double x : v) EXPECT_EQ(x, 0.0) << '"' << text << '"';
    }
    EXPECT_TRUE(feature_vector("words", 0).empty());
}

TEST(FeatureHashing, CaseAndPunctuationDoNotChangeTheVector) {
    EXPECT_EQ(feature_vector("Cruz Azul FC", 128), feature_vector("cruz, azul; fc!", 128));
}

TEST(FeatureHashing, SimilarTextsScoreHigher) {
    const auto q = feature_vector("football club in Mexico City", 384);
    const auto near = feature_vector("Mexico City's football clubs", 384);
    const auto far = feature_vector("population of a river delta", 384);
    EXPECT_GT(cosine(q, near), cosine(q, far));
}

// feature_cosines is the dense cosine of the dense vectors, bit for bit (EXPECT_EQ on doubles):
// the edge scores it feeds are rounded, and a last-bit difference could move one.
TEST(FeatureHashing, CosinesAreTheDenseVectorsCosinesExactly) {
    const std::vector<std::string> texts{
        "Cruz Azul FC plays in league Liga MX",
        "",
        "?!.,;",
        "Mexico City's football clubs",
        "the the the the the the the the",
        "Z\xC3\xBCrich Schweiz \xE2\x80\x94 Kanton",
        "population of a river delta",
        "Cruz Azul FC is a football club in Mexico City",
        "a b c d e f g h i j k l m n o p q r s t u v w x y z 0 1 2 3 4 5 6 7 8 9"};
    for (const std::uint32_t dim : {1u, 7u, 64u, 384u}) {
        for (const char* query : {"Which football club plays in Mexico City?", "", "the the"}) {
            const auto q = feature_vector(query, dim);
            const auto cosines = feature_cosines(query, texts, dim);
            ASSERT_EQ(cosines.size(), texts.size());
            for (std::size_t i = 0; i < texts.size(); ++i)
                EXPECT_EQ(cosines[i], cosine(q, feature_vector(texts[i], dim)))
                    << '"' << query << "\" / \"" << texts[i] << "\" dim " << dim;
        }
    }
    EXPECT_GT(feature_cosines("football club in Mexico City", texts, 384)[7], 0.5);
    EXPECT_EQ(feature_cosines("words", texts, 0), std::vector<double>(texts.size(), 0.0));
    EXPECT_TRUE(feature_cosines("words", {}, 384).empty());
}

TEST(FeatureHashing, HashesArePinned) {
    // Persisted vectors depend on these: a change must fail here (and needs a new model name).
    EXPECT_EQ(word_feature_hash("glassbox"), 0x6768ca53c98cac9full);
    const auto slot = feature_slot(word_feature_hash("glassbox"), 384);
    EXPECT_EQ(slot.bucket, 159u);
    EXPECT_EQ(slot.sign, -1);
    const auto cafe = feature_slot(word_feature_hash("caf\xC3\xA9"), 384);
    EXPECT_EQ(cafe.bucket, 260u);
    EXPECT_EQ(cafe.sign, 1);
    EXPECT_EQ(kFeatureHashingModel, "glassbox-hashing-v1");
}

}  // namespace
}  // namespace glassbox::text
