// Parsing the model's ReAct replies: the text form, the JSON form, and malformed replies.
#include "workers/agent/react_reply.hpp"

#include <gtest/gtest.h>

namespace glassbox::agent {
namespace {

TEST(ReactReplyTest, TextFormWithOneAction) {
    auto reply = parse_react_reply(
        "Thought: I need the spouse\n  of the person.\nAction: triples-query\nArgs: {\"subject\": "
        "\"Ada\"}\n");
    ASSERT_TRUE(reply) << reply.error().message;
    EXPECT_EQ(reply->thought, "I need the spouse of the person.");
    ASSERT_EQ(reply->calls.size(), 1u);
    EXPECT_EQ(reply->calls[0].tool, "triples-query");
    EXPECT_EQ(reply->calls[0].args["subject"], "Ada");
    EXPECT_FALSE(reply->final_answer);
}

TEST(ReactReplyTest, SeveralActionsAreSeveralCalls) {
    auto reply = parse_react_reply(
        "Thought: two lookups\nAction: knowledge-query\nArgs: {\"question\": \"a?\"}\n"
        "Action: document-query\nAction Input: {\"question\": \"b?\"}");
    ASSERT_TRUE(reply) << reply.error().message;
    ASSERT_EQ(reply->calls.size(), 2u);
    EXPECT_EQ(reply->calls[1].tool, "document-query");
    EXPECT_EQ(reply->calls[1].args["question"], "b?");
}

TEST(ReactReplyTest, FinalAnswerWithSentencesAndFences) {
    auto reply = parse_react_reply(
        "```\n**Thought:** done\nFinal Answer: Oskar Brenn\nHe founded it.\nIn 1890.\n```");
    ASSERT_TRUE(reply) << reply.error().message;
    EXPECT_EQ(reply->thought, "done");
    ASSERT_TRUE(reply->final_answer);
    EXPECT_EQ(*reply->final_answer, "Oskar Brenn");
    EXPECT_EQ(reply->response, "He founded it.\nIn 1890.");
    auto undecided = parse_react_reply("Thought: nothing\nFinal Answer:");
    ASSERT_TRUE(undecided);
    EXPECT_EQ(*undecided->final_answer, "");
}

TEST(ReactReplyTest, JsonForm) {
    auto calls = parse_react_reply(
        R"({"thought": "t", "actions": [{"tool": "triples-query", "args": {"subject": "x"}}]})");
    ASSERT_TRUE(calls) << calls.error().message;
    ASSERT_EQ(calls->calls.size(), 1u);
    EXPECT_EQ(calls->calls[0].args["subject"], "x");
    auto single = parse_react_reply(
        R"({"thought": "t", "action": "knowledge-query", "args": {"question": "q"}})");
    ASSERT_TRUE(single) << single.error().message;
    EXPECT_EQ(single->calls[0].tool, "knowledge-query");
    auto final_reply = parse_react_reply(
        "```json\n{\"thought\": \"t\", \"final_answer\": \"42\", \"response\": \"It is "
        "42.\"}\n```");
    ASSERT_TRUE(final_reply) << final_reply.error().message;
    EXPECT_EQ(*final_reply->final_answer, "42");
    EXPECT_EQ(final_reply->response, "It is 42.");
}

TEST(ReactReplyTest, MalformedRepliesSayWhatIsWrong) {
    const std::pair<const char*, const char*> cases[] = {
        {"", "empty"},
        {"I think the answer is 42.", "no Action and no Final Answer"},
        {"Thought: x\nAction: triples-query\nArgs: {subject: Ada}", "not one JSON object"},
        {"Thought: x\nArgs: {}", "without an Action"},
        {"Thought: x\nAction:\n", "without a tool name"},
        {"Thought: x\nAction: a\nArgs: {}\nFinal Answer: y", "both"},
        {"{\"thought\": \"x\"", "does not parse"},
        {"{\"thought\": \"x\", \"actions\": [{\"args\": {}}]}", "no tool name"},
        {"{\"thought\": \"x\", \"final_answer\": 3}", "must be a string"},
    };
    for (const auto& [text, expected] : cases) {
        auto reply = parse_react_reply(text);
        ASSERT_FALSE(reply) << text;
        EXPECT_EQ(reply.error().type, base::ErrorType::kInvalidRequest);
        EXPECT_NE(reply.error().message.find(expected), std::string::npos)
            << text << " → " << reply.error().message;
    }
}

}  // namespace
}  // namespace glassbox::agent
