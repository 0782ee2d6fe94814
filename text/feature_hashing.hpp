// Signed feature hashing of words, word pairs and character trigrams into a dense unit vector:
// the built-in embedding, deterministic and stable across platforms and runs (vectors persist).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::text {

// The name of the vectors feature_vector() computes: a model name and a dimension determine
// them fully. Change the name whenever a vector would change.
inline constexpr std::string_view kFeatureHashingModel = "glassbox-hashing-v1";
inline constexpr std::uint32_t kDefaultFeatureHashingDim = 384;

// Features of a text (after ASCII lower-casing; other UTF-8 bytes kept as they are):
//   - words: maximal runs of ASCII letters/digits and non-ASCII code points (general
//     punctuation and no-break/ideographic spaces separate, like ASCII punctuation);
//   - word bigrams (adjacent words);
//   - character trigrams of each word framed as "<word>", by code point (never splitting one).
// Each feature is hashed with 64-bit FNV-1a (prefixed by its kind): hash mod dim picks the
// bucket, the top bit of a splitmix64 finalizer of that hash picks the sign (+/-), so
// collisions cancel on average instead of piling up. Weight per distinct feature:
// kind_weight * (1 + ln(count)) (sublinear tf: a repeated word should not dominate). Kind
// weights: word 1.0, bigram 0.5 (order signal, sparser and noisier), trigram 0.25 (a word of n
// code points yields n trigrams; 0.25 keeps their summed energy below the word's own for
// typical lengths while still matching inflections and typos). The vector is L2-normalised.
// A text with no features (empty, only punctuation) gives the zero vector: no division by a
// zero norm, so never NaN; its cosine with anything is 0. A `dim` of 0 gives an empty vector.
std::vector<double> feature_vector(std::string_view text, std::uint32_t dim);

// cosine(feature_vector(query, dim), feature_vector(text, dim)) (similarity.hpp) of each of
// `texts`, bit for bit, without a vector per text: only the buckets a text's features reach are
// summed, in the dense loops' order (the other terms are zeros, which change no sum).
std::vector<double> feature_cosines(std::string_view query, std::span<const std::string> texts,
                                    std::uint32_t dim);

struct FeatureSlot {
    std::uint32_t bucket = 0;
    int sign = 1;  // +1 or -1
};
// Where the feature hash `hash` lands in a vector of `dim` (dim >= 1).
FeatureSlot feature_slot(std::uint64_t hash, std::uint32_t dim) noexcept;
// The hash of a word unigram feature ("w" kind prefix), for tests pinning the hash function.
std::uint64_t word_feature_hash(std::string_view lowercase_word) noexcept;

}  // namespace glassbox::text
