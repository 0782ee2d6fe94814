// Reciprocal rank fusion (scores and contributions), MMR, cosine and lexical similarity.
#include "workers/rag/rank_fusion.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace glassbox::rag {
namespace {

Ranking ranking(RankingKind kind, std::vector<std::pair<std::string, double>> items, double weight = 1.0) {
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

TEST(Cosine, OfVectorsAndOfWordBags) {
    EXPECT_DOUBLE_EQ(cosine(std::vector<double>{1, 0}, std::vector<double>{1, 0}), 1.0);
    EXPECT_NEAR(cosine(std::vector<double>{1, 1}, std::vector<double>{1, 0}), 1.0 / std::sqrt(2.0), 1e-12);
    EXPECT_DOUBLE_EQ(cosine(std::vector<double>{1, 0}, std::vector<double>{0, 0}), 0.0);
    EXPECT_DOUBLE_EQ(cosine(std::vector<double>{1}, std::vector<double>{1, 0}), 0.0);

    const auto a = term_counts("The Cat sat; the cat!");
    EXPECT_EQ(a.at("the"), 2.0);
    EXPECT_EQ(a.at("cat"), 2.0);
    EXPECT_EQ(a.at("sat"), 1.0);
    EXPECT_DOUBLE_EQ(cosine(a, term_counts("the cat sat the cat")), 1.0);
    EXPECT_DOUBLE_EQ(cosine(a, term_counts("dogs run")), 0.0);
    EXPECT_GT(cosine(term_counts("Zürich Schweiz"), term_counts("zürich")), 0.5);
}

// The lexical profile as its definition reads: words, plus each word's '#'-padded trigrams
// (weighted 0.5), as strings in a map; the hashed profile must score every pair the same.
TermCounts reference_profile(std::string_view text) {
    TermCounts profile;
    for (const auto& [word, n] : term_counts(text)) {
        profile["w" + word] += n;
        const std::string padded = "#" + word + "#";
        for (std::size_t i = 0; i + 3 <= padded.size(); ++i) profile["g" + padded.substr(i, 3)] += 0.5 * n;
    }
    return profile;
}

TEST(LexicalProfile, ScoresAsTheStringDefinition) {
    const std::vector<std::string> texts = {
        "Who founded the shipyard that built the MV Curlew?",
        "MV Curlew built by Brenn and Daughters Shipyard",
        "Brenn and Daughters Shipyard founded by Oskar Brenn",
        "Cruz Azul FC plays in Liga MX",
        "children wear wears child",
        "Zürich Schweiz zürich",
        "aaa aaaa aa a",
        "x",
        "",
        "!!! ???"};
    for (const auto& a : texts) {
        for (const auto& b : texts) {
            EXPECT_NEAR(cosine(lexical_profile(a), lexical_profile(b)),
                        cosine(reference_profile(a), reference_profile(b)), 1e-12)
                << '"' << a << "\" vs \"" << b << '"';
        }
    }
    EXPECT_NEAR(cosine(lexical_profile("Wear the CHILD"), lexical_profile("wear the child")), 1.0, 1e-12);
    const double forms = cosine(lexical_profile("wears"), lexical_profile("wear"));
    EXPECT_GT(forms, 0.3);
    EXPECT_LT(forms, 1.0);
    EXPECT_EQ(cosine(lexical_profile("dogs"), lexical_profile("")), 0.0);
    // Repeats add up: one feature each, with the summed weight.
    const auto twice = lexical_profile("abc abc");
    const auto once = lexical_profile("abc");
    ASSERT_EQ(twice.features.size(), once.features.size());
    for (std::size_t i = 0; i < once.features.size(); ++i) {
        EXPECT_EQ(twice.features[i].first, once.features[i].first);
        EXPECT_DOUBLE_EQ(twice.features[i].second, 2 * once.features[i].second);
    }
    EXPECT_DOUBLE_EQ(twice.norm, 2 * once.norm);
}

TEST(ReciprocalRankFusion, TitleRankingsReportTheirOwnContribution) {
    const auto fused = reciprocal_rank_fusion({ranking(RankingKind::kKeyword, {{"a", 3.0}, {"b", 2.0}}),
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

TEST(TitleContainment, IsTheShareOfTitleContentWordsTheQuestionNames) {
    const auto question = content_words("Who directed the film shot in or around Leland, North Carolina in 1986?");
    EXPECT_DOUBLE_EQ(title_containment("Leland, North Carolina", question), 1.0);
    EXPECT_DOUBLE_EQ(title_containment("The Leland Stanford", question), 0.5);  // "the" is not counted
    EXPECT_DOUBLE_EQ(title_containment("Maximum Overdrive", question), 0.0);
    EXPECT_DOUBLE_EQ(title_containment("", question), 0.0);
    EXPECT_DOUBLE_EQ(title_containment("of the", question), 0.0);
    const auto words = content_words("The Cat of the cat");
    EXPECT_EQ(words, std::vector<std::string>{"cat"});
}

}  // namespace
}  // namespace glassbox::rag
