// Ranking arithmetic shared by the workers (document retrieval, the query worker's provenance):
// reciprocal rank fusion with per-list contributions and maximal marginal relevance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace glassbox::text {

// The usual RRF constant (Cormack, Clarke and Buettcher 2009): damps the head of each list.
inline constexpr double kRrfK = 60.0;

enum class RankingKind { kVector, kKeyword, kTitle, kLink };

// One ranking of items (best first) with the score it gave each one.
struct Ranking {
    RankingKind kind = RankingKind::kVector;
    std::vector<std::pair<std::string, double>> items;  // (id, score), best first
    double weight = 1.0;                                // multiplies this list's RRF terms
};

// An item after fusion, with how each kind of ranking contributed (best rank over the
// rankings of that kind, from 1, and the score it had there).
struct FusedItem {
    std::string id;
    double score = 0.0;  // sum over rankings of weight / (k + rank)
    std::optional<std::uint64_t> vector_rank;
    std::optional<double> vector_score;
    std::optional<std::uint64_t> keyword_rank;
    std::optional<double> keyword_score;
    std::optional<std::uint64_t> title_rank;
    std::optional<double> title_score;
    std::optional<std::uint64_t> link_rank;
};

// Fuses the rankings: best fused score first, ties by id. An id twice in one ranking counts
// once, at its better rank.
std::vector<FusedItem> reciprocal_rank_fusion(const std::vector<Ranking>& rankings,
                                              double k = kRrfK);

// Maximal marginal relevance (Carbonell and Goldstein 1998): picks up to `count` of the
// candidates, each time the one maximising lambda * relevance - (1 - lambda) * (its highest
// similarity to those already picked). Returns candidate indices in pick order. `relevance`
// should be on the same scale as `similarity` (e.g. both in [0, 1]).
std::vector<std::size_t> mmr_select(
    const std::vector<double>& relevance,
    const std::function<double(std::size_t, std::size_t)>& similarity, std::size_t count,
    double lambda);

}  // namespace glassbox::text
