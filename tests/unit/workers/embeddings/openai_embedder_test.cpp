// OpenAiEmbedder against the fake server: batching and order, API key, answers it must refuse.
#include "workers/embeddings/openai_embedder.hpp"

#include <cstdlib>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/fake_openai_server.hpp"
#include "workers/embeddings/embeddings_config.hpp"

namespace glassbox::embeddings {
namespace {

using namespace std::chrono_literals;
using base::ErrorType;
using http::testing::FakeOpenAiServer;
using nlohmann::json;

OpenAiEmbedderOptions options_for(const FakeOpenAiServer& server, std::size_t batch_size = 64) {
    OpenAiEmbedderOptions o;
    o.base_url = server.url();
    o.model = "fake-embed";
    o.batch_size = batch_size;
    o.http.timeout = 10s;
    o.http.initial_backoff = 10ms;
    o.http.max_retries = 2;
    return o;
}

std::vector<std::string> numbered_texts(std::size_t n) {
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < n; ++i) texts.push_back("text number " + std::to_string(i));
    return texts;
}

class OpenAiEmbedderTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(server.ok()) << "could not start " << GLASSBOX_FAKE_OPENAI;
    }
    FakeOpenAiServer server{{"--dim", "8"}};
};

TEST_F(OpenAiEmbedderTest, BatchesSplitTheTextsAndKeepTheirOrder) {
    ASSERT_TRUE(server.control({{"reverse_data", true}}));  // the answer lists data in reverse
    OpenAiEmbedder embedder(options_for(server, 3));
    const auto texts = numbered_texts(10);
    auto result = embedder.embed(texts);
    ASSERT_TRUE(result) << result.error().describe();
    EXPECT_EQ(result->model, "fake-embed");
    EXPECT_EQ(result->dim, 8u);
    EXPECT_EQ(embedder.dim(), 8u);
    ASSERT_EQ(result->vectors.size(), 10u);

    const auto sent = server.requests_to("/v1/embeddings");
    ASSERT_EQ(sent.size(), 4u) << "ceil(10 / 3) requests";
    std::vector<std::string> inputs;
    for (const auto& r : sent) {
        EXPECT_EQ(r["body"]["model"], "fake-embed");
        EXPECT_LE(r["body"]["input"].size(), 3u);
        for (const auto& t : r["body"]["input"]) inputs.push_back(t.get<std::string>());
    }
    EXPECT_EQ(inputs, texts);

    // Each vector is the one the server gives that text alone: order survived batching.
    OpenAiEmbedder single(options_for(server, 1));
    for (std::size_t i : {0u, 4u, 9u}) {
        auto alone = single.embed(std::span<const std::string>(&texts[i], 1));
        ASSERT_TRUE(alone) << alone.error().describe();
        EXPECT_EQ(alone->vectors[0], result->vectors[i]) << i;
    }
    EXPECT_NE(result->vectors[0], result->vectors[1]);
}

TEST_F(OpenAiEmbedderTest, NoTextsNoRequest) {
    OpenAiEmbedder embedder(options_for(server));
    auto result = embedder.embed(std::span<const std::string>{});
    ASSERT_TRUE(result);
    EXPECT_TRUE(result->vectors.empty());
    EXPECT_TRUE(server.requests_to("/v1/embeddings").empty());
}

TEST_F(OpenAiEmbedderTest, SendsTheApiKeyAsBearer) {
    ASSERT_TRUE(server.control({{"api_key", "sk-test-123"}}));
    auto options = options_for(server);
    options.api_key = "sk-test-123";
    OpenAiEmbedder embedder(options);
    auto result = embedder.embed(numbered_texts(2));
    ASSERT_TRUE(result) << result.error().describe();
    const auto sent = server.requests_to("/v1/embeddings");
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0]["headers"]["Authorization"], "Bearer sk-test-123");

    options.api_key = "sk-wrong-456";
    OpenAiEmbedder wrong(options);
    auto refused = wrong.embed(numbered_texts(2));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().type, ErrorType::kUpstreamError);
    EXPECT_NE(refused.error().message.find("HTTP 401 from " + server.url("/v1/embeddings") +
                                           ": Incorrect API key provided."),
              std::string::npos)
        << refused.error().message;
    EXPECT_EQ(refused.error().message.find("sk-wrong"), std::string::npos)
        << "the key is never repeated";
}

TEST_F(OpenAiEmbedderTest, MalformedAnswersAreUpstreamErrors) {
    for (const char* mode : {"json", "count", "dim", "nan", "index", "no_data"}) {
        ASSERT_TRUE(server.control({{"malformed", mode}}));
        OpenAiEmbedder embedder(options_for(server));
        auto result = embedder.embed(numbered_texts(3));
        ASSERT_FALSE(result) << mode;
        EXPECT_EQ(result.error().type, ErrorType::kUpstreamError) << mode;
        EXPECT_NE(
            result.error().message.find("malformed answer from " + server.url("/v1/embeddings")),
            std::string::npos)
            << mode << ": " << result.error().message;
    }
}

TEST_F(OpenAiEmbedderTest, AnswersOfAnotherDimensionAreRefused) {
    auto options = options_for(server);
    options.dim = 16;  // the fake answers 8
    OpenAiEmbedder expecting(options);
    auto result = expecting.embed(numbered_texts(1));
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().type, ErrorType::kUpstreamError);
    EXPECT_NE(result.error().message.find("where 16 were expected"), std::string::npos)
        << result.error().message;

    // A learned dimension holds for later calls too.
    OpenAiEmbedder learning(options_for(server));
    ASSERT_TRUE(learning.embed(numbered_texts(1)));
    ASSERT_TRUE(server.control({{"dim", 4}}));
    auto changed = learning.embed(numbered_texts(1));
    ASSERT_FALSE(changed);
    EXPECT_EQ(changed.error().type, ErrorType::kUpstreamError);
}

TEST_F(OpenAiEmbedderTest, RetriesTransientFailuresThroughTheHttpClient) {
    ASSERT_TRUE(server.control({{"fail_first", 1}, {"fail_status", 500}}));
    OpenAiEmbedder embedder(options_for(server));
    auto result = embedder.embed(numbered_texts(2));
    ASSERT_TRUE(result) << result.error().describe();
    EXPECT_EQ(server.requests_to("/v1/embeddings").size(), 2u);
}

TEST_F(OpenAiEmbedderTest, DeadlineBoundsTheCall) {
    ASSERT_TRUE(server.control({{"delay_ms", 3000}}));
    OpenAiEmbedder embedder(options_for(server));
    EmbedOptions options;
    options.deadline = Clock::now() + 300ms;
    // Without the deadline the call would succeed after the server's 3 s.
    auto result = embedder.embed(numbered_texts(1), options);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().type, ErrorType::kTimeout);
}

TEST_F(OpenAiEmbedderTest, ConfigReadsTheKeyFromTheNamedVariable) {
    ASSERT_TRUE(server.control({{"api_key", "sk-from-env"}}));
    const std::string variable = "GLASSBOX_TEST_EMBED_KEY_" + std::to_string(::getpid());
    ::setenv(variable.c_str(), "sk-from-env", 1);
    auto config = EmbeddingsConfig::from_json({{"provider", "openai"},
                                               {"base_url", server.url() + "/v1/"},
                                               {"model", "m"},
                                               {"api_key_env", variable}});
    ASSERT_TRUE(config) << config.error().describe();
    auto embedder = make_embedder(*config);
    ::unsetenv(variable.c_str());
    ASSERT_TRUE(embedder) << embedder.error().describe();
    auto result = (*embedder)->embed(numbered_texts(1));
    ASSERT_TRUE(result) << result.error().describe();
    EXPECT_EQ(result->model, "m");
    EXPECT_EQ(server.requests_to("/v1/embeddings").size(), 1u)
        << "a base_url ending in /v1/ is not doubled";

    auto missing = make_embedder(*config);  // the variable is gone now
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().type, ErrorType::kInvalidRequest);
    EXPECT_NE(missing.error().message.find(variable), std::string::npos);
}

}  // namespace
}  // namespace glassbox::embeddings
