// The OpenAI-compatible provider against tests/support/fake_openai.py: plain and streamed
// answers with usage, retries honouring Retry-After, the JSON repair retry, timeouts and an
// endpoint that refuses connections.
#include "workers/llm/openai_provider.hpp"

#include <gtest/gtest.h>

#include "reasoner/reasoner.hpp"
#include "tests/support/closed_port.hpp"
#include "tests/support/fake_openai_server.hpp"

namespace glassbox::llm {
namespace {

using namespace std::chrono_literals;
using base::ErrorType;
using http::testing::FakeOpenAiServer;
using nlohmann::json;

class OpenAiProviderTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto set = TemplateSet::builtin();
        ASSERT_TRUE(set);
        templates = std::move(set).value();
    }

    OpenAiProviderOptions options(const std::string& base_url) {
        OpenAiProviderOptions o;
        o.base_url = base_url;
        o.model = "fake-model";
        o.http.initial_backoff = 10ms;
        o.http.max_retries = 2;
        o.http.timeout = 10s;
        return o;
    }

    // Runs `name` with `variables` on `provider`.
    base::Result<Completion> run(Provider& provider, const std::string& name,
                                 const std::map<std::string, std::string>& variables,
                                 const GenerateOptions& generate = {}) {
        const auto* t = templates.find(name);
        EXPECT_NE(t, nullptr);
        auto rendered = t->render(variables);
        EXPECT_TRUE(rendered) << rendered.error().describe();
        return provider.generate(PromptInput{*t, variables, *rendered}, generate);
    }

    const std::map<std::string, std::string> concepts_question{
        {"question", "Where is Cruz_Azul_FC?"}};
    const std::map<std::string, std::string> synthesis_variables{
        {"question", "Where is Cruz Azul FC?"},
        {"edges", R"([{"id": "e1", "s": "Cruz Azul FC", "p": "is in country", "o": "Mexico"}])"}};
    // A reply that keeps kg-synthesis's answer contract for synthesis_variables.
    const std::string kept_reply = "Answer: Mexico [e1]\nCruz Azul FC is in Mexico [e1].";
    TemplateSet templates = TemplateSet::builtin().value();
    FakeOpenAiServer server;
};

TEST_F(OpenAiProviderTest, TextAnswerWithUsageAndTheEndpointsModel) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(
        server.control({{"chat_model", "served-model-v2"}, {"chat_replies", {kept_reply}}}));
    auto o = options(server.url());
    o.api_key = "sk-test";
    OpenAiProvider provider(o);
    auto c = run(provider, "kg-synthesis", synthesis_variables);
    ASSERT_TRUE(c) << c.error().describe();
    EXPECT_EQ(c->text, kept_reply) << "the whole reply: the llm service splits the Answer line";
    EXPECT_EQ(c->model, "served-model-v2");
    EXPECT_GT(c->in_tokens, 20u);
    EXPECT_EQ(c->out_tokens, static_cast<std::uint64_t>(reasoner::count_words(c->text)));
    EXPECT_FALSE(c->json);

    const auto requests = server.requests_to("/v1/chat/completions");
    ASSERT_EQ(requests.size(), 1u);
    const json& body = requests[0]["body"];
    EXPECT_EQ(body["model"], "fake-model");
    EXPECT_FALSE(body.contains("response_format")) << "text templates ask for text";
    EXPECT_FALSE(body.contains("stream"));
    EXPECT_EQ(body["messages"].back()["role"], "user");
    const auto prompt = body["messages"].back()["content"].get<std::string>();
    EXPECT_TRUE(prompt.starts_with("Answer the question")) << prompt;
    EXPECT_NE(prompt.find("Cruz Azul FC"), std::string::npos);
    EXPECT_NE(prompt.find("Answer: "), std::string::npos) << "asks for the Answer line";
    EXPECT_EQ(requests[0]["headers"]["Authorization"], "Bearer sk-test");
}

TEST_F(OpenAiProviderTest, TheConfiguredModelWhenTheEndpointNamesNone) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control({{"chat_replies", {kept_reply}}}));
    OpenAiProvider provider(options(server.url() + "/v1/"));  // "/v1/" is not doubled
    auto c = run(provider, "kg-synthesis", synthesis_variables);
    ASSERT_TRUE(c) << c.error().describe();
    EXPECT_EQ(c->model, "fake-model") << "the fake names the requested model";
    EXPECT_EQ(server.requests_to("/v1/chat/completions").size(), 1u);
}

TEST_F(OpenAiProviderTest, StreamsDeltasWithUsageFromTheStream) {
    ASSERT_TRUE(server.ok());
    OpenAiProvider provider(options(server.url()));
    std::vector<std::string> pieces;
    GenerateOptions generate;
    generate.on_text = [&pieces](std::string_view piece) { pieces.emplace_back(piece); };
    // A free-text template (no answer contract) streams the endpoint's deltas.
    auto free_text = PromptTemplate::parse(
        "summary", "output: text\n---\nSummarise for {{question}} the text: {{chunks}}", "test");
    ASSERT_TRUE(free_text);
    const std::map<std::string, std::string> variables{
        {"question", "q?"}, {"chunks", R"([{"id": "c1", "text": "t", "title": "x"}])"}};
    auto rendered = free_text->render(variables);
    ASSERT_TRUE(rendered);
    auto c = provider.generate(PromptInput{*free_text, variables, *rendered}, generate);
    ASSERT_TRUE(c) << c.error().describe();
    ASSERT_GT(pieces.size(), 5u) << "one SSE delta per word";
    std::string joined;
    for (const auto& p : pieces) joined += p;
    EXPECT_EQ(joined, c->text);
    EXPECT_TRUE(c->text.starts_with("echo: "));
    EXPECT_GT(c->in_tokens, 0u) << "usage arrives in the stream's last chunk";
    EXPECT_EQ(c->out_tokens, static_cast<std::uint64_t>(reasoner::count_words(c->text)));
    const auto requests = server.requests_to("/v1/chat/completions");
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0]["body"]["stream"], true);
    EXPECT_EQ(requests[0]["body"]["stream_options"]["include_usage"], true);
}

TEST_F(OpenAiProviderTest, RetriesA429HonouringRetryAfter) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control({{"fail_first", 1},
                                {"fail_status", 429},
                                {"retry_after", "1"},
                                {"chat_replies", {kept_reply}}}));
    OpenAiProvider provider(options(server.url()));
    const auto start = std::chrono::steady_clock::now();
    auto c = run(provider, "kg-synthesis", synthesis_variables);
    ASSERT_TRUE(c) << c.error().describe();
    EXPECT_GE(std::chrono::steady_clock::now() - start, 900ms) << "waited the Retry-After second";
    EXPECT_EQ(server.requests_to("/v1/chat/completions").size(), 2u);
}

TEST_F(OpenAiProviderTest, JsonTemplatesAskForJsonAndParseTheAnswer) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(
        server.control({{"chat_replies", {R"({"concepts": ["Cruz Azul FC", "country"]})"}}}));
    OpenAiProvider provider(options(server.url()));
    auto c = run(provider, "extract-concepts", concepts_question);
    ASSERT_TRUE(c) << c.error().describe();
    ASSERT_TRUE(c->json);
    EXPECT_EQ((*c->json)["concepts"], json({"Cruz Azul FC", "country"}));
    const auto requests = server.requests_to("/v1/chat/completions");
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0]["body"]["response_format"]["type"], "json_object");
    EXPECT_EQ(requests[0]["body"]["messages"][0]["role"], "system");
}

TEST_F(OpenAiProviderTest, MalformedJsonIsRepairedOnce) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control({{"chat_replies",
                                 {"Sure! The concepts are Cruz Azul FC.",
                                  "```json\n{\"concepts\": [\"Cruz Azul FC\"]}\n```"}}}));
    OpenAiProvider provider(options(server.url()));
    auto c = run(provider, "extract-concepts", concepts_question);
    ASSERT_TRUE(c) << c.error().describe();
    ASSERT_TRUE(c->json);
    EXPECT_EQ((*c->json)["concepts"], json({"Cruz Azul FC"}));
    EXPECT_EQ(json::parse(c->text, nullptr, false), *c->json) << "the fence is gone from the text";
    const auto requests = server.requests_to("/v1/chat/completions");
    ASSERT_EQ(requests.size(), 2u);
    const json& repair = requests[1]["body"]["messages"];
    ASSERT_GE(repair.size(), 4u);
    EXPECT_EQ(repair[repair.size() - 2]["role"], "assistant");
    EXPECT_EQ(repair[repair.size() - 2]["content"], "Sure! The concepts are Cruz Azul FC.");
    EXPECT_NE(repair.back()["content"].get<std::string>().find("not valid JSON"),
              std::string::npos);
    EXPECT_GT(c->in_tokens, 0u);
}

TEST_F(OpenAiProviderTest, AnAnswerStillInvalidAfterTheRepairIsAnUpstreamError) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control(
        {{"chat_replies", {R"({"topics": []})", R"({"concepts": "Cruz Azul FC"})"}}}));
    OpenAiProvider provider(options(server.url()));
    auto c = run(provider, "extract-concepts", concepts_question);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().type, ErrorType::kUpstreamError);
    EXPECT_NE(c.error().message.find("after one repair"), std::string::npos) << c.error().message;
    EXPECT_NE(c.error().message.find("$.concepts: expected array, got string"), std::string::npos)
        << c.error().message;
    const auto requests = server.requests_to("/v1/chat/completions");
    ASSERT_EQ(requests.size(), 2u) << "exactly one repair";
    EXPECT_NE(requests[1]["body"]["messages"].back()["content"].get<std::string>().find(
                  "missing required property \"concepts\""),
              std::string::npos);
}

// ---- the answer contract of the synthesis templates -------------------------------------------

TEST_F(OpenAiProviderTest, AReplyWithoutTheAnswerLineIsRepaired) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(
        server.control({{"chat_replies", {"Cruz Azul FC is in Mexico [e1].", kept_reply}}}));
    OpenAiProvider provider(options(server.url()));
    std::vector<std::string> pieces;
    GenerateOptions generate;
    generate.on_text = [&pieces](std::string_view piece) { pieces.emplace_back(piece); };
    auto c = run(provider, "kg-synthesis", synthesis_variables, generate);
    ASSERT_TRUE(c) << c.error().describe();
    EXPECT_EQ(c->text, kept_reply);
    // Only the checked reply is handed on, whole; the broken one never was.
    EXPECT_EQ(pieces, std::vector<std::string>{kept_reply});
    const auto requests = server.requests_to("/v1/chat/completions");
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_FALSE(requests[0]["body"].contains("stream")) << "checked whole, so not streamed";
    const json& repair = requests[1]["body"]["messages"];
    ASSERT_GE(repair.size(), 3u);
    EXPECT_EQ(repair[repair.size() - 2]["role"], "assistant");
    EXPECT_EQ(repair[repair.size() - 2]["content"], "Cruz Azul FC is in Mexico [e1].");
    EXPECT_NE(repair.back()["content"].get<std::string>().find("\"Answer:\" line"),
              std::string::npos)
        << repair.back()["content"];
    // Tokens of both calls (the fake counts words).
    EXPECT_EQ(c->out_tokens,
              static_cast<std::uint64_t>(
                  reasoner::count_words(repair[repair.size() - 2]["content"].get<std::string>()) +
                  reasoner::count_words(kept_reply)));
}

TEST_F(OpenAiProviderTest, AReplyTwiceWithoutTheAnswerLineIsAnUpstreamError) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control(
        {{"chat_replies", {"Cruz Azul FC is in Mexico [e1].", "It is in Mexico [e1]."}}}));
    OpenAiProvider provider(options(server.url()));
    std::vector<std::string> pieces;
    GenerateOptions generate;
    generate.on_text = [&pieces](std::string_view piece) { pieces.emplace_back(piece); };
    auto c = run(provider, "kg-synthesis", synthesis_variables, generate);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().type, ErrorType::kUpstreamError);
    EXPECT_NE(c.error().message.find("after one repair"), std::string::npos) << c.error().message;
    EXPECT_NE(c.error().message.find("\"Answer:\" line"), std::string::npos) << c.error().message;
    EXPECT_TRUE(pieces.empty()) << "nothing of a rejected reply is passed on";
    EXPECT_EQ(server.requests_to("/v1/chat/completions").size(), 2u) << "exactly one repair";
}

TEST_F(OpenAiProviderTest, InventedMarkersAreRepairedOrRejected) {
    ASSERT_TRUE(server.ok());
    const auto chunks = std::map<std::string, std::string>{
        {"question", "When did the tower open?"},
        {"chunks", R"([{"id": "c1", "text": "The tower opened in 1889.", "title": "Tower"}])"}};
    // Repaired: an invented id on the Answer line, then a reply that keeps to c1.
    ASSERT_TRUE(server.control({{"chat_replies",
                                 {"Answer: 1889 [c4]\nThe tower opened in 1889 [c1].",
                                  "Answer: 1889 [c1]\nThe tower opened in 1889 [c1]."}}}));
    OpenAiProvider provider(options(server.url()));
    auto c = run(provider, "document-synthesis", chunks);
    ASSERT_TRUE(c) << c.error().describe();
    EXPECT_EQ(c->text, "Answer: 1889 [c1]\nThe tower opened in 1889 [c1].");
    auto requests = server.requests_to("/v1/chat/completions");
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_NE(
        requests[1]["body"]["messages"].back()["content"].get<std::string>().find("marker [c4]"),
        std::string::npos);

    // Rejected: an invented id in the text, twice.
    ASSERT_TRUE(server.control({{"chat_replies",
                                 {"Answer: 1889 [c1]\nThe tower opened in 1889 [c1][c2].",
                                  "Answer: 1889 [c1]\nIt opened in 1889 [c7]."}}}));
    c = run(provider, "document-synthesis", chunks);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().type, ErrorType::kUpstreamError);
    EXPECT_NE(c.error().message.find("marker [c7] in the text"), std::string::npos)
        << c.error().message;
}

TEST_F(OpenAiProviderTest, ASlowEndpointTimesOut) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control({{"delay_ms", 3000}}));
    auto o = options(server.url());
    o.http.timeout = 300ms;
    o.http.max_retries = 0;
    OpenAiProvider provider(o);
    auto start = std::chrono::steady_clock::now();
    auto c = run(provider, "kg-synthesis", synthesis_variables);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().type, ErrorType::kTimeout) << c.error().describe();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);

    // The caller's deadline bounds it too, however long the provider's own timeout.
    OpenAiProvider patient(options(server.url()));
    GenerateOptions generate;
    generate.deadline = std::chrono::steady_clock::now() + 300ms;
    start = std::chrono::steady_clock::now();
    c = run(patient, "kg-synthesis", synthesis_variables, generate);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().type, ErrorType::kTimeout) << c.error().describe();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST_F(OpenAiProviderTest, ARefusedConnectionIsATypedError) {
    const int port = test_support::closed_loopback_port();
    ASSERT_GT(port, 0);
    auto o = options("http://127.0.0.1:" + std::to_string(port));
    o.http.max_retries = 1;
    OpenAiProvider provider(o);
    auto c = run(provider, "kg-synthesis", synthesis_variables);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().type, ErrorType::kServiceUnavailable) << c.error().describe();
}

TEST_F(OpenAiProviderTest, AnAnswerWithoutContentIsAnUpstreamError) {
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(server.control({{"malformed", "json"}}));
    OpenAiProvider provider(options(server.url()));
    auto c = run(provider, "kg-synthesis", synthesis_variables);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().type, ErrorType::kUpstreamError);
    EXPECT_NE(c.error().message.find("malformed answer"), std::string::npos) << c.error().message;
}

}  // namespace
}  // namespace glassbox::llm
