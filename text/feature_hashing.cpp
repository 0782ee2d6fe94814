// Feature hashing: tokenise (ASCII fold, UTF-8 kept whole), hash features into signed buckets,
// L2-normalise.
#include "text/feature_hashing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "base/ascii.hpp"
#include "base/fnv.hpp"

namespace glassbox::text {

FeatureSlot feature_slot(std::uint64_t hash, std::uint32_t dim) noexcept {
    FeatureSlot slot;
    slot.bucket = static_cast<std::uint32_t>(hash % dim);
    // splitmix64's finalizer: every input bit reaches the top bit, so the sign is independent
    // of the low bits that choose the bucket.
    slot.sign = (base::mix64(hash) >> 63) != 0 ? -1 : 1;
    return slot;
}

// The kind prefix keeps a word, a bigram and a trigram with the same bytes apart.
std::uint64_t word_feature_hash(std::string_view lowercase_word) noexcept {
    return base::fnv1a64(lowercase_word, base::fnv1a64("w"));
}

namespace {

enum Kind : std::uint8_t { kWord = 0, kBigram = 1, kTrigram = 2 };
constexpr std::array<double, 3> kKindWeight{1.0, 0.5, 0.25};  // why: see the header
constexpr char kWordStart = '<';  // ASCII punctuation: never inside a word, so no ambiguity
constexpr char kWordEnd = '>';
constexpr char kBigramJoin = '\x1f';

// Bytes in a UTF-8 sequence from its lead byte; 1 for ASCII, stray continuation or invalid
// bytes (they then stand alone: never merged into a neighbour, never split).
std::size_t sequence_length(unsigned char lead) noexcept {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 1;
}

bool is_continuation(unsigned char c) noexcept { return (c & 0xC0) == 0x80; }

// Non-ASCII code points that separate words like ASCII punctuation does: no-break space,
// «», ¡ ¿ ·, the General Punctuation block (dashes, curly quotes, …), CJK punctuation and
// the ideographic space, the byte-order mark.
bool is_separator(std::string_view cp) noexcept {
    const auto b = [&](std::size_t i) { return static_cast<unsigned char>(cp[i]); };
    if (cp.size() == 2 && b(0) == 0xC2) {
        const auto c = b(1);
        return c == 0xA0 || c == 0xA1 || c == 0xAB || c == 0xB7 || c == 0xBB || c == 0xBF;
    }
    if (cp.size() == 3) {
        if (b(0) == 0xE2 && (b(1) == 0x80 || (b(1) == 0x81 && b(2) <= 0xAF)))
            return true;                                                // U+2000–U+206F
        if (b(0) == 0xE3 && b(1) == 0x80) return true;                  // U+3000–U+303F
        if (b(0) == 0xEF && b(1) == 0xBB && b(2) == 0xBF) return true;  // U+FEFF
    }
    return false;
}

struct Word {
    std::size_t begin = 0;
    std::size_t end = 0;
};

struct Scratch {
    std::string lowered;
    std::vector<Word> words;
    std::vector<std::size_t> code_points;  // start offsets of one word's code points
    std::array<std::vector<std::uint64_t>, 3> features;
};

void split_words(std::string_view text, Scratch& s) {
    s.lowered.assign(text);
    for (char& c : s.lowered) c = base::ascii_lower(c);
    s.words.clear();
    const std::string_view t = s.lowered;
    std::size_t i = 0;
    constexpr std::size_t kNoWord = static_cast<std::size_t>(-1);
    std::size_t start = kNoWord;  // where the open word began
    const auto close = [&](std::size_t at) {
        if (start != kNoWord) s.words.push_back({start, at});
        start = kNoWord;
    };
    while (i < t.size()) {
        const auto c = static_cast<unsigned char>(t[i]);
        std::size_t n = sequence_length(c);
        if (n > 1) {
            // A truncated or malformed sequence: its bytes stand alone.
            if (i + n > t.size()) n = 1;
            for (std::size_t k = 1; k < n; ++k) {
                if (!is_continuation(static_cast<unsigned char>(t[i + k]))) {
                    n = 1;
                    break;
                }
            }
        }
        bool word_part = false;
        if (c < 0x80) {
            word_part = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        } else {
            word_part = !is_separator(t.substr(i, n));
        }
        if (word_part) {
            if (start == kNoWord) start = i;
        } else {
            close(i);
        }
        i += n;
    }
    close(t.size());
}

// Code point starts of a word (continuation bytes never start one).
void code_points_of(std::string_view word, std::vector<std::size_t>& out) {
    out.clear();
    for (std::size_t i = 0; i < word.size(); ++i) {
        if (i == 0 || !is_continuation(static_cast<unsigned char>(word[i]))) out.push_back(i);
    }
}

void collect_features(std::string_view text, Scratch& s) {
    for (auto& f : s.features) f.clear();
    split_words(text, s);
    const std::string_view t = s.lowered;
    const std::uint64_t word_seed = base::fnv1a64("w");
    const std::uint64_t bigram_seed = base::fnv1a64("b");
    const std::uint64_t trigram_seed = base::fnv1a64("c");
    for (std::size_t w = 0; w < s.words.size(); ++w) {
        const std::string_view word = t.substr(s.words[w].begin, s.words[w].end - s.words[w].begin);
        s.features[kWord].push_back(base::fnv1a64(word, word_seed));
        if (w + 1 < s.words.size()) {
            const std::string_view next =
                t.substr(s.words[w + 1].begin, s.words[w + 1].end - s.words[w + 1].begin);
            std::uint64_t h = base::fnv1a64(word, bigram_seed);
            h = base::fnv1a64(std::string_view(&kBigramJoin, 1), h);
            s.features[kBigram].push_back(base::fnv1a64(next, h));
        }
        // Trigrams over units "<", code point 1..n, ">": n trigrams for n code points.
        code_points_of(word, s.code_points);
        const std::size_t n = s.code_points.size();
        const auto unit = [&](std::size_t u) -> std::string_view {
            if (u == 0) return {&kWordStart, 1};
            if (u == n + 1) return {&kWordEnd, 1};
            const std::size_t from = s.code_points[u - 1];
            const std::size_t to = u < n ? s.code_points[u] : word.size();
            return word.substr(from, to - from);
        };
        for (std::size_t u = 0; u + 2 <= n + 1; ++u) {
            std::uint64_t h = base::fnv1a64(unit(u), trigram_seed);
            h = base::fnv1a64(unit(u + 1), h);
            s.features[kTrigram].push_back(base::fnv1a64(unit(u + 2), h));
        }
    }
}

// Adds each distinct feature's signed weight into its bucket of `vector` (dim entries), kind by
// kind and in sorted hash order: the one summation order every caller shares, so a bucket's sum is
// the same bits whoever computes it. Each bucket added to is noted in `touched` when given.
void add_features(Scratch& s, std::uint32_t dim, double* vector,
                  std::vector<std::uint32_t>* touched) {
    for (std::size_t kind = 0; kind < s.features.size(); ++kind) {
        auto& hashes = s.features[kind];
        std::sort(hashes.begin(), hashes.end());  // equal features adjacent; a fixed sum order
        for (std::size_t i = 0; i < hashes.size();) {
            std::size_t j = i + 1;
            while (j < hashes.size() && hashes[j] == hashes[i]) ++j;
            const std::size_t count = j - i;  // most features occur once: skip log(1) = 0
            const double weight =
                count == 1 ? kKindWeight[kind]
                           : kKindWeight[kind] * (1.0 + std::log(static_cast<double>(count)));
            const auto slot = feature_slot(hashes[i], dim);
            vector[slot.bucket] += slot.sign * weight;
            if (touched != nullptr) touched->push_back(slot.bucket);
            i = j;
        }
    }
}

}  // namespace

std::vector<double> feature_vector(std::string_view text, std::uint32_t dim) {
    if (dim == 0) return {};
    thread_local Scratch scratch;  // reused buffers: no allocation per text once warm
    collect_features(text, scratch);
    std::vector<double> vector(dim, 0.0);
    add_features(scratch, dim, vector.data(), nullptr);
    double norm = 0.0;
    for (const double x : vector) norm += x * x;
    // No features, or (in theory) signs cancelling to exactly zero: keep the zero vector.
    if (norm > 0.0) {
        const double scale = 1.0 / std::sqrt(norm);
        for (double& x : vector) x *= scale;
    }
    return vector;
}

std::vector<double> feature_cosines(std::string_view query, std::span<const std::string> texts,
                                    std::uint32_t dim) {
    std::vector<double> out(texts.size(), 0.0);
    if (dim == 0) return out;
    const std::vector<double> q = feature_vector(query, dim);
    double qq = 0.0;
    for (const double x : q) qq += x * x;
    if (qq <= 0.0) return out;
    thread_local Scratch scratch;
    thread_local std::vector<double> buckets;  // all 0 between texts
    thread_local std::vector<std::uint32_t> touched;
    buckets.assign(dim, 0.0);
    for (std::size_t t = 0; t < texts.size(); ++t) {
        collect_features(texts[t], scratch);
        touched.clear();
        add_features(scratch, dim, buckets.data(), &touched);
        // The dense loops run over every bucket in index order; a bucket never added to holds 0,
        // and adding 0 (or a product with it, ±0) leaves a sum's bits as they were, so the
        // buckets added to, in index order, give the same sums.
        std::sort(touched.begin(), touched.end());
        touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
        double norm = 0.0;
        for (const auto b : touched) norm += buckets[b] * buckets[b];
        if (norm > 0.0) {
            const double scale = 1.0 / std::sqrt(norm);
            double dot = 0.0;
            double tt = 0.0;
            for (const auto b : touched) {
                const double x = buckets[b] * scale;
                dot += q[b] * x;
                tt += x * x;
            }
            if (tt > 0.0) out[t] = dot / (std::sqrt(qq) * std::sqrt(tt));
        }
        for (const auto b : touched) buckets[b] = 0.0;
    }
    return out;
}

}  // namespace glassbox::text
