// OpenAiClient without a server: the endpoint URL built from a base URL, and the checks of an
// answer body (the fake OpenAI server tests of the llm and embeddings workers cover the requests).
#include "http/openai_client.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace glassbox::http {
namespace {

using base::ErrorType;

TEST(OpenAiUrl, AppendsTheVersionedPathWithoutDoublingSlashesOrV1) {
    EXPECT_EQ(openai_url("https://api.openai.com", "embeddings"),
              "https://api.openai.com/v1/embeddings");
    EXPECT_EQ(openai_url("https://api.openai.com/", "embeddings"),
              "https://api.openai.com/v1/embeddings");
    EXPECT_EQ(openai_url("http://host:8000/v1//", "chat/completions"),
              "http://host:8000/v1/chat/completions");
    EXPECT_EQ(openai_url("http://host/prefix/v1", "chat/completions"),
              "http://host/prefix/v1/chat/completions");
    EXPECT_EQ(openai_url("http://host/v1x", "embeddings"), "http://host/v1x/v1/embeddings");
}

TEST(OpenAiClient, AnswersThatAreNotJsonObjectsAreMalformedNamingTheUrl) {
    OpenAiClient client("http://127.0.0.1:9/", "embeddings", "", HttpOptions{});
    EXPECT_EQ(client.url(), "http://127.0.0.1:9/v1/embeddings");

    auto object = client.read_object(R"({"data": []})");
    ASSERT_TRUE(object) << object.error().describe();
    EXPECT_TRUE(object->contains("data"));

    auto array = client.read_object("[1, 2]");
    ASSERT_FALSE(array);
    EXPECT_EQ(array.error().type, ErrorType::kUpstreamError);
    EXPECT_EQ(array.error().message,
              "malformed answer from http://127.0.0.1:9/v1/embeddings: not a JSON object");

    auto text = client.read_object("not json");
    ASSERT_FALSE(text);
    EXPECT_EQ(text.error().type, ErrorType::kUpstreamError);
    EXPECT_EQ(
        text.error().message.rfind("malformed answer from http://127.0.0.1:9/v1/embeddings: ", 0),
        0u)
        << text.error().message;

    const auto why = client.malformed("no \"data\" array");
    EXPECT_EQ(why.type, ErrorType::kUpstreamError);
    EXPECT_EQ(why.message,
              "malformed answer from http://127.0.0.1:9/v1/embeddings: no \"data\" array");
}

}  // namespace
}  // namespace glassbox::http
