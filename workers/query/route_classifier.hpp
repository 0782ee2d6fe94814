// The router's second stage: the question's similarity to example questions per route, with
// the project's feature hashing (text/feature_hashing.hpp), offline and deterministic.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace glassbox::query {

struct Classification {
    std::string engine;  // the best route; "" when there are no examples
    // Per route: the mean cosine of the question with its two nearest examples, best first.
    std::vector<std::pair<std::string, double>> scores;
    // (best - second) / best: 0 when two routes tie, 1 when only one route resembles it.
    double confidence = 0.0;
};

class RouteClassifier {
public:
    // `examples`: route → example questions. Their vectors are computed once, here.
    explicit RouteClassifier(const std::map<std::string, std::vector<std::string>>& examples);

    Classification classify(std::string_view question) const;

private:
    struct Route {
        std::string engine;
        std::vector<std::vector<double>> vectors;
    };
    std::vector<Route> routes_;
};

}  // namespace glassbox::query
