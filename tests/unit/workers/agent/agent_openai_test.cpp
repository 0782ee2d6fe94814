// The agent with the OpenAI-compatible provider: the llm service's agent-react template answered
// by tests/support/fake_openai.py (a real process speaking the real protocol) with scripted ReAct
// replies, malformed ones included; the store, embeddings and RAG workers in process.
#include <gtest/gtest.h>

#include "tests/support/fake_openai_server.hpp"
#include "tests/support/rag_cluster.hpp"
#include "workers/agent/agent_service.hpp"
#include "workers/llm/llm_service.hpp"
#include "workers/llm/openai_provider.hpp"
#include "workers/llm/prompt_template.hpp"

namespace glassbox::agent {
namespace {

using nlohmann::json;
using rag::testing::RagCluster;

const std::string kFamily = R"(
<urn:fam:marta_vell> <urn:fam:spouse> <urn:fam:oren_tal> .
<urn:fam:oren_tal> <urn:fam:nationality> <urn:fam:iceland> .
<urn:fam:marta_vell> <http://www.w3.org/2000/01/rdf-schema#label> "marta vell" .
<urn:fam:oren_tal> <http://www.w3.org/2000/01/rdf-schema#label> "oren tal" .
<urn:fam:iceland> <http://www.w3.org/2000/01/rdf-schema#label> "iceland" .
)";

TEST(AgentOpenAiTest, ScriptedReActRepliesMalformedOnesIncludedReachTheFinalAnswer) {
    http::testing::FakeOpenAiServer fake;
    ASSERT_TRUE(fake.ok());
    ASSERT_TRUE(fake.control(
        {{"chat_replies",
          {"```\nThought: look her up\nAction: triples-query\nArgs: {subject: marta}\n```",
           "Thought: look her up\nAction: triples-query\nArgs: {\"subject\": \"marta_vell\"}",
           R"({"thought": "her spouse is oren tal", "actions": [{"tool": "triples-query", "args": {"subject": "urn:fam:oren_tal"}}]})",
           "Thought: the nationality of oren tal\nFinal Answer: iceland\nOren Tal is Icelandic."}},
         {"chat_model", "fake-react-1"}}));
    RagCluster cluster;
    cluster.load_triples("fam", "file:///test/family.nt", kFamily);
    auto templates = llm::TemplateSet::builtin();
    ASSERT_TRUE(templates);
    llm::OpenAiProviderOptions openai;
    openai.base_url = fake.url();
    openai.model = "fake-react-1";
    cluster.add_worker("llm-openai",
                       llm::make_llm_handler(std::make_shared<const llm::TemplateSet>(*templates),
                                             std::make_shared<llm::OpenAiProvider>(openai)));
    AgentConfig config;
    config.llm_service = "llm-openai";
    cluster.add_worker("agent", make_agent_handler(config, default_tools()));

    const auto replies = cluster.request(
        "agent", json{{"question", "What is the nationality of Marta Vell's husband?"},
                      {"collection", "fam"},
                      {"streaming", true}});
    const auto& final = replies.back();
    ASSERT_EQ(final.kind, bus::ReplyKind::kFinal) << (final.error ? final.error->describe() : "");
    EXPECT_EQ(final.body["answer"], "iceland");
    // The model cited nothing: the answer is marked with the facts it rests on.
    EXPECT_EQ(final.body["response"], "Oren Tal is Icelandic [1][2].");
    EXPECT_EQ(final.body["termination"], "final-answer");
    EXPECT_EQ(final.body["iterations"], 4);
    EXPECT_EQ(final.body["model"], "fake-react-1");
    EXPECT_GT(final.body["in_token"].get<int>(), 0);

    // Four chat completions; the second prompt shows the model why its first reply failed, the
    // fourth what the lookup of oren tal returned.
    const auto chats = fake.requests_to("/v1/chat/completions");
    ASSERT_EQ(chats.size(), 4u);
    const auto prompt = [&](std::size_t i) {
        return chats[i]["body"]["messages"].back()["content"].get<std::string>();
    };
    EXPECT_NE(prompt(1).find("not one JSON object"), std::string::npos) << prompt(1);
    EXPECT_NE(prompt(3).find("iceland"), std::string::npos);
    std::size_t errors = 0;
    for (const auto& r : replies)
        if (r.kind == bus::ReplyKind::kData && r.body.value("message_type", "") == "observation" &&
            r.body.value("error", false))
            ++errors;
    EXPECT_EQ(errors, 1u);
}

}  // namespace
}  // namespace glassbox::agent
