// The MCP tools and trace resources: schemas, argument checks, shaped results, typed errors.
#include "gateway/mcp/tools.hpp"

#include <gtest/gtest.h>

#include <string>

#include "gateway/mcp/trace_resources.hpp"
#include "gateway/mcp/trace_view.hpp"
#include "tests/unit/gateway/mcp/fake_backend.hpp"

namespace glassbox::gateway::mcp {
namespace {

using nlohmann::json;

json iri(const std::string& i) { return {{"t", "i"}, {"i", i}}; }
json lit(json v, const std::string& dt = "") {
    json t = {{"t", "l"}, {"v", std::move(v)}};
    if (!dt.empty()) t["dt"] = dt;
    return t;
}
json triple(json s, json p, json o) {
    return {{"s", std::move(s)}, {"p", std::move(p)}, {"o", std::move(o)}};
}

const std::string kGb = "https://glassbox.dev/ns#";
const std::string kType = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
const std::string kInt = "http://www.w3.org/2001/XMLSchema#integer";

// A `show` reply: a query run (Question, RoutingDecision) with one graph-rag sub-run.
json show_reply() {
    const std::string q = "urn:glassbox:aaaa:question";
    const std::string r = "urn:glassbox:aaaa:routing";
    const std::string sub = "urn:glassbox:bbbb:question";
    json events =
        json::array({{{"seq", 0},
                      {"explain_id", q},
                      {"state", "open"},
                      {"received", "2026-11-27T08:00:00.000Z"},
                      {"triples",
                       {triple(iri(q), iri(kType), iri("http://www.w3.org/ns/prov#Activity")),
                        triple(iri(q), iri(kType), iri(kGb + "Question")),
                        triple(iri(q), iri(kGb + "query"), lit("Who founded the yard?"))}}},
                     {{"seq", 1},
                      {"explain_id", r},
                      {"state", "open"},
                      {"received", "2026-11-27T08:00:00.010Z"},
                      {"triples",
                       {triple(iri(r), iri(kType), iri(kGb + "RoutingDecision")),
                        triple(iri(r), iri(kGb + "engine"), lit("graph-rag")),
                        triple(iri(r), iri(kGb + "durationMs"), lit("3", kInt)),
                        triple(iri(r), iri(kGb + "ruleFired"), lit("who-question")),
                        triple(iri(r), iri(kGb + "ruleFired"), lit("entity-known"))}}}});
    json sub_events =
        json::array({{{"seq", 0},
                      {"explain_id", sub},
                      {"state", "open"},
                      {"received", "…"},
                      {"triples", {triple(iri(sub), iri(kType), iri(kGb + "Question"))}}}});
    return {{"session",
             {{"session", q}, {"kind", "query"}, {"service", "query"}, {"status", "complete"}}},
            {"events", events},
            {"subtraces",
             {{{"session", {{"session", sub}, {"service", "graph-rag"}, {"status", "complete"}}},
               {"events", sub_events},
               {"subtraces", json::array()}}}}};
}

class McpToolsTest : public ::testing::Test {
protected:
    json call(const std::string& name, json args) {
        NoRunControl control;
        auto outcome = tools_.call({{"name", name}, {"arguments", std::move(args)}}, control);
        EXPECT_TRUE(std::holds_alternative<json>(outcome));
        return std::get<json>(outcome);
    }

    static void expect_tool_error(const json& result, const std::string& prefix) {
        EXPECT_TRUE(result["isError"].get<bool>()) << result.dump();
        EXPECT_FALSE(result.contains("structuredContent"));
        EXPECT_EQ(result["content"][0]["text"].get<std::string>().rfind(prefix, 0), 0u)
            << result.dump();
    }

    // Every required field of the tool's outputSchema is in its structured content.
    void expect_matches_output_schema(const std::string& name, const json& structured) {
        for (const auto& tool : tools_.list()["tools"]) {
            if (tool["name"] != name) continue;
            for (const auto& field : tool["outputSchema"]["required"]) {
                EXPECT_TRUE(structured.contains(field.get<std::string>())) << name << ": " << field;
            }
        }
    }

    testing::FakeBackend backend_;
    ToolBox tools_{backend_};
};

TEST_F(McpToolsTest, EveryToolHasAnInputAndAnOutputSchema) {
    const json& tools = tools_.list()["tools"];
    ASSERT_EQ(tools.size(), 6u);
    std::vector<std::string> names;
    for (const auto& tool : tools) {
        names.push_back(tool["name"]);
        EXPECT_EQ(tool["inputSchema"]["type"], "object");
        EXPECT_EQ(tool["outputSchema"]["type"], "object");
        EXPECT_FALSE(tool["description"].get<std::string>().empty());
    }
    EXPECT_EQ(names,
              (std::vector<std::string>{"resolve_intent", "search_graph", "explain_trace",
                                        "list_traces", "list_evaluations", "show_evaluation"}));
}

TEST_F(McpToolsTest, ResolveIntentShapesTheQueryAnswer) {
    // The backend answers as POST /api/v1/query does (docs/http.md §3).
    backend_.answer_ = {
        {"answer", "Oskar Brenn founded it."},
        {"short_answer", "Oskar Brenn"},
        {"citations", {{{"n", 1}, {"kind", "edge"}, {"text", "founded by Oskar Brenn"}}}},
        {"sources", {{{"source", "file:///yard.ttl"}, {"tier", 1}, {"engine", "graph-rag"}}}},
        {"trace_id", "urn:glassbox:aaaa:question"},
        {"request_id", "gw-1"},
        {"route", {{"engine", "graph-rag"}}},
        {"answered_by", "graph-rag"},
        {"usage", {{"input_tokens", 10}, {"output_tokens", 5}}}};
    json result = call("resolve_intent", {{"question", "Who founded the yard?"}, {"mode", "auto"}});
    ASSERT_FALSE(result["isError"].get<bool>());
    const json& s = result["structuredContent"];
    EXPECT_EQ(s["answer"], "Oskar Brenn founded it.");
    EXPECT_EQ(s["short_answer"], "Oskar Brenn");
    EXPECT_EQ(s["trace_id"], "urn:glassbox:aaaa:question");
    EXPECT_EQ(s["citations"].size(), 1u);
    EXPECT_EQ(s["sources"][0]["tier"], 1);
    EXPECT_EQ(s["usage"]["input_tokens"], 10);
    EXPECT_FALSE(s.contains("request_id")) << "an HTTP request's, not an MCP call's";
    EXPECT_EQ(json::parse(result["content"][0]["text"].get<std::string>()), s);
    expect_matches_output_schema("resolve_intent", s);
    ASSERT_EQ(backend_.calls.size(), 1u);
    EXPECT_EQ(backend_.calls[0].args["question"], "Who founded the yard?");
}

TEST_F(McpToolsTest, ResolveIntentTakesQueryAsAnotherNameForQuestion) {
    const json& tool = tools_.list()["tools"][0];
    EXPECT_EQ(tool["inputSchema"]["required"], json::array({"question"}));
    EXPECT_TRUE(tool["inputSchema"]["properties"]["query"]["deprecated"].get<bool>());
    // The alias alone reaches the backend as the question; both alike are one.
    EXPECT_FALSE(call("resolve_intent", {{"query", "Who?"}})["isError"].get<bool>());
    EXPECT_EQ(backend_.calls.back().args, (json{{"question", "Who?"}}));
    EXPECT_FALSE(
        call("resolve_intent", {{"query", "Who?"}, {"question", "Who?"}})["isError"].get<bool>());
    EXPECT_EQ(backend_.calls.back().args, (json{{"question", "Who?"}}));
    // Both and different: refused before the backend is asked.
    const std::size_t asked = backend_.calls.size();
    expect_tool_error(call("resolve_intent", {{"query", "Who?"}, {"question", "What?"}}),
                      "InvalidRequest: 'question' and 'query' (another name for question) differ");
    EXPECT_EQ(backend_.calls.size(), asked);
}

// Issue 35: the answer's floor is an argument of resolve_intent, a number from 0 to 1 that
// reaches the backend (its range is checked there, as for POST /api/v1/query).
TEST_F(McpToolsTest, ResolveIntentTakesTheAnswersFloor) {
    const json& floor = tools_.list()["tools"][0]["inputSchema"]["properties"]["min_confidence"];
    EXPECT_EQ(floor["type"], "number") << floor.dump();
    EXPECT_EQ(floor["minimum"], 0);
    EXPECT_EQ(floor["maximum"], 1);
    EXPECT_FALSE(call("resolve_intent", {{"question", "Who?"}, {"min_confidence", 0.5}})["isError"]
                     .get<bool>());
    EXPECT_EQ(backend_.calls.back().args, (json{{"question", "Who?"}, {"min_confidence", 0.5}}));
}

TEST_F(McpToolsTest, ArgumentsThatBreakTheSchemaAreToolErrorsAndReachNoBackend) {
    expect_tool_error(call("resolve_intent", json::object()),
                      "InvalidRequest: missing argument 'question'");
    expect_tool_error(call("resolve_intent", {{"question", 5}}),
                      "InvalidRequest: argument 'question' must be a string");
    expect_tool_error(call("resolve_intent", {{"query", 5}}),
                      "InvalidRequest: argument 'question' must be a string");
    expect_tool_error(call("resolve_intent", {{"question", ""}}), "InvalidRequest");
    expect_tool_error(call("resolve_intent", {{"question", "q"}, {"mode", "psychic"}}),
                      "InvalidRequest: argument 'mode'");
    expect_tool_error(call("resolve_intent", {{"question", "q"}, {"colour", "red"}}),
                      "InvalidRequest: unknown argument 'colour'");
    expect_tool_error(call("search_graph", {{"query", "q"}, {"limit", 0}}),
                      "InvalidRequest: argument 'limit'");
    expect_tool_error(call("search_graph", {{"query", "q"}, {"limit", 1.5}}),
                      "InvalidRequest: argument 'limit'");
    expect_tool_error(call("list_traces", {{"all", "yes"}}), "InvalidRequest: argument 'all'");
    expect_tool_error(call("explain_trace", json::array()),
                      "InvalidRequest: arguments must be an object");
    EXPECT_TRUE(backend_.calls.empty());
}

TEST_F(McpToolsTest, ABusErrorIsAToolErrorWithItsType) {
    backend_.fail = base::make_error(base::ErrorType::kNotFound, "no trace matches 'zzzz'");
    expect_tool_error(call("explain_trace", {{"trace", "zzzz"}}),
                      "NotFound: no trace matches 'zzzz'");
    backend_.fail = base::make_error(base::ErrorType::kDeadlineExceeded, "no reply within 30s");
    expect_tool_error(call("resolve_intent", {{"question", "q"}}), "DeadlineExceeded");
}

TEST_F(McpToolsTest, SearchGraphAndListTracesAlwaysCarryTheirRequiredFields) {
    backend_.search_ = {{"edges", {{{"s", "a"}, {"p", "b"}, {"o", "c"}, {"score", 0.5}}}}};
    json s = call("search_graph",
                  {{"query", "yard"}, {"kind", "edges"}, {"limit", 5}})["structuredContent"];
    EXPECT_EQ(s["edges"].size(), 1u);
    EXPECT_TRUE(s["chunks"].is_array());
    expect_matches_output_schema("search_graph", s);

    backend_.list_ = {{"sessions", {{{"session", "urn:glassbox:aaaa:question"}}}},
                      {"total", 1},
                      {"next", nullptr}};
    json l = call("list_traces", {{"kind", "query"}, {"limit", 10}})["structuredContent"];
    EXPECT_EQ(l["sessions"].size(), 1u);
    EXPECT_EQ(backend_.calls.back().args["kind"], "query");
    expect_matches_output_schema("list_traces", l);
}

// An evaluation run as the trace service's eval_show keeps it: `rows` questions.
json eval_run(int rows) {
    json out = {{"name", "20261130T091715Z-dev"},
                {"set", "dev"},
                {"set_path", "/data/dev.jsonl"},
                {"engine", "graph-rag"},
                {"collection", ""},
                {"started", "2026-11-30T09:17:15.000Z"},
                {"finished", "2026-11-30T09:19:02.000Z"},
                {"recorded", "2026-11-30T09:19:03.000Z"},
                {"summary",
                 {{"questions", rows},
                  {"hits1", 0.9},
                  {"exact", 0.8},
                  {"f1", 0.85},
                  {"ece", 0.04},
                  {"bins", {{{"lower", 0.9}, {"upper", 1.0}, {"questions", rows}}}},
                  {"accuracy_at_coverage",
                   {{{"coverage", 1.0}, {"kept", rows}, {"accuracy", 0.9}},
                    {{"coverage", 0.8}, {"kept", rows * 4 / 5}, {"accuracy", 0.95}}}}}},
                {"rows", json::array()}};
    for (int i = 0; i < rows; ++i)
        out["rows"].push_back({{"id", "q" + std::to_string(i)}, {"verdict", "hit"}});
    return out;
}

// Issue 35: the evaluation runs `glassbox eval` recorded, listed with their figures and shown
// with a bounded page of their per-question rows.
TEST_F(McpToolsTest, ListEvaluationsGivesEachRunsFiguresAndThePage) {
    json listed = eval_run(3);
    listed.erase("rows");
    backend_.evals_ = {{"runs", {listed}}, {"total", 4}};
    json s = call("list_evaluations", {{"limit", 1}, {"offset", 2}})["structuredContent"];
    ASSERT_EQ(s["runs"].size(), 1u) << s.dump();
    const json& run = s["runs"][0];
    EXPECT_EQ(run["name"], "20261130T091715Z-dev");
    EXPECT_EQ(run["engine"], "graph-rag");
    EXPECT_EQ(run["metrics"]["hits1"], 0.9);
    EXPECT_EQ(run["metrics"]["exact"], 0.8);
    EXPECT_EQ(run["metrics"]["f1"], 0.85);
    EXPECT_EQ(run["metrics"]["ece"], 0.04);
    EXPECT_EQ(run["metrics"]["accuracy_at_coverage"].size(), 2u);
    EXPECT_FALSE(run["metrics"].contains("bins")) << "the chart's data, not a figure";
    EXPECT_FALSE(run.contains("set_path")) << "the evaluating host's file: show_evaluation has it";
    EXPECT_EQ(s["total"], 4);
    EXPECT_EQ(s["offset"], 2);
    EXPECT_EQ(s["next_offset"], 3);
    expect_matches_output_schema("list_evaluations", s);
    EXPECT_EQ(backend_.calls.back().args, (json{{"limit", 1}, {"offset", 2}}));

    // The defaults; the last page has no next; a reply without runs still has every field.
    backend_.evals_ = {{"runs", {listed}}, {"total", 1}};
    s = call("list_evaluations", json::object())["structuredContent"];
    EXPECT_EQ(backend_.calls.back().args, (json{{"limit", 20}, {"offset", 0}}));
    EXPECT_TRUE(s["next_offset"].is_null());
    backend_.evals_ = json::object();
    s = call("list_evaluations", json::object())["structuredContent"];
    EXPECT_TRUE(s["runs"].empty());
    EXPECT_EQ(s["total"], 0);
    expect_matches_output_schema("list_evaluations", s);
}

TEST_F(McpToolsTest, ShowEvaluationGivesTheFiguresAndABoundedPageOfRows) {
    backend_.eval_ = {{"run", eval_run(250)}};
    json s = call("show_evaluation", {{"name", "20261130T091715Z-dev"}})["structuredContent"];
    EXPECT_EQ(backend_.calls.back().args, "20261130T091715Z-dev");
    EXPECT_EQ(s["name"], "20261130T091715Z-dev");
    EXPECT_EQ(s["set_path"], "/data/dev.jsonl");
    EXPECT_EQ(s["metrics"]["hits1"], 0.9);
    EXPECT_EQ(s["metrics"]["ece"], 0.04);
    EXPECT_EQ(s["summary"]["bins"].size(), 1u) << "the whole summary too";
    EXPECT_EQ(s["rows"].size(), 20u) << "20 rows by default";
    EXPECT_EQ(s["rows"][0]["id"], "q0");
    EXPECT_EQ(s["rows_total"], 250);
    EXPECT_EQ(s["rows_offset"], 0);
    EXPECT_EQ(s["next_rows_offset"], 20);
    expect_matches_output_schema("show_evaluation", s);

    s = call("show_evaluation",
             {{"name", "x"}, {"rows_offset", 200}, {"rows_limit", 200}})["structuredContent"];
    EXPECT_EQ(s["rows"].size(), 50u);
    EXPECT_EQ(s["rows"][0]["id"], "q200");
    EXPECT_TRUE(s["next_rows_offset"].is_null());
    s = call("show_evaluation", {{"name", "x"}, {"rows_offset", 900}})["structuredContent"];
    EXPECT_TRUE(s["rows"].empty());
    EXPECT_EQ(s["rows_offset"], 250) << "past the end: an empty page at the end";
    s = call("show_evaluation", {{"name", "x"}, {"rows_limit", 0}})["structuredContent"];
    EXPECT_TRUE(s["rows"].empty());
    EXPECT_TRUE(s["next_rows_offset"].is_null()) << "the figures alone";

    // A page never exceeds the bound: the schema refuses more before the backend is asked.
    const std::size_t asked = backend_.calls.size();
    expect_tool_error(call("show_evaluation", {{"name", "x"}, {"rows_limit", 201}}),
                      "InvalidRequest: argument 'rows_limit'");
    expect_tool_error(call("show_evaluation", json::object()),
                      "InvalidRequest: missing argument 'name'");
    expect_tool_error(call("list_evaluations", {{"limit", 101}}),
                      "InvalidRequest: argument 'limit'");
    expect_tool_error(call("list_evaluations", {{"offset", -1}}),
                      "InvalidRequest: argument 'offset'");
    EXPECT_EQ(backend_.calls.size(), asked);

    backend_.fail = base::make_error(base::ErrorType::kNotFound, "no evaluation run \"x\"");
    expect_tool_error(call("show_evaluation", {{"name", "x"}}),
                      "NotFound: no evaluation run \"x\"");
}

TEST_F(McpToolsTest, ExplainTraceListsStepsInOrderWithTheirValuesAndTriples) {
    backend_.show_ = show_reply();
    json result = call("explain_trace", {{"trace", "aaaa"}});
    ASSERT_FALSE(result["isError"].get<bool>()) << result.dump();
    const json& s = result["structuredContent"];
    expect_matches_output_schema("explain_trace", s);
    EXPECT_EQ(backend_.calls[0].args, "aaaa");
    ASSERT_EQ(s["steps"].size(), 3u);
    EXPECT_EQ(s["steps"][0]["type"], "Question");  // gb: class preferred over prov:Activity
    EXPECT_EQ(s["steps"][0]["properties"]["gb:query"], "Who founded the yard?");
    EXPECT_EQ(s["steps"][1]["type"], "RoutingDecision");
    EXPECT_EQ(s["steps"][1]["properties"]["gb:ruleFired"], json({"who-question", "entity-known"}));
    EXPECT_EQ(s["steps"][2]["depth"], 1);
    EXPECT_EQ(s["steps"][2]["service"], "graph-rag");
    EXPECT_EQ(s["triples_total"], 9);
    EXPECT_EQ(s["triples"][1]["o"], "gb:Question");
    EXPECT_EQ(s["triples"][5]["o"], "\"3\"^^xsd:integer");
    EXPECT_FALSE(s["truncated"].get<bool>());
    const std::string text = result["content"][0]["text"];
    EXPECT_NE(text.find("#1 RoutingDecision (query): gb:durationMs=3; gb:engine=graph-rag; "
                        "gb:ruleFired=who-question, entity-known"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("  Trace urn:glassbox:bbbb:question (graph-rag, complete)"),
              std::string::npos)
        << text;
}

TEST_F(McpToolsTest, ExplainTraceBoundsItsTriples) {
    backend_.show_ = show_reply();
    json s = call("explain_trace", {{"trace", "aaaa"}, {"max_triples", 2}})["structuredContent"];
    EXPECT_EQ(s["triples"].size(), 2u);
    EXPECT_EQ(s["triples_total"], 9);
    EXPECT_TRUE(s["truncated"].get<bool>());
    EXPECT_EQ(s["steps"].size(), 3u);
    json none =
        call("explain_trace", {{"trace", "aaaa"}, {"include_triples", false}})["structuredContent"];
    EXPECT_TRUE(none["triples"].empty());
}

TEST(TraceViewTest, TermsReadAsTurtle) {
    EXPECT_EQ(term_text(iri("http://www.w3.org/ns/prov#used")), "prov:used");
    EXPECT_EQ(term_text(iri("file:///a.md")), "<file:///a.md>");
    EXPECT_EQ(term_text(lit("say \"hi\"")), "\"say \\\"hi\\\"\"");
    EXPECT_EQ(term_text({{"t", "l"}, {"v", "Haus"}, {"ln", "de"}}), "\"Haus\"@de");
    EXPECT_EQ(term_text({{"t", "b"}, {"d", "x1"}}), "_:x1");
    EXPECT_EQ(term_text({{"t", "t"}, {"tr", triple(iri("urn:a"), iri(kType), iri(kGb + "Focus"))}}),
              "<< <urn:a> rdf:type gb:Focus >>");
    EXPECT_EQ(term_text(json(3)), "");
}

TEST(TraceResourcesTest, ListReadAndTemplate) {
    testing::FakeBackend backend;
    TraceResources resources(backend);
    backend.list_ = {{"sessions",
                      {{{"session", "urn:glassbox:aaaa:question"},
                        {"question", "Who?"},
                        {"kind", "query"},
                        {"status", "complete"},
                        {"started", "…Z"}},
                       {{"no", "session"}}}},
                     {"next", "cursor-2"}};
    json list = std::get<json>(resources.list({{"cursor", "cursor-1"}}));
    ASSERT_EQ(list["resources"].size(), 1u);
    EXPECT_EQ(list["resources"][0]["uri"], "urn:glassbox:aaaa:question");
    EXPECT_EQ(list["resources"][0]["title"], "Who?");
    EXPECT_EQ(list["nextCursor"], "cursor-2");
    EXPECT_EQ(backend.calls.back().args["after"], "cursor-1");

    backend.show_ = show_reply();
    json read = std::get<json>(resources.read({{"uri", "urn:glassbox:aaaa:question"}}));
    EXPECT_EQ(read["contents"][0]["mimeType"], "application/json");
    EXPECT_EQ(json::parse(read["contents"][0]["text"].get<std::string>()), show_reply());

    auto foreign = resources.read({{"uri", "file:///etc/passwd"}});
    EXPECT_EQ(std::get<RpcError>(foreign).code, kResourceNotFound);
    backend.fail = base::make_error(base::ErrorType::kNotFound, "no such trace");
    EXPECT_EQ(std::get<RpcError>(resources.read({{"uri", "urn:glassbox:zzzz:question"}})).code,
              kResourceNotFound);
    backend.fail = base::make_error(base::ErrorType::kServiceUnavailable, "no trace worker");
    EXPECT_EQ(std::get<RpcError>(resources.read({{"uri", "urn:glassbox:zzzz:question"}})).code,
              kInternalError);
    EXPECT_EQ(std::get<RpcError>(resources.read(json::object())).code, kInvalidParams);

    EXPECT_EQ(TraceResources::templates()["resourceTemplates"][0]["uriTemplate"],
              "urn:glassbox:{trace}:question");
}

}  // namespace
}  // namespace glassbox::gateway::mcp
