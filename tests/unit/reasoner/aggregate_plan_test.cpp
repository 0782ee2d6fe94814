// Tests for the planner's counts, filters, superlatives and comparisons: which shape and which
// graph-query a question gets, the refinements after an empty or failed attempt, the answer.
#include "reasoner/detail/aggregate_plan.hpp"

#include <gtest/gtest.h>

namespace glassbox::reasoner::detail {
namespace {

using nlohmann::json;

json tools() {
    return json::array(
        {{{"name", "graph-query"}}, {{"name", "triples-query"}}, {{"name", "knowledge-query"}}});
}

json step_with(const json& args, const std::string& observation, bool error) {
    return {{"thought", "t"},
            {"calls", json::array({{{"tool", "graph-query"},
                                    {"args", args},
                                    {"observation", observation},
                                    {"error", error}}})}};
}

TEST(AggregateShape, ACountOfThingsAnEntityBuilt) {
    const auto shape = aggregate_shape("How many ships did Halden Ironworks build?");
    ASSERT_TRUE(shape);
    EXPECT_EQ(shape->kind, AggregateKind::kCount);
    EXPECT_EQ(shape->class_name, "ship");
    EXPECT_EQ(shape->entity, "Halden Ironworks");
    EXPECT_EQ(shape->relation, "build");
    const auto attempts = aggregate_attempts(*shape);
    ASSERT_GE(attempts.size(), 3u);
    EXPECT_EQ(attempts[0]["aggregate"], (json{{"fn", "count"}, {"var", "?x"}}));
    EXPECT_EQ(attempts[0]["match"][0],
              (json{{"s", "?x"}, {"p", "build"}, {"o", "Halden Ironworks"}}));
    EXPECT_EQ(attempts[0]["match"][1], (json{{"s", "?x"}, {"p", "type"}, {"o", "ship"}}));
    // The second attempt reads the relation the other way round.
    EXPECT_EQ(attempts[1]["match"][0],
              (json{{"s", "Halden Ironworks"}, {"p", "build"}, {"o", "?x"}}));
}

TEST(AggregateShape, ACountOfARelationNounHasTheEntityAsSubject) {
    const auto shape = aggregate_shape("How many children does adelaide_of_aquitaine have ?");
    ASSERT_TRUE(shape);
    EXPECT_TRUE(shape->relation_is_noun);
    const auto attempts = aggregate_attempts(*shape);
    EXPECT_EQ(attempts[0]["match"][0],
              (json{{"s", "adelaide_of_aquitaine"}, {"p", "children"}, {"o", "?x"}}));
    EXPECT_EQ(attempts[0]["match"].size(), 1u);  // no class for a relation noun
}

TEST(AggregateShape, AFilterOnYearsComparesTheBuiltYear) {
    const auto shape = aggregate_shape("Which lighthouses were built before 1860?");
    ASSERT_TRUE(shape);
    EXPECT_EQ(shape->kind, AggregateKind::kFilter);
    EXPECT_EQ(shape->cmp, "<");
    EXPECT_EQ(shape->value, "1860");
    const auto q = aggregate_attempts(*shape).front();
    EXPECT_EQ(q["match"][0], (json{{"s", "?x"}, {"p", "built year"}, {"o", "?v"}}));
    EXPECT_EQ(q["filter"][0], (json{{"var", "?v"}, {"cmp", "<"}, {"value", "1860"}}));
}

TEST(AggregateShape, SuperlativesOrderByTheirDimension) {
    const auto oldest = aggregate_shape("Which is the oldest lighthouse?");
    ASSERT_TRUE(oldest);
    EXPECT_EQ(oldest->kind, AggregateKind::kSuperlative);
    EXPECT_EQ(oldest->class_name, "lighthouse");
    ASSERT_EQ(oldest->dimensions.size(), 2u);
    EXPECT_EQ(oldest->dimensions[0].words, "age");
    EXPECT_EQ(oldest->dimensions[1].words, "year");
    EXPECT_FALSE(oldest->dimensions[1].descending);
    const auto population = aggregate_shape("Which town has the largest population?");
    ASSERT_TRUE(population);
    EXPECT_EQ(population->class_name, "town");
    ASSERT_EQ(population->dimensions.size(), 1u);
    EXPECT_EQ(population->dimensions[0].words, "population");
    EXPECT_TRUE(population->dimensions[0].descending);
}

TEST(AggregateShape, AComparisonOfTwoNamedThings) {
    const auto shape =
        aggregate_shape("Which was built first, Saltspire Light or Northcape Light?");
    ASSERT_TRUE(shape);
    EXPECT_EQ(shape->kind, AggregateKind::kComparison);
    EXPECT_EQ(shape->compared, (std::vector<std::string>{"Saltspire Light", "Northcape Light"}));
    const auto q = aggregate_attempts(*shape).front();
    EXPECT_EQ(q["match"][0]["s"]["values"], (json{"Saltspire Light", "Northcape Light"}));
    EXPECT_EQ(q["match"][0]["p"], "built year");
    EXPECT_EQ(q["order_by"]["dir"], "asc");
}

TEST(AggregateShape, OtherQuestionsAreNotAggregates) {
    EXPECT_FALSE(aggregate_shape("Who designed Greyhollow Light?"));
    EXPECT_FALSE(aggregate_shape("Where was the designer of Saltspire Light born?"));
    EXPECT_FALSE(aggregate_shape("which lighthouses did Ilse Varrow design?"));
}

TEST(AggregatePlan, RefinesAfterAnEmptyOrFailedAttemptThenAnswersWithTheCount) {
    const auto shape = *aggregate_shape("How many ships did Halden Ironworks build?");
    const auto attempts = aggregate_attempts(shape);
    auto first = plan_aggregate_step(shape, json::array());
    ASSERT_TRUE(first);
    ASSERT_EQ(first->calls.size(), 1u);
    EXPECT_EQ(first->calls[0].args, attempts[0]);
    const json empty = R"({"row_count":1,"rows":[{"value":0}]})"_json;
    const json steps = json::array({step_with(attempts[0], empty.dump(), false)});
    auto second = plan_aggregate_step(shape, steps);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->calls[0].args, attempts[1]);
    EXPECT_NE(second->thought.find("found nothing"), std::string::npos);
    const json rows =
        R"({"row_count":1,"rows":[{"value":2,"values":["MV Petrel","Good Hope"]}]})"_json;
    json done = steps;
    done.push_back(step_with(attempts[1], rows.dump(), false));
    auto answer = plan_aggregate_step(shape, done);
    ASSERT_TRUE(answer);
    EXPECT_TRUE(answer->calls.empty());
    EXPECT_EQ(answer->final_answer, "2");
    EXPECT_EQ(answer->response, "2 ships: MV Petrel and Good Hope.");
}

TEST(AggregatePlan, AClassThatIsNotInTheGraphIsDroppedAndThreeAttemptsAreTheMost) {
    const auto shape = *aggregate_shape("How many players play for the club Cruz_Azul_FC ?");
    const auto attempts = aggregate_attempts(shape);
    json steps = json::array({step_with(
        attempts[0], "error: no class of the knowledge graph is named \"player\"", true)});
    auto second = plan_aggregate_step(shape, steps);
    ASSERT_TRUE(second);
    for (const auto& p : second->calls[0].args["match"]) EXPECT_NE(p["p"], "type");
    steps.push_back(step_with(second->calls[0].args, "error: x", true));
    auto third = plan_aggregate_step(shape, steps);
    ASSERT_TRUE(third);
    steps.push_back(step_with(third->calls[0].args, "error: y", true));
    EXPECT_FALSE(plan_aggregate_step(shape, steps));
}

TEST(AggregatePlan, TheAgentPlannerAsksGraphQueryWhenOffered) {
    const auto step = plan_agent_step("Which is the tallest lighthouse?", tools(), json::array());
    ASSERT_EQ(step.calls.size(), 1u);
    EXPECT_EQ(step.calls[0].tool, "graph-query");
    // Without the tool the planner does what it did before.
    const json others = json::array({{{"name", "knowledge-query"}}});
    EXPECT_EQ(
        plan_agent_step("Which is the tallest lighthouse?", others, json::array()).calls.at(0).tool,
        "knowledge-query");
}

TEST(RelationPhraseMatch, TheClosestPredicateScoresHighest) {
    EXPECT_GT(relation_phrase_match("was built by", "build"),
              relation_phrase_match("was designed by", "build"));
    EXPECT_GT(relation_phrase_match("was built in year", "built year"),
              relation_phrase_match("was built by", "built year"));
    EXPECT_GT(relation_phrase_match("plays_in_club", "play for club"),
              relation_phrase_match("plays_in_club_inverse", "play for club"));
    EXPECT_GE(relation_phrase_match("has population", "population"), 0.9);
}

}  // namespace
}  // namespace glassbox::reasoner::detail
