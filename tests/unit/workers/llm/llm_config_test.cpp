// LlmConfig: defaults, every key checked, the provider chosen, the API key read at start-up.
#include "workers/llm/llm_config.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace glassbox::llm {
namespace {

using base::ErrorType;
using nlohmann::json;

TEST(LlmConfigTest, DefaultsToTheExtractiveProvider) {
    auto config = LlmConfig::from_json(json::object());
    ASSERT_TRUE(config) << config.error().describe();
    EXPECT_EQ(config->effective_provider(), ProviderKind::kExtractive);
    EXPECT_EQ(config->timeout, std::chrono::milliseconds(120'000));
    EXPECT_EQ(config->connect_timeout, std::chrono::milliseconds(5'000));
    EXPECT_EQ(config->max_retries, 2);
    EXPECT_EQ(config->api_key_env, "OPENAI_API_KEY");
    EXPECT_EQ(config->extractive_delay, std::chrono::milliseconds(0));
    auto provider = make_provider(*config);
    ASSERT_TRUE(provider);
    EXPECT_EQ((*provider)->name(), "extractive");
}

TEST(LlmConfigTest, AModelMeansOpenAiUnlessTheProviderSaysOtherwise) {
    auto config = LlmConfig::from_json(json{{"model", "llama3"},
                                            {"api_key_env", ""},
                                            {"base_url", "http://127.0.0.1:11434"},
                                            {"timeout_ms", 5000},
                                            {"connect_timeout_ms", 200},
                                            {"max_retries", 0},
                                            {"temperature", 0.7},
                                            {"templates", "/tmp/t"}});
    ASSERT_TRUE(config) << config.error().describe();
    EXPECT_EQ(config->effective_provider(), ProviderKind::kOpenAi);
    EXPECT_EQ(config->timeout, std::chrono::milliseconds(5000));
    EXPECT_EQ(config->connect_timeout, std::chrono::milliseconds(200));
    EXPECT_EQ(config->max_retries, 0);
    EXPECT_DOUBLE_EQ(config->temperature, 0.7);
    EXPECT_EQ(config->templates, "/tmp/t");
    auto provider = make_provider(*config);
    ASSERT_TRUE(provider) << provider.error().describe();
    EXPECT_EQ((*provider)->name(), "openai");

    auto forced = LlmConfig::from_json(
        json{{"model", "llama3"}, {"provider", "extractive"}, {"extractive_delay_ms", 250}});
    ASSERT_TRUE(forced);
    EXPECT_EQ(forced->effective_provider(), ProviderKind::kExtractive);
    EXPECT_EQ(forced->extractive_delay, std::chrono::milliseconds(250));
}

TEST(LlmConfigTest, BadValuesAndUnknownKeysAreNamed) {
    const auto error_of = [](const json& j) {
        auto c = LlmConfig::from_json(j);
        EXPECT_FALSE(c) << j.dump();
        return c ? std::string() : c.error().message;
    };
    EXPECT_NE(error_of(json::array()).find("JSON object"), std::string::npos);
    EXPECT_EQ(error_of({{"provider", "gpt"}}),
              "llm setting \"provider\" must be \"extractive\" or \"openai\", not \"gpt\"");
    EXPECT_EQ(error_of({{"provider", 1}}), "llm setting \"provider\" must be a string");
    EXPECT_NE(error_of({{"provider", "openai"}}).find("\"model\""), std::string::npos);
    EXPECT_NE(error_of({{"base_url", "ftp://x"}}).find("\"base_url\""), std::string::npos);
    EXPECT_NE(error_of({{"timeout_ms", 0}}).find("\"timeout_ms\""), std::string::npos);
    EXPECT_NE(error_of({{"timeout_ms", "5"}}).find("\"timeout_ms\""), std::string::npos);
    EXPECT_NE(error_of({{"connect_timeout_ms", -1}}).find("\"connect_timeout_ms\""),
              std::string::npos);
    EXPECT_NE(error_of({{"max_retries", 11}}).find("\"max_retries\""), std::string::npos);
    EXPECT_NE(error_of({{"temperature", 3}}).find("\"temperature\""), std::string::npos);
    EXPECT_NE(error_of({{"extractive_delay_ms", 600'001}}).find("\"extractive_delay_ms\""),
              std::string::npos);
    EXPECT_NE(error_of({{"modle", "x"}}).find("unknown llm setting \"modle\""), std::string::npos);
}

TEST(LlmConfigTest, TheApiKeyVariableMustBeSet) {
    ::unsetenv("GLASSBOX_TEST_NO_SUCH_KEY");
    auto config =
        LlmConfig::from_json(json{{"model", "m"}, {"api_key_env", "GLASSBOX_TEST_NO_SUCH_KEY"}});
    ASSERT_TRUE(config);
    auto provider = make_provider(*config);
    ASSERT_FALSE(provider);
    EXPECT_EQ(provider.error().type, ErrorType::kInvalidRequest);
    EXPECT_NE(provider.error().message.find("GLASSBOX_TEST_NO_SUCH_KEY"), std::string::npos);
    ::setenv("GLASSBOX_TEST_NO_SUCH_KEY", "sk-x", 1);
    EXPECT_TRUE(make_provider(*config));
    ::unsetenv("GLASSBOX_TEST_NO_SUCH_KEY");
}

}  // namespace
}  // namespace glassbox::llm
