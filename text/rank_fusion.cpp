// Reciprocal rank fusion and MMR.
#include "text/rank_fusion.hpp"

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace glassbox::text {

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

std::vector<std::size_t> mmr_select(
    const std::vector<double>& relevance,
    const std::function<double(std::size_t, std::size_t)>& similarity, std::size_t count,
    double lambda) {
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

}  // namespace glassbox::text
