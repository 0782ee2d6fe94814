// Precedence (default < state < file < environment < flag), environment aliases, and errors that
// name the variable or the flag.
#include "config/resolve.hpp"

#include <map>
#include <stdexcept>

#include <gtest/gtest.h>

#include "config/toml_layer.hpp"
#include "tests/unit/config/test_registry.hpp"

namespace glassbox::config {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
        const auto found = vars.find(name);
        if (found == vars.end()) return std::nullopt;
        return found->second;
    };
}

class ResolveTest : public ::testing::Test {
protected:
    Registry registry = testing::test_registry();

    Layer file(std::string_view text) {
        auto layer = parse_toml(registry, text, "/h/config.toml");
        EXPECT_TRUE(layer) << layer.error().message;
        return layer ? std::move(layer).value() : Layer{};
    }
    Layer env(std::map<std::string, std::string> vars) {
        auto layer = read_env(registry, env_of(std::move(vars)));
        EXPECT_TRUE(layer) << layer.error().message;
        return layer ? std::move(layer).value() : Layer{};
    }
    Layer flags(std::vector<FlagValue> given) {
        auto layer = read_flags(registry, given);
        EXPECT_TRUE(layer) << layer.error().message;
        return layer ? std::move(layer).value() : Layer{};
    }
};

TEST_F(ResolveTest, DefaultsWhenNothingIsGiven) {
    const Resolved resolved(registry, {});
    EXPECT_EQ(resolved.integer("broker.heartbeat_ms"), 2500);
    EXPECT_EQ(resolved.text("broker.endpoint"), "tcp://127.0.0.1:5555");
    EXPECT_TRUE(resolved.boolean("up.gateway"));
    EXPECT_DOUBLE_EQ(resolved.number("gateway.rate_limit"), 50.0);
    EXPECT_EQ(resolved.origin("broker.heartbeat_ms").describe(), "default");
    EXPECT_FALSE(resolved.is_set("broker.heartbeat_ms"));
}

TEST_F(ResolveTest, FileBeatsStateEnvBeatsFileFlagBeatsEnv) {
    Layer state;
    state.set("broker.endpoint", Value{std::string("tcp://127.0.0.1:40000")},
              Origin{Source::kState, "/h/run/endpoints.json"});
    state.set("broker.heartbeat_ms", Value{std::int64_t{20}},
              Origin{Source::kState, "/h/run/endpoints.json"});
    const Layer from_file = file(
        "[broker]\nheartbeat_ms = 500\noverflow = \"drop-oldest\"\n[graph_rag]\nentity_limit = "
        "9\n");
    const Layer from_env =
        env({{"GLASSBOX_BROKER_HEARTBEAT_MS", "700"}, {"GLASSBOX_GRAPH_RAG_ENTITY_LIMIT", "11"}});
    const Layer from_flags = flags({{"broker.heartbeat_ms", "--heartbeat-ms", "900"}});

    const Resolved only_state(registry, {&state});
    EXPECT_EQ(only_state.text("broker.endpoint"), "tcp://127.0.0.1:40000");
    EXPECT_EQ(only_state.origin("broker.endpoint").describe(), "state /h/run/endpoints.json");

    const Resolved with_file(registry, {&state, &from_file});
    EXPECT_EQ(with_file.integer("broker.heartbeat_ms"), 500) << "the file beats the state";
    EXPECT_EQ(with_file.origin("broker.heartbeat_ms").describe(), "/h/config.toml:2");
    EXPECT_EQ(with_file.text("broker.endpoint"), "tcp://127.0.0.1:40000")
        << "the file does not name it";

    const Resolved with_env(registry, {&state, &from_file, &from_env});
    EXPECT_EQ(with_env.integer("broker.heartbeat_ms"), 700) << "env beats the file";
    EXPECT_EQ(with_env.origin("broker.heartbeat_ms").describe(),
              "env GLASSBOX_BROKER_HEARTBEAT_MS");
    EXPECT_EQ(with_env.integer("graph_rag.entity_limit"), 11);
    EXPECT_EQ(with_env.text("broker.overflow"), "drop-oldest")
        << "env does not name it: the file's";

    const Resolved all(registry, {&state, &from_file, &from_env, &from_flags});
    EXPECT_EQ(all.integer("broker.heartbeat_ms"), 900) << "a flag beats env";
    EXPECT_EQ(all.origin("broker.heartbeat_ms").describe(), "flag --heartbeat-ms");
    EXPECT_EQ(all.integer("graph_rag.entity_limit"), 11);
    EXPECT_EQ(all.origin("broker.overflow").describe(), "/h/config.toml:3");
}

TEST_F(ResolveTest, OlderEnvironmentNamesStillWorkBelowTheNewOne) {
    auto old_name = env({{"GLASSBOX_BROKER", "tcp://old:1"}});
    const Resolved by_alias(registry, {&old_name});
    EXPECT_EQ(by_alias.text("broker.endpoint"), "tcp://old:1");
    EXPECT_EQ(by_alias.origin("broker.endpoint").describe(), "env GLASSBOX_BROKER");

    auto both =
        env({{"GLASSBOX_BROKER", "tcp://old:1"}, {"GLASSBOX_BROKER_ENDPOINT", "tcp://new:2"}});
    const Resolved by_name(registry, {&both});
    EXPECT_EQ(by_name.text("broker.endpoint"), "tcp://new:2");

    auto empty = env({{"GLASSBOX_BROKER_ENDPOINT", ""}, {"GLASSBOX_BROKER", "tcp://old:1"}});
    const Resolved skipped(registry, {&empty});
    EXPECT_EQ(skipped.text("broker.endpoint"), "tcp://old:1")
        << "an empty variable counts as unset";
}

TEST_F(ResolveTest, BadEnvironmentAndFlagValuesNameTheirSource) {
    auto bad_env = read_env(registry, env_of({{"GLASSBOX_BROKER_HEARTBEAT_MS", "fast"}}));
    ASSERT_FALSE(bad_env);
    EXPECT_EQ(bad_env.error().message,
              "env GLASSBOX_BROKER_HEARTBEAT_MS: broker.heartbeat_ms: expected an integer from 10 "
              "to 3600000, got \"fast\"");
    auto bad_flag = read_flags(registry, {{"broker.overflow", "--overflow", "sometimes"}});
    ASSERT_FALSE(bad_flag);
    EXPECT_EQ(bad_flag.error().message,
              "flag --overflow: broker.overflow: expected one of \"reject\", \"drop-oldest\", got "
              "\"sometimes\"");
}

TEST_F(ResolveTest, AFlagGivenTwiceKeepsTheLast) {
    const Layer given = flags({{"broker.heartbeat_ms", "--heartbeat-ms", "100"},
                               {"broker.heartbeat_ms", "--heartbeat-ms", "200"}});
    const Resolved resolved(registry, {&given});
    EXPECT_EQ(resolved.integer("broker.heartbeat_ms"), 200);
}

TEST_F(ResolveTest, AskingForTheWrongKindOrAnUnknownKeyIsAProgrammerError) {
    const Resolved resolved(registry, {});
    EXPECT_THROW(resolved.integer("broker.endpoint"), std::logic_error);
    EXPECT_THROW(resolved.text("broker.heartbeat_ms"), std::logic_error);
    EXPECT_THROW(resolved.value("no.such"), std::logic_error);
    EXPECT_THROW(read_flags(registry, {{"no.such", "--x", "1"}}), std::logic_error);
}

}  // namespace
}  // namespace glassbox::config
