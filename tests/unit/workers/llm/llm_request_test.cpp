// The llm request read from its text (decode_request_text) against the runtime's parse followed by
// check_request, the path it replaces: the same request, or the same typed error and message.
#include "workers/llm/llm_request.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "schema/untrusted_json.hpp"

namespace glassbox::llm {
namespace {

using nlohmann::json;

// What the llm worker answered before bodies were read as text: the runtime's InvalidJson for
// text that is not JSON, else the handler's check of the tree.
base::Result<schema::LlmRequest> through_tree(std::string_view text) {
    auto body = schema::parse_untrusted_json(text);
    if (!body)
        return base::make_error(base::ErrorType::kInvalidJson,
                                "the request body: " + body.error().message);
    return check_request(*body);
}

void expect_same(std::string_view text) {
    SCOPED_TRACE(std::string(text.substr(0, 200)));
    const auto fast = decode_request_text(text);
    const auto tree = through_tree(text);
    ASSERT_EQ(fast.ok(), tree.ok()) << (fast ? tree.error().describe() : fast.error().describe());
    if (tree) {
        EXPECT_EQ(*fast, *tree);
    } else {
        EXPECT_EQ(fast.error().type, tree.error().type);
        EXPECT_EQ(fast.error().message, tree.error().message);
    }
}

TEST(LlmRequestTextTest, TheShapeBusClientsWriteIsReadAsTheTreeReadsIt) {
    const json edges =
        json::array({{{"id", "e1"}, {"s", "Cruz Azul FC"}, {"p", "is in"}, {"o", "Mexico"}},
                     {{"id", "e2"}, {"s", "Zoë \"Z\" \\ café"}, {"p", "p"}, {"o", "😀"}}});
    const json body = {{"template", "kg-synthesis"},
                       {"variables", {{"question", "where?\n\ttab"}, {"edges", edges.dump()}}},
                       {"streaming", true}};
    const auto request = decode_request_text(body.dump());
    ASSERT_TRUE(request) << request.error().describe();
    EXPECT_EQ(request->template_name, "kg-synthesis");
    EXPECT_TRUE(request->streaming);
    EXPECT_EQ(request->variables.at("question"), "where?\n\ttab");
    EXPECT_EQ(json::parse(request->variables.at("edges")), edges);
    expect_same(body.dump());
    expect_same(body.dump(2));  // whitespace everywhere
}

TEST(LlmRequestTextTest, UnusualButValidBodiesGiveTheTreesResult) {
    for (const std::string text : {
             R"({"template":"t"})",
             R"({"template":"t","variables":{},"streaming":false})",
             R"(  {"variables":{"b":"2","a":"1"},"template":"t"}  )",
             R"({"template":"t","extra":{"deep":[1,-0,2.5e-3,1E+9,true,null,{"x":[]}]},"n":3})",
             R"({"template":"t\u002dx","variables":{"q":"\u00e9\ud83d\ude00\/\b\f\n\r\t\"\\"}})",
             R"({"template":"t","variables":{"q":"\u0000 nul"}})",
             "{\"template\":\"t\",\"variables\":{\"q\":\"caf\xC3\xA9 \xF0\x9F\x98\x80\"}}",
             R"({"template":"a","template":"b"})",                     // the tree keeps the last
             R"({"template":"t","variables":{"q":"1","q":"2"}})",      // the tree keeps the last
             R"({"template":"t","variables":{"q\u0075estion":"x"}})",  // an escaped name
             R"({"templ\u0061te":"t"})",                               // an escaped key
             R"({"template":"t","streaming":null,"variables":null})",
             R"({"template":"t","streaming":null})",
             R"({"template":"t","variables":{"q":"x"},"streaming":true,"streaming":false})",
         })
        expect_same(text);
}

TEST(LlmRequestTextTest, BadBodiesGiveTheSameTypedErrors) {
    for (const std::string text : {
             R"([])",
             R"("text")",
             R"(null)",
             R"(42)",
             R"({})",
             R"({"variables":{}})",
             R"({"template":3})",
             R"({"template":null})",
             R"({"template":"t","variables":"x"})",
             R"({"template":"t","variables":[]})",
             R"({"template":"t","variables":{"question":42}})",
             R"({"template":"t","variables":{"a":"1","b":{"x":"y"}}})",
             R"({"template":"t","streaming":"yes"})",
             R"({"template":"t","streaming":1})",
         }) {
        expect_same(text);
        EXPECT_EQ(decode_request_text(text).error().type, base::ErrorType::kInvalidRequest) << text;
    }
}

TEST(LlmRequestTextTest, TextThatIsNotJsonIsInvalidJsonAsTheRuntimeAnswers) {
    const std::string deep = std::string(300, '[') + std::string(300, ']');
    for (const std::string& text : {
             std::string(""),
             std::string("{"),
             std::string(R"({"template":"t"} trailing)"),
             std::string(R"({"template":"t"}{})"),
             std::string(R"({"template":"t",})"),
             std::string(R"({"template":"t","variables":{"q":"x"})"),
             std::string("{\"template\":\"t\xFF\"}"),  // not UTF-8
             std::string("{\"template\":\"t\",\"variables\":{\"q\":\"a\x01\"}}"),
             std::string(R"({"template":"t","variables":{"q":"\ud83d"}})"),  // a lone surrogate
             std::string(R"({"template":"t","x":01})"),
             std::string(R"({"template":"t","x":)") + deep + "}",
         }) {
        expect_same(text);
        EXPECT_EQ(decode_request_text(text).error().type, base::ErrorType::kInvalidJson)
            << text.substr(0, 60);
    }
}

TEST(LlmRequestTextTest, NestingPastTheCursorsBoundIsLeftToTheTree) {
    // Deeper than the cursor skips (kMaxJsonSkipDepth), within what the tree parses.
    const std::string nested = std::string(100, '[') + std::string(100, ']');
    const std::string text = R"({"template":"t","x":)" + nested + R"(,"variables":{"q":"1"}})";
    const auto request = decode_request_text(text);
    ASSERT_TRUE(request) << request.error().describe();
    EXPECT_EQ(request->variables.at("q"), "1");
    expect_same(text);
}

TEST(LlmRequestTextTest, EveryNonEmptyBodyIsLeftAsText) {
    EXPECT_TRUE(reads_body_as_text(R"({"template":"t"})"));
    EXPECT_TRUE(reads_body_as_text("not json"));
    EXPECT_FALSE(reads_body_as_text(""));
}

}  // namespace
}  // namespace glassbox::llm
