// costs.prices (docs/traces.md, "Cost"): the table read from its JSON text, the errors that name
// the model at fault, and the cost of a model call under it.
#include "schema/prices.hpp"

#include <gtest/gtest.h>

namespace glassbox::schema {
namespace {

TEST(PricesTest, ReadsEachModelsInputAndOutputPrice) {
    auto table = parse_prices(
        R"({"gpt-4o": {"input": 2.5, "output": 10}, "embed-small": {"input": 0.02}})", "EUR");
    ASSERT_TRUE(table.ok()) << table.error().describe();
    EXPECT_EQ(table->currency, "EUR");
    ASSERT_EQ(table->models.size(), 2u);
    EXPECT_EQ(table->models.at("gpt-4o"), (ModelPrice{2.5, 10.0}));
    EXPECT_EQ(table->models.at("embed-small"), (ModelPrice{0.02, 0.0})) << "a missing one is 0";
    ASSERT_NE(table->find("gpt-4o"), nullptr);
    EXPECT_EQ(table->find("gpt-4"), nullptr);
}

TEST(PricesTest, EmptyTextHasNoPrices) {
    for (const char* text : {"", "  \n", "{}"}) {
        auto table = parse_prices(text);
        ASSERT_TRUE(table.ok()) << text;
        EXPECT_TRUE(table->models.empty());
        EXPECT_EQ(table->currency, "USD");
    }
}

TEST(PricesTest, CostIsPerMillionTokensAndNoneWithoutAPrice) {
    auto table = parse_prices(R"({"gpt-4o": {"input": 2.5, "output": 10}, "free": {}})");
    ASSERT_TRUE(table.ok());
    const auto cost = table->cost("gpt-4o", 1000, 100);
    ASSERT_TRUE(cost.has_value());
    EXPECT_DOUBLE_EQ(*cost, (1000 * 2.5 + 100 * 10.0) / 1e6);
    EXPECT_EQ(table->cost("free", 5000, 5000), std::optional<double>{0.0})
        << "priced at 0: costs 0";
    EXPECT_FALSE(table->cost("llama", 10, 10).has_value()) << "unpriced: no cost, not 0";
}

TEST(PricesTest, BadTablesAreInvalidRequestsNamingTheModel) {
    const std::pair<const char*, const char*> cases[] = {
        {R"({"gpt-4o": {"input": 2.5,)", "not JSON"},
        {R"(["gpt-4o"])", "not a table of models"},
        {R"({"gpt-4o": 2.5})", "model \"gpt-4o\": not a table"},
        {R"({"gpt-4o": {"input": -1}})", "model \"gpt-4o\": input is negative"},
        {R"({"gpt-4o": {"output": "10"}})", "model \"gpt-4o\": output is not a number"},
        {R"({"gpt-4o": {"inptu": 1}})", "model \"gpt-4o\": unknown key \"inptu\""},
        {R"({"": {"input": 1}})", "a model name is empty"},
    };
    for (const auto& [text, why] : cases) {
        auto table = parse_prices(text);
        ASSERT_FALSE(table.ok()) << text;
        EXPECT_EQ(table.error().type, base::ErrorType::kInvalidRequest);
        EXPECT_EQ(table.error().message.rfind("costs.prices: ", 0), 0u) << table.error().message;
        EXPECT_NE(table.error().message.find(why), std::string::npos) << table.error().message;
        // The settings check names the key itself: the reason without it.
        const auto problem = prices_problem(text);
        ASSERT_TRUE(problem.has_value()) << text;
        EXPECT_NE(problem->find(why), std::string::npos) << *problem;
        EXPECT_EQ(problem->find("costs.prices"), std::string::npos) << *problem;
    }
    EXPECT_FALSE(prices_problem(R"({"gpt-4o": {"input": 1, "output": 2}})").has_value());
}

}  // namespace
}  // namespace glassbox::schema
