// `traces show` nests sub-traces under the step that called them: an agent's Analysis → its
// tool's sub-run, a query's RoutingDecision and Escalation → each engine's sub-run (the shapes
// of docs/vocabulary.md §5), built with the explain builders; and `traces list` counts sub-runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/render/trace_render.hpp"
#include "schema/explain_builder.hpp"
#include "schema/messages_trace.hpp"

namespace glassbox::cli::render {
namespace {

namespace explain = schema::explain;
using explain::RunUris;
using schema::TraceDetail;
using schema::TraceEvent;

explain::TimePoint at(int ms) {
    return explain::TimePoint(std::chrono::milliseconds(1'790'000'000'000 + ms));
}

explain::StepInfo step(int ms, std::optional<std::string> from) {
    explain::StepInfo info;
    info.generated_at = at(ms);
    info.derived_from = std::move(from);
    return info;
}

TreeOptions full_tree() {
    TreeOptions options;
    options.full = true;
    return options;
}

// A run as `show` returns it: one event per step, the given triples in each.
struct RunBuilder {
    RunUris run = RunUris::generate();
    TraceDetail trace;

    RunBuilder(std::string kind, const std::string& question, std::optional<std::string> parent) {
        trace.session.session = run.question();
        trace.session.kind = std::move(kind);
        trace.session.status = "complete";
        trace.session.question = question;
        if (parent) trace.session.parent = RunUris::from_uri(*parent)->question();
        add(run.question(),
            explain::question(run, question, at(0), explain::worker_agent_uri(*trace.session.kind),
                              parent ? std::optional<std::string_view>(*parent) : std::nullopt));
    }
    void add(const std::string& id, std::vector<schema::Triple> triples) {
        TraceEvent event;
        event.seq = trace.events.size();
        event.explain_id = id;
        event.state = "open";
        event.triples = std::move(triples);
        trace.events.push_back(std::move(event));
    }
};

// A graph-RAG sub-run called by `parent`: Question → Synthesis.
TraceDetail graph_sub_run(const std::string& parent, const std::string& question) {
    RunBuilder sub("graph-rag", question, parent);
    sub.add(sub.run.synthesis(),
            explain::synthesis(sub.run, step(5, std::nullopt),
                               explain::StoredText{"an answer", std::nullopt}));
    return std::move(sub.trace);
}

std::size_t at_least(const std::string& text, const std::string& needle, std::size_t from = 0) {
    const auto found = text.find(needle, from);
    EXPECT_NE(found, std::string::npos) << "no \"" << needle << "\" after " << from << " in\n"
                                        << text;
    return found == std::string::npos ? text.size() : found;
}

TEST(NestedTrace, AnAgentsToolRunSitsUnderItsAnalysis) {
    RunBuilder agent("agent", "Who founded the yard that built the Curlew?", std::nullopt);
    const auto& q = agent.run;
    agent.add(q.analysis(0), explain::analysis(q, 0, step(1, std::nullopt),
                                               {"find the yard", "knowledge-query",
                                                R"({"question":"yard of Curlew"})"}));
    agent.add(q.observation(0),
              explain::observation(q, 0, step(3, q.analysis(0)), {"Brenn yard", std::nullopt}));
    agent.add(q.analysis(1), explain::analysis(q, 1, step(4, q.observation(0)),
                                               {"who founded it", "knowledge-query",
                                                R"({"question":"founder"})"}));
    agent.add(q.observation(1),
              explain::observation(q, 1, step(6, q.analysis(1)), {"Oskar Brenn", std::nullopt}));
    agent.add(q.conclusion(),
              explain::conclusion(q, step(7, q.observation(1)), {"Oskar Brenn.", std::nullopt}));
    agent.trace.subtraces.push_back(graph_sub_run(q.analysis(0), "yard of Curlew"));
    agent.trace.subtraces.push_back(graph_sub_run(q.analysis(1), "founder"));

    const std::string tree = render_tree(agent.trace, full_tree());
    const auto analysis0 = at_least(tree, "  " + q.analysis(0) + "  (open)");
    const auto sub0 = at_least(tree, "    \u2514\u2500 called from analysis:0", analysis0);
    const auto first_query = at_least(tree, "yard of Curlew", sub0);
    const auto observation0 = at_least(tree, "] Observation  " + q.observation(0), first_query);
    const auto analysis1 = at_least(tree, "  " + q.analysis(1) + "  (open)", observation0);
    const auto sub1 = at_least(tree, "    \u2514\u2500 called from analysis:1", analysis1);
    at_least(tree, "] Conclusion", sub1);
    // The sub-run's own steps are indented under it.
    EXPECT_NE(tree.find("\n    [1] Synthesis"), std::string::npos) << tree;
}

TEST(NestedTrace, AQueryRunNestsEachEngineUnderItsRoutingOrEscalation) {
    RunBuilder query("query", "Who founded it?", std::nullopt);
    const auto& q = query.run;
    query.add(q.routing_decision(),
              explain::routing_decision(q, step(1, std::nullopt),
                                        {"rules", {"who-question"}, 0.8, "graph-rag"}));
    query.add(q.escalation(0), explain::escalation(q, 0, step(5, q.routing_decision()),
                                                   {"weak evidence", 0.2, "agent"}));
    query.add(q.conclusion(),
              explain::conclusion(q, step(9, q.escalation(0)), {"Oskar Brenn.", std::nullopt}));
    query.trace.subtraces.push_back(graph_sub_run(q.routing_decision(), "first engine"));
    // The escalation's engine, an agent, with its own tool run nested one level deeper.
    RunBuilder agent("agent", "second engine", q.escalation(0));
    agent.add(agent.run.analysis(0), explain::analysis(agent.run, 0, step(6, std::nullopt),
                                                       {"look it up", "knowledge-query", "{}"}));
    agent.trace.subtraces.push_back(graph_sub_run(agent.run.analysis(0), "deepest"));
    query.trace.subtraces.push_back(std::move(agent.trace));

    const std::string tree = render_tree(query.trace, full_tree());
    const auto routing = at_least(tree, "] RoutingDecision  ");
    const auto first = at_least(tree, "    \u2514\u2500 called from routing", routing);
    const auto escalation = at_least(tree, "] Escalation  ", at_least(tree, "first engine", first));
    const auto second = at_least(tree, "    \u2514\u2500 called from escalation:0", escalation);
    const auto deepest = at_least(tree, "        \u2514\u2500 called from analysis:0", second);
    at_least(tree, "\n[3] Conclusion", at_least(tree, "deepest", deepest));
}

TEST(NestedTrace, ACallingStepSentInAnotherStepsMessageStillHoldsItsSubRun) {
    RunBuilder agent("agent", "q", std::nullopt);
    const auto& q = agent.run;
    // Analysis and its Observation in one message (explain_id: the Analysis).
    auto triples = explain::analysis(q, 0, step(1, std::nullopt), {"t", "document-query", "{}"});
    const auto observation =
        explain::observation(q, 0, step(2, q.analysis(0)), {"o", std::nullopt});
    triples.insert(triples.end(), observation.begin(), observation.end());
    agent.add(q.analysis(0), std::move(triples));
    agent.add(q.conclusion(),
              explain::conclusion(q, step(3, q.observation(0)), {"done", std::nullopt}));
    agent.trace.subtraces.push_back(graph_sub_run(q.observation(0), "sub"));
    const std::string tree = render_tree(agent.trace, full_tree());
    const auto sub = at_least(tree, "\u2514\u2500 called from observation:0");
    EXPECT_LT(sub, at_least(tree, "] Conclusion")) << tree;
    EXPECT_EQ(tree.find("\u2514\u2500 sub-trace"), std::string::npos)
        << "placed, not appended: " << tree;
}

TEST(NestedTrace, ListCountsSubRunsInsteadOfListingThem) {
    schema::TraceSessionList list;
    schema::TraceSessionSummary top;
    top.session = "urn:glassbox:0b7c6a52-3f4e-4d1a-9c2b-5e8f7a6d4c3b:question";
    top.kind = "agent";
    top.status = "complete";
    top.subtraces = 3;
    schema::TraceSessionSummary plain = top;
    plain.session = "urn:glassbox:1c8d7b63-405f-4e2b-8d3c-6f9a8b7e5d4c:question";
    plain.subtraces = 0;
    list.sessions = {top, plain};
    list.total = 2;
    const std::string table = render_session_table(list);
    EXPECT_NE(table.find("SUB-RUNS"), std::string::npos) << table;
    const auto first_row = table.substr(table.find('\n') + 1);
    EXPECT_EQ(first_row.substr(0, first_row.find('\n')).back(), '3') << table;
    const auto second_row = first_row.substr(first_row.find('\n') + 1);
    EXPECT_EQ(second_row.substr(0, second_row.find('\n')).back(), '-') << table;
}

}  // namespace
}  // namespace glassbox::cli::render
