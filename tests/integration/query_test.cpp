// The query worker end to end on ops/sample: the real broker, trace collector, embeddings, store,
// llm (extractive), graph-rag, document-rag and query workers as processes on loopback. Routing
// to each engine, an escalation past a missing agent, the chain and its links as the collector
// stored them, `glassbox invoke` with query as its default target, and a query worker killed
// mid-run.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "schema/explain_uris.hpp"
#include "schema/vocabulary.hpp"
#include "tests/integration/rag_trace_checks.hpp"
#include "tests/integration/sample_knowledge.hpp"
#include "tests/support/cluster.hpp"

namespace glassbox::integration::rag {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
namespace vocab = schema::vocab;

class QueryTest : public ClusterTest {
protected:
    void SetUp() override {
        broker_ = start_broker();
        start_workers(broker_.endpoint,
                      {{"trace-collector", {"--home", (dir() / "collector-home").string()}},
                       {"embeddings"},
                       {"store", {"--home", (dir() / "store-home").string()}},
                       {"llm"},
                       {"graph-rag", {"--threads", "2"}},
                       {"document-rag", {"--threads", "2"}},
                       {"query", {"--threads", "2"}}});
        ASSERT_FALSE(HasFailure()) << "the pipeline did not start";
        load_sample(broker_.endpoint, kSample, true);
        ASSERT_FALSE(HasFailure()) << "ops/sample did not load";
    }

    RagRun ask(const json& body) {
        GbcClient client(context_, broker_.endpoint);
        return rag::decode_run(client.call("query", body.dump(), 60'000, milliseconds{65'000}));
    }

    // The trace the collector stored for `session`, once its status is `status`.
    json stored(const std::string& session, const std::string& status) {
        json shown;
        if (wait_for_trace_answer(
                broker_.endpoint, {{"op", "show"}, {"session", session}},
                [&](json s) { return s["session"].value("status", "") == status; }, shown))
            return shown;
        ADD_FAILURE() << session << " never stored as " << status
                      << "; last: " << shown.dump().substr(0, 2000);
        return json();
    }

    RunningBroker broker_;
};

// The query's own steps (its session), in order, as gb: class names.
std::vector<std::string> own_steps(const RagRun& run, const TraceGraph& graph) {
    std::vector<std::string> out;
    for (const auto& e : run.explains) {
        for (const char* cls : {"Question", "RoutingDecision", "Escalation", "Conclusion"}) {
            if (graph.has_type(schema::iri(e.explain_id),
                               std::string("https://glassbox.dev/ns#") + cls))
                out.push_back(cls);
        }
    }
    return out;
}

TEST_F(QueryTest, RoutesANamedEntityToGraphRagWithTheChainLinkedAndStored) {
    const RagRun run = ask({{"query", "Who founded the shipyard that built the MV Curlew?"}});
    ASSERT_TRUE(run.ok()) << run.describe();
    const json& final = *run.final;
    EXPECT_EQ(final["route"]["engine"], "graph-rag") << final["route"].dump();
    EXPECT_EQ(final["route"]["method"], "rules");
    const TraceGraph graph(run.explains);
    const std::string session = final["session"];
    const auto uris = schema::explain::RunUris::from_uri(session);
    ASSERT_TRUE(uris);
    // Its own messages: one session, seq 0..n-1, service query, the last ending it complete.
    for (std::size_t i = 0; i < run.explains.size(); ++i) {
        EXPECT_EQ(run.explains[i].session, session);
        EXPECT_EQ(run.explains[i].seq, i);
        EXPECT_EQ(run.explains[i].service, "query");
    }
    EXPECT_EQ(run.explains.back().trace_status, schema::TraceStatus::kComplete);
    const auto steps = own_steps(run, graph);
    ASSERT_GE(steps.size(), 3u);
    EXPECT_EQ(steps.front(), "Question");
    EXPECT_EQ(steps[1], "RoutingDecision");
    EXPECT_EQ(steps.back(), "Conclusion");
    // The engine's sub-trace was forwarded (PARTIAL data) and names the routing as its parent.
    EXPECT_GE(run.data_partials, 5) << run.describe();
    const std::string sub = final["engine_session"];
    const json sub_stored = stored(sub, "complete");
    ASSERT_TRUE(sub_stored.is_object());
    EXPECT_NE(sub_stored.dump().find(uris->routing_decision()), std::string::npos)
        << "the sub-run's Question used the routing decision";
    // The Conclusion: derived from the sub-run's synthesis, with its provenance.
    const auto sub_uris = schema::explain::RunUris::from_uri(sub);
    ASSERT_TRUE(sub_uris);
    const auto derived = graph.values(schema::iri(uris->conclusion()), vocab::kProvWasDerivedFrom);
    EXPECT_NE(std::find(derived.begin(), derived.end(), schema::iri(sub_uris->synthesis())),
              derived.end());
    EXPECT_EQ(graph.text(schema::iri(uris->conclusion()), vocab::kAggregateTier),
              std::optional<std::string>("1"))
        << "orrin.ttl was loaded at tier 1";
    EXPECT_NE(final["provenance"]["sources"].dump().find("orrin.ttl"), std::string::npos)
        << final["provenance"].dump();
    // The collector stored the query's trace whole and complete.
    const json shown = stored(session, "complete");
    ASSERT_TRUE(shown.is_object());
    EXPECT_EQ(shown["events"].size(), run.explains.size());
}

TEST_F(QueryTest, DocumentWordsGoToDocumentRagAndAMissingAgentIsACleanEscalation) {
    // Lower case, no name the graph knows: the documents' words decide.
    const RagRun docs = ask({{"query", "what happened to the lamp during the great gale?"}});
    ASSERT_TRUE(docs.ok()) << docs.describe();
    EXPECT_EQ((*docs.final)["route"]["engine"], "document-rag") << (*docs.final)["route"].dump();

    // No agent worker runs here: asked for it, the router records why and escalates.
    const RagRun agent =
        ask({{"query", "Who founded the shipyard that built the MV Curlew?"}, {"mode", "agent"}});
    ASSERT_TRUE(agent.ok()) << agent.describe();
    const json& final = *agent.final;
    ASSERT_GE(final["escalations"].size(), 1u) << final.dump();
    EXPECT_EQ(final["escalations"][0]["from"], "agent");
    EXPECT_NE(final["escalations"][0]["reason"].get<std::string>().find("no worker serves"),
              std::string::npos);
    EXPECT_NE(final["engine"], "agent");
    const TraceGraph graph(agent.explains);
    const auto steps = own_steps(agent, graph);
    EXPECT_NE(std::find(steps.begin(), steps.end(), "Escalation"), steps.end());
    ASSERT_TRUE(stored(final["session"], "complete").is_object());
}

TEST_F(QueryTest, AnAgentAnswerCarriesTheTiersOfTheFactsItRestsOn) {
    start_workers(broker_.endpoint, {{"agent"}});
    ASSERT_FALSE(HasFailure());
    const RagRun run = ask(
        {{"query", "Where was the founder of the company that built the Meridian Telescope born?"},
         {"mode", "agent"}});
    ASSERT_TRUE(run.ok()) << run.describe();
    const json& final = *run.final;
    ASSERT_EQ(final["engine"], "agent") << final.dump();
    EXPECT_EQ(final.value("answer", ""), "Port Aldous") << final.dump();
    // The agent's lookups rest on facts of orrin.ttl, loaded at tier 1: the answer is tier 1,
    // not the tier 4 of an answer whose sources are not known.
    const json& provenance = final["provenance"];
    EXPECT_EQ(provenance["aggregate_tier"], 1) << provenance.dump();
    ASSERT_FALSE(provenance["sources"].empty()) << provenance.dump();
    for (const auto& source : provenance["sources"]) {
        EXPECT_EQ(source["tier"], 1) << source.dump();
        EXPECT_NE(source["source"].get<std::string>().find("orrin.ttl"), std::string::npos)
            << source.dump();
    }
    const auto uris = schema::explain::RunUris::from_uri(final["session"].get<std::string>());
    ASSERT_TRUE(uris);
    const TraceGraph graph(run.explains);
    EXPECT_EQ(graph.text(schema::iri(uris->conclusion()), vocab::kAggregateTier),
              std::optional<std::string>("1"));
    // The agent's calibrated confidence judges it (no escalation) and is passed on, on the
    // routed Conclusion too (issue 35).
    ASSERT_TRUE(final.contains("confidence") && final["confidence"].is_number()) << final.dump();
    EXPECT_TRUE(final.value("calibrator", "").ends_with("/agent")) << final.dump();
    EXPECT_TRUE(final.value("escalations", json::array()).empty()) << final.dump();
    EXPECT_EQ(graph.text(schema::iri(uris->conclusion()), vocab::kCalibrator),
              std::optional<std::string>(final.value("calibrator", "")));
}

TEST_F(QueryTest, AFollowUpIsResolvedAgainstThePreviousTurnBeforeRoutingAndRecorded) {
    const std::string conversation = "query-follow-up-" + port_of(broker_.endpoint);
    const RagRun first = ask({{"query", "What is Saltspire Light?"}, {"session_id", conversation}});
    ASSERT_TRUE(first.ok()) << first.describe();
    ASSERT_TRUE(wait_for_turns(broker_.endpoint, conversation, 1))
        << "the first turn was never indexed";
    const RagRun second = ask({{"query", "Who designed it?"}, {"session_id", conversation}});
    ASSERT_TRUE(second.ok()) << second.describe();
    const json& final = *second.final;
    EXPECT_EQ(final.value("resolved_question", ""), "Who designed Saltspire Light?")
        << final.dump();
    EXPECT_EQ(final["resolved_reference"].value("rule", ""), "question-entity");
    EXPECT_EQ(final.value("answer", ""), "Ilse Varrow") << final.dump();
    const auto uris = schema::explain::RunUris::from_uri(final["session"].get<std::string>());
    ASSERT_TRUE(uris);
    const TraceGraph graph(second.explains);
    EXPECT_EQ(graph.text(schema::iri(uris->routing_decision()), vocab::kResolvedQuestion),
              std::optional<std::string>("Who designed Saltspire Light?"));
    EXPECT_EQ(graph.text(schema::iri(uris->routing_decision()), vocab::kResolvedReference),
              std::optional<std::string>("it -> Saltspire Light (question-entity)"));
    // The engine was asked the rewritten question (its own trace says so).
    const json engine_trace = stored(final["engine_session"], "complete");
    ASSERT_TRUE(engine_trace.is_object());
    EXPECT_NE(engine_trace.dump().find("Who designed Saltspire Light?"), std::string::npos);
    // No session: nothing resolved, nothing recorded.
    const RagRun alone = ask({{"query", "Who designed it?"}});
    ASSERT_TRUE(alone.ok()) << alone.describe();
    EXPECT_FALSE(alone.final->contains("resolved_question"));
}

// The query's own answer-text PARTIALs (not its engines' forwarded explain messages).
std::vector<json> text_partials(const RagRun& run) {
    std::vector<json> out;
    for (const auto& m : run.messages) {
        if (!m.is_partial("data")) continue;
        const json body = m.json();
        const std::string type = body.value("message_type", "");
        if (type == "chunk" || type == "retract") out.push_back(body);
    }
    return out;
}

TEST_F(QueryTest, StreamsTheEnginesTextProvisionallyAndRetractsARunItEscalatesPast) {
    // No escalation: the routed engine's pieces, provisional, make up the answer.
    const RagRun run =
        ask({{"query", "Who founded the shipyard that built the MV Curlew?"}, {"streaming", true}});
    ASSERT_TRUE(run.ok()) << run.describe();
    const auto pieces = text_partials(run);
    ASSERT_FALSE(pieces.empty())
        << "the text is streamed (the extractive model writes it in one piece)";
    std::string text;
    for (const auto& p : pieces) {
        EXPECT_EQ(p.value("message_type", ""), "chunk") << p.dump();
        EXPECT_EQ(p.value("engine", ""), "graph-rag") << p.dump();
        EXPECT_TRUE(p.value("provisional", false)) << p.dump();
        text += p.value("response", "");
    }
    EXPECT_EQ(text, run.final->value("response", ""));
    // Asked for the agent, which no worker serves: its run is retracted, then the next engine's
    // text comes; nothing streamed before the retraction belongs to the answer.
    const RagRun escalated = ask({{"query", "Who founded the shipyard that built the MV Curlew?"},
                                  {"mode", "agent"},
                                  {"streaming", true}});
    ASSERT_TRUE(escalated.ok()) << escalated.describe();
    const auto streamed = text_partials(escalated);
    const auto retract = std::find_if(streamed.begin(), streamed.end(), [](const json& p) {
        return p.value("message_type", "") == "retract";
    });
    ASSERT_NE(retract, streamed.end());
    EXPECT_EQ(retract->value("engine", ""), "agent");
    EXPECT_EQ((*retract)["run"], 0);
    std::string after;
    for (auto it = retract + 1; it != streamed.end(); ++it) after += it->value("response", "");
    EXPECT_EQ(after, escalated.final->value("response", ""));
    // Not streaming: no text PARTIALs at all.
    const RagRun quiet = ask({{"query", "Who founded the shipyard that built the MV Curlew?"}});
    ASSERT_TRUE(quiet.ok()) << quiet.describe();
    EXPECT_TRUE(text_partials(quiet).empty());
}

TEST_F(QueryTest, InvokeAsksTheRouterByDefaultAndShowsTheRoute) {
    const auto text =
        run_glassbox({"invoke", "-x", "-q", "Who founded the shipyard that built the MV Curlew?",
                      "--broker", broker_.endpoint},
                     milliseconds{120'000});
    ASSERT_TRUE(text.status.exited && text.status.code == 0) << text.err;
    EXPECT_NE(text.out.find("[RoutingDecision] urn:glassbox:"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("route graph-rag by rules"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("\n  [Synthesis] urn:glassbox:"), std::string::npos)
        << "the sub-trace, indented\n"
        << text.out;
    EXPECT_NE(text.out.find("route: graph-rag by rules"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("provenance: tier 1"), std::string::npos) << text.out;
    // The engines stay reachable by name.
    const auto direct = run_glassbox({"invoke", "graph-rag", "-q", "Who designed Greyhollow Light?",
                                      "--broker", broker_.endpoint},
                                     milliseconds{120'000});
    ASSERT_TRUE(direct.status.exited && direct.status.code == 0) << direct.err;
    EXPECT_EQ(direct.out.find("route:"), std::string::npos);
}

// Every run URI (urn:glassbox:<uuid>…) of `text` with its uuid masked: two runs of one question
// differ in nothing else.
std::string masked_runs(const std::string& text) {
    static const std::regex run(
        R"(urn:glassbox:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})");
    return std::regex_replace(text, run, "urn:glassbox:RUN");
}

// docs/protocol.md §4.1: a client that asks explain=none gets the answer without explain
// messages: neither the router's own (the broker leaves them out) nor its engine's, which the
// router forwards as data only to a client that takes them (meta "explain": "none", §5.1). Both
// traces are stored whole all the same. `glassbox invoke` asks for none without -x: its text is
// the -x text less the step lines.
TEST_F(QueryTest, ExplainNoneLeavesOutEveryExplainAndInvokePrintsTheSameAnswer) {
    const std::string question = "Who founded the shipyard that built the MV Curlew?";
    const json body{{"query", question}, {"streaming", true}};
    const RagRun streamed = ask(body);
    ASSERT_TRUE(streamed.ok()) << streamed.describe();
    std::size_t forwarded = 0;  // the engine's steps the router forwarded to the streamed run
    for (const auto& m : streamed.messages)
        if (m.is_partial("data") && m.json().value("message_type", "") == "explain") ++forwarded;
    ASSERT_GT(forwarded, 0u) << streamed.describe();

    GbcClient client(context_, broker_.endpoint);
    client.send_raw({"", "GBC01", std::string(1, '\x01'), "query", "quiet-1", "60000",
                     "explain=none", body.dump()});
    const RagRun quiet = rag::decode_run(client.collect("quiet-1", milliseconds{65'000}));
    ASSERT_TRUE(quiet.ok()) << quiet.describe();
    EXPECT_TRUE(quiet.explains.empty()) << quiet.describe();
    for (const auto& m : quiet.messages) {
        EXPECT_FALSE(m.is_partial("data") && m.json().value("message_type", "") == "explain")
            << m.describe().substr(0, 300);
    }
    EXPECT_FALSE(quiet.streamed.empty());
    EXPECT_EQ(quiet.streamed, streamed.streamed);
    EXPECT_EQ((*quiet.final)["response"], (*streamed.final)["response"]);
    EXPECT_EQ((*quiet.final)["route"], (*streamed.final)["route"]);
    // Stored whole: the router's trace and its engine's, each with as many events as the
    // streamed run's.
    const auto stored_with = [&](const std::string& session, std::size_t events) {
        json shown;
        EXPECT_TRUE(wait_for_trace_answer(
            broker_.endpoint, {{"op", "show"}, {"session", session}},
            [&](const json& s) {
                return s["session"].value("status", "") == "complete" &&
                       s["events"].size() == events;
            },
            shown))
            << session << " not stored whole; last: " << shown.dump().substr(0, 2000);
    };
    stored_with((*quiet.final)["session"], streamed.explains.size());
    stored_with((*quiet.final)["engine_session"], forwarded);

    const auto with_steps = run_glassbox(
        {"invoke", "-x", "-q", question, "--broker", broker_.endpoint}, milliseconds{120'000});
    ASSERT_TRUE(with_steps.status.exited && with_steps.status.code == 0) << with_steps.err;
    const auto plain = run_glassbox({"invoke", "-q", question, "--broker", broker_.endpoint},
                                    milliseconds{120'000});
    ASSERT_TRUE(plain.status.exited && plain.status.code == 0) << plain.err;
    EXPECT_EQ(plain.out.find("[RoutingDecision]"), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find("trace: urn:glassbox:"), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find("route: graph-rag by rules"), std::string::npos) << plain.out;
    EXPECT_NE(with_steps.out.find("[RoutingDecision] urn:glassbox:"), std::string::npos)
        << with_steps.out;
    // -x: the step lines, an empty line, then what invoke prints without -x.
    EXPECT_TRUE(masked_runs(with_steps.out).ends_with("\n\n" + masked_runs(plain.out)))
        << "with -x:\n"
        << with_steps.out << "\nwithout:\n"
        << plain.out;
}

TEST_F(QueryTest, AnUnknownCollectionIsNotFoundWithoutEscalatingInTheStreamAndThroughInvoke) {
    // Issue 31: it escalated through three engines and "answered by: agent" with exit 0. An
    // agent runs here (unlike the other tests), so an escalation would find an engine to answer.
    start_workers(broker_.endpoint, {{"agent"}});
    ASSERT_FALSE(HasFailure()) << "the agent did not start";
    const RagRun run = ask({{"query", "Who designed Greyhollow Light?"}, {"collection", "nope"}});
    ASSERT_FALSE(run.ok());
    EXPECT_EQ(run.error_type, "NotFound") << run.describe();
    EXPECT_NE(run.error_message.find("\"nope\""), std::string::npos) << run.error_message;
    EXPECT_EQ(run.error_message.find(dir().string()), std::string::npos)
        << "no server path: " << run.error_message;
    const TraceGraph graph(run.explains);
    const auto steps = own_steps(run, graph);
    EXPECT_EQ(std::find(steps.begin(), steps.end(), "Escalation"), steps.end())
        << "no escalation past NotFound";
    ASSERT_FALSE(run.explains.empty());
    ASSERT_TRUE(stored(run.explains.front().session, "error").is_object());

    const auto text = run_glassbox({"invoke", "-q", "Who designed Greyhollow Light?",
                                    "--collection", "nope", "--broker", broker_.endpoint},
                                   milliseconds{120'000});
    EXPECT_TRUE(text.status.exited && text.status.code == 2) << text.status.describe() << "\n"
                                                             << text.out;
    EXPECT_TRUE(text.err.starts_with("NotFound")) << text.err;
    EXPECT_NE(text.err.find("\"nope\""), std::string::npos) << text.err;
    EXPECT_EQ(text.err.find(dir().string()), std::string::npos) << "no server path: " << text.err;
    EXPECT_EQ(text.out.find("answered by"), std::string::npos) << text.out;
}

TEST_F(QueryTest, QueryWorkerKilledMidRunLeavesAnErrorTraceNamingTheStepReached) {
    ChildProcess* query = nullptr;
    ChildProcess* graph = nullptr;
    for (auto& p : processes_) {
        if (p->name() == "query") query = p.get();
        if (p->name() == "graph-rag") graph = p.get();
    }
    ASSERT_NE(query, nullptr);
    ASSERT_NE(graph, nullptr);
    // graph-rag is frozen, so the query waits on it after routing; then the query worker dies.
    graph->send_signal(SIGSTOP);
    GbcClient client(context_, broker_.endpoint);
    const std::string id = client.request(
        "query", json{{"query", "Who designed Greyhollow Light?"}, {"mode", "graph-rag"}}.dump(),
        30'000);
    ASSERT_TRUE(wait_for_service_entry(broker_.endpoint, "graph-rag", [](const json& e) {
        return e.value("in_flight", 0) >= 1;
    })) << "the query never reached the frozen graph-rag";
    query->kill();
    const RagRun run = rag::decode_run(client.collect(id, milliseconds{30'000}));
    graph->send_signal(SIGCONT);
    EXPECT_FALSE(run.ok()) << run.describe();
    EXPECT_EQ(run.error_type, "WorkerLost") << run.describe();
    ASSERT_GE(run.explains.size(), 3u) << run.describe();
    const std::string session = run.explains.front().session;
    EXPECT_EQ(run.explains.back().trace_status, schema::TraceStatus::kError);
    const json shown = stored(session, "error");
    ASSERT_TRUE(shown.is_object());
    // The stored trace ends with the error after the last step the worker reached: the routing.
    const auto uris = schema::explain::RunUris::from_uri(session);
    ASSERT_TRUE(uris);
    const auto& events = shown["events"];
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events[events.size() - 2].value("explain_id", ""), uris->routing_decision())
        << shown.dump().substr(0, 3000);
    EXPECT_NE(shown["session"].dump().find("WorkerLost"), std::string::npos)
        << shown["session"].dump();
}

// Issue 31: `printf 'Q1\nQ2\n' | glassbox chat` sends the follow-up the moment the first answer
// is in, before that turn's trace can have reached the store; the follow-up must still read it
// ("she" is Ilse Varrow), and "else" must leave out what the first turn was about (Greyhollow
// Light): Saltspire Light, every time. Chat and invoke both take the router.
TEST_F(QueryTest, APipedChatFollowUpSeesThePreviousTurnAndElseLeavesOutItsAnswer) {
    std::string last_trace;
    for (int attempt = 0; attempt < 3; ++attempt) {
        const auto chat = run_command(
            {"/bin/sh", "-c",
             "printf 'Who designed Greyhollow Light?\\nWhat else did she design?\\n' | '" +
                 glassbox_binary() + "' chat --broker " + broker_.endpoint},
            dir(), milliseconds{120'000});
        ASSERT_TRUE(chat.status.exited && chat.status.code == 0) << chat.out << chat.err;
        EXPECT_NE(chat.out.find("(query)\n"), std::string::npos) << "chat takes the router\n"
                                                                 << chat.out;
        const auto first = chat.out.find("Answer: Ilse Varrow\n");
        ASSERT_NE(first, std::string::npos) << chat.out;
        EXPECT_NE(chat.out.find("Answer: Saltspire Light\n", first), std::string::npos)
            << "attempt " << attempt << "\n"
            << chat.out;
        const auto at = chat.out.rfind("trace: ");
        ASSERT_NE(at, std::string::npos);
        last_trace = chat.out.substr(at + 7, chat.out.find('\n', at) - at - 7);
    }
    // The follow-up's trace says what it left out, where: the routing and graph-rag's Focus.
    const json shown = stored(last_trace, "complete");
    ASSERT_TRUE(shown.is_object());
    const std::string text = shown.dump();
    EXPECT_NE(text.find("https://glassbox.dev/ns#excludes"), std::string::npos)
        << text.substr(0, 3000);
    EXPECT_NE(text.find("\"Greyhollow Light\""), std::string::npos);
    EXPECT_NE(text.find("https://glassbox.dev/ns#excludedEdgeCount"), std::string::npos);
}

// Issue 31: every trace records the collection it asked; list rows carry it with the tokens of
// the run and its sub-runs, `collection` filters, and a misspelt kind is an error, not "no runs".
TEST_F(QueryTest, TracesRecordTheirCollectionAndTokensAndAKindTypoIsAnError) {
    const RagRun run = ask({{"query", "Who designed Greyhollow Light?"}});
    ASSERT_TRUE(run.ok()) << run.describe();
    const std::string session = run.final->value("session", "");
    ASSERT_TRUE(stored(session, "complete").is_object());
    const auto list = [&](const json& body) {
        GbcClient client(context_, broker_.endpoint);
        return client.call("trace", body.dump(), 10'000, milliseconds{12'000});
    };
    const auto rows = list({{"op", "list"}, {"collection", "default"}, {"kind", "query"}});
    ASSERT_FALSE(rows.empty());
    ASSERT_TRUE(rows.back().is_final()) << rows.back().json().dump();
    const json listed = rows.back().json();
    const auto row = std::find_if(listed["sessions"].begin(), listed["sessions"].end(),
                                  [&](const json& r) { return r.value("session", "") == session; });
    ASSERT_NE(row, listed["sessions"].end()) << listed.dump();
    EXPECT_EQ(row->value("collection", ""), "default");
    // The router calls no model itself: its tokens are its engine's.
    EXPECT_GT(row->value("input_tokens", 0), 0) << row->dump();
    EXPECT_GT(row->value("output_tokens", 0), 0) << row->dump();
    const auto none = list({{"op", "list"}, {"collection", "elsewhere"}});
    ASSERT_TRUE(none.back().is_final());
    EXPECT_TRUE(none.back().json()["sessions"].empty());
    const auto typo = list({{"op", "list"}, {"kind", "graphrag"}});
    ASSERT_TRUE(typo.back().is_error());
    EXPECT_EQ(typo.back().error_type, "InvalidRequest");
    EXPECT_NE(typo.back().message.find("did you mean graph-rag?"), std::string::npos)
        << typo.back().describe();
    // The CLI says the same and exits 2; so does a conversation id nobody had.
    const auto cli =
        run_glassbox({"traces", "list", "--kind", "graphrag", "--broker", broker_.endpoint});
    EXPECT_TRUE(cli.status.exited && cli.status.code == 2) << cli.out << cli.err;
    EXPECT_NE(cli.err.find("did you mean graph-rag?"), std::string::npos) << cli.err;
    const auto nobody =
        run_glassbox({"sessions", "show", "chat-nobody", "--broker", broker_.endpoint});
    EXPECT_TRUE(nobody.status.exited && nobody.status.code == 2) << nobody.out << nobody.err;
    EXPECT_NE(nobody.err.find("NotFound"), std::string::npos) << nobody.err;
}

// `glassbox eval` asks each question of a set as its own stored run and scores it: a question
// whose accepted answer is the sample's is a hit, one whose accepted answer is wrong a miss, and
// the report's files are written owner-only. A set with a bad line is refused before anything
// is asked, naming the line.
TEST_F(QueryTest, EvalScoresEachQuestionAsAStoredRunAndRefusesABadSet) {
    // A run that is not evaluated: `traces list --evaluated` must leave it out.
    const RagRun other = ask({{"query", "Who founded the shipyard that built the MV Curlew?"}});
    ASSERT_TRUE(other.ok()) << other.describe();
    const std::string unevaluated = (*other.final)["session"];
    ASSERT_FALSE(stored(unevaluated, "complete").is_null());
    const auto set = dir() / "set.jsonl";
    {
        std::ofstream out(set);
        out << R"({"id": "right", "question": "Who designed Greyhollow Light?", "answers": ["Ilse Varrow"]})"
            << "\n\n"
            << R"({"question": "Who designed Greyhollow Light?", "answers": ["Nobody_Here"]})"
            << "\n";
    }
    const auto report = dir() / "report";
    const auto ran = run_glassbox({"eval", set.string(), "--engine", "graph-rag", "--out",
                                   report.string(), "--json", "--broker", broker_.endpoint},
                                  milliseconds{120'000});
    ASSERT_TRUE(ran.status.exited && ran.status.code == 0) << ran.out << ran.err;
    const json result = json::parse(ran.out, nullptr, false);
    ASSERT_TRUE(result.is_object()) << ran.out;
    EXPECT_EQ(result["summary"]["questions"], 2);
    EXPECT_DOUBLE_EQ(result["summary"]["hits1"].get<double>(), 0.5) << result.dump();
    const json& rows = result["rows"];
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0]["id"], "right");
    EXPECT_TRUE(rows[0]["hit"].get<bool>()) << rows[0].dump();
    EXPECT_EQ(rows[1]["id"], "3") << "an id-less question is named by its line";
    EXPECT_FALSE(rows[1]["hit"].get<bool>()) << rows[1].dump();
    for (const auto& row : rows) {
        const std::string trace = row.value("trace", "");
        ASSERT_FALSE(trace.empty()) << row.dump();
        EXPECT_FALSE(stored(trace, "complete").is_null());
        EXPECT_TRUE(row.value("attached", false)) << row.dump();
    }
    EXPECT_EQ(result["summary"]["attached"], 2) << result["summary"].dump();
    EXPECT_EQ(result["summary"]["attach_failed"], 0) << result["summary"].dump();
    const json summary_file = json::parse(std::ifstream(report / "summary.json"), nullptr, false);
    EXPECT_EQ(summary_file.value("attached", -1), 2) << summary_file.dump();

    // Each question's score is on its trace: `traces list --evaluated` lists exactly those runs.
    const auto evaluated =
        run_glassbox({"traces", "list", "--evaluated", "--json", "--broker", broker_.endpoint});
    ASSERT_TRUE(evaluated.status.exited && evaluated.status.code == 0) << evaluated.err;
    const json listed = json::parse(evaluated.out, nullptr, false);
    ASSERT_TRUE(listed.is_object()) << evaluated.out;
    ASSERT_EQ(listed["sessions"].size(), 2u) << listed.dump();
    for (const auto& row : rows) {
        const auto found =
            std::find_if(listed["sessions"].begin(), listed["sessions"].end(),
                         [&](const json& s) { return s["session"] == row["trace"]; });
        ASSERT_NE(found, listed["sessions"].end()) << row["trace"] << " not listed";
        const json& evaluations = (*found)["evaluations"];
        ASSERT_EQ(evaluations.size(), 1u) << found->dump();
        const json& e = evaluations[0];
        EXPECT_EQ(e["run"], "report");
        EXPECT_EQ(e["set"], "set");
        EXPECT_EQ(e["question_id"], row["id"]);
        EXPECT_EQ(e["answers"], row["answers"]);
        EXPECT_EQ(e["correct"], row["hit"]) << "answered, not abstained: correct is the hit";
        EXPECT_EQ(e["hit"], row["hit"]);
        EXPECT_DOUBLE_EQ(e["f1"].get<double>(), row["f1"].get<double>());
        EXPECT_DOUBLE_EQ(e["exact_match"].get<double>(), row["exact"].get<double>());
        EXPECT_EQ(e["confidence"], row["confidence"]);
        EXPECT_NE(found->value("session", ""), unevaluated);
    }
    // The table shows the score; `traces show` shows the evaluation near the top.
    const auto table =
        run_glassbox({"traces", "list", "--evaluated", "--broker", broker_.endpoint});
    EXPECT_NE(table.out.find("EVAL"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("\u2713"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("\u2717"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("2 of 2 sessions"), std::string::npos) << table.out;
    const auto shown = run_glassbox(
        {"traces", "show", rows[0]["trace"].get<std::string>(), "--broker", broker_.endpoint});
    EXPECT_NE(shown.out.find("Evaluation    \u2713 correct"), std::string::npos) << shown.out;
    EXPECT_NE(shown.out.find("set set #right, run report"), std::string::npos) << shown.out;

    for (const char* file :
         {"rows.jsonl", "summary.json", "reliability.svg", "risk-coverage.svg"}) {
        std::error_code ec;
        const auto status = std::filesystem::status(report / file, ec);
        ASSERT_FALSE(ec) << file;
        EXPECT_EQ(status.permissions() & std::filesystem::perms::all,
                  std::filesystem::perms::owner_read | std::filesystem::perms::owner_write)
            << file;
    }

    const auto bad = dir() / "bad.jsonl";
    std::ofstream(bad) << R"({"question": "Who designed Greyhollow Light?", "answers": ["x"]})"
                       << "\n"
                       << R"({"question": "No answers here"})"
                       << "\n";
    const auto refused = run_glassbox(
        {"eval", bad.string(), "--out", (dir() / "none").string(), "--broker", broker_.endpoint});
    EXPECT_TRUE(refused.status.exited && refused.status.code == 2) << refused.out << refused.err;
    EXPECT_NE(refused.err.find("bad.jsonl:2: no \"answers\" list"), std::string::npos)
        << refused.err;
    EXPECT_FALSE(std::filesystem::exists(dir() / "none"));
}

}  // namespace
}  // namespace glassbox::integration::rag
