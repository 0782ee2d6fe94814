// The strict TOML settings file: typed values with their file:line, and every error naming the
// file, the line and the key.
#include "config/toml_layer.hpp"

#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "tests/unit/config/test_registry.hpp"

namespace glassbox::config {
namespace {

const Layer::Entry* entry(const Layer& layer, const std::string& key) {
    for (const auto& e : layer.entries) {
        if (e.key == key) return &e;
    }
    return nullptr;
}

std::string error_of(std::string_view text) {
    const auto registry = testing::test_registry();
    auto layer = parse_toml(registry, text, "/h/config.toml");
    EXPECT_FALSE(layer) << text;
    return layer ? std::string() : layer.error().message;
}

TEST(TomlLayerTest, ReadsTablesInlineTablesAndDottedKeysWithTheirLines) {
    const auto registry = testing::test_registry();
    auto layer = parse_toml(registry,
                            "# glassbox\n"
                            "[broker]\n"
                            "endpoint = \"tcp://10.0.0.1:7000\"\n"
                            "heartbeat_ms = 500\n"
                            "\n"
                            "gateway = { rate_limit = 5 }\n"
                            "log.format = \"json\"\n",
                            "/h/config.toml");
    // `gateway = {...}` and `log.format` under [broker] would be broker.gateway: write them at the
    // top.
    ASSERT_FALSE(layer);
    EXPECT_EQ(layer.error().message, "/h/config.toml:6: unknown table [broker.gateway]");

    layer = parse_toml(registry,
                       "gateway = { rate_limit = 5 }\n"
                       "log.format = \"json\"\n"
                       "up.gateway = false\n"
                       "[broker]\n"
                       "endpoint = \"tcp://10.0.0.1:7000\"\n"
                       "heartbeat_ms = 500\n",
                       "/h/config.toml");
    ASSERT_TRUE(layer) << layer.error().message;
    ASSERT_EQ(layer->entries.size(), 5u);
    const auto* heartbeat = entry(*layer, "broker.heartbeat_ms");
    ASSERT_NE(heartbeat, nullptr);
    EXPECT_EQ(std::get<std::int64_t>(heartbeat->value), 500);
    EXPECT_EQ(heartbeat->origin.source, Source::kFile);
    EXPECT_EQ(heartbeat->origin.describe(), "/h/config.toml:6");
    EXPECT_EQ(std::get<std::string>(entry(*layer, "broker.endpoint")->value),
              "tcp://10.0.0.1:7000");
    EXPECT_EQ(entry(*layer, "broker.endpoint")->origin.where, "/h/config.toml:5");
    EXPECT_DOUBLE_EQ(std::get<double>(entry(*layer, "gateway.rate_limit")->value), 5.0)
        << "an integer for a number";
    EXPECT_EQ(entry(*layer, "gateway.rate_limit")->origin.where, "/h/config.toml:1");
    EXPECT_EQ(std::get<std::string>(entry(*layer, "log.format")->value), "json");
    EXPECT_FALSE(std::get<bool>(entry(*layer, "up.gateway")->value));
}

TEST(TomlLayerTest, AStructuredSettingTakesAnArrayOrATableAsItsJsonText) {
    const auto registry = testing::test_registry();
    auto layer = parse_toml(registry,
                            "[redaction]\n"
                            "rules = [\"email\", \"card\"]\n"
                            "[costs.prices]\n"
                            "\"gpt-4o\" = { input = 2.5, output = 10 }\n"
                            "\"a b\" = { input = 0.0, output = 1.5 }\n",
                            "/h/config.toml");
    ASSERT_TRUE(layer) << layer.error().message;
    const auto* rules = entry(*layer, "redaction.rules");
    ASSERT_NE(rules, nullptr);
    EXPECT_EQ(std::get<std::string>(rules->value), R"(["email","card"])");
    EXPECT_EQ(rules->origin.where, "/h/config.toml:2");
    const auto* prices = entry(*layer, "costs.prices");
    ASSERT_NE(prices, nullptr);
    const auto& json = std::get<std::string>(prices->value);
    EXPECT_NE(json.find(R"("gpt-4o":{"input":2.5,"output":10})"), std::string::npos) << json;
    EXPECT_NE(json.find(R"("a b":{)"), std::string::npos) << json;
    EXPECT_EQ(json.find('\n'), std::string::npos);
    // The same setting as plain text, as the environment gives it.
    layer = parse_toml(registry, "redaction.rules = \"email, phone\"\n", "/h/config.toml");
    ASSERT_TRUE(layer) << layer.error().message;
    EXPECT_EQ(std::get<std::string>(entry(*layer, "redaction.rules")->value), "email, phone");
    // An array for a setting that is not structured is still an error.
    EXPECT_EQ(error_of("[broker]\nendpoint = [\"a\"]\n"),
              "/h/config.toml:2: broker.endpoint: expected a string, got an array");
}

TEST(TomlLayerTest, AWrongTypeNamesFileLineAndKey) {
    EXPECT_EQ(error_of("[broker]\n\nheartbeat_ms = \"fast\"\n"),
              "/h/config.toml:3: broker.heartbeat_ms: expected an integer from 10 to 3600000, got "
              "\"fast\"");
    EXPECT_EQ(
        error_of("[broker]\nheartbeat_ms = 2.5\n"),
        "/h/config.toml:2: broker.heartbeat_ms: expected an integer from 10 to 3600000, got 2.5");
    EXPECT_EQ(error_of("[broker]\nheartbeat_ms = [1, 2]\n"),
              "/h/config.toml:2: broker.heartbeat_ms: expected an integer from 10 to 3600000, got "
              "an array");
    EXPECT_EQ(error_of("[broker]\nendpoint = 5555\n"),
              "/h/config.toml:2: broker.endpoint: expected a string, got 5555");
    EXPECT_EQ(error_of("up.gateway = \"no\"\n"),
              "/h/config.toml:1: up.gateway: expected true or false, got \"no\"");
}

TEST(TomlLayerTest, AValueOutOfBoundsOrNotAChoiceIsAnError) {
    EXPECT_EQ(
        error_of("[broker]\nheartbeat_ms = 5\n"),
        "/h/config.toml:2: broker.heartbeat_ms: expected an integer from 10 to 3600000, got 5");
    EXPECT_EQ(error_of("[broker]\nmax_queue = 0\n"),
              "/h/config.toml:2: broker.max_queue: expected a positive integer, got 0");
    EXPECT_EQ(error_of("[broker]\noverflow = \"drop\"\n"),
              "/h/config.toml:2: broker.overflow: expected one of \"reject\", \"drop-oldest\", got "
              "\"drop\"");
}

TEST(TomlLayerTest, UnknownKeysAndTablesAreErrorsWithASuggestion) {
    EXPECT_EQ(
        error_of("[broker]\nendpoint = \"x\"\nhartbeat_ms = 100\n"),
        "/h/config.toml:3: unknown key broker.hartbeat_ms (did you mean broker.heartbeat_ms?)");
    EXPECT_EQ(error_of("heartbeat_ms = 100\n"),
              "/h/config.toml:1: unknown key heartbeat_ms (did you mean broker.heartbeat_ms?)");
    EXPECT_EQ(error_of("\n[brokr]\nendpoint = \"x\"\n"),
              "/h/config.toml:2: unknown table [brokr] (did you mean [broker]?)");
    EXPECT_EQ(error_of("[nothing_like_it]\n"), "/h/config.toml:1: unknown table [nothing_like_it]");
    EXPECT_EQ(error_of("broker = 5\n"),
              "/h/config.toml:1: broker: expected a table of settings ([broker]), got 5");
}

// A connection string typed where it does not belong is quoted without its password.
TEST(TomlLayerTest, AnErrorQuotingAValueMasksThePasswordInIt) {
    EXPECT_EQ(error_of("broker = \"postgresql://u:s3cret@db1/g\"\n"),
              "/h/config.toml:1: broker: expected a table of settings ([broker]), got "
              "\"postgresql://u:***@db1/g\"");
    EXPECT_EQ(error_of("[broker]\noverflow = \"host=db1 password=s3cret\"\n"),
              "/h/config.toml:2: broker.overflow: expected one of \"reject\", \"drop-oldest\", "
              "got \"host=db1 password=***\"");
}

TEST(TomlLayerTest, ASyntaxErrorNamesLineAndColumn) {
    const auto message = error_of("[broker]\nheartbeat_ms = = 5\n");
    EXPECT_EQ(message.rfind("/h/config.toml:2:", 0), 0u) << message;
    const auto repeated = error_of("[broker]\nheartbeat_ms = 50\nheartbeat_ms = 60\n");
    EXPECT_EQ(repeated.rfind("/h/config.toml:3:", 0), 0u) << repeated;
}

TEST(TomlLayerTest, AMissingFileIsEmptyAndAFileIsRead) {
    const auto registry = testing::test_registry();
    const auto dir = std::filesystem::temp_directory_path() /
                     ("glassbox-toml-test-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir);
    auto missing = load_toml_file(registry, dir / "config.toml");
    ASSERT_TRUE(missing);
    EXPECT_TRUE(missing->entries.empty());
    std::ofstream(dir / "config.toml") << "[graph_rag]\nentity_limit = 7\n";
    auto read = load_toml_file(registry, dir / "config.toml");
    ASSERT_TRUE(read) << read.error().message;
    ASSERT_EQ(read->entries.size(), 1u);
    EXPECT_EQ(read->entries[0].origin.where, (dir / "config.toml").string() + ":2");
    auto folder = load_toml_file(registry, dir);
    EXPECT_FALSE(folder);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace glassbox::config
