// Tool files: the built-in default, parse errors, selection by name, argument checks.
#include "workers/agent/tool_catalog.hpp"

#include <gtest/gtest.h>

namespace glassbox::agent {
namespace {

using nlohmann::json;

TEST(ToolCatalogTest, TheBuiltInFileHasTheFiveTools) {
    const auto& tools = default_tools();
    ASSERT_EQ(tools.size(), 5u);
    EXPECT_EQ(tools[0].name, "knowledge-query");
    EXPECT_EQ(tools[0].kind, ToolKind::kGraphRag);
    EXPECT_EQ(tools[1].kind, ToolKind::kDocumentRag);
    EXPECT_EQ(tools[2].kind, ToolKind::kTriples);
    EXPECT_EQ(tools[3].name, "graph-query");
    EXPECT_EQ(tools[3].kind, ToolKind::kGraphQuery);
    EXPECT_EQ(tools[4].kind, ToolKind::kCompletion);
    const json model = tools_for_model(tools);
    ASSERT_EQ(model.size(), 5u);
    EXPECT_EQ(model[2]["arguments"]["required"][0], "subject");
    EXPECT_EQ(model[3]["arguments"]["required"][0], "match");
}

TEST(ToolCatalogTest, MalformedFilesAreTypedErrorsNamingTheField) {
    const std::pair<const char*, const char*> cases[] = {
        {"[]", "\"tools\" array"},
        {R"({"tools": []})", "no tools"},
        {R"({"tools": [{"name": "Bad Name", "kind": "triples", "description": "d", "arguments": {}}]})",
         "tools[0].name"},
        {R"({"tools": [{"name": "a", "kind": "sql", "description": "d", "arguments": {}}]})",
         "tools[0].kind"},
        {R"({"tools": [{"name": "a", "kind": "triples", "description": "", "arguments": {}}]})",
         "description"},
        {R"({"tools": [{"name": "a", "kind": "triples", "description": "d", "arguments": 3}]})",
         "arguments"},
        {R"({"tools": [{"name": "a", "kind": "triples", "description": "d", "arguments": {}},
                       {"name": "a", "kind": "completion", "description": "d", "arguments": {}}]})",
         "named twice"},
    };
    for (const auto& [text, expected] : cases) {
        auto tools = parse_tools(text);
        ASSERT_FALSE(tools) << text;
        EXPECT_EQ(tools.error().type, base::ErrorType::kInvalidRequest);
        EXPECT_NE(tools.error().message.find(expected), std::string::npos) << tools.error().message;
    }
    EXPECT_FALSE(load_tools("/nonexistent/tools.json"));
}

TEST(ToolCatalogTest, ARequestMayNameASubset) {
    auto two = select_tools(default_tools(), {"triples-query", "knowledge-query"});
    ASSERT_TRUE(two);
    ASSERT_EQ(two->size(), 2u);
    EXPECT_EQ((*two)[0].name, "knowledge-query");  // the file's order
    auto all = select_tools(default_tools(), {});
    ASSERT_TRUE(all);
    EXPECT_EQ(all->size(), 5u);
    auto unknown = select_tools(default_tools(), {"web-search"});
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.error().message.find("web-search"), std::string::npos);
}

TEST(ToolCatalogTest, ArgumentsAreCheckedAgainstTheSchema) {
    const Tool& triples = default_tools()[2];
    EXPECT_FALSE(check_arguments(triples, json{{"subject", "Ada"}}));
    EXPECT_NE(check_arguments(triples, json::object())->find("subject"), std::string::npos);
    EXPECT_NE(check_arguments(triples, json{{"subject", 3}})->find("string"), std::string::npos);
    EXPECT_TRUE(check_arguments(triples, json::array()));
}

}  // namespace
}  // namespace glassbox::agent
