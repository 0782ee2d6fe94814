// The JSON Schema subset: each keyword accepts what it should and names the first violation.
#include "workers/llm/json_schema.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace glassbox::llm {
namespace {

using nlohmann::json;

const json kScores = json::parse(R"({
  "type": "object", "required": ["scores"],
  "properties": {"scores": {"type": "array", "minItems": 1, "maxItems": 3,
    "items": {"type": "object", "required": ["id", "score"],
              "properties": {"id": {"type": "string"},
                             "score": {"type": "number", "minimum": 0, "maximum": 1}}}}}})");

TEST(JsonSchemaTest, AcceptsAValueThatMeetsEveryKeyword) {
    EXPECT_EQ(
        validate_json(json::parse(R"({"scores": [{"id": "e1", "score": 0.5, "extra": true}]})"),
                      kScores),
        std::nullopt);
}

TEST(JsonSchemaTest, NamesTheFirstViolationWithItsPath) {
    const auto check = [](const char* text) {
        auto why = validate_json(json::parse(text), kScores);
        return why.value_or("<valid>");
    };
    EXPECT_EQ(check(R"([])"), "$: expected object, got array");
    EXPECT_EQ(check(R"({})"), "$: missing required property \"scores\"");
    EXPECT_EQ(check(R"({"scores": []})"), "$.scores: 0 items, fewer than minItems 1");
    EXPECT_EQ(
        check(
            R"({"scores": [{"id":"a","score":0},{"id":"b","score":0},{"id":"c","score":0},{"id":"d","score":0}]})"),
        "$.scores: 4 items, more than maxItems 3");
    EXPECT_EQ(check(R"({"scores": [{"id": "e1", "score": 0.5}, {"id": "e2", "score": 1.5}]})"),
              "$.scores[1].score: 1.5 is above the maximum 1");
    EXPECT_EQ(check(R"({"scores": [{"id": "e1", "score": -0.1}]})"),
              "$.scores[0].score: -0.1 is below the minimum 0");
    EXPECT_EQ(check(R"({"scores": [{"id": 3, "score": 0.5}]})"),
              "$.scores[0].id: expected string, got integer");
    EXPECT_EQ(check(R"({"scores": [{"id": "e1"}]})"),
              "$.scores[0]: missing required property \"score\"");
    EXPECT_EQ(check(R"({"scores": [{"id": "e1", "score": "high"}]})"),
              "$.scores[0].score: expected number, got string");
}

TEST(JsonSchemaTest, TypesEnumAndIntegers) {
    const json integer{{"type", "integer"}};
    EXPECT_EQ(validate_json(3, integer), std::nullopt);
    EXPECT_EQ(validate_json(3.0, integer), std::nullopt) << "2.0 is an integer in JSON Schema";
    EXPECT_NE(validate_json(3.5, integer), std::nullopt);
    EXPECT_NE(validate_json("3", integer), std::nullopt);
    const json either{{"type", {"string", "null"}}};
    EXPECT_EQ(validate_json(nullptr, either), std::nullopt);
    EXPECT_EQ(validate_json("x", either), std::nullopt);
    EXPECT_EQ(validate_json(1, either).value_or(""), "$: expected string or null, got integer");
    const json kinds{{"enum", {"text", "json"}}};
    EXPECT_EQ(validate_json("json", kinds), std::nullopt);
    EXPECT_NE(validate_json("xml", kinds), std::nullopt);
    EXPECT_EQ(validate_json(true, json{{"type", "boolean"}}), std::nullopt);
    EXPECT_NE(validate_json(1, json{{"type", "boolean"}}), std::nullopt);
}

// The "items" schema is read once for all items (json_schema.cpp's Keywords): every item, at
// every depth, is still checked against all of it, the first violation named.
TEST(JsonSchemaTest, AnItemsSchemaHoldsForEveryItemAtAnyDepth) {
    const json edges = json::parse(R"({"type": "array", "items": {"type": "object",
        "required": ["id", "s"],
        "properties": {"id": {"type": "string"}, "s": {"type": "string"}}}})");
    EXPECT_EQ(
        validate_json(json::parse(R"([{"id":"e1","s":"a"},{"id":"e2","s":"b","x":1}])"), edges),
        std::nullopt);
    EXPECT_EQ(
        validate_json(json::parse(R"([{"id":"e1","s":"a"},{"id":"e2"}])"), edges).value_or(""),
        "$[1]: missing required property \"s\"");
    EXPECT_EQ(
        validate_json(json::parse(R"([{"id":"e1","s":"a"},{"id":"e2","s":"b"},{"s":7}])"), edges)
            .value_or(""),
        "$[2]: missing required property \"id\"");
    EXPECT_EQ(validate_json(json::parse(R"([{"id":"e1","s":"a"},{"id":"e3","s":7}])"), edges)
                  .value_or(""),
              "$[1].s: expected string, got integer");
    const json grid = {
        {"type", "array"},
        {"items", {{"type", "array"}, {"maxItems", 2}, {"items", {{"minimum", 0}}}}}};
    EXPECT_EQ(validate_json(json::parse("[[1,2],[3]]"), grid), std::nullopt);
    EXPECT_EQ(validate_json(json::parse("[[1,2],[3,-1]]"), grid).value_or(""),
              "$[1][1]: -1 is below the minimum 0");
    EXPECT_EQ(validate_json(json::parse("[[1,2],[3,4,5]]"), grid).value_or(""),
              "$[1]: 3 items, more than maxItems 2");
    EXPECT_EQ(validate_json(json::array({1, "x"}), json{{"items", true}}), std::nullopt)
        << "a schema that is not an object constrains nothing";
}

TEST(JsonSchemaTest, ChecksSchemasThemselves) {
    EXPECT_EQ(check_schema(kScores), std::nullopt);
    EXPECT_NE(check_schema(json::array()), std::nullopt);
    EXPECT_NE(check_schema(json{{"type", "float"}}), std::nullopt);
    EXPECT_NE(check_schema(json{{"required", "id"}}), std::nullopt);
    EXPECT_NE(check_schema(json{{"maxItems", -1}}), std::nullopt);
    EXPECT_NE(check_schema(json{{"minimum", "0"}}), std::nullopt);
    EXPECT_NE(check_schema(json{{"properties", {{"a", {{"type", "nothing"}}}}}}), std::nullopt);
    EXPECT_EQ(check_schema(json{{"description", "ignored keywords are fine"}}), std::nullopt);
}

}  // namespace
}  // namespace glassbox::llm
