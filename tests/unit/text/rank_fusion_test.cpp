// Reciprocal rank fusion (scores and contributions) and MMR.
#include "text/rank_fusion.hpp"

#include <gtest/gtest.h>

namespace glassbox::text {
namespace {

Ranking ranking(RankingKind kind, std::vector<std::pair<std::string, double>> items,
                double weight = 1.0) {
    return Ranking{kind, std::move(items), weight};
}

const FusedItem& find(const std::vector<FusedItem>& fused, const std::string& id) {
    for (const auto& f : fused) {
        if (f.id == id) return f;
    }
    ADD_FAILURE() << id << " not fused";
    return fused.front();
}

TEST(ReciprocalRankFusion, SumsOneOverKPlusRankAndKeepsEachListsContribution) {
    const auto fused = reciprocal_rank_fusion({
        ranking(RankingKind::kVector, {{"a", 0.9}, {"b", 0.8}, {"c", 0.1}}),
        ranking(RankingKind::kKeyword, {{"b", 12.5}, {"d", 7.0}}),
        ranking(RankingKind::kKeyword, {{"c", 3.0}, {"b", 2.0}}),
    });
    ASSERT_EQ(fused.size(), 4u);
    EXPECT_EQ(fused[0].id, "b");  // 1/62 + 1/61 + 1/62
    EXPECT_DOUBLE_EQ(fused[0].score, 1.0 / 62 + 1.0 / 61 + 1.0 / 62);
    const auto& b = find(fused, "b");
    EXPECT_EQ(b.vector_rank, 2u);
    EXPECT_DOUBLE_EQ(*b.vector_score, 0.8);
    EXPECT_EQ(b.keyword_rank, 1u);  // the better of ranks 1 and 2
    EXPECT_DOUBLE_EQ(*b.keyword_score, 12.5);
    const auto& d = find(fused, "d");
    EXPECT_FALSE(d.vector_rank.has_value());
    EXPECT_FALSE(d.vector_score.has_value());
    EXPECT_EQ(d.keyword_rank, 2u);
    const auto& c = find(fused, "c");
    EXPECT_DOUBLE_EQ(c.score, 1.0 / 63 + 1.0 / 61);
    EXPECT_EQ(c.vector_rank, 3u);
    EXPECT_EQ(c.keyword_rank, 1u);
    for (std::size_t i = 1; i < fused.size(); ++i) EXPECT_GE(fused[i - 1].score, fused[i].score);
}

TEST(ReciprocalRankFusion, TiesGoByIdAndDuplicatesInOneListCountOnce) {
    const auto fused = reciprocal_rank_fusion({
        ranking(RankingKind::kVector, {{"z", 1.0}, {"z", 0.5}}),
        ranking(RankingKind::kKeyword, {{"y", 1.0}}),
    });
    ASSERT_EQ(fused.size(), 2u);
    EXPECT_EQ(fused[0].id, "y");
    EXPECT_EQ(fused[1].id, "z");
    EXPECT_DOUBLE_EQ(fused[1].score, 1.0 / 61);
}

TEST(ReciprocalRankFusion, WeightsScaleAListAndKCanBeChanged) {
    const auto fused = reciprocal_rank_fusion({ranking(RankingKind::kVector, {{"a", 1.0}}, 1.0),
                                               ranking(RankingKind::kKeyword, {{"b", 1.0}}, 2.0)},
                                              10.0);
    ASSERT_EQ(fused.size(), 2u);
    EXPECT_EQ(fused[0].id, "b");
    EXPECT_DOUBLE_EQ(fused[0].score, 2.0 / 11);
    EXPECT_DOUBLE_EQ(fused[1].score, 1.0 / 11);
    EXPECT_TRUE(reciprocal_rank_fusion({}).empty());
}

TEST(Mmr, PrefersANovelCandidateOverANearDuplicate) {
    // 0 and 1 are near duplicates; 2 is a little less relevant but different.
    const std::vector<double> relevance{1.0, 0.95, 0.8};
    const auto similarity = [](std::size_t a, std::size_t b) {
        if (a == b) return 1.0;
        return (a + b == 1) ? 0.98 : 0.05;
    };
    EXPECT_EQ(mmr_select(relevance, similarity, 2, 0.7), (std::vector<std::size_t>{0, 2}));
    // lambda 1: relevance only.
    EXPECT_EQ(mmr_select(relevance, similarity, 3, 1.0), (std::vector<std::size_t>{0, 1, 2}));
    // Asking for more than there is gives everything once.
    const auto all = mmr_select(relevance, similarity, 10, 0.5);
    EXPECT_EQ(all.size(), 3u);
    EXPECT_TRUE(mmr_select({}, similarity, 3, 0.7).empty());
}

TEST(ReciprocalRankFusion, TitleRankingsReportTheirOwnContribution) {
    const auto fused =
        reciprocal_rank_fusion({ranking(RankingKind::kKeyword, {{"a", 3.0}, {"b", 2.0}}),
                                ranking(RankingKind::kTitle, {{"b", 1.0}}, 4.0)},
                               10.0);
    ASSERT_EQ(fused.size(), 2u);
    EXPECT_EQ(fused[0].id, "b");
    EXPECT_DOUBLE_EQ(fused[0].score, 1.0 / 12 + 4.0 / 11);
    EXPECT_EQ(fused[0].title_rank, 1u);
    EXPECT_DOUBLE_EQ(*fused[0].title_score, 1.0);
    EXPECT_EQ(fused[0].keyword_rank, 2u);
    EXPECT_FALSE(fused[1].title_rank.has_value());
}

}  // namespace
}  // namespace glassbox::text
