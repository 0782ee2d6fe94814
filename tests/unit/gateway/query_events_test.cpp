// The SSE events a question's bus replies stand for (gateway/query_events.hpp).
#include <gtest/gtest.h>

#include "gateway/explain_view.hpp"
#include "gateway/path_redaction.hpp"
#include "gateway/query_events.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::gateway {
namespace {

using nlohmann::json;
namespace vocab = schema::vocab;

json iri(std::string_view v) { return json{{"t", "i"}, {"i", std::string(v)}}; }
json lit(std::string_view v) { return json{{"t", "l"}, {"v", std::string(v)}}; }

json explain(const std::string& session, int seq, const std::string& step, const std::string& type,
             std::vector<std::pair<std::string_view, json>> facts = {},
             const std::string& parent = "") {
    json triples =
        json::array({json{{"s", iri(step)}, {"p", iri(vocab::kRdfType)}, {"o", iri(type)}}});
    for (auto& [p, o] : facts) triples.push_back(json{{"s", iri(step)}, {"p", iri(p)}, {"o", o}});
    json body{{"message_type", "explain"}, {"session", session}, {"seq", seq},
              {"service", "query"},        {"explain_id", step}, {"explain_triples", triples}};
    if (!parent.empty()) body["parent_uri"] = parent;
    return body;
}

bus::Reply reply(bus::ReplyKind kind, json body) {
    bus::Reply r;
    r.kind = kind;
    r.body = std::move(body);
    return r;
}

std::vector<std::string> names(const std::vector<SseEvent>& events) {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(e.name);
    return out;
}

TEST(QueryEvents, ARoutedQuestionBecomesTypedEventsEndingWithDone) {
    QueryEvents events("req-1", json{{"question", "q"}, {"mode", "auto"}, {"collection", ""}});
    const std::string s = "urn:glassbox:a:question";
    auto first = events.on_reply(
        reply(bus::ReplyKind::kExplain, explain(s, 0, s, std::string(vocab::kQuestion))));
    ASSERT_EQ(names(first), (std::vector<std::string>{"run.started", "step"}));
    EXPECT_EQ(first[0].data["trace"], s);
    EXPECT_EQ(first[0].data["request_id"], "req-1");
    EXPECT_EQ(first[0].data["question"], "q");
    EXPECT_EQ(first[1].data["type"], "Question");
    EXPECT_TRUE(first[1].data["parent"].is_null());

    const std::string routing = "urn:glassbox:a:routing";
    auto routed = events.on_reply(
        reply(bus::ReplyKind::kExplain, explain(s, 1, routing, std::string(vocab::kRoutingDecision),
                                                {{vocab::kEngine, lit("graph-rag")},
                                                 {vocab::kRoutingMethod, lit("rules")},
                                                 {vocab::kRuleFired, lit("named-entity")},
                                                 {vocab::kConfidence, lit("0.9")},
                                                 {vocab::kQuestionType, lit("entity-lookup")},
                                                 {vocab::kRouteScore, lit("graph-rag 0.7500")}})));
    ASSERT_EQ(names(routed), (std::vector<std::string>{"step", "route.decided"}));
    EXPECT_EQ(routed[1].data["engine"], "graph-rag");
    EXPECT_EQ(routed[1].data["rules_fired"], json::array({"named-entity"}));
    EXPECT_EQ(routed[1].data["question_type"], "entity-lookup");
    EXPECT_DOUBLE_EQ(routed[1].data["confidence"].get<double>(), 0.9);
    EXPECT_DOUBLE_EQ(routed[1].data["scores"]["graph-rag"].get<double>(), 0.75);

    // A sub-run's step, forwarded as data, keeps its own session and parent.
    auto sub = events.on_reply(reply(
        bus::ReplyKind::kData, explain("urn:glassbox:b:question", 0, "urn:glassbox:b:question",
                                       std::string(vocab::kQuestion), {}, routing)));
    ASSERT_EQ(names(sub), (std::vector<std::string>{"step"}));
    EXPECT_EQ(sub[0].data["trace"], s);
    EXPECT_EQ(sub[0].data["session"], "urn:glassbox:b:question");
    EXPECT_EQ(sub[0].data["parent"], routing);

    json citation{{"n", 1},      {"chunk", "urn:chunk:1"}, {"document", "urn:doc:1"},
                  {"text", "t"}, {"kind", "chunk"},        {"spans", json::array()}};
    json final{{"response", "The answer [1]. Again [2]."},
               {"answer", "A"},
               {"session", s},
               {"in_token", 3},
               {"out_token", 4},
               {"citations", json::array({citation, citation})}};
    final["citations"][1]["n"] = 2;
    json edge{{"n", 3},
              {"document", "file:///kb.ttl"},
              {"text", "MV Curlew was built by Brenn and Daughters Shipyard"},
              {"kind", "edge"},
              {"spans", json::array()},
              {"subject", "MV Curlew"},
              {"predicate", "was built by"},
              {"object", "Brenn and Daughters Shipyard"}};
    final["citations"].push_back(edge);
    auto done = events.on_reply(reply(bus::ReplyKind::kFinal, final));
    ASSERT_EQ(names(done), (std::vector<std::string>{"answer.delta", "citation", "citation",
                                                     "citation", "answer.done", "done"}));
    EXPECT_TRUE(done[1].data.contains("source"));
    EXPECT_FALSE(done[1].data["source"].contains("subject")) << "a chunk has no fact in parts";
    EXPECT_FALSE(done[2].data.contains("source")) << "the same chunk's source is sent once";
    EXPECT_EQ(done[2].data["source_ref"], "urn:chunk:1");
    EXPECT_EQ(done[3].data["source"]["subject"], "MV Curlew") << "an edge's fact in parts";
    EXPECT_EQ(done[3].data["source"]["predicate"], "was built by");
    EXPECT_EQ(done[3].data["source"]["object"], "Brenn and Daughters Shipyard");
    done.erase(done.begin() + 3);
    // answer.done is the answer a question asked for JSON gets, with the event's `trace`.
    EXPECT_EQ(done[3].data["usage"], (json{{"input_tokens", 3}, {"output_tokens", 4}}));
    EXPECT_EQ(done[3].data["answer"], "The answer [1]. Again [2].");
    EXPECT_EQ(done[3].data["short_answer"], "A");
    EXPECT_EQ(done[3].data["trace_id"], s);
    EXPECT_EQ(done[3].data["question"], "q");
    EXPECT_EQ(done[3].data["request_id"], "req-1");
    EXPECT_EQ(done[3].data["citations"].size(), 3u);
    for (const char* wire :
         {"response", "in_token", "out_token", "session", "message_type", "end_of_stream"})
        EXPECT_FALSE(done[3].data.contains(wire)) << wire;
    EXPECT_EQ(done[4].data["status"], "complete");
    EXPECT_TRUE(events.finished());
    EXPECT_TRUE(events.on_reply(reply(bus::ReplyKind::kFinal, final)).empty())
        << "nothing after done";
}

TEST(QueryEvents, AnErrorEndsWithErrorThenDone) {
    QueryEvents events("r", json::object());
    bus::Reply error;
    error.kind = bus::ReplyKind::kError;
    error.error = base::make_error(base::ErrorType::kDeadlineExceeded, "too slow");
    const auto out = events.on_reply(error);
    ASSERT_EQ(names(out), (std::vector<std::string>{"run.started", "error", "done"}));
    EXPECT_EQ(out[1].data["type"], "DeadlineExceeded");
    EXPECT_EQ(out[2].data["status"], "error");
    EXPECT_TRUE(out[0].data["trace"].is_null()) << "no step named the trace";
    // A FINAL carrying its own error is an error too.
    QueryEvents other("r", json::object());
    const auto failed = other.on_reply(
        reply(bus::ReplyKind::kFinal, json{{"error", {{"type", "NotFound"}, {"message", "m"}}}}));
    EXPECT_EQ(names(failed), (std::vector<std::string>{"run.started", "error", "done"}));
    EXPECT_EQ(failed[1].data["type"], "NotFound");
}

TEST(QueryEvents, AgentStepsBecomeToolCallsAndResults) {
    QueryEvents events("r", json::object());
    const std::string s = "urn:glassbox:c:question";
    const std::string analysis = "urn:glassbox:c:analysis:1";
    auto call = events.on_reply(reply(bus::ReplyKind::kExplain,
                                      explain(s, 2, analysis, std::string(vocab::kAnalysis),
                                              {{vocab::kRdfType, iri(vocab::kToolUse)},
                                               {vocab::kIteration, lit("1")},
                                               {vocab::kAction, lit("graph_rag")},
                                               {vocab::kArguments, lit(R"({"question":"x"})")}})));
    ASSERT_EQ(call.back().name, "tool.call");
    EXPECT_EQ(call.back().data["tool"], "graph_rag");
    EXPECT_EQ(call.back().data["args"]["question"], "x");
    auto result = events.on_reply(
        reply(bus::ReplyKind::kExplain,
              explain(s, 3, "urn:glassbox:c:observation:1", std::string(vocab::kObservation),
                      {{vocab::kIteration, lit("1")},
                       {vocab::kToolStatus, lit("error")},
                       {vocab::kObservationText, lit("line one\nline two")}})));
    ASSERT_EQ(result.back().name, "tool.result");
    EXPECT_EQ(result.back().data["tool"], "graph_rag");
    EXPECT_FALSE(result.back().data["ok"].get<bool>());
    EXPECT_EQ(result.back().data["summary"], "line one line two");
}

TEST(QueryEvents, KeptEdgesAndChunksBecomeRetrievalResults) {
    QueryEvents events("r", json::object());
    const std::string focus = "urn:glassbox:d:focus";
    const std::string sel = "urn:glassbox:d:edge:0";
    json body = explain("urn:glassbox:d:question", 4, focus, std::string(vocab::kFocus),
                        {{vocab::kSelectedEdge, iri(sel)}});
    body["explain_triples"].push_back(
        json{{"s", iri(sel)}, {"p", iri(vocab::kScore)}, {"o", lit("0.8")}});
    body["explain_triples"].push_back(
        json{{"s", iri(sel)}, {"p", iri(vocab::kRdfSubject)}, {"o", iri("urn:x:a")}});
    body["explain_triples"].push_back(
        json{{"s", iri(sel)}, {"p", iri(vocab::kReasoning)}, {"o", lit("mentions a")}});
    const auto out = events.on_reply(reply(bus::ReplyKind::kExplain, body));
    ASSERT_EQ(names(out), (std::vector<std::string>{"run.started", "step", "retrieval.results"}));
    const json& r = out.back().data;
    EXPECT_EQ(r["kind"], "edges");
    EXPECT_EQ(r["step"], focus);
    ASSERT_EQ(r["items"].size(), 1u);
    EXPECT_EQ(r["items"][0]["selection"], sel);
    EXPECT_DOUBLE_EQ(r["items"][0]["score"].get<double>(), 0.8);
    EXPECT_EQ(r["items"][0]["s"], "urn:x:a");
    EXPECT_EQ(r["items"][0]["reasoning"], "mentions a");
}

TEST(QueryEvents, ExploredEdgesBecomeRetrievalResultsOfTheirOwnKind) {
    QueryEvents events("r", json::object());
    const std::string x = "urn:glassbox:d:exploration";
    const std::string e0 = x + ":edge:0", e1 = x + ":edge:1";
    json body = explain("urn:glassbox:d:question", 2, x, std::string(vocab::kExploration),
                        {{vocab::kExploredEdgeProperty, iri(e0)},
                         {vocab::kExploredEdgeProperty, iri(e1)},
                         {vocab::kSeedEntity, iri("urn:x:a")}});
    const auto fact = [&](const std::string& s, std::string_view p, json o) {
        body["explain_triples"].push_back(json{{"s", iri(s)}, {"p", iri(p)}, {"o", std::move(o)}});
    };
    // The edges' own triples, interleaved as a sink may write them.
    fact(e1, vocab::kRdfSubject, iri("urn:x:b"));
    fact(e0, vocab::kRdfSubject, iri("urn:x:a"));
    fact(e0, vocab::kRdfPredicate, iri("urn:x:p"));
    fact(e0, vocab::kRdfObject, iri("urn:x:b"));
    fact(e0, vocab::kHop,
         json{{"t", "l"}, {"v", "1"}, {"dt", "http://www.w3.org/2001/XMLSchema#integer"}});
    fact(e1, vocab::kRdfPredicate, iri("urn:x:q"));
    fact(e1, vocab::kRdfObject, lit("a name"));
    fact(e1, vocab::kHop, lit("2"));
    fact(e1, vocab::kHop, lit("7"));  // a second value: the first counts
    const auto out = events.on_reply(reply(bus::ReplyKind::kExplain, body));
    ASSERT_EQ(names(out), (std::vector<std::string>{"run.started", "step", "retrieval.results"}));
    const json& r = out.back().data;
    EXPECT_EQ(r["kind"], "explored");
    EXPECT_EQ(r["step"], x);
    ASSERT_EQ(r["items"].size(), 2u);
    EXPECT_EQ(
        r["items"][0],
        (json{{"edge", e0}, {"s", "urn:x:a"}, {"p", "urn:x:p"}, {"o", "urn:x:b"}, {"hop", 1.0}}));
    EXPECT_EQ(
        r["items"][1],
        (json{{"edge", e1}, {"s", "urn:x:b"}, {"p", "urn:x:q"}, {"o", "a name"}, {"hop", 2.0}}));
}

TEST(QueryEvents, ARetractTakesBackTheProvisionalTextSoTheDeltasAfterItAreTheAnswer) {
    QueryEvents events("req-2", json{{"question", "q"}});
    auto chunk = [](const std::string& text, const std::string& engine, int run, bool replay) {
        json body{{"message_type", "chunk"},
                  {"response", text},
                  {"engine", engine},
                  {"run", run},
                  {"provisional", !replay}};
        if (replay) body["replay"] = true;
        return reply(bus::ReplyKind::kData, body);
    };
    std::vector<SseEvent> all;
    auto take = [&](const bus::Reply& r) {
        for (auto& e : events.on_reply(r)) all.push_back(std::move(e));
    };
    take(chunk("Wrong ", "graph-rag", 0, false));
    take(chunk("guess.", "graph-rag", 0, false));
    take(reply(bus::ReplyKind::kData, json{{"message_type", "retract"},
                                           {"engine", "graph-rag"},
                                           {"run", 0},
                                           {"reason", "low relevance"}}));
    take(chunk("Better ", "document-rag", 1, false));
    take(reply(bus::ReplyKind::kData, json{{"message_type", "retract"},
                                           {"engine", "document-rag"},
                                           {"run", 1},
                                           {"reason", "earlier run won"}}));
    take(chunk("Wrong guess.", "graph-rag", 0, true));
    take(reply(bus::ReplyKind::kFinal,
               json{{"response", "Wrong guess."}, {"session", "urn:glassbox:r:question"}}));

    EXPECT_EQ(names(all),
              (std::vector<std::string>{"run.started", "answer.delta", "answer.delta",
                                        "answer.retract", "answer.delta", "answer.retract",
                                        "answer.delta", "answer.done", "done"}))
        << "the replayed text is the answer: the final sends no second copy";
    EXPECT_EQ(all[3].data["engine"], "graph-rag");
    EXPECT_EQ(all[3].data["run"], 0);
    EXPECT_EQ(all[3].data["reason"], "low relevance");
    EXPECT_EQ(all[1].data["provisional"], true);
    EXPECT_EQ(all[6].data["replay"], true);
    std::string after_last_retract;
    for (const auto& e : all) {
        if (e.name == "answer.retract") after_last_retract.clear();
        if (e.name == "answer.delta") after_last_retract += e.data["text"].get<std::string>();
    }
    EXPECT_EQ(after_last_retract, all[7].data["answer"]);
}

TEST(QueryEvents, AFinalAfterARetractWithNoNewTextSendsTheAnswerWhole) {
    // The agent sends its text only with its FINAL: after a retract nothing new was streamed.
    QueryEvents events("req-3", json{{"question", "q"}});
    events.on_reply(reply(bus::ReplyKind::kData,
                          json{{"message_type", "chunk"}, {"response", "Provisional."}}));
    events.on_reply(reply(bus::ReplyKind::kData,
                          json{{"message_type", "retract"}, {"engine", "graph-rag"}, {"run", 0}}));
    auto done =
        events.on_reply(reply(bus::ReplyKind::kFinal, json{{"response", "The agent's answer."}}));
    ASSERT_EQ(names(done), (std::vector<std::string>{"answer.delta", "answer.done", "done"}));
    EXPECT_EQ(done[0].data["text"], "The agent's answer.");
}

TEST(QueryEvents, EveryEventIsOneLineOnTheWire) {
    const std::string text =
        format_sse(7, SseEvent{"answer.delta", json{{"text", "two\nlines\r\0x"}}});
    EXPECT_EQ(text.rfind("event: answer.delta\nid: 7\ndata: {", 0), 0u) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << "event, id, data, blank line";
}

TEST(QueryEvents, AStepEventCarriesItsWholeExplainMessage) {
    const std::string s = "urn:glassbox:a:question";
    const json message =
        explain(s, 3, "urn:glassbox:a:exploration", "https://glassbox.dev/ns#Exploration",
                {{vocab::kEdgeCount, lit("42\nwith a line break")}}, "urn:glassbox:p:focus");
    const std::string text = format_sse(9, step_event(message, s));
    const auto at = text.find("data: ");
    ASSERT_NE(at, std::string::npos) << text;
    const auto data = json::parse(text.substr(at + 6, text.find('\n', at) - at - 6));
    EXPECT_EQ(data["explain"], message);
    EXPECT_EQ(data["trace"], s);
    EXPECT_EQ(data["type"], "Exploration");
    EXPECT_EQ(data["parent"], "urn:glassbox:p:focus");
    EXPECT_EQ(data["seq"], 3);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << "event, id, data, blank line";

    // The message as received goes out as it is when it is one line, else written anew; either
    // way the event is one line and carries the same message.
    for (const std::string& received : {message.dump(), message.dump(2)}) {
        const std::string wire = format_sse(10, step_event(message, s, received));
        EXPECT_EQ(std::count(wire.begin(), wire.end(), '\n'), 4) << wire;
        const auto start = wire.find("data: ") + 6;
        EXPECT_EQ(json::parse(wire.substr(start, wire.find('\n', start) - start))["explain"],
                  message);
    }
    const std::string as_received = R"({"session":"urn:x","explain_id":"urn:x","zz":1,"aa":2})";
    const std::string wire = format_sse(11, step_event(json::parse(as_received), s, as_received));
    EXPECT_NE(wire.find(R"("explain":)" + as_received), std::string::npos)
        << "written as received: " << wire;
}

// A worker's error quoted in an escalation's reason, a retraction or an error event names no
// file of the server; the answer's own text is left as it is.
TEST(QueryEvents, WorkersWordsNameNoServerPathButTheAnswerIsData) {
    ServerPaths::instance().add("/srv/glassbox-events-test-home");
    const std::string leak = "engine failed: cannot open /srv/glassbox-events-test-home/x.db";
    QueryEvents events("r", json{{"question", "q"}});
    const std::string s = "urn:glassbox:e:question";
    std::vector<SseEvent> all;
    const auto take = [&](const bus::Reply& r) {
        for (auto& e : events.on_reply(r)) all.push_back(std::move(e));
    };
    take(reply(bus::ReplyKind::kExplain,
               explain(s, 1, "urn:glassbox:e:escalation:0", "https://glassbox.dev/ns#Escalation",
                       {{vocab::kFromEngine, lit("agent")},
                        {vocab::kEngine, lit("graph-rag")},
                        {vocab::kReason, lit(leak)}})));
    take(reply(
        bus::ReplyKind::kData,
        json{{"message_type", "retract"}, {"engine", "agent"}, {"run", 0}, {"reason", leak}}));
    take(reply(bus::ReplyKind::kData, json{{"message_type", "chunk"},
                                           {"response", "See /srv/glassbox-events-test-home/a."}}));
    std::string wire;
    for (const auto& e : all) wire += format_sse(1, e);
    EXPECT_EQ(wire.find("glassbox-events-test-home/x.db"), std::string::npos) << wire;
    EXPECT_NE(wire.find("engine failed: cannot open <server path>"), std::string::npos) << wire;
    EXPECT_NE(wire.find("See /srv/glassbox-events-test-home/a."), std::string::npos)
        << "the answer text is data";
    const auto failed = QueryEvents("r", json::object())
                            .on_failure(base::make_error(base::ErrorType::kInternal, leak));
    EXPECT_EQ(failed[1].data["message"], "engine failed: cannot open <server path>");
}

// The progress lines of MCP's resolve_intent (docs/mcp.md §6): one per step, with what it decided
// or counted.
TEST(StepLine, SaysWhatEachStepDidInOneLine) {
    const std::string s = "urn:glassbox:a:question";
    EXPECT_EQ(step_line(explain(s, 0, s, std::string(vocab::kQuestion))), "query question");
    EXPECT_EQ(
        step_line(explain(s, 1, "urn:glassbox:a:routing", std::string(vocab::kRoutingDecision),
                          {{vocab::kEngine, lit("graph-rag")}})),
        "query route decided: graph-rag");
    json exploration =
        explain(s, 2, "urn:glassbox:b:exploration", "https://glassbox.dev/ns#Exploration",
                {{vocab::kEdgeCount, lit("42")}});
    exploration["service"] = "graph-rag";
    EXPECT_EQ(step_line(exploration), "graph-rag exploration: 42 edges");
    EXPECT_EQ(step_line(explain(
                  s, 3, "urn:glassbox:a:esc", "https://glassbox.dev/ns#Escalation",
                  {{vocab::kFromEngine, lit("graph-rag")}, {vocab::kEngine, lit("document-rag")}})),
              "query escalation: graph-rag -> document-rag");
    json tool = explain(s, 4, "urn:glassbox:c:it1", "https://glassbox.dev/ns#Analysis",
                        {{vocab::kAction, lit("search")}});
    tool["explain_triples"].push_back(json{{"s", iri("urn:glassbox:c:it1")},
                                           {"p", iri(vocab::kRdfType)},
                                           {"o", iri("https://glassbox.dev/ns#ToolUse")}});
    tool["service"] = "agent";
    EXPECT_EQ(step_line(tool), "agent analysis, tool use: search");
    EXPECT_EQ(
        step_line(explain(s, 5, "urn:glassbox:a:synthesis", "https://glassbox.dev/ns#Synthesis")),
        "query synthesis");
    // The broker's own end of a trace has no step.
    EXPECT_EQ(step_line(json{{"message_type", "explain"},
                             {"session", s},
                             {"explain_id", ""},
                             {"trace_status", "error"},
                             {"explain_triples", json::array()}}),
              "");
}

}  // namespace
}  // namespace glassbox::gateway
