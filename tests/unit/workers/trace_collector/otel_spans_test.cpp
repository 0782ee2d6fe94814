// TraceStore::otel_spans (docs/traces.md, "OpenTelemetry export"): the spans of stored runs of
// each shape (graph RAG, document RAG, an agent calling a tool, a routed query with its sub-run,
// an error run), on both backends.
#include <algorithm>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bus/bus_client.hpp"
#include "schema/messages.hpp"
#include "schema/otel_ids.hpp"
#include "schema/services.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/rag_cluster.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "workers/trace_collector/otel_spans.hpp"

namespace glassbox::trace::testing {
namespace {

using otel::AttributeValue;
using otel::Span;
using otel::SpanKind;
using schema::otel::span_id_of;
namespace v = schema::vocab;

constexpr std::int64_t kT0 = 1'790'000'000'000;
constexpr std::uint64_t kMs = 1'000'000;

std::uint64_t ns(std::int64_t ms) { return static_cast<std::uint64_t>(ms) * kMs; }

// One explain message of `run`.
schema::ExplainMessage message(const FakeRun& run, std::uint64_t seq, std::string explain_id,
                               std::vector<schema::Triple> triples) {
    schema::ExplainMessage m;
    m.session = run.session();
    m.seq = seq;
    m.service = run.service;
    m.worker = run.service + "-test/0";
    m.explain_id = std::move(explain_id);
    m.explain_triples = std::move(triples);
    return m;
}

// The Question (with a collection, and a conversation for a top-level run).
schema::ExplainMessage question(const FakeRun& run, std::string_view conversation = {}) {
    auto m = message(
        run, 0, run.session(),
        explain::question(
            run.uris, run.question, at(run.started_ms), explain::worker_agent_uri(run.service),
            run.parent_uri ? std::optional<std::string_view>{*run.parent_uri} : std::nullopt,
            conversation.empty() ? std::nullopt : std::optional<std::string_view>{conversation}, {},
            "default"));
    m.parent_uri = run.parent_uri;
    return m;
}

// The last message: `triples` of step `explain_id`, then the run's end.
schema::ExplainMessage last(const FakeRun& run, std::uint64_t seq, std::string explain_id,
                            std::vector<schema::Triple> triples, std::int64_t ended_ms,
                            schema::TraceStatus status = schema::TraceStatus::kComplete) {
    auto m = message(run, seq, std::move(explain_id), std::move(triples));
    const auto tail = explain::trace_end(run.uris, at(ended_ms), status);
    m.explain_triples.insert(m.explain_triples.end(), tail.begin(), tail.end());
    m.end_of_trace = true;
    m.trace_status = status;
    if (status == schema::TraceStatus::kError)
        m.error = base::make_error(base::ErrorType::kTimeout, "the llm did not answer");
    return m;
}

explain::StepInfo step_at(std::int64_t ms, std::int64_t duration_ms, std::string model = {},
                          std::uint64_t in = 0, std::uint64_t out = 0) {
    explain::StepInfo info;
    info.generated_at = at(ms);
    info.duration = std::chrono::milliseconds{duration_ms};
    if (!model.empty()) {
        info.model = std::move(model);
        info.input_tokens = in;
        info.output_tokens = out;
    }
    return info;
}

schema::Triple edge(const std::string& s, const std::string& o) {
    return schema::make_triple(schema::iri(s), schema::iri("urn:p:designedBy"), schema::iri(o));
}

// A graph-RAG run: Grounding (model), Exploration (two edges), Focus, Synthesis (model).
std::vector<schema::ExplainMessage> graph_run(const FakeRun& run, std::string_view conversation) {
    const std::int64_t t = run.started_ms;
    std::vector<schema::ExplainMessage> out{question(run, conversation)};
    out.push_back(message(
        run, 1, run.uris.grounding(),
        explain::grounding(run.uris, step_at(t + 3, 3, "m-1", 87, 2), {"Greyhollow Light"})));
    out.push_back(
        message(run, 2, run.uris.exploration(),
                explain::graph_exploration(run.uris, step_at(t + 8, 5), {"urn:e:greyhollow"}, 2,
                                           {{edge("urn:e:greyhollow", "urn:e:ilse"), 1},
                                            {edge("urn:e:saltspire", "urn:e:ilse"), 2}})));
    explain::SelectedEdge kept;
    kept.edge = edge("urn:e:greyhollow", "urn:e:ilse");
    kept.score = 0.75;
    out.push_back(message(run, 3, run.uris.focus(),
                          explain::graph_focus(run.uris, step_at(t + 12, 4), {kept})));
    out.push_back(last(run, 4, run.uris.synthesis(),
                       explain::synthesis(run.uris, step_at(t + 15, 3, "m-1", 226, 10),
                                          explain::StoredText{"Ilse Varrow.", {}}),
                       t + 16));
    return out;
}

const AttributeValue& attribute(const Span& span, std::string_view key) {
    static const AttributeValue kNone = std::string("<none>");
    const AttributeValue* value = span.attribute(key);
    return value != nullptr ? *value : kNone;
}

std::string text(const Span& span, std::string_view key) {
    const auto* value = std::get_if<std::string>(&attribute(span, key));
    return value != nullptr ? *value : "<not text>";
}

std::int64_t integer(const Span& span, std::string_view key) {
    const auto* value = std::get_if<std::int64_t>(&attribute(span, key));
    return value != nullptr ? *value : -1;
}

// The ids of a retrieval span's gen_ai.retrieval.documents, in order (empty when it has none or
// it is not a JSON list of {"id": …}).
std::vector<std::string> retrieved_ids(const Span& span) {
    const auto documents =
        nlohmann::json::parse(text(span, "gen_ai.retrieval.documents"), nullptr, false);
    std::vector<std::string> ids;
    if (!documents.is_array()) return ids;
    for (const auto& document : documents) {
        if (!document.is_object() || !document.contains("id") || !document["id"].is_string()) {
            return {};
        }
        ids.push_back(document["id"].get<std::string>());
    }
    return ids;
}

const Span* find(const std::vector<Span>& spans, const std::string& span_id) {
    const auto it = std::find_if(spans.begin(), spans.end(),
                                 [&](const Span& s) { return s.span_id == span_id; });
    return it == spans.end() ? nullptr : &*it;
}

std::string trace_id(const FakeRun& run) { return *schema::otel::trace_id_of(run.session()); }

// The store exports (its events keep their span facts, span_facts.hpp): each test's spans are
// read from the facts, and spans_of checks them against the spans read from the triples.
class OtelSpansTest : public StoreTest {
protected:
    void SetUp() override {
        config_.export_otel = true;
        StoreTest::SetUp();
    }
    std::vector<Span> spans_now(const std::string& session) {
        auto spans = store_->otel_spans(session);
        EXPECT_TRUE(spans.ok()) << spans.error().describe();
        return spans.ok() ? std::move(spans).value() : std::vector<Span>{};
    }
    // Runs `sql` on the store's database and opens it again.
    void rewrite(const std::string& sql) {
        downgrade(sql);
        store_ = reopen(OpenMode::kReadWrite);
        ASSERT_NE(store_, nullptr);
    }
    // The run's spans, from the span facts; the same as from the triples (the facts then gone).
    std::vector<Span> spans_of(const FakeRun& run) {
        auto from_facts = spans_now(run.session());
        rewrite("UPDATE events SET span = NULL");
        EXPECT_EQ(from_facts, spans_now(run.session()));
        return from_facts;
    }
};

TEST_P(OtelSpansTest, GraphRagRunIsARunSpanWithAChatRetrievalAndStepSpans) {
    const auto run = FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0);
    ASSERT_EQ(store(graph_run(run, "conv-7"), kT0 + 20).stored, 5u);
    const auto spans = spans_of(run);
    ASSERT_EQ(spans.size(), 5u);

    const Span& root = spans[0];
    EXPECT_EQ(root.name, "invoke_agent graph-rag");
    EXPECT_EQ(root.kind, SpanKind::kServer);
    EXPECT_EQ(root.trace_id, trace_id(run));
    EXPECT_EQ(root.span_id, span_id_of(run.session()));
    EXPECT_EQ(root.parent_span_id, "");
    EXPECT_EQ(root.start_ns, ns(kT0));
    EXPECT_EQ(root.end_ns, ns(kT0 + 16));
    EXPECT_EQ(root.status, otel::StatusCode::kUnset);
    EXPECT_EQ(text(root, "gen_ai.operation.name"), "invoke_agent");
    EXPECT_EQ(text(root, "gen_ai.agent.name"), "graph-rag");
    EXPECT_EQ(text(root, "gen_ai.conversation.id"), "conv-7");
    EXPECT_EQ(text(root, "glassbox.trace.iri"), run.session());
    EXPECT_EQ(text(root, "glassbox.run.iri"), run.session());
    EXPECT_EQ(text(root, "glassbox.step.iri"), run.session());
    EXPECT_EQ(text(root, "glassbox.run.status"), "complete");
    EXPECT_EQ(text(root, "glassbox.collection"), "default");

    for (std::size_t i = 1; i < spans.size(); ++i) {
        EXPECT_EQ(spans[i].trace_id, root.trace_id) << spans[i].name;
        EXPECT_EQ(spans[i].parent_span_id, root.span_id) << spans[i].name;
        EXPECT_EQ(text(spans[i], "glassbox.trace.iri"), run.session()) << spans[i].name;
        EXPECT_EQ(spans[i].span_id, span_id_of(text(spans[i], "glassbox.step.iri")));
    }
    const Span& grounding = spans[1];
    EXPECT_EQ(grounding.name, "chat m-1");
    EXPECT_EQ(grounding.kind, SpanKind::kClient);
    EXPECT_EQ(text(grounding, "glassbox.step.iri"), run.uris.grounding());
    EXPECT_EQ(text(grounding, "glassbox.step.type"), "Grounding");
    EXPECT_EQ(text(grounding, "gen_ai.operation.name"), "chat");
    EXPECT_EQ(text(grounding, "gen_ai.request.model"), "m-1");
    EXPECT_EQ(text(grounding, "gen_ai.response.model"), "m-1");
    EXPECT_EQ(integer(grounding, "gen_ai.usage.input_tokens"), 87);
    EXPECT_EQ(integer(grounding, "gen_ai.usage.output_tokens"), 2);
    EXPECT_EQ(grounding.start_ns, ns(kT0));
    EXPECT_EQ(grounding.end_ns, ns(kT0 + 3));

    const Span& exploration = spans[2];
    EXPECT_EQ(exploration.name, "retrieval default");
    EXPECT_EQ(exploration.kind, SpanKind::kInternal);
    EXPECT_EQ(text(exploration, "gen_ai.operation.name"), "retrieval");
    EXPECT_EQ(text(exploration, "gen_ai.data_source.id"), "default");
    EXPECT_EQ(text(exploration, "glassbox.step.type"), "Exploration");
    // The ids once, in the convention's documents; edges have no scores.
    EXPECT_EQ(retrieved_ids(exploration),
              (std::vector<std::string>{run.uris.explored_edge(0), run.uris.explored_edge(1)}));
    EXPECT_EQ(integer(exploration, "glassbox.retrieval.count"), 2);
    EXPECT_EQ(nlohmann::json::parse(text(exploration, "gen_ai.retrieval.documents")),
              nlohmann::json::parse(R"([{"id":")" + run.uris.explored_edge(0) + R"("},)" +
                                    R"({"id":")" + run.uris.explored_edge(1) + R"("}])"));
    EXPECT_EQ(exploration.attribute("glassbox.retrieval.ids"), nullptr);
    EXPECT_EQ(exploration.start_ns, ns(kT0 + 3));
    EXPECT_EQ(exploration.end_ns, ns(kT0 + 8));

    EXPECT_EQ(spans[3].name, "focus");
    EXPECT_EQ(text(spans[3], "glassbox.step.type"), "Focus");
    EXPECT_EQ(spans[4].name, "chat m-1");
    EXPECT_EQ(integer(spans[4], "gen_ai.usage.input_tokens"), 226);
    EXPECT_EQ(text(spans[4], "glassbox.step.type"), "Synthesis");
}

// An Exploration that embedded its concepts: a CLIENT `embeddings <model>` span under the step's
// span, right after it, timed by the call.
TEST_P(OtelSpansTest, EmbeddingsCallIsAClientSpanUnderItsStep) {
    const auto run = FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0);
    auto messages = graph_run(run, "conv-7");
    auto info = step_at(kT0 + 8, 5);
    info.embeddings = explain::EmbeddingsCall{"glassbox-hashing-v1", 2, 256, at(kT0 + 4),
                                              std::chrono::milliseconds{3}};
    messages[2] =
        message(run, 2, run.uris.exploration(),
                explain::graph_exploration(run.uris, info, {"urn:e:greyhollow"}, 2,
                                           {{edge("urn:e:greyhollow", "urn:e:ilse"), 1}}));
    ASSERT_EQ(store(messages, kT0 + 20).stored, 5u);
    const auto spans = spans_of(run);
    ASSERT_EQ(spans.size(), 6u);
    EXPECT_EQ(spans[2].name, "retrieval default");
    const Span& call = spans[3];
    EXPECT_EQ(call.name, "embeddings glassbox-hashing-v1");
    EXPECT_EQ(call.kind, SpanKind::kClient);
    EXPECT_EQ(call.trace_id, trace_id(run));
    EXPECT_EQ(call.span_id, span_id_of(run.uris.exploration() + "#embeddings"));
    EXPECT_EQ(call.parent_span_id, spans[2].span_id);
    EXPECT_EQ(call.parent_span_id, span_id_of(run.uris.exploration()));
    EXPECT_EQ(call.start_ns, ns(kT0 + 4));
    EXPECT_EQ(call.end_ns, ns(kT0 + 7));
    EXPECT_EQ(call.status, otel::StatusCode::kUnset);
    EXPECT_EQ(text(call, "gen_ai.operation.name"), "embeddings");
    EXPECT_EQ(text(call, "gen_ai.request.model"), "glassbox-hashing-v1");
    EXPECT_EQ(text(call, "gen_ai.response.model"), "glassbox-hashing-v1");
    EXPECT_EQ(text(call, "gen_ai.provider.name"), "glassbox");
    EXPECT_EQ(integer(call, "gen_ai.embeddings.dimension.count"), 256);
    EXPECT_EQ(integer(call, "glassbox.embeddings.inputs"), 2);
    EXPECT_EQ(text(call, "glassbox.step.iri"), run.uris.exploration());
    EXPECT_EQ(text(call, "glassbox.step.type"), "EmbeddingsCall");
    EXPECT_EQ(text(call, "glassbox.trace.iri"), run.session());
    EXPECT_EQ(call.attributes.size(), 9u);  // nothing else: no tokens, no retrieval
    EXPECT_EQ(spans[4].name, "focus");
}

// Another provider's embedding model: named, but no gen_ai.provider.name (the trace does not
// record which provider served it).
TEST_P(OtelSpansTest, EmbeddingsCallOfAnotherModelHasNoProvider) {
    const auto run = FakeRun::make("document-rag", "Who designed Greyhollow Light?", kT0);
    std::vector<explain::RetrievedChunk> chunks(1);
    chunks[0].source.chunk = "file:///d/a.md#chunk-0";
    chunks[0].score = 0.5;
    auto info = step_at(kT0 + 4, 4);
    info.embeddings = explain::EmbeddingsCall{"text-embedding-3-small", 1, 1536, at(kT0 + 1),
                                              std::chrono::milliseconds{0}};
    const std::vector<schema::ExplainMessage> messages{
        question(run), last(run, 1, run.uris.exploration(),
                            explain::document_exploration(run.uris, info, chunks), kT0 + 5)};
    ASSERT_EQ(store(messages, kT0 + 10).stored, 2u);
    const auto spans = spans_of(run);
    ASSERT_EQ(spans.size(), 3u);
    const Span& call = spans[2];
    EXPECT_EQ(call.name, "embeddings text-embedding-3-small");
    EXPECT_EQ(call.parent_span_id, spans[1].span_id);
    EXPECT_EQ(call.start_ns, ns(kT0 + 1));
    EXPECT_EQ(call.end_ns, ns(kT0 + 1));
    EXPECT_EQ(text(call, "gen_ai.request.model"), "text-embedding-3-small");
    EXPECT_EQ(call.attribute("gen_ai.provider.name"), nullptr);
    EXPECT_EQ(integer(call, "gen_ai.embeddings.dimension.count"), 1536);
    EXPECT_EQ(integer(call, "glassbox.embeddings.inputs"), 1);
}

TEST_P(OtelSpansTest, DocumentRetrievalCarriesTheChunksAndTheirScores) {
    const auto run = FakeRun::make("document-rag", "Who designed Greyhollow Light?", kT0);
    std::vector<explain::RetrievedChunk> chunks(2);
    chunks[0].source.chunk = "file:///d/a.md#chunk-0";
    chunks[0].source.document = "file:///d/a.md";
    chunks[0].score = 0.5;
    chunks[1].source.chunk = "file:///d/b.md#chunk-3";
    chunks[1].source.document = "file:///d/b.md";
    chunks[1].score = 0.25;
    const std::vector<schema::ExplainMessage> messages{
        question(run),
        last(run, 1, run.uris.exploration(),
             explain::document_exploration(run.uris, step_at(kT0 + 4, 4), chunks), kT0 + 5)};
    ASSERT_EQ(store(messages, kT0 + 10).stored, 2u);
    const auto spans = spans_of(run);
    ASSERT_EQ(spans.size(), 2u);
    EXPECT_EQ(spans[0].attribute("gen_ai.conversation.id"), nullptr);
    const Span& retrieval = spans[1];
    EXPECT_EQ(retrieval.name, "retrieval default");
    const std::vector<std::string> ids{run.uris.retrieved_chunk(0), run.uris.retrieved_chunk(1)};
    EXPECT_EQ(integer(retrieval, "glassbox.retrieval.count"), 2);
    const auto documents = nlohmann::json::parse(text(retrieval, "gen_ai.retrieval.documents"));
    EXPECT_EQ(documents, nlohmann::json::parse(R"([{"id":")" + ids[0] + R"(","score":0.5},)" +
                                               R"({"id":")" + ids[1] + R"(","score":0.25}])"));
}

TEST_P(OtelSpansTest, AgentToolCallIsAnExecuteToolSpanAndItsSubRunNestsUnderIt) {
    const auto agent = FakeRun::make("agent", "Who designed Greyhollow Light?", kT0);
    const std::string analysis0 = agent.uris.analysis(0);
    const auto sub =
        FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0 + 2, analysis0);
    std::vector<schema::ExplainMessage> messages{question(agent, "conv-9")};
    explain::AgentAction call{"ask the graph", "knowledge-query", R"({"question":"x"})"};
    messages.push_back(
        message(agent, 1, analysis0,
                explain::analysis(agent.uris, 0, step_at(kT0 + 2, 1, "m-2", 400, 19), call)));
    auto observed = step_at(kT0 + 20, 18);
    observed.derived_from = analysis0;
    messages.push_back(message(
        agent, 2, agent.uris.observation(0),
        explain::observation(agent.uris, 0, observed, explain::StoredText{"Ilse Varrow", {}})));
    messages.push_back(
        last(agent, 3, agent.uris.conclusion(),
             explain::conclusion(agent.uris, step_at(kT0 + 22, 1),
                                 explain::StoredText{"Ilse Varrow.", {}}, "final-answer"),
             kT0 + 22));
    const auto sub_messages = graph_run(sub, {});
    messages.insert(messages.end(), sub_messages.begin(), sub_messages.end());
    ASSERT_EQ(store(messages, kT0 + 30).stored, messages.size());

    const auto spans = spans_of(agent);
    // The agent: run, analysis (chat), its tool call, observation, conclusion; the sub-run: 5.
    ASSERT_EQ(spans.size(), 10u);
    const std::string agent_span = span_id_of(agent.session());
    const Span* chat = find(spans, span_id_of(analysis0));
    ASSERT_NE(chat, nullptr);
    EXPECT_EQ(chat->name, "chat m-2");
    EXPECT_EQ(text(*chat, "glassbox.step.type"), "Analysis");
    const Span* tool = find(spans, span_id_of(analysis0 + "#execute_tool"));
    ASSERT_NE(tool, nullptr);
    EXPECT_EQ(tool->name, "execute_tool knowledge-query");
    EXPECT_EQ(tool->kind, SpanKind::kInternal);
    EXPECT_EQ(tool->parent_span_id, agent_span);
    EXPECT_EQ(text(*tool, "gen_ai.operation.name"), "execute_tool");
    EXPECT_EQ(text(*tool, "gen_ai.tool.name"), "knowledge-query");
    EXPECT_EQ(text(*tool, "gen_ai.tool.call.id"), analysis0);
    EXPECT_EQ(text(*tool, "glassbox.step.iri"), analysis0);
    EXPECT_EQ(text(*tool, "glassbox.step.type"), "ToolUse");
    EXPECT_EQ(tool->start_ns, ns(kT0 + 2));  // the analysis's end
    EXPECT_EQ(tool->end_ns, ns(kT0 + 20));   // its observation's generatedAtTime
    EXPECT_EQ(tool->status, otel::StatusCode::kUnset);

    const Span* observation = find(spans, span_id_of(agent.uris.observation(0)));
    ASSERT_NE(observation, nullptr);
    EXPECT_EQ(observation->name, "observation");
    const Span* conclusion = find(spans, span_id_of(agent.uris.conclusion()));
    ASSERT_NE(conclusion, nullptr);
    EXPECT_EQ(conclusion->name, "conclusion");

    const Span* sub_run = find(spans, span_id_of(sub.session()));
    ASSERT_NE(sub_run, nullptr);
    EXPECT_EQ(sub_run->name, "invoke_agent graph-rag");
    EXPECT_EQ(sub_run->kind, SpanKind::kInternal);
    EXPECT_EQ(sub_run->parent_span_id, tool->span_id);
    EXPECT_EQ(sub_run->trace_id, trace_id(agent));
    EXPECT_EQ(text(*sub_run, "glassbox.trace.iri"), agent.session());
    EXPECT_EQ(text(*sub_run, "glassbox.run.iri"), sub.session());
    EXPECT_EQ(sub_run->attribute("gen_ai.conversation.id"), nullptr);
    for (const Span& span : spans) {
        EXPECT_EQ(span.trace_id, trace_id(agent)) << span.name;
        if (span.span_id == agent_span) continue;
        // Every other span's parent is a span of the trace.
        EXPECT_NE(find(spans, span.parent_span_id), nullptr) << span.name;
    }
    const Span* sub_step = find(spans, span_id_of(sub.uris.grounding()));
    ASSERT_NE(sub_step, nullptr);
    EXPECT_EQ(sub_step->parent_span_id, sub_run->span_id);
    EXPECT_EQ(text(*sub_step, "glassbox.trace.iri"), agent.session());
}

TEST_P(OtelSpansTest, FailedToolCallIsAnErrorSpan) {
    const auto agent = FakeRun::make("agent", "Who designed Greyhollow Light?", kT0);
    explain::AgentAction call{"ask", "graph-query", "{}"};
    explain::ObservationInfo failed;
    failed.error = true;
    const std::vector<schema::ExplainMessage> messages{
        question(agent),
        message(agent, 1, agent.uris.analysis(0),
                explain::analysis(agent.uris, 0, step_at(kT0 + 1, 1), call)),
        last(agent, 2, agent.uris.observation(0),
             explain::observation(agent.uris, 0, step_at(kT0 + 4, 3),
                                  explain::StoredText{"no such entity", {}}, failed),
             kT0 + 5)};
    ASSERT_EQ(store(messages, kT0 + 10).stored, 3u);
    const auto spans = spans_of(agent);
    ASSERT_EQ(spans.size(), 4u);
    EXPECT_EQ(spans[1].name, "analysis");  // no model: not a chat span
    const Span& tool = spans[2];
    EXPECT_EQ(tool.name, "execute_tool graph-query");
    EXPECT_EQ(tool.status, otel::StatusCode::kError);
    EXPECT_EQ(tool.end_ns, ns(kT0 + 4));
}

TEST_P(OtelSpansTest, RoutedQuerySubRunNestsUnderTheRoutingStepInTheSameTrace) {
    const auto query = FakeRun::make("query", "Who designed Greyhollow Light?", kT0);
    const auto sub = FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0 + 1,
                                   query.uris.routing_decision());
    explain::Routing routing;
    routing.method = "rules";
    routing.engine = "graph-rag";
    routing.confidence = 0.8;
    std::vector<schema::ExplainMessage> messages{
        question(query),
        message(query, 1, query.uris.routing_decision(),
                explain::routing_decision(query.uris, step_at(kT0 + 1, 1), routing)),
        last(query, 2, query.uris.conclusion(),
             explain::conclusion(query.uris, step_at(kT0 + 18, 0),
                                 explain::StoredText{"Ilse Varrow.", {}}),
             kT0 + 18)};
    const auto sub_messages = graph_run(sub, {});
    messages.insert(messages.end(), sub_messages.begin(), sub_messages.end());
    ASSERT_EQ(store(messages, kT0 + 30).stored, messages.size());

    const auto spans = spans_of(query);
    ASSERT_EQ(spans.size(), 3u + 5u);
    EXPECT_EQ(spans[0].name, "invoke_agent query");
    const Span* routing_span = find(spans, span_id_of(query.uris.routing_decision()));
    ASSERT_NE(routing_span, nullptr);
    EXPECT_EQ(routing_span->name, "routingdecision");
    EXPECT_EQ(text(*routing_span, "glassbox.step.type"), "RoutingDecision");
    const Span* sub_run = find(spans, span_id_of(sub.session()));
    ASSERT_NE(sub_run, nullptr);
    EXPECT_EQ(sub_run->parent_span_id, routing_span->span_id);
    EXPECT_EQ(sub_run->trace_id, trace_id(query));
    EXPECT_EQ(sub_run->kind, SpanKind::kInternal);
    EXPECT_EQ(sub_run->start_ns, ns(kT0 + 1));
    EXPECT_EQ(text(*sub_run, "glassbox.trace.iri"), query.session());

    // The sub-run asked for alone: its own spans, still in its top-level run's trace.
    auto alone = store_->otel_spans(sub.session());
    ASSERT_TRUE(alone.ok()) << alone.error().describe();
    ASSERT_EQ(alone->size(), 5u);
    EXPECT_EQ(alone->front().trace_id, trace_id(query));
    EXPECT_EQ(alone->front().parent_span_id, routing_span->span_id);
    EXPECT_EQ(text(alone->front(), "glassbox.trace.iri"), query.session());
}

TEST_P(OtelSpansTest, ErrorRunSpanHasErrorStatusWithTheMessage) {
    const auto run = FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0);
    const std::vector<schema::ExplainMessage> messages{
        question(run), last(run, 1, run.uris.grounding(),
                            explain::grounding(run.uris, step_at(kT0 + 3, 3), {"Greyhollow Light"}),
                            kT0 + 4, schema::TraceStatus::kError)};
    ASSERT_EQ(store(messages, kT0 + 10).stored, 2u);
    const auto spans = spans_of(run);
    ASSERT_EQ(spans.size(), 2u);
    EXPECT_EQ(spans[0].status, otel::StatusCode::kError);
    EXPECT_NE(spans[0].status_message.find("the llm did not answer"), std::string::npos)
        << spans[0].status_message;
    EXPECT_EQ(text(spans[0], "glassbox.run.status"), "error");
    EXPECT_EQ(spans[1].name, "grounding");
    EXPECT_EQ(spans[1].status, otel::StatusCode::kUnset);
}

// A worker may lay its explain JSON out its own way (whitespace, key order): the store keeps the
// triples as received, and the spans read them the same.
TEST_P(OtelSpansTest, TriplesStoredInAnotherJsonLayoutGiveTheSameSpans) {
    const auto run = FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0);
    std::vector<Delivery> batch;
    for (const auto& m : graph_run(run, "conv-7")) {
        Delivery d = delivery_of(m, next_id_++);
        d.body = schema::encode(m).dump(2);  // indented: every triple spans several lines
        batch.push_back(std::move(d));
    }
    auto outcome = store_->store_batch(batch, at(kT0 + 20));
    ASSERT_TRUE(outcome.ok()) << outcome.error().describe();
    ASSERT_EQ(outcome->stored, 5u);
    const auto spans = spans_of(run);
    ASSERT_EQ(spans.size(), 5u);
    std::vector<std::string> names;
    names.reserve(spans.size());
    for (const auto& span : spans) names.push_back(span.name);
    EXPECT_EQ(names, (std::vector<std::string>{"invoke_agent graph-rag", "chat m-1",
                                               "retrieval default", "focus", "chat m-1"}));
    EXPECT_EQ(integer(spans[1], "gen_ai.usage.input_tokens"), 87);
    EXPECT_EQ(spans[1].start_ns, ns(kT0));
    EXPECT_EQ(retrieved_ids(spans[2]),
              (std::vector<std::string>{run.uris.explored_edge(0), run.uris.explored_edge(1)}));
}

// The exporter reads a run's span facts, never its triples, when every event has them.
TEST_P(OtelSpansTest, SpansComeFromTheSpanFactsAlone) {
    const auto run = FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0);
    ASSERT_EQ(store(graph_run(run, "conv-7"), kT0 + 20).stored, 5u);
    const auto before = spans_now(run.session());
    ASSERT_EQ(before.size(), 5u);
    rewrite("UPDATE events SET triples = NULL, triple_count = 0");
    EXPECT_EQ(spans_now(run.session()), before);
}

// A run with an event stored without span facts (before the store exported), or with facts that
// do not read, is read from its triples, whole.
TEST_P(OtelSpansTest, RunsWithoutReadableSpanFactsAreReadFromTheirTriples) {
    const auto run = FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0);
    ASSERT_EQ(store(graph_run(run, "conv-7"), kT0 + 20).stored, 5u);
    const auto before = spans_now(run.session());
    ASSERT_EQ(before.size(), 5u);
    rewrite("UPDATE events SET span = 'R.\t~edge/\t9\t2\n' WHERE seq = 3");
    EXPECT_EQ(spans_now(run.session()), before);
    rewrite("UPDATE events SET span = NULL WHERE seq = 2");
    EXPECT_EQ(spans_now(run.session()), before);
}

// The runs the RAG engines really write (their explain messages on a real in-process bus): the
// span facts alone (the triples then gone) give the spans a store that does not export reads
// from the same runs' triples.
TEST_P(OtelSpansTest, SpanFactsOfRealRagRunsGiveTheSpansOfTheirTriples) {
    rag::testing::RagCluster cluster;
    cluster.load_triples("kg", "file:///test/kb.nt", R"(
<urn:kg:cruz_azul> <urn:kg:is_in_country> <urn:kg:mexico> .
<urn:kg:cruz_azul> <http://www.w3.org/2000/01/rdf-schema#label> "Cruz Azul FC" .
<urn:kg:mexico> <http://www.w3.org/2000/01/rdf-schema#label> "Mexico" .
<urn:kg:is_in_country> <http://www.w3.org/2000/01/rdf-schema#label> "is in country" .
)");
    cluster.load_documents("docs",
                           {{"urn:doc:alu", "Alu", "Alu is a demon of Akkadian mythology."},
                            {"urn:doc:lilu", "Lilu", "A lilu is a spirit, related to Alu."}});
    const std::vector<std::pair<std::string_view, nlohmann::json>> requests{
        {schema::services::kGraphRag,
         {{"query", "Which country is Cruz Azul FC in?"}, {"collection", "kg"}}},
        {schema::services::kDocumentRag, {{"query", "Who is Alu?"}, {"collection", "docs"}}},
    };
    StoreSite plain_site(GetParam());
    auto plain = plain_site.open(OpenMode::kReadWrite);  // does not export: no span facts
    ASSERT_TRUE(plain.ok()) << plain.error().describe();
    std::vector<Delivery> batch;
    std::vector<std::string> sessions;
    for (const auto& [service, body] : requests) {
        for (const auto& reply : cluster.request(std::string(service), body)) {
            if (reply.kind != bus::ReplyKind::kExplain) continue;
            auto m = schema::decode<schema::ExplainMessage>(reply.body);
            ASSERT_TRUE(m.ok()) << m.error().describe();
            if (sessions.empty() || sessions.back() != m->session) sessions.push_back(m->session);
            batch.push_back(delivery_of(*m, next_id_++));
        }
    }
    ASSERT_EQ(sessions.size(), requests.size());
    for (TraceStore* target : {store_.get(), plain->get()}) {
        auto outcome = target->store_batch(batch, at(kT0));
        ASSERT_TRUE(outcome.ok()) << outcome.error().describe();
        ASSERT_EQ(outcome->stored, batch.size());
    }
    rewrite("UPDATE events SET triples = NULL, triple_count = 0");
    for (const auto& session : sessions) {
        const auto from_facts = spans_now(session);
        auto from_triples = (*plain)->otel_spans(session);
        ASSERT_TRUE(from_triples.ok()) << from_triples.error().describe();
        ASSERT_GE(from_facts.size(), 4u) << session;
        EXPECT_EQ(from_facts, *from_triples) << session;
        bool retrieval = false;
        bool embeddings = false;
        for (std::size_t i = 0; i < from_facts.size(); ++i) {
            const Span& span = from_facts[i];
            if (span.name.rfind("embeddings ", 0) == 0) {
                // The Exploration embedded its question or concepts: under it, right after it.
                embeddings = true;
                ASSERT_GT(i, 0u);
                EXPECT_EQ(span.parent_span_id, from_facts[i - 1].span_id) << session;
                EXPECT_EQ(from_facts[i - 1].name.rfind("retrieval", 0), 0u) << session;
                EXPECT_EQ(text(span, "gen_ai.operation.name"), "embeddings");
                EXPECT_GT(integer(span, "gen_ai.embeddings.dimension.count"), 0) << session;
                EXPECT_GT(integer(span, "glassbox.embeddings.inputs"), 0) << session;
                EXPECT_LE(span.start_ns, span.end_ns);
            }
            if (span.name.rfind("retrieval", 0) != 0) continue;
            retrieval = true;
            EXPECT_FALSE(retrieved_ids(span).empty()) << session;
            EXPECT_EQ(integer(span, "glassbox.retrieval.count"),
                      static_cast<std::int64_t>(retrieved_ids(span).size()));
        }
        EXPECT_TRUE(retrieval) << session;
        EXPECT_TRUE(embeddings) << session;
    }
}

TEST_P(OtelSpansTest, UnknownSessionIsNotFound) {
    auto spans = store_->otel_spans("urn:glassbox:00000000-0000-4000-8000-000000000000:question");
    ASSERT_FALSE(spans.ok());
    EXPECT_EQ(spans.error().type, base::ErrorType::kNotFound);
}

GLASSBOX_TRACE_BACKENDS(OtelSpansTest);

}  // namespace
}  // namespace glassbox::trace::testing
