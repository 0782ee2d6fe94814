// Cost in the CLI's renderings (docs/traces.md, "Cost"): the amounts as shown, the `traces show`
// header and step lines, the full tree's cost field, and the COST column of `traces list` (shown
// only when a run of the page has a cost or an unpriced model).
#include <gtest/gtest.h>

#include <string>

#include "cli/render/trace_render.hpp"
#include "schema/explain_builder.hpp"
#include "schema/messages_trace.hpp"

namespace glassbox::cli::render {
namespace {

namespace explain = schema::explain;

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

TEST(CostRender, AmountsAreRoundedForReadingAndNoneIsADash) {
    EXPECT_EQ(format_cost(std::nullopt), "-");
    EXPECT_EQ(format_cost(0.0), "0");
    EXPECT_EQ(format_cost(12.345), "12.35");
    EXPECT_EQ(format_cost(1.5), "1.5");
    EXPECT_EQ(format_cost(0.0035), "0.0035");
    EXPECT_EQ(format_cost(0.000123456), "0.000123");
    EXPECT_EQ(format_cost(1e-13), "~0");
}

// A graph-rag run whose Synthesis called gpt-4o (priced) and whose Grounding called an unpriced
// model, as `show` answers it.
schema::TraceDetail priced_run() {
    const auto uris = explain::RunUris::generate();
    explain::StepInfo grounding;
    grounding.generated_at = explain::TimePoint(std::chrono::milliseconds(1'790'000'000'000));
    grounding.model = "local-llama";
    grounding.input_tokens = 20;
    grounding.output_tokens = 4;
    explain::StepInfo synthesis = grounding;
    synthesis.model = "gpt-4o";
    synthesis.input_tokens = 1000;
    synthesis.output_tokens = 100;
    schema::TraceDetail trace;
    trace.session.session = uris.question();
    trace.session.kind = "graph-rag";
    trace.session.status = "complete";
    trace.session.cost = 0.0035;
    trace.session.currency = "EUR";
    trace.session.unpriced = std::vector<std::string>{"local-llama"};
    schema::TraceEvent g;
    g.seq = 1;
    g.explain_id = uris.grounding();
    g.triples = explain::grounding(uris, grounding, {"ship"});
    g.costs = std::vector<schema::StepCost>{
        {uris.grounding(), "local-llama", 20, 4, std::nullopt, "EUR"}};
    schema::TraceEvent s;
    s.seq = 2;
    s.explain_id = uris.synthesis();
    s.triples = explain::synthesis(uris, synthesis, explain::StoredText{"the yard", std::nullopt});
    s.costs = std::vector<schema::StepCost>{{uris.synthesis(), "gpt-4o", 1000, 100, 0.0035, "EUR"}};
    trace.events = {g, s};
    return trace;
}

TEST(CostRender, ShowGivesTheRunsCostAndEachCallsBesideItsTokens) {
    const auto trace = priced_run();
    const std::string tree = render_tree(trace);
    EXPECT_TRUE(contains(tree, "Cost          0.0035 EUR; no price for local-llama\n")) << tree;
    EXPECT_TRUE(contains(tree, "tokens 1000 in / 100 out, cost 0.0035 EUR")) << tree;
    EXPECT_TRUE(contains(tree, "tokens 20 in / 4 out, no price for local-llama")) << tree;
    TreeOptions full;
    full.full = true;
    const std::string blocks = render_tree(trace, full);
    // Under the step's tokens, in its block.
    EXPECT_TRUE(contains(blocks, "tokens        1000 in, 100 out\n    cost          0.0035 EUR\n"))
        << blocks;
    EXPECT_TRUE(contains(blocks, "cost          none (no price for local-llama)\n")) << blocks;
}

TEST(CostRender, TheListHasACostColumnOnlyWhenARunHasACost) {
    schema::TraceSessionList list;
    schema::TraceSessionSummary a;
    a.session = "urn:glassbox:11111111-1111-4111-8111-111111111111:question";
    a.kind = "graph-rag";
    a.status = "complete";
    a.input_tokens = 10;
    list.sessions = {a};
    EXPECT_FALSE(contains(render_session_table(list), "COST")) << render_session_table(list);
    schema::TraceSessionSummary b = a;
    b.session = "urn:glassbox:22222222-2222-4222-8222-222222222222:question";
    b.cost = 0.25;
    b.currency = "USD";
    b.unpriced = std::vector<std::string>{"local-llama"};
    schema::TraceSessionSummary c = a;
    c.session = "urn:glassbox:33333333-3333-4333-8333-333333333333:question";
    c.unpriced = std::vector<std::string>{"local-llama"};
    list.sessions = {a, b, c};
    const std::string table = render_session_table(list);
    EXPECT_TRUE(contains(table, "COST USD")) << table;
    EXPECT_TRUE(contains(table, "0.25+?")) << table;
    EXPECT_TRUE(contains(table, "  ?  ")) << table;
}

}  // namespace
}  // namespace glassbox::cli::render
