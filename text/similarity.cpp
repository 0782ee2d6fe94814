// Cosine, bags of words, lexical profiles and trigram similarity.
#include "text/similarity.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/fnv.hpp"
#include "text/stopwords.hpp"
#include "text/tokenize.hpp"

namespace glassbox::text {

namespace {

// FNV-1a of `bytes` after a one-byte tag (words and trigrams hash apart).
std::uint64_t feature_hash(char tag, std::string_view bytes) noexcept {
    return base::fnv1a64(bytes, base::fnv1a64(std::string_view(&tag, 1)));
}

}  // namespace

double cosine(const std::vector<double>& a, const std::vector<double>& b) noexcept {
    if (a.size() != b.size() || a.empty()) return 0.0;
    double dot = 0.0, na = 0.0, nb = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        dot += a[i] * b[i];
        na += a[i] * a[i];
        nb += b[i] * b[i];
    }
    if (na <= 0.0 || nb <= 0.0) return 0.0;
    return dot / (std::sqrt(na) * std::sqrt(nb));
}

TermCounts term_counts(std::string_view text) {
    TermCounts counts;
    for_each_word(text, [&counts](std::string_view word) { counts[std::string(word)] += 1.0; });
    return counts;
}

double cosine(const TermCounts& a, const TermCounts& b) noexcept {
    if (a.empty() || b.empty()) return 0.0;
    const auto& small = a.size() <= b.size() ? a : b;
    const auto& large = a.size() <= b.size() ? b : a;
    double dot = 0.0;
    for (const auto& [word, n] : small) {
        if (auto it = large.find(word); it != large.end()) dot += n * it->second;
    }
    double na = 0.0, nb = 0.0;
    for (const auto& [word, n] : a) na += n * n;
    for (const auto& [word, n] : b) nb += n * n;
    return dot / (std::sqrt(na) * std::sqrt(nb));
}

std::vector<std::string> content_words(std::string_view text) {
    std::vector<std::string> words;
    for (auto& [word, n] : term_counts(text)) {
        if (!is_stopword(word)) words.push_back(word);
    }
    std::sort(words.begin(), words.end());
    return words;
}

double title_containment(std::string_view title, const std::vector<std::string>& question_words) {
    const auto words = content_words(title);
    if (words.empty()) return 0.0;
    std::size_t named = 0;
    for (const auto& w : words)
        named += std::binary_search(question_words.begin(), question_words.end(), w) ? 1 : 0;
    return static_cast<double>(named) / static_cast<double>(words.size());
}

LexicalProfile lexical_profile(std::string_view text) {
    LexicalProfile profile;
    auto& f = profile.features;
    std::string padded;
    for_each_word(text, [&](std::string_view word) {
        f.emplace_back(feature_hash('w', word), 1.0);
        padded.assign(1, '#');
        padded += word;
        padded += '#';
        for (std::size_t i = 0; i + 3 <= padded.size(); ++i) {
            f.emplace_back(feature_hash('g', std::string_view(padded).substr(i, 3)), 0.5);
        }
    });
    // Sorted by feature, each feature once with its summed weight.
    std::sort(f.begin(), f.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::size_t out = 0;
    for (std::size_t i = 0; i < f.size(); ++i) {
        if (out > 0 && f[out - 1].first == f[i].first) {
            f[out - 1].second += f[i].second;
        } else {
            f[out++] = f[i];
        }
    }
    f.resize(out);
    double squares = 0.0;
    for (const auto& [feature, weight] : f) squares += weight * weight;
    profile.norm = std::sqrt(squares);
    return profile;
}

double cosine(const LexicalProfile& a, const LexicalProfile& b) noexcept {
    if (a.features.empty() || b.features.empty()) return 0.0;
    double dot = 0.0;
    auto i = a.features.begin();
    auto j = b.features.begin();
    while (i != a.features.end() && j != b.features.end()) {
        if (i->first < j->first) {
            ++i;
        } else if (j->first < i->first) {
            ++j;
        } else {
            dot += i->second * j->second;
            ++i;
            ++j;
        }
    }
    return dot / (a.norm * b.norm);
}

void LexicalQuery::Table::reset(std::size_t at_least) {
    std::size_t size = 16;
    while (size < 2 * at_least) size *= 2;  // at most half full
    if (size > keys.size()) {
        keys.assign(size, 0);
        weights.assign(size, 0.0);
        stamps.assign(size, 0);
        stamp = 0;
    }
    mask = keys.size() - 1;
    if (++stamp == 0) {  // wrapped: no slot may look in use
        std::fill(stamps.begin(), stamps.end(), 0);
        stamp = 1;
    }
}

double& LexicalQuery::Table::at(std::uint64_t key) {
    // The keys are FNV hashes already; the multiply spreads their high bits into the low ones.
    for (std::size_t i = (key * 0x9E3779B97F4A7C15ULL) >> 32 & mask;; i = (i + 1) & mask) {
        if (stamps[i] != stamp) {
            stamps[i] = stamp;
            keys[i] = key;
            weights[i] = 0.0;
            return weights[i];
        }
        if (keys[i] == key) return weights[i];
    }
}

double LexicalQuery::Table::find(std::uint64_t key) const noexcept {
    for (std::size_t i = (key * 0x9E3779B97F4A7C15ULL) >> 32 & mask;; i = (i + 1) & mask) {
        if (stamps[i] != stamp) return 0.0;
        if (keys[i] == key) return weights[i];
    }
}

LexicalQuery::LexicalQuery(std::string_view question) {
    const auto profile = lexical_profile(question);
    question_.reset(profile.features.size());
    for (const auto& [feature, weight] : profile.features) question_.at(feature) = weight;
    question_norm_ = profile.features.empty() ? 0.0 : profile.norm;
}

void LexicalQuery::add_features(std::string_view text) {
    // lexical_profile's features, in the same order, summed per feature as they come.
    static constexpr std::uint64_t kWord = base::fnv1a64("w");
    static constexpr std::uint64_t kTrigram = base::fnv1a64("g");
    const auto add = [this](std::uint64_t feature, double weight) {
        double& w = text_.at(feature);
        if (w == 0.0) used_.push_back(static_cast<std::size_t>(&w - text_.weights.data()));
        w += weight;
    };
    for_each_word(text, [&](std::string_view word) {
        add(base::fnv1a64(word, kWord), 1.0);
        padded_.assign(1, '#');
        padded_ += word;
        padded_ += '#';
        for (std::size_t i = 0; i + 3 <= padded_.size(); ++i)
            add(base::fnv1a64(std::string_view(padded_).substr(i, 3), kTrigram), 0.5);
    });
}

double LexicalQuery::cosine(std::span<const std::string_view> parts) {
    if (question_norm_ == 0.0) return 0.0;
    // A word of n bytes gives n + 1 features (itself and its padded trigrams): at most 2n.
    std::size_t bytes = 0;
    for (const auto part : parts) bytes += part.size();
    text_.reset(2 * bytes);
    used_.clear();
    for (const auto part : parts) add_features(part);
    if (used_.empty()) return 0.0;
    double dot = 0.0;
    double squares = 0.0;
    for (const std::size_t slot : used_) {
        const double w = text_.weights[slot];
        squares += w * w;
        dot += question_.find(text_.keys[slot]) * w;
    }
    return dot / (question_norm_ * std::sqrt(squares));
}

namespace {

// The sorted trigrams of "  " + normalize(s) + " ", each packed into an integer (three bytes,
// in order, so equal trigrams pack equal); reuses `out`'s capacity.
void packed_trigrams(std::string_view s, std::string& normal, std::string& padded,
                     std::vector<std::uint32_t>& out) {
    normalize_into(s, normal);
    padded.assign("  ");
    padded += normal;
    padded += ' ';
    out.clear();
    const auto byte = [&](std::size_t i) {
        return static_cast<std::uint32_t>(static_cast<unsigned char>(padded[i]));
    };
    for (std::size_t i = 0; i + 3 <= padded.size(); ++i)
        out.push_back(byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2));
    std::sort(out.begin(), out.end());
}

// The Dice coefficient of two sorted trigram lists.
double dice(const std::vector<std::uint32_t>& ga, const std::vector<std::uint32_t>& gb) noexcept {
    if (ga.empty() || gb.empty()) return 0.0;
    // The multiset intersection's size (std::set_intersection's count).
    std::size_t common = 0;
    for (auto i = ga.begin(), j = gb.begin(); i != ga.end() && j != gb.end();) {
        if (*i < *j) {
            ++i;
        } else if (*j < *i) {
            ++j;
        } else {
            ++common;
            ++i;
            ++j;
        }
    }
    return 2.0 * static_cast<double>(common) / static_cast<double>(ga.size() + gb.size());
}

}  // namespace

double trigram_similarity(std::string_view a, std::string_view b) {
    // Called per label and mention pair by the offline reasoner: buffers are reused.
    thread_local std::string normal;
    thread_local std::string padded;
    thread_local std::vector<std::uint32_t> ga;
    thread_local std::vector<std::uint32_t> gb;
    packed_trigrams(a, normal, padded, ga);
    packed_trigrams(b, normal, padded, gb);
    return dice(ga, gb);
}

Trigrams trigrams(std::string_view s) {
    thread_local std::string normal;
    thread_local std::string padded;
    Trigrams out;
    packed_trigrams(s, normal, padded, out.packed);
    return out;
}

double trigram_similarity(const Trigrams& a, const Trigrams& b) noexcept {
    return dice(a.packed, b.packed);
}

}  // namespace glassbox::text
