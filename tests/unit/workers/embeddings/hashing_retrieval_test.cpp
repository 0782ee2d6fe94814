// The hashing embedder on real data (HotpotQA paragraphs, /work/shared/data): throughput and
// recall@k.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "workers/embeddings/feature_hashing_embedder.hpp"

namespace glassbox::embeddings {
namespace {

using nlohmann::json;

std::vector<json> read_jsonl(const std::filesystem::path& path) {
    std::vector<json> rows;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        auto row = json::parse(line, nullptr, false);
        if (row.is_object()) rows.push_back(std::move(row));
    }
    return rows;
}

TEST(HashingRetrieval, FindsGoldParagraphsOfHotpotQaQuestions) {
    const std::filesystem::path dir = std::filesystem::path(GLASSBOX_SHARED_DATA) / "docs-hotpotqa";
    if (!std::filesystem::exists(dir / "corpus.jsonl")) GTEST_SKIP() << "no shared data at " << dir;
    const auto corpus = read_jsonl(dir / "corpus.jsonl");
    const auto questions = read_jsonl(dir / "questions-dev.jsonl");
    ASSERT_GT(corpus.size(), 100u);
    ASSERT_GT(questions.size(), 10u);

    std::vector<std::string> texts;
    std::vector<std::string> ids;
    std::size_t bytes = 0;
    for (const auto& doc : corpus) {
        texts.push_back(doc.value("title", "") + "\n" + doc.value("text", ""));
        ids.push_back(doc.value("doc_id", ""));
        bytes += texts.back().size();
    }
    FeatureHashingEmbedder embedder;
    const auto start = std::chrono::steady_clock::now();
    auto docs = embedder.embed(texts);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(docs);

    std::map<std::size_t, double> hits;  // k -> gold documents found in the top k
    std::size_t gold_total = 0;
    for (const auto& q : questions) {
        const auto query = embedder.embed_one(q.value("question", ""));
        std::vector<double> scores(texts.size());
        for (std::size_t d = 0; d < texts.size(); ++d) {
            scores[d] =
                std::inner_product(query.begin(), query.end(), docs->vectors[d].begin(), 0.0);
        }
        std::vector<std::size_t> order(texts.size());
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(),
                  [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
        const auto gold = q.value("gold_docs", std::vector<std::string>{});
        gold_total += gold.size();
        for (const std::size_t k : {2u, 5u, 10u}) {
            std::set<std::string> top;
            for (std::size_t i = 0; i < k; ++i) top.insert(ids[order[i]]);
            for (const auto& g : gold) hits[k] += top.count(g) != 0 ? 1.0 : 0.0;
        }
    }
    const auto recall = [&](std::size_t k) { return hits[k] / static_cast<double>(gold_total); };
    std::cout << "[ figures  ] hashing embedder on " << texts.size()
              << " HotpotQA paragraphs (mean " << bytes / texts.size()
              << " bytes): " << static_cast<long long>(static_cast<double>(texts.size()) / seconds)
              << " texts/s; recall@2 " << recall(2) << ", recall@5 " << recall(5) << ", recall@10 "
              << recall(10) << " over " << questions.size() << " questions, all " << texts.size()
              << " paragraphs as candidates\n";
    // A sanity floor, not a target: random ranking gives recall@10 of 10/994 ≈ 0.01.
    EXPECT_GT(recall(10), 0.25);
    EXPECT_GE(recall(10), recall(5));
    EXPECT_GE(recall(5), recall(2));
}

}  // namespace
}  // namespace glassbox::embeddings
