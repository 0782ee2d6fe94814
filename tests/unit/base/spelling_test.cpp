// The nearest name: near enough to be what was meant, or none.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/spelling.hpp"

namespace glassbox::base {
namespace {

const std::vector<std::string> kKinds{"query", "graph-rag", "document-rag", "agent", "echo"};

TEST(Spelling, EditDistanceCountsInsertsDeletesAndSubstitutions) {
    EXPECT_EQ(edit_distance("graphrag", "graph-rag"), 1u);
    EXPECT_EQ(edit_distance("", "abc"), 3u);
    EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
    EXPECT_EQ(edit_distance("same", "same"), 0u);
}

TEST(Spelling, TheNearestNameIsOnlyOfferedWhenItIsNear) {
    EXPECT_EQ(nearest_name("graphrag", kKinds), std::optional<std::string>("graph-rag"));
    EXPECT_EQ(nearest_name("GRAPH_RAG", kKinds), std::optional<std::string>("graph-rag"));
    EXPECT_EQ(nearest_name("doc", kKinds), std::optional<std::string>("document-rag")) << "a prefix";
    EXPECT_EQ(nearest_name("weather", kKinds), std::nullopt);
    EXPECT_EQ(nearest_name("", kKinds), std::nullopt);
    EXPECT_EQ(did_you_mean("agnet", kKinds), " (did you mean agent?)");
    EXPECT_EQ(did_you_mean("zzzzzz", kKinds), "");
}

}  // namespace
}  // namespace glassbox::base
