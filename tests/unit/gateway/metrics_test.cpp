// route_label: the metrics' route label comes from a fixed set, whatever the path or method.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "gateway/metrics.hpp"

namespace glassbox::gateway {
namespace {

TEST(RouteLabel, NamesEachRouteByItsPattern) {
    EXPECT_EQ(route_label("POST", "/api/v1/query"), "POST /api/v1/query");
    EXPECT_EQ(route_label("GET", "/api/v1/health"), "GET /api/v1/health");
    EXPECT_EQ(route_label("GET", "/api/v1/traces/urn%3Aglassbox%3Aabc"), "GET /api/v1/traces/{id}");
    EXPECT_EQ(route_label("GET", "/api/v1/traces/x/events"), "GET /api/v1/traces/{id}/events");
    EXPECT_EQ(route_label("DELETE", "/mcp"), "DELETE /mcp");
    EXPECT_EQ(route_label("GET", "/viewer.js"), "GET static");
    EXPECT_EQ(route_label("GET", "/metrics"), "GET /metrics");
}

TEST(RouteLabel, MadeUpPathsAndMethodsShareOneLabel) {
    std::set<std::string> labels;
    for (int i = 0; i < 1000; ++i) {
        labels.insert(route_label("GET", "/api/v" + std::to_string(i) + "/nothing"));
        labels.insert(route_label("POST", "/mcp/" + std::to_string(i)));
        labels.insert(route_label("X" + std::to_string(i), "/api/v1/query"));
    }
    EXPECT_EQ(labels, (std::set<std::string>{"GET unmatched", "POST unmatched", "OTHER /api/v1/query"}));
}

}  // namespace
}  // namespace glassbox::gateway
