// The llm relevance reflection and the escalation's rephrasing (docs/query.md §3): the judge's
// reply parsing, and the query service over the RAG engines with the judge and rephraser being
// the llm service on the fake OpenAI server (scripted replies) or on the extractive provider.
#include <gtest/gtest.h>

#include <algorithm>

#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/cruz_azul_graph.hpp"
#include "tests/support/fake_openai_server.hpp"
#include "tests/support/rag_cluster_suite.hpp"
#include "tests/unit/workers/query/query_test_support.hpp"
#include "workers/llm/extractive_provider.hpp"
#include "workers/llm/llm_service.hpp"
#include "workers/llm/openai_provider.hpp"
#include "workers/query/llm_reflection.hpp"
#include "workers/query/query_service.hpp"

namespace glassbox::query {
namespace {

using nlohmann::json;
namespace vocab = schema::vocab;
using namespace glassbox::query::testing;

// ---- the judge's reply --------------------------------------------------------------------

TEST(JudgeReply, AJsonObjectAloneFencedOrInProseGivesScoreAndReason) {
    for (const char* text : {R"({"score": 0.25, "reason": "names no country"})",
                             "```json\n{\"score\": 0.25, \"reason\": \"names no country\"}\n```",
                             "Here is my judgement: {\"reason\": \"names no country\", \"score\": "
                             "\"0.25\"} Thanks."}) {
        const auto parsed = parse_judge_reply(text);
        ASSERT_TRUE(parsed) << text << ": " << parsed.error().describe();
        EXPECT_DOUBLE_EQ(parsed->score, 0.25) << text;
        EXPECT_EQ(parsed->reason, "names no country") << text;
    }
}

TEST(JudgeReply, ScoreAndReasonLinesAreReadAndTheReasonKeptToOneLine) {
    const auto parsed =
        parse_judge_reply("Score: 0.8\n- reason = the evidence\tnames the founder\n");
    ASSERT_TRUE(parsed) << parsed.error().describe();
    EXPECT_DOUBLE_EQ(parsed->score, 0.8);
    EXPECT_EQ(parsed->reason, "the evidence names the founder");
    const auto bare = parse_judge_reply("score=1");
    ASSERT_TRUE(bare);
    EXPECT_DOUBLE_EQ(bare->score, 1.0);
    EXPECT_EQ(bare->reason, "");
}

TEST(JudgeReply, NoScoreANonNumberOrOneOutsideZeroToOneIsAnError) {
    for (const char* text : {"", "I think it is quite relevant.", R"({"score": "high"})",
                             R"({"score": 7})", "score: 85%x", "score: -0.1", "score: 1.5",
                             R"({"reason": "no score"})", "the score is 0.5"}) {
        const auto parsed = parse_judge_reply(text);
        ASSERT_FALSE(parsed) << text;
        EXPECT_EQ(parsed.error().type, base::ErrorType::kDecodeError) << text;
    }
}

TEST(Rephrasing, TheFirstLineWithoutLabelOrQuotes) {
    EXPECT_EQ(clean_rephrasing("\n  Question: \"In which country is Cruz Azul FC?\"\nbecause …"),
              "In which country is Cruz Azul FC?");
    EXPECT_EQ(clean_rephrasing("'Who founded it?'"), "Who founded it?");
    EXPECT_EQ(clean_rephrasing(" \n\t\n"), "");
}

TEST(EvidenceSummary, KeptTextsCutShortThenTheCitedText) {
    Evidence evidence;
    evidence.kept.push_back({"urn:s:1", 0.9, "", 1, "Cruz Azul FC is in country Mexico"});
    evidence.kept.push_back({"urn:s:2", 0.5, "", 1, std::string(1'000, 'x')});
    evidence.cited_text = "Mexico City\nis the capital";
    const std::string summary = evidence_summary(evidence);
    EXPECT_NE(summary.find("- Cruz Azul FC is in country Mexico\n"), std::string::npos) << summary;
    EXPECT_LT(summary.size(), 600u);
    EXPECT_NE(summary.find("Cited: Mexico City is the capital"), std::string::npos) << summary;
    EXPECT_EQ(evidence_summary(Evidence{}), "(no evidence was kept)\n");
}

// ---- the query service with an llm judge --------------------------------------------------

// The RAG engines answer with the cluster's scripted llm; the query workers' judge is another
// llm service: "judge-openai" (the fake OpenAI server) for `query-llm`, "judge-extractive" (the
// offline provider) for `query-offline`.
class ReflectionTest : public rag::testing::RagClusterSuite<ReflectionTest> {
protected:
    static void SetUpTestSuite() {
        fake_ = new http::testing::FakeOpenAiServer();
        start_cluster();
        cluster_->load_triples("kg", "file:///test/kb.nt", rag::testing::kCruzAzulGraph, 1);
        cluster_->load_documents(
            "kg", {{"urn:doc:cruz", "Cruz Azul",
                    "Cruz Azul FC is a football club from Mexico City, the capital of Mexico."}});
        auto templates = llm::TemplateSet::builtin();
        ASSERT_TRUE(templates);
        const auto shared = std::make_shared<const llm::TemplateSet>(*templates);
        llm::OpenAiProviderOptions openai;
        openai.base_url = fake_->url();
        openai.model = "fake-judge-1";
        cluster_->add_worker(
            "judge-openai",
            llm::make_llm_handler(shared, std::make_shared<llm::OpenAiProvider>(openai)));
        cluster_->add_worker(
            "judge-extractive",
            llm::make_llm_handler(shared, std::make_shared<llm::ExtractiveProvider>()));
        QueryConfig config;
        config.reflection = "llm";
        config.llm_service = "judge-openai";
        cluster_->add_worker("query-llm", make_query_handler(config));
        config.llm_service = "judge-extractive";
        cluster_->add_worker("query-offline", make_query_handler(config));
    }
    static void TearDownTestSuite() {
        RagClusterSuite::TearDownTestSuite();
        delete fake_;
        fake_ = nullptr;
    }
    void SetUp() override { ASSERT_TRUE(fake_->ok()) << "the fake OpenAI server did not start"; }

    static http::testing::FakeOpenAiServer* fake_;
};
http::testing::FakeOpenAiServer* ReflectionTest::fake_ = nullptr;

std::string literal_of(const std::vector<schema::Triple>& triples, const std::string& s,
                       std::string_view p) {
    for (const auto& t : triples) {
        if (t.s == schema::iri(s) && t.p == schema::iri(p) &&
            t.o.kind() == schema::Term::Kind::kLiteral)
            return t.o.as_literal().value;
    }
    return {};
}

TEST_F(ReflectionTest,
       ALowLlmScoreEscalatesWithItsReasonAndTheRephrasedQuestionReachesTheNextEngine) {
    const std::size_t before = fake_->requests_to("/v1/chat/completions").size();
    // The judge of graph-rag's answer; the rephrasing for the agent (empty: the original is asked);
    // the rephrasing for document-rag; the judge of document-rag's answer.
    ASSERT_TRUE(fake_->control(
        {{"chat_replies",
          {R"({"score": 0.15, "reason": "the answer does not say which country"})", " ",
           "Question: \"In which country does the football club Cruz Azul FC play?\"",
           "```json\n{\"score\": 0.9, \"reason\": \"it names Mexico\"}\n```"}},
         {"chat_model", "fake-judge-1"}}));
    const auto replies =
        cluster_->request("query-llm", {{"query", "Which country is Cruz Azul FC in?"},
                                        {"collection", "kg"},
                                        {"mode", "graph-rag"}});
    const json& final = final_of(replies);
    ASSERT_EQ(final["runs"].size(), 3u) << final.dump();
    EXPECT_EQ(final["runs"][0]["engine"], "graph-rag");
    EXPECT_EQ(final["runs"][0]["reflection"], "llm");
    EXPECT_DOUBLE_EQ(final["runs"][0]["relevance"].get<double>(), 0.15);
    ASSERT_EQ(final["escalations"].size(), 2u);
    EXPECT_NE(final["escalations"][0]["reason"].get<std::string>().find(
                  "llm: the answer does not say which country"),
              std::string::npos)
        << final["escalations"].dump();
    EXPECT_FALSE(final["escalations"][0].contains("query"));
    EXPECT_NE(final["escalations"][0].value("rephrase_fallback", "").find("empty"),
              std::string::npos)
        << final["escalations"].dump();
    const std::string rephrased = "In which country does the football club Cruz Azul FC play?";
    EXPECT_EQ(final["escalations"][1]["query"], rephrased);
    EXPECT_EQ(final["runs"][2]["engine"], "document-rag");
    EXPECT_EQ(final["runs"][2]["query"], rephrased);
    EXPECT_EQ(final["runs"][2]["reflection"], "llm");
    EXPECT_EQ(fake_->requests_to("/v1/chat/completions").size() - before, 4u);

    const auto triples = messages(replies).all;
    const auto run = schema::explain::RunUris::from_uri(final["session"].get<std::string>());
    ASSERT_TRUE(run);
    // The trace's question stays the one asked; the Escalations record the rephrasing or why not.
    EXPECT_TRUE(has(triples, run->question(), vocab::kQuery,
                    schema::literal("Which country is Cruz Azul FC in?")));
    EXPECT_TRUE(
        has(triples, run->escalation(1), vocab::kRephrasedQuestion, schema::literal(rephrased)));
    EXPECT_NE(literal_of(triples, run->escalation(0), vocab::kRephraseFallback).find("empty"),
              std::string::npos);
    // The Escalation's reflection of graph-rag's answer: the model's score and reason.
    const std::string judged = run->escalation(0) + ":reflection";
    EXPECT_TRUE(has(triples, run->escalation(0), vocab::kReflectionProperty, schema::iri(judged)));
    EXPECT_TRUE(has(triples, judged, vocab::kReflectionMethod, schema::literal("llm")));
    EXPECT_TRUE(has(triples, judged, vocab::kReflectionScore, schema::xsd_double(0.15)));
    EXPECT_TRUE(has(triples, judged, vocab::kReflectionReason,
                    schema::literal("the answer does not say which country")));
    EXPECT_TRUE(has(triples, judged, vocab::kModelName, schema::literal("fake-judge-1")));
    EXPECT_FALSE(literal_of(triples, judged, vocab::kInputTokens).empty());
    EXPECT_FALSE(literal_of(triples, judged, vocab::kDurationMs).empty());
    // document-rag's sub-run was asked the rephrasing: its Question says so.
    const std::string sub = final["runs"][2]["session"];
    EXPECT_TRUE(has(triples, sub, vocab::kQuery, schema::literal(rephrased)));
    EXPECT_TRUE(has(triples, run->conclusion() + ":reflection", vocab::kReflectionMethod,
                    schema::literal("llm")));
}

TEST_F(ReflectionTest, AJudgeReplyThatDoesNotParseFallsBackToTheModelFreeScoreRecorded) {
    ASSERT_TRUE(fake_->control({{"chat_replies", {"I would say the answer is quite relevant."}}}));
    const auto replies =
        cluster_->request("query-llm", {{"query", "Which country is Cruz Azul FC in?"},
                                        {"collection", "kg"},
                                        {"mode", "graph-rag"}});
    const json& final = final_of(replies);
    ASSERT_EQ(final["runs"].size(), 1u)
        << "the model-free score keeps graph-rag's answer: " << final.dump();
    EXPECT_EQ(final["runs"][0]["reflection"], "model-free");
    EXPECT_NE(final["runs"][0].value("reflection_fallback", "").find("did not parse"),
              std::string::npos)
        << final["runs"].dump();
    EXPECT_GE(final["relevance"].get<double>(), 0.4);
    const auto triples = messages(replies).all;
    const auto run = schema::explain::RunUris::from_uri(final["session"].get<std::string>());
    ASSERT_TRUE(run);
    const std::string reflected = run->conclusion() + ":reflection";
    EXPECT_TRUE(has(triples, reflected, vocab::kReflectionMethod, schema::literal("model-free")));
    EXPECT_TRUE(has(triples, reflected, vocab::kReflectionScore,
                    schema::xsd_double(final["relevance"].get<double>())));
    EXPECT_NE(literal_of(triples, reflected, vocab::kReflectionFallback).find("did not parse"),
              std::string::npos);
    EXPECT_TRUE(literal_of(triples, reflected, vocab::kModelName).empty())
        << "no model score is claimed";
}

TEST_F(ReflectionTest, OfflineTheExtractiveProviderNeitherJudgesNorRephrasesAndSaysSo) {
    const std::size_t before = fake_->requests_to("/v1/chat/completions").size();
    // No agent here: its run fails, the escalation asks for a rephrasing, graph-rag is judged.
    const auto replies = cluster_->request(
        "query-offline",
        {{"query", "Which country is Cruz Azul FC in?"}, {"collection", "kg"}, {"mode", "agent"}});
    const json& final = final_of(replies);
    ASSERT_GE(final["runs"].size(), 2u) << final.dump();
    ASSERT_GE(final["escalations"].size(), 1u);
    EXPECT_NE(final["escalations"][0]
                  .value("rephrase_fallback", "")
                  .find("not supported by this provider"),
              std::string::npos)
        << final["escalations"].dump();
    EXPECT_FALSE(final["escalations"][0].contains("query"));
    EXPECT_EQ(final["runs"][1]["engine"], "graph-rag");
    EXPECT_EQ(final["runs"][1]["reflection"], "model-free");
    EXPECT_NE(
        final["runs"][1].value("reflection_fallback", "").find("not supported by this provider"),
        std::string::npos)
        << final["runs"].dump();
    EXPECT_FALSE(final["runs"][1].contains("query")) << "asked the question itself";
    EXPECT_EQ(fake_->requests_to("/v1/chat/completions").size(), before)
        << "the fake model was not asked";
    const auto triples = messages(replies).all;
    const auto run = schema::explain::RunUris::from_uri(final["session"].get<std::string>());
    ASSERT_TRUE(run);
    EXPECT_NE(
        literal_of(triples, run->escalation(0), vocab::kRephraseFallback).find("not supported"),
        std::string::npos);
}

}  // namespace
}  // namespace glassbox::query
