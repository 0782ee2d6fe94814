// Nearest-examples routing by feature-hashing cosine.
#include "workers/query/route_classifier.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>

#include "text/feature_hashing.hpp"
#include "text/similarity.hpp"

namespace glassbox::query {
namespace {

// The embedding dimension: the store's default, so routing and retrieval read text alike.
constexpr std::uint32_t kDim = text::kDefaultFeatureHashingDim;
// A route's score averages its best this-many examples: one lucky example does not decide.
constexpr std::size_t kNearest = 2;

}  // namespace

RouteClassifier::RouteClassifier(const std::map<std::string, std::vector<std::string>>& examples) {
    for (const auto& [engine, questions] : examples) {
        Route route{engine, {}};
        for (const auto& q : questions) route.vectors.push_back(text::feature_vector(q, kDim));
        if (!route.vectors.empty()) routes_.push_back(std::move(route));
    }
}

Classification RouteClassifier::classify(std::string_view question) const {
    Classification result;
    if (routes_.empty()) return result;
    const auto vector = text::feature_vector(question, kDim);
    for (const auto& route : routes_) {
        std::vector<double> sims;
        sims.reserve(route.vectors.size());
        for (const auto& example : route.vectors) sims.push_back(text::cosine(vector, example));
        const std::size_t k = std::min(kNearest, sims.size());
        std::partial_sort(sims.begin(), sims.begin() + static_cast<std::ptrdiff_t>(k), sims.end(),
                          std::greater<>());
        double sum = 0.0;
        for (std::size_t i = 0; i < k; ++i) sum += sims[i];
        result.scores.emplace_back(route.engine, sum / static_cast<double>(k));
    }
    std::stable_sort(result.scores.begin(), result.scores.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    result.engine = result.scores.front().first;
    const double best = result.scores.front().second;
    const double second = result.scores.size() > 1 ? result.scores[1].second : 0.0;
    result.confidence = best > 0.0 ? std::clamp((best - second) / best, 0.0, 1.0) : 0.0;
    return result;
}

}  // namespace glassbox::query
