// The embeddings service through a real Worker and the runtime tests' fake broker: answers, limits,
// errors.
#include "workers/embeddings/embeddings_service.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "schema/messages.hpp"
#include "schema/services.hpp"
#include "tests/support/fake_broker.hpp"
#include "tests/support/fake_openai_server.hpp"
#include "tests/support/service_worker_fixture.hpp"
#include "workers/embeddings/feature_hashing_embedder.hpp"
#include "workers/embeddings/openai_embedder.hpp"

namespace glassbox::embeddings {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace cmd = schema::protocol::worker_cmd;

class EmbeddingsServiceTest : public runtime::testing::ServiceWorkerTest {
protected:
    void start(std::shared_ptr<Embedder> embedder, Limits limits = {}) {
        start_worker(schema::services::kEmbeddings,
                     make_embeddings_handler(std::move(embedder), limits));
    }
};

TEST_F(EmbeddingsServiceTest, AnswersWithOneVectorPerText) {
    auto embedder = std::make_shared<FeatureHashingEmbedder>(32);
    start(embedder);
    request({{"texts", {"first text", "second text", ""}}});
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    auto response = schema::decode_body<schema::EmbeddingsResponse>(reply->frames[5]);
    ASSERT_TRUE(response) << response.error().describe();
    EXPECT_EQ(response->model, "glassbox-hashing-v1");
    EXPECT_EQ(response->dim, 32u);
    ASSERT_EQ(response->vectors.size(), 3u);
    EXPECT_EQ(response->vectors[0], embedder->embed_one("first text"));
    EXPECT_EQ(response->vectors[2], std::vector<double>(32, 0.0));
    EXPECT_TRUE(broker.skipped.empty()) << "no partials or explain from a supporting service";

    request({{"texts", json::array()}}, "empty");
    auto empty = broker.expect(cmd::kReply);
    ASSERT_TRUE(empty);
    EXPECT_EQ(json::parse(empty->frames[5])["vectors"], json::array());
}

TEST_F(EmbeddingsServiceTest, RefusesBodiesItDoesNotAccept) {
    start(std::make_shared<FeatureHashingEmbedder>(8));
    int n = 0;
    for (const json& bad : {json::array({1}), json("texts"), json::object(), json{{"texts", "one"}},
                            json{{"texts", {"a", 2}}}, json{{"texts", {{{"t", "x"}}}}}}) {
        const std::string token = "t" + std::to_string(n++);
        request(bad, token);
        const auto [type, message] = expect_error(token);
        EXPECT_EQ(type, "InvalidRequest") << bad.dump();
        EXPECT_NE(message.find("texts"), std::string::npos) << message;
    }
}

TEST_F(EmbeddingsServiceTest, EnforcesTheLimitsNamingThem) {
    Limits limits;
    limits.max_texts = 3;
    limits.max_text_bytes = 10;
    start(std::make_shared<FeatureHashingEmbedder>(8), limits);

    request({{"texts", {"a", "b", "c", "d"}}}, "many");
    auto [type, message] = expect_error("many");
    EXPECT_EQ(type, "InvalidRequest");
    EXPECT_NE(message.find("max_texts"), std::string::npos) << message;
    EXPECT_NE(message.find("3"), std::string::npos) << message;

    request({{"texts", {"short", "this one is too long"}}}, "long");
    std::tie(type, message) = expect_error("long");
    EXPECT_EQ(type, "InvalidRequest");
    EXPECT_NE(message.find("texts[1]"), std::string::npos) << message;
    EXPECT_NE(message.find("max_text_bytes"), std::string::npos) << message;

    request({{"texts", {"abc", "0123456789"}}}, "fits");  // exactly at both limits
    ASSERT_TRUE(broker.expect(cmd::kReply));
}

class EmbeddingsServiceUpstreamTest : public EmbeddingsServiceTest {
protected:
    std::shared_ptr<Embedder> openai(const std::string& key = "") {
        auto o = http::testing::quick_retry_options<OpenAiEmbedderOptions>(server.url(), "fake");
        o.api_key = key;
        return std::make_shared<OpenAiEmbedder>(o);
    }
    http::testing::FakeOpenAiServer server;
};

TEST_F(EmbeddingsServiceUpstreamTest, UpstreamFailuresBecomeUpstreamErrors) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control({{"api_key", "sk-right"}}));
    start(openai("sk-wrong"));
    request({{"texts", {"x"}}}, "key");
    auto [type, message] = expect_error("key");
    EXPECT_EQ(type, "UpstreamError");
    EXPECT_NE(message.find("HTTP 401"), std::string::npos) << message;
    EXPECT_EQ(message.find("sk-"), std::string::npos) << message;

    ASSERT_TRUE(server.control({{"api_key", nullptr}, {"malformed", "count"}}));
    request({{"texts", {"x", "y"}}}, "bad");
    std::tie(type, message) = expect_error("bad");
    EXPECT_EQ(type, "UpstreamError");
    EXPECT_NE(message.find("malformed answer"), std::string::npos) << message;

    ASSERT_TRUE(server.control({{"malformed", nullptr}}));
    request({{"texts", {"x", "y"}}}, "good");
    auto reply = broker.expect(cmd::kReply);
    ASSERT_TRUE(reply);
    EXPECT_EQ(json::parse(reply->frames[5])["dim"], 8);
}

TEST_F(EmbeddingsServiceUpstreamTest, TheRequestDeadlineBoundsTheProviderCall) {
    ASSERT_TRUE(server.ok());
    // The provider is slow on purpose, far past the 400 ms deadline and the 30 s wait below: an
    // error within that wait is the deadline's doing.
    ASSERT_TRUE(server.control({{"delay_ms", 60'000}}));
    start(openai());
    request({{"texts", {"slow"}}}, "slow", 400);
    auto [type, message] = expect_error("slow", 30s);
    EXPECT_EQ(type, "DeadlineExceeded") << message;
}

TEST_F(EmbeddingsServiceTest, UnreachableProviderIsAnUpstreamError) {
    OpenAiEmbedderOptions o;
    o.base_url = "http://127.0.0.1:1";  // port 1: nothing listens there
    o.http.initial_backoff = 10ms;
    o.http.max_retries = 1;
    start(std::make_shared<OpenAiEmbedder>(o));
    request({{"texts", {"x"}}}, "down");
    auto [type, message] = expect_error("down");
    EXPECT_EQ(type, "UpstreamError");
    EXPECT_NE(message.find("cannot connect"), std::string::npos) << message;
}

}  // namespace
}  // namespace glassbox::embeddings
