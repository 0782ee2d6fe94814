// The agent service on an in-process bus (real broker, store, embeddings, graph-rag and
// document-rag over loopback TCP): the extractive planner through the real llm service, and a
// scripted model for malformed replies, unknown tools, failing tools, max-iterations and errors.
#include "workers/agent/agent_service.hpp"

#include <deque>
#include <map>
#include <mutex>

#include <gtest/gtest.h>

#include "reasoner/answer_confidence.hpp"
#include "schema/explain_builder.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/rag_cluster_suite.hpp"
#include "workers/llm/extractive_provider.hpp"
#include "workers/llm/llm_service.hpp"
#include "workers/llm/prompt_template.hpp"

namespace glassbox::agent {
namespace {

using nlohmann::json;
using schema::Triple;
namespace vocab = schema::vocab;

const std::string kFamily = R"(
<urn:fam:marta_vell> <urn:fam:spouse> <urn:fam:oren_tal> .
<urn:fam:marta_vell> <urn:fam:nationality> <urn:fam:norway> .
<urn:fam:marta_vell> <urn:fam:gender> <urn:fam:female> .
<urn:fam:oren_tal> <urn:fam:spouse> <urn:fam:marta_vell> .
<urn:fam:oren_tal> <urn:fam:nationality> <urn:fam:iceland> .
<urn:fam:oren_tal> <urn:fam:children> <urn:fam:sif_tal> .
<urn:fam:sif_tal> <urn:fam:place_of_birth> <urn:fam:reykjavik> .
<urn:fam:marta_vell> <http://www.w3.org/2000/01/rdf-schema#label> "marta vell" .
<urn:fam:oren_tal> <http://www.w3.org/2000/01/rdf-schema#label> "oren tal" .
<urn:fam:sif_tal> <http://www.w3.org/2000/01/rdf-schema#label> "sif tal" .
<urn:fam:iceland> <http://www.w3.org/2000/01/rdf-schema#label> "iceland" .
<urn:fam:norway> <http://www.w3.org/2000/01/rdf-schema#label> "norway" .
<urn:fam:reykjavik> <http://www.w3.org/2000/01/rdf-schema#label> "reykjavik" .
)";

// A scripted reply that asks the graph, through the knowledge-query tool, where Cruz Azul is.
const std::string kAskTheGraph =
    "Thought: ask\nAction: knowledge-query\nArgs: {\"question\": \"Which country is Cruz Azul FC "
    "in?\"}";

// A model that answers agent-react with the next scripted reply (the last one again when the
// script runs out), and records the steps it was shown.
struct ScriptedModel {
    std::mutex mutex;
    std::deque<std::string> replies;
    std::vector<json> seen_steps;
    std::vector<json> seen_history;
    bool fail = false;
};

runtime::Handler scripted_model(std::shared_ptr<ScriptedModel> model) {
    return [model](runtime::RequestContext& context) {
        auto request = schema::decode<schema::LlmRequest>(context.body());
        if (!request) return (void)context.fail(request.error());
        std::string text;
        {
            std::lock_guard lock(model->mutex);
            if (model->fail)
                return (void)context.fail(
                    base::make_error(base::ErrorType::kUpstreamError, "model down"));
            model->seen_steps.push_back(json::parse(request->variables["steps"]));
            model->seen_history.push_back(json::parse(request->variables["history"]));
            text = model->replies.front();
            if (model->replies.size() > 1) model->replies.pop_front();
        }
        schema::LlmResponse response;
        response.text = text;
        response.model = "scripted";
        response.in_token = 10;
        response.out_token = 5;
        (void)context.reply(schema::encode(response));
    };
}

std::vector<Triple> trace_triples(const std::vector<rag::testing::StreamReply>& replies) {
    std::vector<Triple> out;
    for (const auto& r : replies) {
        if (r.kind != bus::ReplyKind::kExplain) continue;
        auto m = schema::decode<schema::ExplainMessage>(r.body);
        EXPECT_TRUE(m.ok());
        if (m) out.insert(out.end(), m->explain_triples.begin(), m->explain_triples.end());
    }
    return out;
}

std::vector<std::string> objects(const std::vector<Triple>& triples, const std::string& s,
                                 std::string_view p) {
    std::vector<std::string> out;
    for (const auto& t : triples) {
        if (!t.s.is_iri() || t.s.as_iri().value != s || !t.p.is_iri() || t.p.as_iri().value != p)
            continue;
        out.push_back(t.o.is_iri()       ? t.o.as_iri().value
                      : t.o.is_literal() ? t.o.as_literal().value
                                         : "");
    }
    return out;
}

std::vector<json> partials(const std::vector<rag::testing::StreamReply>& replies,
                           const std::string& type) {
    std::vector<json> out;
    for (const auto& r : replies)
        if (r.kind == bus::ReplyKind::kData && r.body.value("message_type", "") == type)
            out.push_back(r.body);
    return out;
}

json agent_request(const std::string& question, const std::string& collection,
                   std::uint32_t max_iterations = 0) {
    schema::AgentRequest request;
    request.question = question;
    request.collection = collection;
    request.streaming = true;
    request.max_iterations = max_iterations;
    return schema::encode(request);
}

class AgentServiceTest : public rag::testing::RagClusterSuite<AgentServiceTest> {
protected:
    static void SetUpTestSuite() {
        start_cluster();
        cluster_->load_triples("fam", "file:///test/family.nt", kFamily);
        auto templates = llm::TemplateSet::builtin();
        ASSERT_TRUE(templates);
        cluster_->add_worker(
            "llm-real", llm::make_llm_handler(std::make_shared<const llm::TemplateSet>(*templates),
                                              std::make_shared<llm::ExtractiveProvider>()));
        AgentConfig planner;
        planner.llm_service = "llm-real";
        cluster_->add_worker("agent", make_agent_handler(planner, default_tools()), 2);
        model_ = std::make_shared<ScriptedModel>();
        cluster_->add_worker("llm-scripted", scripted_model(model_));
        AgentConfig scripted;
        scripted.llm_service = "llm-scripted";
        cluster_->add_worker("agent-scripted", make_agent_handler(scripted, default_tools()));
        // A graph RAG whose answer reports two of its facts disagreeing (as workers/rag does),
        // and a planner agent whose knowledge-query asks it.
        cluster_->add_worker("graph-disputing", [](runtime::RequestContext& context) {
            (void)context.reply(kGraphDispute);
        });
        AgentConfig disputed = planner;
        disputed.graph_rag_service = "graph-disputing";
        cluster_->add_worker("agent-graph-disputed", make_agent_handler(disputed, default_tools()));
        // A trace service that knows one conversation ("s1") and fails for "broken".
        cluster_->add_worker("trace", [](runtime::RequestContext& context) {
            const json& body = context.body();
            if (body.value("session_id", "") == "broken")
                return (void)context.fail(
                    base::make_error(base::ErrorType::kInternal, "the trace store is locked"));
            json turns = json::array();
            if (body.value("session_id", "") == "s1" && body.value("limit", 0) == 5)
                turns.push_back({{"question", "Who is Marta Vell's husband?"},
                                 {"answer", "Oren Tal."},
                                 {"short_answer", "Oren Tal"},
                                 {"trace", "u1"},
                                 {"started", "t"},
                                 {"status", "complete"}});
            (void)context.reply(
                json{{"session_id", body.value("session_id", "")}, {"turns", turns}});
        });
    }
    // agent-scripted's replies to `question` on `collection` (max_iterations 0: the default).
    static std::vector<rag::testing::StreamReply> ask_scripted(const std::string& question,
                                                               const std::string& collection,
                                                               std::uint32_t max_iterations = 0) {
        return cluster_->request("agent-scripted",
                                 agent_request(question, collection, max_iterations));
    }
    void script(std::deque<std::string> replies) {
        std::lock_guard lock(model_->mutex);
        model_->replies = std::move(replies);
        model_->seen_steps.clear();
        model_->seen_history.clear();
        model_->fail = false;
    }

    static std::shared_ptr<ScriptedModel> model_;

    // graph-rag's FINAL: 1879 from one file, 1881 from another; its confidence, 0.6 before, halved
    // by the conflict (feature "conflict" 0.5).
    static inline const json kGraphDispute = {
        {"response",
         "Saltspire Light was built in 1879 [1].\n\nSources disagree on this: [1] gives 1879; [2] "
         "gives 1881."},
        {"answer", "1879"},
        {"answer_selections", {"urn:glassbox:graph-run:focus:edge:0"}},
        {"citations",
         {{{"n", 1},
           {"kind", "edge"},
           {"text", "Saltspire Light was built in year 1879"},
           {"document", "file:///register.ttl"},
           {"selection", "urn:glassbox:graph-run:focus:edge:0"},
           {"tier", 1}},
          {{"n", 2},
           {"kind", "edge"},
           {"text", "Saltspire Light was built in year 1881"},
           {"document", "file:///later.ttl"},
           {"selection", "urn:glassbox:graph-run:focus:edge:1"},
           {"tier", 3}}}},
        {"confidence", 0.3},
        {"calibrator", "test"},
        {"evidence",
         {{{"name", "margin"}, {"value", 0.2}},
          {{"name", "conflict"}, {"value", 0.5}, {"effect", -1.25}}}},
        {"conflicts",
         {{{"subject", "Saltspire Light"},
           {"predicate", "was built in year"},
           {"stated", "1879"},
           {"rival", "1881"},
           {"stated_sources", {"file:///register.ttl"}},
           {"rival_sources", {"file:///later.ttl"}},
           {"stated_selection", "urn:glassbox:graph-run:focus:edge:0"},
           {"rival_selection", "urn:glassbox:graph-run:focus:edge:1"}}}},
        {"end_of_stream", true},
        {"end_of_session", true}};
};

std::shared_ptr<ScriptedModel> AgentServiceTest::model_;

TEST_F(AgentServiceTest, ThePlannerFollowsTheChainAndTheTraceExplainsEveryIteration) {
    const auto replies = cluster_->request(
        "agent", agent_request("what is the nationality of marta_vell 's husband ?", "fam"));
    const auto& final = replies.back();
    ASSERT_EQ(final.kind, bus::ReplyKind::kFinal)
        << (final.error ? final.error->describe() : final.body.dump());
    EXPECT_EQ(final.body["answer"], "iceland") << final.body.dump();
    EXPECT_EQ(final.body["termination"], "final-answer");
    EXPECT_EQ(final.body["iterations"], 3);

    // Streamed as it happened: a thought per iteration, the calls, the observations, the answer.
    EXPECT_EQ(partials(replies, "thought").size(), 3u);
    const auto actions = partials(replies, "action");
    ASSERT_EQ(actions.size(), 2u);
    EXPECT_EQ(actions[0]["tool"], "triples-query");
    EXPECT_EQ(actions[1]["args"]["subject"], "urn:fam:oren_tal");
    EXPECT_EQ(partials(replies, "observation").size(), 2u);
    EXPECT_EQ(partials(replies, "answer").size(), 1u);

    // Question → Analysis(0) → Observation(0) → Analysis(1) → Observation(1) → Analysis(2) →
    // Conclusion.
    const auto triples = trace_triples(replies);
    const auto run = schema::explain::RunUris::from_uri(final.body["session"].get<std::string>());
    ASSERT_TRUE(run);
    EXPECT_EQ(objects(triples, run->analysis(0), vocab::kProvWasDerivedFrom).size(), 0u);
    EXPECT_EQ(objects(triples, run->observation(0), vocab::kProvWasDerivedFrom),
              std::vector<std::string>{run->analysis(0)});
    EXPECT_EQ(objects(triples, run->analysis(1), vocab::kProvWasDerivedFrom),
              std::vector<std::string>{run->observation(0)});
    EXPECT_EQ(objects(triples, run->conclusion(), vocab::kProvWasDerivedFrom),
              std::vector<std::string>{run->analysis(2)});
    EXPECT_EQ(objects(triples, run->analysis(0), vocab::kAction),
              std::vector<std::string>{"triples-query"});
    EXPECT_EQ(objects(triples, run->analysis(0), vocab::kToolCandidate).size(), 5u);
    EXPECT_EQ(objects(triples, run->analysis(0), vocab::kModelName),
              std::vector<std::string>{"glassbox-extractive-v1"});
    EXPECT_EQ(objects(triples, run->observation(1), vocab::kToolStatus),
              std::vector<std::string>{"ok"});
    EXPECT_EQ(objects(triples, run->conclusion(), vocab::kTerminationReason),
              std::vector<std::string>{"final-answer"});
    EXPECT_EQ(objects(triples, run->conclusion(), vocab::kShortAnswer),
              std::vector<std::string>{"iceland"});
    EXPECT_EQ(objects(triples, run->question(), vocab::kStatus),
              std::vector<std::string>{"complete"});
    EXPECT_FALSE(objects(triples, run->observation(0), vocab::kDurationMs).empty());

    // The answer's confidence: calibrated by the shipped agent calibrator, in the FINAL and on
    // the Conclusion, with the features measured (docs/confidence.md).
    ASSERT_TRUE(final.body.contains("confidence")) << final.body.dump();
    const double p = final.body["confidence"].get<double>();
    EXPECT_GT(p, 0.0);
    EXPECT_LT(p, 1.0);
    EXPECT_EQ(final.body["confidence_words"], std::string(reasoner::confidence_words(p)));
    EXPECT_TRUE(final.body["calibrator"].get<std::string>().ends_with("/agent"));
    EXPECT_FALSE(final.body.contains("abstained"));
    std::map<std::string, double> evidence;
    for (const auto& f : final.body["evidence"]) evidence[f["name"]] = f["value"].get<double>();
    EXPECT_EQ(evidence["chain_complete"], 1.0) << final.body["evidence"].dump();
    EXPECT_EQ(evidence["chain_hops"], 2.0) << final.body["evidence"].dump();
    EXPECT_EQ(evidence["iterations"], 3.0);
    EXPECT_EQ(objects(triples, run->conclusion(), vocab::kAnswerConfidence).size(), 1u);
    EXPECT_EQ(objects(triples, run->conclusion(), vocab::kCalibrator),
              std::vector<std::string>{final.body["calibrator"].get<std::string>()});
    EXPECT_EQ(objects(triples, run->conclusion(), vocab::kEvidenceFeatureProperty).size(),
              final.body["evidence"].size());
}

// Below the request's floor the answer says it does not know and gives no short answer; the
// trace says it abstained (docs/confidence.md).
TEST_F(AgentServiceTest, BelowItsFloorTheAnswerSaysItDoesNotKnow) {
    json body = agent_request("what is the nationality of marta_vell 's husband ?", "fam");
    body["min_confidence"] = 1.0;
    const auto replies = cluster_->request("agent", body);
    const auto& final = replies.back();
    ASSERT_EQ(final.kind, bus::ReplyKind::kFinal)
        << (final.error ? final.error->describe() : final.body.dump());
    EXPECT_EQ(final.body["answer"], "") << final.body.dump();
    EXPECT_EQ(final.body["abstained"], true);
    const std::string response = final.body["response"];
    EXPECT_TRUE(response.starts_with("I do not know for sure. The evidence points to iceland"))
        << response;
    EXPECT_NE(response.find("What was found: "), std::string::npos) << response;
    const auto triples = trace_triples(replies);
    const auto run = schema::explain::RunUris::from_uri(final.body["session"].get<std::string>());
    ASSERT_TRUE(run);
    EXPECT_EQ(objects(triples, run->conclusion(), vocab::kAbstained),
              std::vector<std::string>{"true"});
    EXPECT_EQ(objects(triples, run->conclusion(), vocab::kShortAnswer),
              std::vector<std::string>{""});
}

TEST_F(AgentServiceTest, MalformedRepliesAndUnknownToolsAreErrorObservationsAndTheLoopGoesOn) {
    script({"I am not sure what to do.",
            "Thought: try a tool\nAction: web-search\nArgs: {\"q\": \"x\"}",
            "Thought: ask the graph\nAction: knowledge-query\nArgs: {\"question\": \"Which country "
            "is Cruz Azul FC in?\"}",
            "Thought: the graph answered\nFinal Answer: Mexico\nCruz Azul FC is in Mexico."});
    const auto replies = ask_scripted("Where is Cruz Azul?", "fam");
    const auto& final = replies.back();
    ASSERT_EQ(final.kind, bus::ReplyKind::kFinal) << (final.error ? final.error->describe() : "");
    EXPECT_EQ(final.body["answer"], "Mexico");
    EXPECT_EQ(final.body["termination"], "final-answer");
    // The model cited nothing: the answer is marked with the sources it rests on, as numbered.
    EXPECT_EQ(final.body["response"], "Cruz Azul FC is in Mexico [1][2][3].");
    EXPECT_EQ(final.body["citations"].size(), 3u) << final.body.dump();

    // The model saw each error.
    std::vector<json> seen;
    {
        std::lock_guard lock(model_->mutex);
        seen = model_->seen_steps;
    }
    ASSERT_EQ(seen.size(), 4u);
    EXPECT_NE(seen[1][0]["error"].get<std::string>().find("no Action and no Final Answer"),
              std::string::npos);
    EXPECT_TRUE(seen[2][1]["calls"][0]["error"].get<bool>());
    EXPECT_NE(seen[2][1]["calls"][0]["observation"].get<std::string>().find("web-search"),
              std::string::npos);

    const auto triples = trace_triples(replies);
    const auto run = schema::explain::RunUris::from_uri(final.body["session"].get<std::string>());
    ASSERT_TRUE(run);
    EXPECT_EQ(objects(triples, run->observation(0), vocab::kToolStatus),
              std::vector<std::string>{"error"});
    EXPECT_EQ(objects(triples, run->observation(1), vocab::kToolStatus),
              std::vector<std::string>{"error"});
    EXPECT_EQ(objects(triples, run->observation(2), vocab::kToolStatus),
              std::vector<std::string>{"ok"});
    // The knowledge-query sub-run: its explain messages were forwarded, its parent is
    // Analysis(2), and Observation(2) is derived from its last step.
    std::string sub_last;
    bool parent_ok = false;
    for (const auto& p : partials(replies, "explain")) {
        sub_last = p["explain"]["explain_id"].get<std::string>();
        parent_ok = parent_ok || p["explain"].value("parent_uri", "") == run->analysis(2);
    }
    EXPECT_TRUE(parent_ok);
    ASSERT_FALSE(sub_last.empty());
    const auto derived = objects(triples, run->observation(2), vocab::kProvWasDerivedFrom);
    EXPECT_NE(std::find(derived.begin(), derived.end(), sub_last), derived.end());
    EXPECT_NE(std::find(derived.begin(), derived.end(), run->analysis(2)), derived.end());
}

TEST_F(AgentServiceTest, MaxIterationsEndsWithTheBestAnswerSoFar) {
    script({kAskTheGraph});
    const auto replies = ask_scripted("Where is Cruz Azul?", "fam", 2);
    const auto& final = replies.back();
    ASSERT_EQ(final.kind, bus::ReplyKind::kFinal) << (final.error ? final.error->describe() : "");
    EXPECT_EQ(final.body["termination"], "max-iterations");
    EXPECT_EQ(final.body["iterations"], 2);
    EXPECT_FALSE(final.body["response"].get<std::string>().empty());
    const auto triples = trace_triples(replies);
    const auto run = schema::explain::RunUris::from_uri(final.body["session"].get<std::string>());
    ASSERT_TRUE(run);
    EXPECT_EQ(objects(triples, run->conclusion(), vocab::kTerminationReason),
              std::vector<std::string>{"max-iterations"});
}

TEST_F(AgentServiceTest, ACollectionNeverLoadedIsNotFoundBeforeAnyIteration) {
    // Issue 31: it ran its lookups against nothing and answered that they did not answer.
    script({kAskTheGraph});
    const auto replies = ask_scripted("Where is Cruz Azul?", "kg-none", 2);
    const auto& last = replies.back();
    ASSERT_EQ(last.kind, bus::ReplyKind::kError);
    EXPECT_EQ(last.error->type, base::ErrorType::kNotFound);
    EXPECT_NE(last.error->message.find("\"kg-none\""), std::string::npos) << last.error->message;
    EXPECT_EQ(last.error->message.find('/'), std::string::npos)
        << "no server path: " << last.error->message;
    EXPECT_TRUE(partials(replies, "action").empty())
        << "no lookups in a collection that does not exist";
}

TEST_F(AgentServiceTest, AToolWhoseServiceFailsIsAnErrorObservation) {
    script({"Thought: complete\nAction: text-completion\nArgs: {\"prompt\": \"say hi\"}",
            "Thought: that failed, so stop\nFinal Answer: unknown"});
    // The extractive llm answers no agent-completion template: the tool fails, the loop goes on.
    const auto replies = ask_scripted("Say hi", "fam");
    const auto& final = replies.back();
    ASSERT_EQ(final.kind, bus::ReplyKind::kFinal) << (final.error ? final.error->describe() : "");
    EXPECT_EQ(final.body["answer"], "unknown");
    const auto observations = partials(replies, "observation");
    ASSERT_EQ(observations.size(), 1u);
    EXPECT_TRUE(observations[0]["error"].get<bool>());
}

TEST_F(AgentServiceTest, AModelThatFailsEndsTheRunWithAnErrorTrace) {
    script({"unused"});
    {
        std::lock_guard lock(model_->mutex);
        model_->fail = true;
    }
    const auto replies = ask_scripted("Where is Cruz Azul?", "fam");
    const auto& last = replies.back();
    ASSERT_EQ(last.kind, bus::ReplyKind::kError);
    EXPECT_EQ(last.error->type, base::ErrorType::kUpstreamError);
    const auto triples = trace_triples(replies);
    bool error_status = false;
    for (const auto& t : triples)
        if (t.p.is_iri() && t.p.as_iri().value == vocab::kStatus && t.o.is_literal() &&
            t.o.as_literal().value == "error")
            error_status = true;
    EXPECT_TRUE(error_status);
    script({"Thought: fine\nFinal Answer: yes"});
    const auto again = ask_scripted("Still there?", "fam");
    EXPECT_EQ(again.back().kind, bus::ReplyKind::kFinal);
}

TEST_F(AgentServiceTest, AConversationsEarlierTurnsReachTheModelAndTheQuestionRecordsIt) {
    script({"Thought: he is Oren Tal\nFinal Answer: iceland"});
    json body = agent_request("Where is he from?", "fam");
    body["session_id"] = "s1";
    body["revision_of"] = "urn:glassbox:2e14c8b4-1111-4222-8333-444444444444:question";
    const auto replies = cluster_->request("agent-scripted", body);
    ASSERT_EQ(replies.back().kind, bus::ReplyKind::kFinal);
    {
        std::lock_guard lock(model_->mutex);
        ASSERT_EQ(model_->seen_history.size(), 1u);
        ASSERT_EQ(model_->seen_history[0].size(), 1u);
        EXPECT_EQ(model_->seen_history[0][0]["short_answer"], "Oren Tal");
    }
    const auto triples = trace_triples(replies);
    const auto run =
        schema::explain::RunUris::from_uri(replies.back().body["session"].get<std::string>());
    ASSERT_TRUE(run);
    EXPECT_EQ(objects(triples, run->question(), vocab::kConversation),
              std::vector<std::string>{"s1"});
    // A replay (`traces replay`): the Question revises the run it asks again.
    EXPECT_EQ(
        objects(triples, run->question(), vocab::kProvWasRevisionOf),
        std::vector<std::string>{"urn:glassbox:2e14c8b4-1111-4222-8333-444444444444:question"});

    // A fetch that fails is noted in the first Analysis and the run goes on without history.
    script({"Thought: no history\nFinal Answer: unknown"});
    body["session_id"] = "broken";
    const auto broken = cluster_->request("agent-scripted", body);
    ASSERT_EQ(broken.back().kind, bus::ReplyKind::kFinal);
    const auto broken_run =
        schema::explain::RunUris::from_uri(broken.back().body["session"].get<std::string>());
    ASSERT_TRUE(broken_run);
    const auto thought = objects(trace_triples(broken), broken_run->analysis(0), vocab::kThought);
    ASSERT_EQ(thought.size(), 1u);
    EXPECT_NE(thought[0].find("could not be fetched"), std::string::npos) << thought[0];
}

TEST_F(AgentServiceTest, InvalidRequestsAreTypedErrors) {
    for (const auto& body :
         {agent_request("", "fam"), agent_request("q?", "fam", 50),
          json{{"question", "q?"}, {"tools", {"web-search"}}}, json{{"question", 3}},
          json{{"question", "q?"}, {"min_confidence", 1.5}}}) {
        const auto replies = cluster_->request("agent", body);
        ASSERT_EQ(replies.back().kind, bus::ReplyKind::kError) << body.dump();
        EXPECT_TRUE(replies.back().error->type == base::ErrorType::kInvalidRequest ||
                    replies.back().error->type == base::ErrorType::kDecodeError)
            << replies.back().error->describe();
    }
}

// Issue 35: graph RAG's answer reported two of its facts disagreeing; the agent that states that
// answer carries the conflict over: in its FINAL, its answer's note (both citations, numbered as
// the agent numbers them), its Conclusion's gb:Conflict, and its confidence, lowered once (the
// tool's confidence is taken as it was before its own conflict lowered it).
TEST_F(AgentServiceTest, AConflictGraphRagReportedIsCarriedIntoTheAgentsAnswer) {
    json body = agent_request("When was Saltspire Light built?", "fam");
    body["tools"] = {"knowledge-query"};
    const auto replies = cluster_->request("agent-graph-disputed", body);
    const auto& final = replies.back();
    ASSERT_EQ(final.kind, bus::ReplyKind::kFinal)
        << (final.error ? final.error->describe() : final.body.dump());
    EXPECT_EQ(final.body["answer"], "1879") << final.body.dump();
    ASSERT_EQ(final.body["conflicts"].size(), 1u) << final.body.dump();
    EXPECT_EQ(final.body["conflicts"][0]["stated"], "1879");
    EXPECT_EQ(final.body["conflicts"][0]["rival"], "1881");
    const std::string response = final.body["response"];
    EXPECT_NE(response.find("Sources disagree on this: [1] gives 1879; [2] gives 1881."),
              std::string::npos)
        << response;
    EXPECT_EQ(response.find("Sources disagree"), response.rfind("Sources disagree"))
        << "said once: " << response;
    double rag_confidence = -1.0;
    std::size_t conflict_features = 0;
    for (const auto& f : final.body["evidence"]) {
        if (f.value("name", "") == "rag_confidence") rag_confidence = f.value("value", -1.0);
        if (f.value("name", "") == "conflict") {
            ++conflict_features;
            EXPECT_EQ(f.value("value", 0.0), 0.5);
            EXPECT_LT(f.value("effect", 0.0), 0.0);
        }
    }
    EXPECT_EQ(conflict_features, 1u) << final.body["evidence"].dump();
    EXPECT_NEAR(rag_confidence, 0.6, 1e-9) << "graph RAG's, before its conflict lowered it";

    const auto triples = trace_triples(replies);
    const auto run = schema::explain::RunUris::from_uri(final.body["session"].get<std::string>());
    ASSERT_TRUE(run);
    const auto conflicts = objects(triples, run->conclusion(), vocab::kConflictProperty);
    ASSERT_EQ(conflicts.size(), 1u);
    EXPECT_EQ(objects(triples, conflicts[0], vocab::kRivalValue), std::vector<std::string>{"1881"});
    EXPECT_EQ(objects(triples, conflicts[0], vocab::kRivalSelection),
              std::vector<std::string>{"urn:glassbox:graph-run:focus:edge:1"});
}

TEST_F(AgentServiceTest, ARequestMayNarrowTheTools) {
    json body = agent_request("what is the nationality of marta_vell 's husband ?", "fam");
    body["tools"] = {"knowledge-query"};
    const auto replies = cluster_->request("agent", body);
    ASSERT_EQ(replies.back().kind, bus::ReplyKind::kFinal);
    for (const auto& a : partials(replies, "action")) EXPECT_EQ(a["tool"], "knowledge-query");
}

}  // namespace
}  // namespace glassbox::agent
