// Settings: environment names, expectations, checks, parsing text, the registry's own checks and
// its "did you mean".
#include "config/setting.hpp"

#include <stdexcept>

#include <gtest/gtest.h>

#include "tests/unit/config/test_registry.hpp"

namespace glassbox::config {
namespace {

TEST(SettingTest, EnvironmentNameIsDerivedFromTheKey) {
    const auto registry = testing::test_registry();
    EXPECT_EQ(registry.find("broker.heartbeat_ms")->env_name(), "GLASSBOX_BROKER_HEARTBEAT_MS");
    EXPECT_EQ(registry.find("graph_rag.entity_limit")->env_name(),
              "GLASSBOX_GRAPH_RAG_ENTITY_LIMIT");
}

TEST(SettingTest, ExpectationsReadAsEnglish) {
    const auto registry = testing::test_registry();
    EXPECT_EQ(registry.find("broker.heartbeat_ms")->expectation(), "an integer from 10 to 3600000");
    EXPECT_EQ(registry.find("broker.max_queue")->expectation(), "a positive integer");
    EXPECT_EQ(registry.find("broker.overflow")->expectation(),
              "one of \"reject\", \"drop-oldest\"");
    EXPECT_EQ(registry.find("up.gateway")->expectation(), "true or false");
}

TEST(SettingTest, ParseTextChecksKindAndBounds) {
    const auto registry = testing::test_registry();
    const auto& heartbeat = *registry.find("broker.heartbeat_ms");
    EXPECT_EQ(std::get<std::int64_t>(heartbeat.parse_text("100").value()), 100);
    auto fast = heartbeat.parse_text("fast");
    ASSERT_FALSE(fast);
    EXPECT_EQ(fast.error().message,
              "broker.heartbeat_ms: expected an integer from 10 to 3600000, got \"fast\"");
    EXPECT_EQ(heartbeat.parse_text("5").error().message,
              "broker.heartbeat_ms: expected an integer from 10 to 3600000, got 5");
    EXPECT_FALSE(heartbeat.parse_text("100ms"));
    EXPECT_FALSE(heartbeat.parse_text(""));

    const auto& gateway = *registry.find("up.gateway");
    EXPECT_FALSE(std::get<bool>(gateway.parse_text("false").value()));
    EXPECT_TRUE(std::get<bool>(gateway.parse_text("1").value()));
    EXPECT_FALSE(gateway.parse_text("maybe"));

    const auto& overflow = *registry.find("broker.overflow");
    EXPECT_EQ(std::get<std::string>(overflow.parse_text("drop-oldest").value()), "drop-oldest");
    EXPECT_EQ(overflow.parse_text("drop").error().message,
              "broker.overflow: expected one of \"reject\", \"drop-oldest\", got \"drop\"");

    const auto& rate = *registry.find("gateway.rate_limit");
    EXPECT_DOUBLE_EQ(std::get<double>(rate.parse_text("2.5").value()), 2.5);
    EXPECT_FALSE(rate.parse_text("-1"));
    EXPECT_FALSE(rate.parse_text("nan"));
}

TEST(SettingTest, ValuesPrintAsTomlWrites) {
    EXPECT_EQ(to_text(Value{std::int64_t{42}}), "42");
    EXPECT_EQ(to_text(Value{true}), "true");
    EXPECT_EQ(to_text(Value{50.0}), "50.0");
    EXPECT_EQ(to_text(Value{0.4}), "0.4");
    EXPECT_EQ(to_text(Value{std::string("x y")}), "x y");
}

TEST(SettingTest, RegistryRefusesProgrammerErrors) {
    EXPECT_THROW(Registry({text_setting("nodot", "", "")}), std::invalid_argument);
    EXPECT_THROW(Registry({text_setting("Broker.x", "", "")}), std::invalid_argument);
    EXPECT_THROW(Registry({text_setting("a.b", "", ""), text_setting("a.b", "", "")}),
                 std::invalid_argument);
    EXPECT_THROW(Registry({integer_setting("a.b", 0, 1, 10, "")}), std::invalid_argument)
        << "default out of bounds";
    EXPECT_THROW(Registry({text_setting("a.b", "", ""), text_setting("a.b.c", "", "")}),
                 std::invalid_argument)
        << "a key that is also a table";
    EXPECT_THROW(Registry({text_setting("a.b_c", "", ""), text_setting("a_b.c", "", "")}),
                 std::invalid_argument)
        << "two keys, one environment name";
    EXPECT_THROW(Registry({text_setting("a.b", "", "").env_alias("X"),
                           text_setting("a.c", "", "").env_alias("X")}),
                 std::invalid_argument);
}

TEST(SettingTest, SuggestsTheClosestKeyOrTable) {
    const auto registry = testing::test_registry();
    EXPECT_EQ(registry.suggest("broker.hartbeat_ms", false), "broker.heartbeat_ms");
    EXPECT_EQ(registry.suggest("heartbeat_ms", false), "broker.heartbeat_ms")
        << "the key without its table";
    EXPECT_EQ(registry.suggest("gateway.heartbeat_ms", false), "broker.heartbeat_ms")
        << "in the wrong table";
    EXPECT_EQ(registry.suggest("brokr", true), "broker");
    EXPECT_EQ(registry.suggest("zzzzzz.qqqq", false), std::nullopt);
    EXPECT_TRUE(registry.is_table("broker"));
    EXPECT_FALSE(registry.is_table("broker.endpoint"));
    EXPECT_FALSE(registry.is_table("brok"));
}

}  // namespace
}  // namespace glassbox::config
