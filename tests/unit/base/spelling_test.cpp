// The nearest name: near enough to be what was meant, or none.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/ascii.hpp"
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
    EXPECT_EQ(nearest_name("doc", kKinds), std::optional<std::string>("document-rag"))
        << "a prefix";
    EXPECT_EQ(nearest_name("weather", kKinds), std::nullopt);
    EXPECT_EQ(nearest_name("", kKinds), std::nullopt);
    EXPECT_EQ(did_you_mean("agnet", kKinds), " (did you mean agent?)");
    EXPECT_EQ(did_you_mean("zzzzzz", kKinds), "");
}

// The one case folding: ASCII letters only, every other byte (UTF-8 included) as it is.
TEST(AsciiCase, FoldsAsciiLettersAndNothingElse) {
    EXPECT_EQ(ascii_lower("Greyhollow LIGHT-2"), "greyhollow light-2");
    EXPECT_EQ(ascii_lower("\xC3\x89T\xC3\x89"), "\xC3\x89t\xC3\x89") << "UTF-8 passes unchanged";
    EXPECT_EQ(ascii_lower('Z'), 'z');
    EXPECT_EQ(ascii_lower('['), '[');
    EXPECT_TRUE(ascii_iequals("Bearer", "bEARER"));
    EXPECT_FALSE(ascii_iequals("Bearer", "Bearer "));
}

}  // namespace
}  // namespace glassbox::base
