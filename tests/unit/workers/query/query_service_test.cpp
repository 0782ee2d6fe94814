// The query service over the real RAG engines (in-process bus: real broker, store and
// embeddings, a scripted llm): routing to each engine, escalation, a missing agent, the trace's
// chain and links, provenance, and bad input.
#include <gtest/gtest.h>

#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/cruz_azul_graph.hpp"
#include "tests/support/rag_cluster_suite.hpp"
#include "tests/unit/workers/query/query_test_support.hpp"
#include "workers/query/query_service.hpp"

namespace glassbox::query {
namespace {

using nlohmann::json;
namespace vocab = schema::vocab;
using namespace glassbox::query::testing;

class QueryServiceTest : public rag::testing::RagClusterSuite<QueryServiceTest> {
protected:
    static void SetUpTestSuite() {
        start_cluster();
        cluster_->load_triples("kg", "file:///test/kb.nt", rag::testing::kCruzAzulGraph, 1);
        cluster_->load_documents(
            "docs",
            {{"urn:doc:lilu", "Lilu (mythology)",
              "A lilu is a masculine Akkadian word for a spirit, related to the demon Alu."},
             {"urn:doc:alu", "Alu",
              "Alu is a demon of Akkadian and Sumerian mythology. It is associated "
              "with other demons like Gallu and Lilu."},
             {"urn:doc:dice", "Demon Dice",
              "Demon Dice is a collectible dice game created by Lester Smith."}});
        cluster_->add_worker("query", make_query_handler(QueryConfig{}), 2);
        // An agent whose answer reports a fact and a document that disagree, and a router that
        // asks it.
        cluster_->add_worker("disputing-agent", [](runtime::RequestContext& context) {
            (void)context.reply(kDisputedAnswer);
        });
        QueryConfig disputed;
        disputed.agent_service = "disputing-agent";
        cluster_->add_worker("query-disputed", make_query_handler(disputed));
        // Two engines asked one after the other: a weak graph-rag (1879, confidence 0.15) that
        // the router escalates past, to an agent that answers 1881 or, agreeing, 1879.
        cluster_->add_worker("weak-graph", [](runtime::RequestContext& context) {
            (void)context.reply(engine_answer("1879", kWeakGraph, "edge", "file:///register.ttl",
                                              "urn:glassbox:graph-run:focus:edge:0"));
        });
        for (const std::string year : {"1881", "1879"}) {
            cluster_->add_worker("agent-" + year, [year](runtime::RequestContext& context) {
                (void)context.reply(engine_answer(year, kAgent, "chunk", "urn:chunk:harbour#0",
                                                  "urn:glassbox:doc-run:focus:chunk:0"));
            });
            QueryConfig escalating;
            escalating.graph_rag_service = "weak-graph";
            escalating.agent_service = "agent-" + year;
            escalating.max_escalations = 1;
            cluster_->add_worker("query-escalating-" + year, make_query_handler(escalating));
            // The same router with a floor of its own above the lowered confidence (0.48).
            escalating.min_confidence = 0.5;
            cluster_->add_worker("query-strict-" + year, make_query_handler(escalating));
        }
        // Engines that answer with the request they were given, and a router that asks them
        // without escalating.
        QueryConfig echoing;
        echoing.max_escalations = 0;
        echoing.graph_rag_service = "echo-graph-rag";
        echoing.document_rag_service = "echo-document-rag";
        echoing.agent_service = "echo-agent";
        for (const auto* service : {"echo-graph-rag", "echo-document-rag", "echo-agent"}) {
            cluster_->add_worker(service, [](runtime::RequestContext& context) {
                (void)context.reply(
                    json{{"response", "The request, as given."}, {"request", context.body()}});
            });
        }
        cluster_->add_worker("query-echo", make_query_handler(echoing));
        // A graph-rag whose answer is weak for its margin, and a router that asks it alone.
        cluster_->add_worker("margin-weak-graph", [](runtime::RequestContext& context) {
            json answer = engine_answer("1879", 0.1, "edge", "file:///register.ttl",
                                        "urn:glassbox:graph-run:focus:edge:0");
            answer["evidence"] = {{{"name", "answered"}, {"value", 1.0}, {"effect", 0.4}},
                                  {{"name", "margin"}, {"value", 0.02}, {"effect", -2.5}}};
            (void)context.reply(answer);
        });
        QueryConfig alone;
        alone.graph_rag_service = "margin-weak-graph";
        alone.max_escalations = 0;
        cluster_->add_worker("query-weak-alone", make_query_handler(alone));
        // A graph-rag whose FINAL rewrites the text it streamed, and a router that asks it alone.
        cluster_->add_worker("rewriting-graph", [](runtime::RequestContext& context) {
            (void)context.send_partial(
                json{{"message_type", "chunk"}, {"response", "Built in 1879 and 1881."}});
            (void)context.reply(engine_answer("1879", 0.9, "edge", "file:///register.ttl",
                                              "urn:glassbox:graph-run:focus:edge:0"));
        });
        alone.graph_rag_service = "rewriting-graph";
        cluster_->add_worker("query-rewriting", make_query_handler(alone));
        // An agent that abstained itself, and a router that asks it alone.
        cluster_->add_worker("abstaining-agent", [](runtime::RequestContext& context) {
            json answer = engine_answer("1879", 0.1, "edge", "file:///register.ttl",
                                        "urn:glassbox:agent-run:observation:0");
            answer["response"] = kAgentAbstention;
            answer["answer"] = "";
            answer["abstained"] = true;
            (void)context.reply(answer);
        });
        QueryConfig abstaining;
        abstaining.agent_service = "abstaining-agent";
        abstaining.max_escalations = 0;
        cluster_->add_worker("query-abstaining", make_query_handler(abstaining));
    }

    // The weak graph-rag's confidence, the agent's, and the agent's lowered by their disagreement
    // (its share of the two engines' confidences: 0.8).
    static constexpr double kWeakGraph = 0.15;
    static constexpr double kAgent = 0.6;
    static constexpr double kLowered = kAgent * (kAgent / (kAgent + kWeakGraph));

    static inline const std::string kAgentAbstention =
        "I do not know for sure. The evidence points to 1879, but its confidence, 10 % "
        "(unlikely), is below the 25 % asked for; what lowered it most: a lookup came back "
        "empty. What was found: Saltspire Light was built in 1879 [1].";

    // An engine's FINAL answering `year` with `confidence`, cited by one source.
    static json engine_answer(const std::string& year, double confidence, const std::string& kind,
                              const std::string& source, const std::string& selection) {
        json citation{{"n", 1},
                      {"kind", kind},
                      {"selection", selection},
                      {"tier", 1},
                      {"text", "Saltspire Light was built in " + year},
                      {"spans", {{{"start", 29}, {"end", 33}}}}};  // the year in the response
        citation[kind == "chunk" ? "chunk" : "document"] = source;
        return {{"response", "Saltspire Light was built in " + year + " [1]."},
                {"answer", year},
                {"answer_selections", {selection}},
                {"citations", {citation}},
                {"confidence", confidence},
                {"calibrator", "test"},
                {"evidence", {{{"name", "answered"}, {"value", 1.0}}}},
                {"end_of_stream", true},
                {"end_of_session", true}};
    }

    // The FINAL of an agent whose answer, 1879, a document disputes (as workers/agent reports it).
    static inline const json kDisputedAnswer = {
        {"response",
         "Saltspire Light was built in 1879 [1].\n\nSources disagree on this: [1] gives 1879; "
         "[2] gives 1881."},
        {"answer", "1879"},
        {"citations",
         {{{"n", 1}, {"kind", "edge"}, {"document", "file:///register.ttl"}, {"tier", 1}},
          {{"n", 2}, {"kind", "chunk"}, {"chunk", "urn:chunk:harbour#0"}, {"tier", 2}}}},
        {"confidence", 0.45},
        {"calibrator", "2026-11-30/agent"},
        {"evidence",
         {{{"name", "answered"}, {"value", 1.0}},
          {{"name", "conflict"}, {"value", 0.5}, {"effect", -1.1}}}},
        {"conflicts",
         {{{"subject", "Saltspire Light"},
           {"predicate", "was built in year"},
           {"stated", "1879"},
           {"rival", "1881"},
           {"stated_sources", {"file:///register.ttl"}},
           {"rival_sources", {"urn:chunk:harbour#0"}},
           {"stated_selection", "urn:glassbox:agent-run:observation:0"},
           {"rival_selection", "urn:glassbox:doc-run:focus:chunk:0"}}}},
        {"end_of_stream", true},
        {"end_of_session", true}};
};

TEST_F(QueryServiceTest, AQuestionNamingAGraphEntityGoesToGraphRagWithTheWholeChainLinked) {
    const auto replies = cluster_->request(
        "query", {{"query", "Which country is Cruz Azul FC in?"}, {"collection", "kg"}});
    const json& final = final_of(replies);
    EXPECT_EQ(final["engine"], "graph-rag");
    EXPECT_EQ(final["route"]["method"], "rules");
    EXPECT_NE(final["route"]["rules_fired"].dump().find("graph-entity"), std::string::npos)
        << final["route"].dump();
    EXPECT_GE(final["route"]["scores"]["graph-entities"].get<double>(), 0.8);
    EXPECT_EQ(final["escalations"].size(), 0u) << final["runs"].dump();
    EXPECT_NE(final["response"].get<std::string>().find("Mexico"), std::string::npos);

    const auto m = messages(replies);
    ASSERT_GE(m.own.size(), 3u);
    const std::string session = final["session"];
    const auto run = schema::explain::RunUris::from_uri(session);
    ASSERT_TRUE(run);
    // Question → RoutingDecision → (graph-rag sub-trace) → Conclusion, the last ending the trace.
    EXPECT_EQ(m.own.front().explain_id, session);
    EXPECT_EQ(m.own[1].explain_id, run->routing_decision());
    EXPECT_EQ(m.own.back().explain_id, run->conclusion());
    EXPECT_EQ(m.own.back().trace_status, schema::TraceStatus::kComplete);
    EXPECT_TRUE(has(m.all, session, vocab::kProvWasAssociatedWith,
                    schema::iri(schema::explain::worker_agent_uri("query"))));
    EXPECT_TRUE(has(m.all, run->routing_decision(), vocab::kEngine, schema::literal("graph-rag")));
    EXPECT_TRUE(
        has(m.all, run->routing_decision(), vocab::kRuleFired, schema::literal("graph-entity")));
    // The deciding rule's question type is recorded, and the route says the same.
    EXPECT_TRUE(has(m.all, run->routing_decision(), vocab::kQuestionType,
                    schema::literal("entity-lookup")));
    EXPECT_EQ(final["route"]["question_type"], "entity-lookup");
    // The sub-run: its Question used the routing decision and was informed by the query's run.
    const std::string sub = final["engine_session"];
    ASSERT_FALSE(sub.empty());
    ASSERT_FALSE(m.forwarded.empty());
    EXPECT_EQ(m.forwarded.front().session, sub);
    EXPECT_TRUE(has(m.all, sub, vocab::kProvUsed, schema::iri(run->routing_decision())));
    EXPECT_TRUE(has(m.all, sub, vocab::kProvWasInformedBy, schema::iri(session)));
    // The Conclusion is derived from the sub-run's last step and carries the provenance.
    const auto sub_run = schema::explain::RunUris::from_uri(sub);
    ASSERT_TRUE(sub_run);
    EXPECT_TRUE(has(m.all, run->conclusion(), vocab::kProvWasDerivedFrom,
                    schema::iri(sub_run->synthesis())));
    EXPECT_TRUE(has(m.all, run->conclusion(), vocab::kAggregateTier, schema::xsd_integer(1)))
        << "the graph was loaded at tier 1";
    EXPECT_FALSE(objects(m.all, run->conclusion(), vocab::kDerivationChain).empty());
    EXPECT_FALSE(objects(m.all, run->conclusion(), vocab::kAnswerSourceProperty).empty());
    EXPECT_EQ(final["provenance"]["aggregate_tier"], 1);
    EXPECT_EQ(final["provenance"]["derivation"][0], "route:rules");
}

TEST_F(QueryServiceTest, DocumentWordsGoToDocumentRagAndTheConversationIsRecorded) {
    const auto replies = cluster_->request(
        "query", {{"query", "Which Akkadian word for a spirit is related to the demon Alu?"},
                  {"collection", "docs"},
                  {"session_id", "chat-7"},
                  {"request_id", "gw-req-7"},
                  {"revision_of", "urn:glassbox:2e14c8b4-1111-4222-8333-444444444444:question"}});
    const json& final = final_of(replies);
    EXPECT_EQ(final["route"]["engine"], "document-rag") << final["route"].dump();
    EXPECT_EQ(final["engine"], "document-rag") << final["runs"].dump();
    EXPECT_FALSE(final["provenance"]["sources"].empty());
    const auto m = messages(replies);
    const std::string session = final["session"];
    EXPECT_TRUE(has(m.all, session, vocab::kConversation, schema::literal("chat-7")));
    EXPECT_TRUE(has(m.all, session, vocab::kRequestId, schema::literal("gw-req-7")));
    // A sub-run belongs to the caller's turn: it records no conversation (nor request) of its own.
    EXPECT_TRUE(
        objects(m.all, final["engine_session"].get<std::string>(), vocab::kConversation).empty());
    EXPECT_TRUE(
        objects(m.all, final["engine_session"].get<std::string>(), vocab::kRequestId).empty());
    // A replay (`traces replay`) revises the router's own Question; its engine's run is a sub-run.
    EXPECT_TRUE(has(m.all, session, vocab::kProvWasRevisionOf,
                    schema::iri("urn:glassbox:2e14c8b4-1111-4222-8333-444444444444:question")));
    EXPECT_TRUE(
        objects(m.all, final["engine_session"].get<std::string>(), vocab::kProvWasRevisionOf)
            .empty());
}

TEST_F(QueryServiceTest, AFailedEngineEscalatesAndAMissingAgentFailsCleanlyOnTheWay) {
    // graph-rag has nothing to search in a collection of documents (NotFound); no worker serves
    // "agent" here: both escalations are recorded, and document-rag answers.
    const auto replies = cluster_->request(
        "query", {{"query", "Which Akkadian word for a spirit is related to the demon Alu?"},
                  {"collection", "docs"},
                  {"mode", "graph-rag"}});
    const json& final = final_of(replies);
    EXPECT_EQ(final["route"]["method"], "explicit");
    ASSERT_EQ(final["escalations"].size(), 2u) << final["runs"].dump();
    EXPECT_EQ(final["escalations"][0]["from"], "graph-rag");
    EXPECT_EQ(final["escalations"][0]["to"], "agent");
    EXPECT_EQ(final["escalations"][1]["from"], "agent");
    EXPECT_EQ(final["escalations"][1]["to"], "document-rag");
    EXPECT_NE(
        final["escalations"][1]["reason"].get<std::string>().find("no worker serves \"agent\""),
        std::string::npos)
        << final["escalations"].dump();
    EXPECT_EQ(final["engine"], "document-rag");
    ASSERT_EQ(final["runs"].size(), 3u);
    EXPECT_TRUE(final["runs"][0].contains("error"));

    const auto m = messages(replies);
    const auto run = schema::explain::RunUris::from_uri(final["session"].get<std::string>());
    ASSERT_TRUE(run);
    EXPECT_TRUE(has(m.all, run->escalation(0), vocab::kFromEngine, schema::literal("graph-rag")));
    EXPECT_TRUE(has(m.all, run->escalation(1), vocab::kEngine, schema::literal("document-rag")));
    // The escalation to document-rag is the parent of its sub-run.
    const std::string sub = final["engine_session"];
    EXPECT_TRUE(has(m.all, sub, vocab::kProvUsed, schema::iri(run->escalation(1))));
    EXPECT_EQ(m.own.back().trace_status, schema::TraceStatus::kComplete);
}

// Issue 35: the engine's answer reported a conflict (a fact and a document disagreeing): the
// router's FINAL passes it on, and its Conclusion records the same gb:Conflict (both values, the
// selections that kept them in the engine's run, their sources) beside the engine's lowered
// confidence and its `conflict` feature.
TEST_F(QueryServiceTest, TheConclusionCarriesTheConflictsTheEnginesAnswerReported) {
    const auto replies = cluster_->request(
        "query-disputed", {{"query", "When was Saltspire Light built?"}, {"mode", "agent"}});
    const json& final = final_of(replies);
    EXPECT_EQ(final["engine"], "agent") << final.dump();
    ASSERT_EQ(final["conflicts"].size(), 1u) << final.dump();
    EXPECT_EQ(final["conflicts"][0]["rival"], "1881");
    EXPECT_EQ(final["confidence"], 0.45);

    const auto m = messages(replies);
    const auto run = schema::explain::RunUris::from_uri(final["session"].get<std::string>());
    ASSERT_TRUE(run);
    const auto node = run->conflict("conclusion", 0);
    EXPECT_EQ(objects(m.all, run->conclusion(), vocab::kConflictProperty),
              std::vector<schema::Term>{schema::iri(node)});
    EXPECT_TRUE(has(m.all, node, vocab::kRdfType, schema::iri(vocab::kConflict)));
    EXPECT_TRUE(has(m.all, node, vocab::kStatedValue, schema::literal("1879")));
    EXPECT_TRUE(has(m.all, node, vocab::kRivalValue, schema::literal("1881")));
    EXPECT_TRUE(has(m.all, node, vocab::kStatedSelection,
                    schema::iri("urn:glassbox:agent-run:observation:0")));
    EXPECT_TRUE(has(m.all, node, vocab::kRivalSelection,
                    schema::iri("urn:glassbox:doc-run:focus:chunk:0")));
    EXPECT_TRUE(has(m.all, node, vocab::kStatedSource, schema::iri("file:///register.ttl")));
    EXPECT_TRUE(has(m.all, node, vocab::kRivalSource, schema::iri("urn:chunk:harbour#0")));
    EXPECT_TRUE(has(m.all, run->conclusion(), vocab::kAnswerConfidence, schema::xsd_double(0.45)))
        << "the engine's confidence, which the conflict lowered";
    bool lowered = false;
    for (const auto& feature : objects(m.all, run->conclusion(), vocab::kEvidenceFeatureProperty))
        lowered = lowered || has(m.all, feature.as_iri().value, vocab::kFeatureName,
                                 schema::literal("conflict"));
    EXPECT_TRUE(lowered) << "the conflict feature is on the router's Conclusion too";
}

// Issue 35: escalated from a weak graph-rag (1879) to an agent that answers 1881, the router
// keeps the better answer (the agent's) and says the engines disagree, citing both; its
// confidence keeps its share of the two engines' (0.6 of 0.6 + 0.15: 0.8; feature
// "engine_conflict"), and its Conclusion
// records the gb:Conflict with both engines' selections and sources.
TEST_F(QueryServiceTest, TwoEnginesThatDisagreeAfterAnEscalationAreAConflict) {
    const auto replies =
        cluster_->request("query-escalating-1881",
                          {{"query", "When was Saltspire Light built?"}, {"mode", "graph-rag"}});
    const json& final = final_of(replies);
    ASSERT_EQ(final["escalations"].size(), 1u) << final.dump();
    EXPECT_EQ(final["engine"], "agent") << final.dump();
    EXPECT_EQ(final["answer"], "1881");
    ASSERT_EQ(final["conflicts"].size(), 1u) << final.dump();
    EXPECT_EQ(final["conflicts"][0]["stated"], "1881");
    EXPECT_EQ(final["conflicts"][0]["rival"], "1879");
    ASSERT_EQ(final["citations"].size(), 2u) << "the graph engine's citation added";
    EXPECT_EQ(final["citations"][1]["n"], 2);
    EXPECT_EQ(final["citations"][1]["document"], "file:///register.ttl");
    const std::string response = final["response"];
    EXPECT_NE(
        response.find("The engines disagree: agent gives 1881 [1]; graph-rag gives 1879 [2]."),
        std::string::npos)
        << response;
    EXPECT_NEAR(final["confidence"].get<double>(), 0.48, 1e-9) << "0.6 times 0.8";
    bool lowered = false;
    for (const auto& f : final["evidence"])
        lowered =
            lowered || (f.value("name", "") == "engine_conflict" && f.value("effect", 0.0) < 0.0);
    EXPECT_TRUE(lowered) << final["evidence"].dump();

    const auto m = messages(replies);
    const auto run = schema::explain::RunUris::from_uri(final["session"].get<std::string>());
    ASSERT_TRUE(run);
    const auto node = run->conflict("conclusion", 0);
    EXPECT_EQ(objects(m.all, run->conclusion(), vocab::kConflictProperty),
              std::vector<schema::Term>{schema::iri(node)});
    EXPECT_TRUE(has(m.all, node, vocab::kStatedValue, schema::literal("1881")));
    EXPECT_TRUE(has(m.all, node, vocab::kRivalValue, schema::literal("1879")));
    EXPECT_TRUE(has(m.all, node, vocab::kStatedSelection,
                    schema::iri("urn:glassbox:doc-run:focus:chunk:0")));
    EXPECT_TRUE(has(m.all, node, vocab::kRivalSelection,
                    schema::iri("urn:glassbox:graph-run:focus:edge:0")));
    EXPECT_TRUE(has(m.all, node, vocab::kStatedSource, schema::iri("urn:chunk:harbour#0")));
    EXPECT_TRUE(has(m.all, node, vocab::kRivalSource, schema::iri("file:///register.ttl")));
    EXPECT_TRUE(
        has(m.all, run->conclusion(), vocab::kAnswerConfidence, schema::xsd_double(kLowered)));
}

// The same escalation where both engines answer 1879: no conflict, the winner's confidence as
// it gave it (no calibrator has a feature for two engines agreeing, so agreement raises nothing).
TEST_F(QueryServiceTest, TwoEnginesThatAgreeAfterAnEscalationAreNoConflict) {
    const auto replies =
        cluster_->request("query-escalating-1879",
                          {{"query", "When was Saltspire Light built?"}, {"mode", "graph-rag"}});
    const json& final = final_of(replies);
    ASSERT_EQ(final["escalations"].size(), 1u) << final.dump();
    EXPECT_EQ(final["answer"], "1879");
    EXPECT_FALSE(final.contains("conflicts")) << final.dump();
    EXPECT_EQ(final["citations"].size(), 1u);
    EXPECT_EQ(final["confidence"], 0.6);
    EXPECT_EQ(final["response"], "Saltspire Light was built in 1879 [1].");
}

// Issue 35: the router asks every engine with min_confidence 0, whatever the request's floor (or
// none): each engine states what it found, and the floor is the router's to apply, once.
TEST_F(QueryServiceTest, TheRouterAsksEveryEngineWithoutAFloor) {
    for (const std::string mode : {"graph-rag", "document-rag", "agent"}) {
        const auto replies =
            cluster_->request("query-echo", {{"query", "When was Saltspire Light built?"},
                                             {"mode", mode},
                                             {"min_confidence", 0.42}});
        const json& final = final_of(replies);
        EXPECT_EQ(final["engine"], mode) << final.dump();
        const json& asked = final["request"];
        EXPECT_EQ(asked.value(mode == "agent" ? "question" : "query", ""),
                  "When was Saltspire Light built?")
            << asked.dump();
        EXPECT_EQ(asked["min_confidence"], 0.0) << mode << ": " << asked.dump();

        const auto unset = cluster_->request(
            "query-echo", {{"query", "When was Saltspire Light built?"}, {"mode", mode}});
        EXPECT_EQ(final_of(unset)["request"]["min_confidence"], 0.0)
            << mode << ": " << final_of(unset)["request"].dump();
    }
}

// An engine's answer below the router's floor (no escalation to rescue it): the router abstains,
// and says why in the engine's words for the feature that lowered it most.
TEST_F(QueryServiceTest, BelowTheFloorTheRouterAbstainsInTheEnginesWords) {
    const auto replies = cluster_->request(
        "query-weak-alone", {{"query", "When was Saltspire Light built?"}, {"mode", "graph-rag"}});
    const json& final = final_of(replies);
    EXPECT_EQ(final["abstained"], true) << final.dump();
    EXPECT_EQ(final["answer"], "");
    EXPECT_EQ(final["response"],
              "I do not know for sure. The evidence points to 1879, but its confidence, 10 % "
              "(unlikely), is below the 25 % asked for; what lowered it most: another answer is "
              "about as well supported. What was found: Saltspire Light was built in 1879 [1].");
    EXPECT_EQ(final["citations"][0]["spans"][0]["start"].get<std::size_t>(),
              final["response"].get<std::string>().find("1879 [1]"));

    const auto stated =
        cluster_->request("query-weak-alone", {{"query", "When was Saltspire Light built?"},
                                               {"mode", "graph-rag"},
                                               {"min_confidence", 0.05}});
    EXPECT_FALSE(final_of(stated).contains("abstained")) << final_of(stated).dump();
    EXPECT_EQ(final_of(stated)["answer"], "1879");
}

// Streaming: when the router's answer is not the winning engine's text (the engines' disagreement
// added, then the abstention), the winner's text is retracted and the router's comes whole, so
// the pieces after the last retraction are the FINAL's response.
TEST_F(QueryServiceTest, StreamedTextAfterTheLastRetractionIsTheFinalAnswer) {
    for (const double floor : {0.25, 0.5}) {
        const auto replies = cluster_->request("query-escalating-1881",
                                               {{"query", "When was Saltspire Light built?"},
                                                {"mode", "graph-rag"},
                                                {"streaming", true},
                                                {"min_confidence", floor}});
        const json& final = final_of(replies);
        std::string streamed;
        std::size_t retractions = 0;
        for (const auto& reply : replies) {
            if (reply.kind != bus::ReplyKind::kData || !reply.body.is_object()) continue;
            const std::string type = reply.body.value("message_type", "");
            if (type == "retract") {
                streamed.clear();
                ++retractions;
            } else if (type == "chunk") {
                streamed += reply.body.value("response", "");
            }
        }
        EXPECT_EQ(retractions, 2u) << "the escalation's, then the winner's: " << floor;
        EXPECT_EQ(streamed, final["response"]) << floor;
        EXPECT_NE(streamed.find("The engines disagree"), std::string::npos) << streamed;
        EXPECT_EQ(final.contains("abstained"), floor > kLowered) << final.dump();
    }
}

// An engine whose FINAL says otherwise than the text it streamed (graph-rag's disputed values,
// restated): the streamed text is retracted and the FINAL's sent whole.
TEST_F(QueryServiceTest, AnEnginesRewrittenTextIsRetractedAndSentWhole) {
    const auto replies = cluster_->request(
        "query-rewriting",
        {{"query", "When was Saltspire Light built?"}, {"mode", "graph-rag"}, {"streaming", true}});
    const json& final = final_of(replies);
    std::vector<json> pieces;
    for (const auto& reply : replies)
        if (reply.kind == bus::ReplyKind::kData && reply.body.is_object() &&
            reply.body.value("message_type", "") != "explain")
            pieces.push_back(reply.body);
    ASSERT_EQ(pieces.size(), 3u) << final.dump();
    EXPECT_EQ(pieces[0]["response"], "Built in 1879 and 1881.");
    EXPECT_EQ(pieces[1]["message_type"], "retract");
    EXPECT_EQ(pieces[1]["reason"], "the engine's final answer differs from what it streamed");
    EXPECT_EQ(pieces[2]["response"], final["response"]);
    EXPECT_EQ(pieces[2]["replay"], true);
    EXPECT_EQ(final["response"], "Saltspire Light was built in 1879 [1].");
}

// Issue 35: the engines' disagreement lowers the agent's 0.6 to 0.48, below the request's floor
// (0.5, which the agent's own 0.6 passed): the router's answer says it does not know, what it
// found (both engines' values, cited) and why, with no short answer; the winner's citation spans
// move with its text; the Conclusion records the abstention as an engine's trace does.
TEST_F(QueryServiceTest, BelowTheFloorAfterTheEnginesDisagreeTheRouterAbstains) {
    const auto replies =
        cluster_->request("query-escalating-1881", {{"query", "When was Saltspire Light built?"},
                                                    {"mode", "graph-rag"},
                                                    {"min_confidence", 0.5}});
    const json& final = final_of(replies);
    ASSERT_EQ(final["escalations"].size(), 1u) << final.dump();
    EXPECT_EQ(final["engine"], "agent") << final.dump();
    EXPECT_EQ(final["abstained"], true) << final.dump();
    EXPECT_EQ(final["answer"], "");
    EXPECT_TRUE(final["answer_selections"].empty());
    EXPECT_NEAR(final["confidence"].get<double>(), 0.48, 1e-9);
    const std::string response = final["response"];
    const std::string note =
        "I do not know for sure. The evidence points to 1881, but its confidence, 48 % "
        "(uncertain), is below the 50 % asked for; what lowered it most: the engines disagree on "
        "it. What was found: ";
    EXPECT_EQ(response, note +
                            "Saltspire Light was built in 1881 [1].\n\nThe engines disagree: agent "
                            "gives 1881 [1]; graph-rag gives 1879 [2].");
    ASSERT_EQ(final["citations"].size(), 2u) << final.dump();
    ASSERT_EQ(final["citations"][0]["spans"].size(), 1u);
    const auto start = final["citations"][0]["spans"][0]["start"].get<std::size_t>();
    EXPECT_EQ(start, note.size() + 29) << "the agent's span, moved along its text";
    EXPECT_EQ(response.substr(start, 4), "1881");
    ASSERT_EQ(final["conflicts"].size(), 1u) << "the conflict is still reported";

    const auto m = messages(replies);
    const auto run = schema::explain::RunUris::from_uri(final["session"].get<std::string>());
    ASSERT_TRUE(run);
    EXPECT_EQ(objects(m.all, run->conclusion(), vocab::kAbstained),
              std::vector<schema::Term>{schema::xsd_boolean(true)});
    EXPECT_EQ(objects(m.all, run->conclusion(), vocab::kShortAnswer),
              std::vector<schema::Term>{schema::literal("")});
    EXPECT_EQ(objects(m.all, run->conclusion(), vocab::kAnswerText),
              std::vector<schema::Term>{schema::literal(response)});
    EXPECT_TRUE(
        has(m.all, run->conclusion(), vocab::kAnswerConfidence, schema::xsd_double(kLowered)));
}

// At or below the confidence the disagreement leaves (0.48), or with engines that agree (0.6),
// the answer stands; the worker's own floor (query.min_confidence) applies to a request without
// one, and a request's floor overrides it.
TEST_F(QueryServiceTest, AtOrAboveTheFloorTheRouterStatesItsAnswer) {
    const json question = {{"query", "When was Saltspire Light built?"}, {"mode", "graph-rag"}};
    const auto with = [&](double floor) {
        json body = question;
        body["min_confidence"] = floor;
        return body;
    };
    const auto states = [](const std::vector<rag::testing::StreamReply>& replies,
                           const std::string& year) {
        const json& final = final_of(replies);
        EXPECT_FALSE(final.contains("abstained")) << final.dump();
        EXPECT_EQ(final["answer"], year) << final.dump();
        EXPECT_TRUE(final["response"].get<std::string>().starts_with("Saltspire Light was built"))
            << final["response"];
    };
    states(cluster_->request("query-escalating-1881", with(0.25)), "1881");
    states(cluster_->request("query-escalating-1881", with(kLowered)), "1881");
    states(cluster_->request("query-escalating-1879", with(0.5)), "1879");
    states(cluster_->request("query-strict-1881", with(0.2)), "1881");

    const auto strict = cluster_->request("query-strict-1881", question);
    EXPECT_EQ(final_of(strict)["abstained"], true) << "the worker's floor, 0.5";
    EXPECT_TRUE(final_of(strict)["response"].get<std::string>().starts_with(
        "I do not know for sure. The evidence points to 1881"))
        << final_of(strict)["response"];
}

// An engine that abstained itself is passed on as it answered: not abstained twice.
TEST_F(QueryServiceTest, AnEnginesAbstentionIsNotAbstainedAgain) {
    const auto replies = cluster_->request(
        "query-abstaining",
        {{"query", "When was Saltspire Light built?"}, {"mode", "agent"}, {"min_confidence", 0.5}});
    const json& final = final_of(replies);
    EXPECT_EQ(final["abstained"], true) << final.dump();
    EXPECT_EQ(final["response"], kAgentAbstention);
    EXPECT_EQ(final["citations"][0]["spans"][0]["start"], 29);
    const auto m = messages(replies);
    const auto run = schema::explain::RunUris::from_uri(final["session"].get<std::string>());
    ASSERT_TRUE(run);
    EXPECT_EQ(objects(m.all, run->conclusion(), vocab::kAbstained),
              std::vector<schema::Term>{schema::xsd_boolean(true)});
}

TEST_F(QueryServiceTest, AnUnknownCollectionIsTheEnginesNotFoundWithoutEscalating) {
    // Issue 31: escalating past it would hide the NotFound behind a weak answer of another engine.
    const auto replies = cluster_->request("query", {{"query", "Who coaches Cruz Azul FC?"},
                                                     {"collection", "nothing-here"},
                                                     {"mode", "document-rag"}});
    ASSERT_EQ(replies.back().kind, bus::ReplyKind::kError);
    EXPECT_EQ(replies.back().error->type, base::ErrorType::kNotFound);
    const std::string& message = replies.back().error->message;
    EXPECT_NE(message.find("\"nothing-here\""), std::string::npos) << message;
    EXPECT_EQ(message.find("every engine failed"), std::string::npos) << message;
    EXPECT_EQ(message.find('/'), std::string::npos) << "no server path: " << message;
    const auto m = messages(replies);
    for (const auto& step : m.own) {
        EXPECT_EQ(step.explain_id.find("escalation"), std::string::npos) << step.explain_id;
    }
    ASSERT_FALSE(m.own.empty());
    EXPECT_EQ(m.own.back().trace_status, schema::TraceStatus::kError);
}

TEST_F(QueryServiceTest, BadInputIsATypedErrorAndTheServiceKeepsServing) {
    const auto check = [](const json& body, base::ErrorType type, std::string_view text) {
        const auto replies = cluster_->request("query", body);
        ASSERT_EQ(replies.back().kind, bus::ReplyKind::kError) << body.dump();
        EXPECT_EQ(replies.back().error->type, type) << replies.back().error->describe();
        EXPECT_NE(replies.back().error->message.find(text), std::string::npos)
            << replies.back().error->message;
    };
    check({{"query", 5}}, base::ErrorType::kDecodeError, "query");
    check({{"query", "q"}, {"mode", "oracle"}}, base::ErrorType::kDecodeError, "mode");
    check({{"query", "   "}}, base::ErrorType::kInvalidRequest, "non-empty");
    check({{"query", std::string(20'000, 'a')}}, base::ErrorType::kInvalidRequest, "bytes");
    // A request id goes into the trace as it is: bounded, printable, one word.
    check({{"query", "q"}, {"request_id", std::string(129, 'r')}}, base::ErrorType::kInvalidRequest,
          "request_id");
    check({{"query", "q"}, {"request_id", "two words"}}, base::ErrorType::kInvalidRequest,
          "printable");
    check({{"query", "q"}, {"request_id", "line\nbreak"}}, base::ErrorType::kInvalidRequest,
          "request_id");
    // The floor is a probability (issue 35).
    check({{"query", "q"}, {"min_confidence", 1.5}}, base::ErrorType::kInvalidRequest,
          "\"min_confidence\" must be a number from 0 to 1");
    check({{"query", "q"}, {"min_confidence", -0.1}}, base::ErrorType::kInvalidRequest,
          "min_confidence");
    check({{"query", "q"}, {"min_confidence", "high"}}, base::ErrorType::kDecodeError,
          "min_confidence");
    const auto replies = cluster_->request(
        "query", {{"query", "Which country is Cruz Azul FC in?"}, {"collection", "kg"}});
    EXPECT_EQ(replies.back().kind, bus::ReplyKind::kFinal);
}

}  // namespace
}  // namespace glassbox::query
