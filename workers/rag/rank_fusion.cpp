// Reciprocal rank fusion, MMR and the similarity measures they use.
#include "workers/rag/rank_fusion.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "base/fnv.hpp"

namespace glassbox::rag {

std::vector<FusedItem> reciprocal_rank_fusion(const std::vector<Ranking>& rankings, double k) {
    std::unordered_map<std::string, std::size_t> index;
    std::vector<FusedItem> fused;
    for (const auto& ranking : rankings) {
        std::unordered_set<std::string_view> seen;
        std::uint64_t rank = 0;
        for (const auto& [id, score] : ranking.items) {
            ++rank;
            if (!seen.insert(id).second) continue;
            auto [it, added] = index.try_emplace(id, fused.size());
            if (added) fused.push_back(FusedItem{id, 0.0, {}, {}, {}, {}, {}, {}, {}});
            FusedItem& item = fused[it->second];
            item.score += ranking.weight / (k + static_cast<double>(rank));
            if (ranking.kind == RankingKind::kLink) {
                if (!item.link_rank || rank < *item.link_rank) item.link_rank = rank;
                continue;
            }
            auto& best_rank = ranking.kind == RankingKind::kVector    ? item.vector_rank
                              : ranking.kind == RankingKind::kKeyword ? item.keyword_rank
                                                                      : item.title_rank;
            auto& best_score = ranking.kind == RankingKind::kVector    ? item.vector_score
                               : ranking.kind == RankingKind::kKeyword ? item.keyword_score
                                                                       : item.title_score;
            if (!best_rank || rank < *best_rank) {
                best_rank = rank;
                best_score = score;
            }
        }
    }
    std::sort(fused.begin(), fused.end(), [](const FusedItem& a, const FusedItem& b) {
        return a.score != b.score ? a.score > b.score : a.id < b.id;
    });
    return fused;
}

std::vector<std::size_t> mmr_select(const std::vector<double>& relevance,
                                    const std::function<double(std::size_t, std::size_t)>& similarity,
                                    std::size_t count, double lambda) {
    const std::size_t n = relevance.size();
    std::vector<std::size_t> picked;
    std::vector<bool> taken(n, false);
    // Highest similarity of each candidate to anything picked so far.
    std::vector<double> redundancy(n, 0.0);
    while (picked.size() < std::min(count, n)) {
        std::size_t best = n;
        double best_value = -std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < n; ++i) {
            if (taken[i]) continue;
            const double value = lambda * relevance[i] - (1.0 - lambda) * redundancy[i];
            if (value > best_value) {
                best_value = value;
                best = i;
            }
        }
        taken[best] = true;
        picked.push_back(best);
        for (std::size_t i = 0; i < n; ++i) {
            if (!taken[i]) redundancy[i] = std::max(redundancy[i], similarity(i, best));
        }
    }
    return picked;
}

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

namespace {

// Calls on_word with each lower-cased word of `text` (letters and digits; other bytes separate
// words, UTF-8 letters beyond ASCII kept as is), reusing one buffer.
template <typename OnWord>
void for_each_word(std::string_view text, OnWord&& on_word) {
    std::string word;
    const auto flush = [&] {
        if (!word.empty()) on_word(std::string_view(word));
        word.clear();
    };
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')) {
            word.push_back(c);
        } else if (c >= 'A' && c <= 'Z') {
            word.push_back(static_cast<char>(c - 'A' + 'a'));
        } else {
            flush();
        }
    }
    flush();
}

// FNV-1a of `bytes` after a one-byte tag (words and trigrams hash apart).
std::uint64_t feature_hash(char tag, std::string_view bytes) noexcept {
    return base::fnv1a64(bytes, base::fnv1a64(std::string_view(&tag, 1)));
}

}  // namespace

TermCounts term_counts(std::string_view text) {
    TermCounts counts;
    for_each_word(text, [&counts](std::string_view word) { counts[std::string(word)] += 1.0; });
    return counts;
}

std::vector<std::string> content_words(std::string_view text) {
    static const std::unordered_set<std::string> kFunctionWords{
        "a",    "an",   "the",  "of",   "in",    "on",   "at",    "to",   "for",   "and",  "or",   "is",
        "was",  "were", "be",   "by",   "with",  "from", "as",    "that", "this",  "which", "who", "whom",
        "what", "when", "where", "how", "did",   "does", "do",    "it",   "its",   "his",  "her",  "their"};
    std::vector<std::string> words;
    for (auto& [word, n] : term_counts(text)) {
        if (!kFunctionWords.count(word)) words.push_back(word);
    }
    std::sort(words.begin(), words.end());
    return words;
}

double title_containment(std::string_view title, const std::vector<std::string>& question_words) {
    const auto words = content_words(title);
    if (words.empty()) return 0.0;
    std::size_t named = 0;
    for (const auto& w : words) named += std::binary_search(question_words.begin(), question_words.end(), w) ? 1 : 0;
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

}  // namespace glassbox::rag
