// EmbeddingsConfig::from_json: documented defaults, every key read, bad values refused by name.
#include "workers/embeddings/embeddings_config.hpp"

#include <gtest/gtest.h>

#include "workers/embeddings/feature_hashing_embedder.hpp"

namespace glassbox::embeddings {
namespace {

using base::ErrorType;
using nlohmann::json;

TEST(EmbeddingsConfig, EmptyObjectGivesTheDefaults) {
    auto config = EmbeddingsConfig::from_json(json::object());
    ASSERT_TRUE(config) << config.error().describe();
    EXPECT_EQ(config->provider, Provider::kHashing);
    EXPECT_EQ(config->dim, 0u);
    EXPECT_EQ(config->batch_size, 64u);
    EXPECT_EQ(config->timeout, std::chrono::milliseconds(30'000));
    EXPECT_EQ(config->max_retries, 3);
    EXPECT_EQ(config->api_key_env, "OPENAI_API_KEY");
    EXPECT_EQ(config->limits.max_texts, 1024u);
    EXPECT_EQ(config->limits.max_text_bytes, 65536u);

    auto embedder = make_embedder(*config);
    ASSERT_TRUE(embedder);
    EXPECT_EQ((*embedder)->dim(), kDefaultHashingDim);
    EXPECT_EQ((*embedder)->model(), "glassbox-hashing-v1");
}

TEST(EmbeddingsConfig, ReadsEveryKey) {
    auto config = EmbeddingsConfig::from_json({{"provider", "openai"},
                                               {"dim", 1536},
                                               {"base_url", "http://127.0.0.1:8080"},
                                               {"model", "nomic-embed-text"},
                                               {"api_key_env", ""},
                                               {"batch_size", 16},
                                               {"timeout_ms", 5000},
                                               {"max_retries", 0},
                                               {"max_texts", 10},
                                               {"max_text_bytes", 100}});
    ASSERT_TRUE(config) << config.error().describe();
    EXPECT_EQ(config->provider, Provider::kOpenAi);
    EXPECT_EQ(config->dim, 1536u);
    EXPECT_EQ(config->base_url, "http://127.0.0.1:8080");
    EXPECT_EQ(config->model, "nomic-embed-text");
    EXPECT_EQ(config->api_key_env, "");
    EXPECT_EQ(config->batch_size, 16u);
    EXPECT_EQ(config->timeout, std::chrono::milliseconds(5000));
    EXPECT_EQ(config->max_retries, 0);
    EXPECT_EQ(config->limits.max_texts, 10u);
    EXPECT_EQ(config->limits.max_text_bytes, 100u);

    auto embedder = make_embedder(*config);  // no key needed: api_key_env is ""
    ASSERT_TRUE(embedder) << embedder.error().describe();
    EXPECT_EQ((*embedder)->model(), "nomic-embed-text");
    EXPECT_EQ((*embedder)->dim(), 1536u);

    auto hashing = EmbeddingsConfig::from_json({{"dim", 64}});
    ASSERT_TRUE(hashing);
    auto small = make_embedder(*hashing);
    ASSERT_TRUE(small);
    EXPECT_EQ((*small)->dim(), 64u);
}

TEST(EmbeddingsConfig, BadValuesAreInvalidRequestsNamingTheKey) {
    struct Case {
        json config;
        const char* names;
    };
    for (const Case& c : {
             Case{json::array(), "JSON object"},
             Case{{{"provider", "word2vec"}}, "provider"},
             Case{{{"provider", 1}}, "provider"},
             Case{{{"dim", -1}}, "dim"},
             Case{{{"dim", 0}}, "dim"},
             Case{{{"dim", 1'000'000}}, "dim"},
             Case{{{"dim", "384"}}, "dim"},
             Case{{{"base_url", "ftp://x"}}, "base_url"},
             Case{{{"model", ""}}, "model"},
             Case{{{"api_key_env", 5}}, "api_key_env"},
             Case{{{"batch_size", 0}}, "batch_size"},
             Case{{{"batch_size", 1.5}}, "batch_size"},
             Case{{{"timeout_ms", 0}}, "timeout_ms"},
             Case{{{"max_retries", 11}}, "max_retries"},
             Case{{{"max_texts", 0}}, "max_texts"},
             Case{{{"max_text_bytes", true}}, "max_text_bytes"},
             Case{{{"dimension", 384}}, "unknown embeddings setting \"dimension\""},
         }) {
        auto config = EmbeddingsConfig::from_json(c.config);
        ASSERT_FALSE(config) << c.config.dump();
        EXPECT_EQ(config.error().type, ErrorType::kInvalidRequest);
        EXPECT_NE(config.error().message.find(c.names), std::string::npos)
            << config.error().message;
    }
}

TEST(EmbeddingsConfig, AnUnknownProviderNamesTheChoices) {
    auto config = EmbeddingsConfig::from_json({{"provider", "word2vec"}});
    ASSERT_FALSE(config);
    EXPECT_EQ(config.error().message,
              "embeddings setting \"provider\" must be \"hashing\" or \"openai\", not "
              "\"word2vec\"");
    auto openai = EmbeddingsConfig::from_json({{"provider", "openai"}});
    ASSERT_TRUE(openai);
    EXPECT_EQ(openai->provider, Provider::kOpenAi);
}

TEST(EmbeddingsConfig, OpenAiDimZeroMeansLearnFromTheModel) {
    auto config =
        EmbeddingsConfig::from_json({{"provider", "openai"}, {"dim", 0}, {"api_key_env", ""}});
    ASSERT_TRUE(config) << config.error().describe();
    auto embedder = make_embedder(*config);
    ASSERT_TRUE(embedder);
    EXPECT_EQ((*embedder)->dim(), 0u);
}

}  // namespace
}  // namespace glassbox::embeddings
