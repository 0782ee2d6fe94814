// parse_untrusted_json: the nesting bound (counted outside strings, before parsing), invalid JSON
// and UTF-8, and the deepest message glassbox defines fitting under the bound.
#include "schema/untrusted_json.hpp"

#include <gtest/gtest.h>

#include <string>

#include "schema/messages.hpp"
#include "schema/messages_trace.hpp"

namespace glassbox::schema {
namespace {

std::string nested_arrays(std::size_t depth) {
    return std::string(depth, '[') + std::string(depth, ']');
}

// `depth` objects, each the value of the one outside it: {"a":{"a":...{"a":1}...}}.
std::string nested_objects(std::size_t depth) {
    std::string text;
    for (std::size_t i = 0; i < depth; ++i) text += "{\"a\":";
    text += '1';
    text += std::string(depth, '}');
    return text;
}

void expect_too_deep(const base::Result<nlohmann::json>& r, std::size_t bound) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().type, base::ErrorType::kInvalidJson);
    EXPECT_EQ(r.error().message, "the JSON nests deeper than " + std::to_string(bound) + " levels");
}

TEST(UntrustedJson, TextAtTheBoundParsesAndOneLevelMoreIsRefused) {
    EXPECT_TRUE(parse_untrusted_json(nested_arrays(kMaxJsonDepth)).ok());
    EXPECT_TRUE(parse_untrusted_json(nested_objects(kMaxJsonDepth)).ok());
    expect_too_deep(parse_untrusted_json(nested_arrays(kMaxJsonDepth + 1)), kMaxJsonDepth);
    expect_too_deep(parse_untrusted_json(nested_objects(kMaxJsonDepth + 1)), kMaxJsonDepth);
    // Arrays and objects count alike, and only the deepest path matters, not the total.
    EXPECT_TRUE(parse_untrusted_json("[{\"a\":[1]},{\"b\":[2]},[[3]]]", 3).ok());
    expect_too_deep(parse_untrusted_json("[{\"a\":[1]},{\"b\":[2]},[[[3]]]]", 3), 3);
}

TEST(UntrustedJson, TheCallerMayAskForATighterBound) {
    EXPECT_TRUE(parse_untrusted_json(nested_arrays(2), 2).ok());
    expect_too_deep(parse_untrusted_json(nested_arrays(3), 2), 2);
    EXPECT_TRUE(parse_untrusted_json("7", 0).ok());
    expect_too_deep(parse_untrusted_json("[]", 0), 0);
}

TEST(UntrustedJson, BracketsInsideStringsDoNotCount) {
    EXPECT_TRUE(parse_untrusted_json("\"" + std::string(100'000, '[') + "\"").ok());
    EXPECT_TRUE(parse_untrusted_json("{\"[[[[\":\"{{{{\"}", 1).ok());
    // An escaped quote does not end the string: the brackets after it are still inside.
    EXPECT_TRUE(parse_untrusted_json(R"(["a\"[[[[{{"])", 1).ok());
    // An escaped backslash does not escape the quote after it: the string ends there, and the
    // brackets after it count.
    EXPECT_TRUE(parse_untrusted_json(R"(["a\\",[[1]]])", 3).ok());
    expect_too_deep(parse_untrusted_json(R"(["a\\",[[1]]])", 2), 2);
    // Closing brackets inside a string do not lower the depth either.
    expect_too_deep(parse_untrusted_json(R"([["]]]]]]",[1]]])", 2), 2);
}

// The issue 30 body: 500,000 levels (1 MB) under an MCP initialize. Refused before any tree is
// built; a recursive step anywhere on the way would overflow the stack here.
TEST(UntrustedJson, HalfAMillionLevelsAreRefusedWithTheBound) {
    constexpr std::size_t kDepth = 500'000;
    const std::string body =
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"x":)" +
        nested_arrays(kDepth) + "}}}";
    expect_too_deep(parse_untrusted_json(body), kMaxJsonDepth);
    expect_too_deep(parse_untrusted_json(nested_objects(kDepth)), kMaxJsonDepth);
    // Unbalanced, as a stream cut short would be.
    expect_too_deep(parse_untrusted_json(std::string(kDepth, '[')), kMaxJsonDepth);
}

TEST(UntrustedJson, InvalidJsonIsATypedErrorWithoutThrowing) {
    for (std::string_view bad :
         {"", "{", "{\"a\":}", "[1,]", "nul", "{\"a\":1}}", "\"\\x\"", "]]]", "\"open"}) {
        base::Result<nlohmann::json> r = nlohmann::json();
        EXPECT_NO_THROW(r = parse_untrusted_json(bad));
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().type, base::ErrorType::kInvalidJson);
        EXPECT_NE(r.error().message.find("not valid JSON"), std::string::npos) << r.error().message;
    }
}

TEST(UntrustedJson, InvalidUtf8IsInvalidJson) {
    for (std::string bad : {std::string("{\"a\":\"\xff\"}"), std::string("{\"a\":\"\xc3\"}"),
                            std::string("{\"a\":\"\xed\xa0\x80\"}"),  // a UTF-16 surrogate
                            std::string("\xef\xbb\xbf\xff")}) {
        auto r = parse_untrusted_json(bad);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.error().type, base::ErrorType::kInvalidJson);
    }
    auto good = parse_untrusted_json("{\"a\":\"Zürich\"}");
    ASSERT_TRUE(good.ok());
    EXPECT_EQ(good.value()["a"], "Zürich");
}

// The trace service's show reply at its own bounds: sub-traces kMaxTraceDepth deep, the deepest
// one with an event whose triple quotes triples kMaxQuotedTripleDepth deep. It is the deepest
// message glassbox defines (198 levels); the bound must let it through, and it is decoded.
TEST(UntrustedJson, TheDeepestShowReplyFitsUnderTheBound) {
    Term object = literal("leaf");
    for (int i = 0; i < kMaxQuotedTripleDepth; ++i)
        object = quoted(make_triple(iri("urn:s"), iri("urn:p"), object));
    TraceEvent event;
    event.seq = 1;
    event.triples.push_back(make_triple(iri("urn:s"), iri("urn:p"), object));
    TraceDetail detail;
    detail.session.session = "urn:glassbox:deepest";
    detail.events.push_back(event);
    for (int i = 0; i < kMaxTraceDepth; ++i) {
        TraceDetail parent;
        parent.session.session = "urn:glassbox:parent";
        parent.subtraces.push_back(std::move(detail));
        detail = std::move(parent);
    }
    const std::string text = dump(encode(detail));
    constexpr std::size_t kDeepest = 2 * kMaxTraceDepth + 1 + 3 + 1 + 2 * kMaxQuotedTripleDepth + 1;
    EXPECT_TRUE(parse_untrusted_json(text, kDeepest).ok());
    expect_too_deep(parse_untrusted_json(text, kDeepest - 1), kDeepest - 1);
    auto decoded = decode_body<TraceDetail>(text);
    ASSERT_TRUE(decoded.ok()) << decoded.error().describe();
    EXPECT_EQ(*decoded, detail);
}

}  // namespace
}  // namespace glassbox::schema
