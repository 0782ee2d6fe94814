// The MCP tools: schemas in one place, each call shaped into structured content.
#include "gateway/mcp/tools.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "gateway/mcp/argument_check.hpp"
#include "gateway/mcp/trace_view.hpp"

namespace glassbox::gateway::mcp {

namespace {

using nlohmann::json;

json string_arg(std::string description, std::size_t max_length) {
    return {{"type", "string"},
            {"minLength", 1},
            {"maxLength", max_length},
            {"description", std::move(description)}};
}

json object_schema(json properties, json required) {
    return {{"type", "object"},
            {"properties", std::move(properties)},
            {"required", std::move(required)},
            {"additionalProperties", false}};
}

// Output schemas stay open (additionalProperties allowed): a field the workers add later must
// not make every client's validation of older answers fail.
json output_schema(json properties, json required) {
    return {{"type", "object"},
            {"properties", std::move(properties)},
            {"required", std::move(required)}};
}

const json kObjects = {{"type", "array"}, {"items", {{"type", "object"}}}};

// Pages of evaluation runs and of one run's rows: a tool's answer stays small whatever the store
// holds (a run keeps up to 10,000 rows, 8 MiB).
constexpr std::int64_t kDefaultEvalListLimit = 20;
constexpr std::int64_t kMaxEvalListLimit = 100;
constexpr std::int64_t kMaxEvalOffset = 2'147'483'647;
constexpr std::int64_t kDefaultEvalRowsLimit = 20;
constexpr std::int64_t kMaxEvalRowsLimit = 200;
constexpr std::int64_t kMaxEvalRowsOffset = 10'000;

json read_only() {
    return {{"readOnlyHint", true},
            {"destructiveHint", false},
            {"idempotentHint", true},
            {"openWorldHint", false}};
}

// resolve_intent's structured output: the gateway's answer (gateway/query_answer.hpp).
json resolve_intent_output() {
    const json text = {{"type", "string"}};
    const json nullable_text = {{"type", {"string", "null"}}};
    return output_schema(
        {{"trace_id",
          {{"type", "string"},
           {"description", "The run's trace (session URI): explain_trace reads it."}}},
         {"question", text},
         {"collection", text},
         {"answer",
          {{"type", "string"},
           {"description", "The whole answer; citation spans count its code points."}}},
         {"short_answer",
          {{"type", {"string", "null"}},
           {"description", "The short answer alone; empty when the evidence does not decide."}}},
         {"citations",
          {{"type", "array"},
           {"items", {{"type", "object"}}},
           {"description",
            "Numbered: n, kind (edge or chunk), text, title, document, chunk, offsets, tier, "
            "spans."}}},
         {"sources",
          {{"type", "array"},
           {"items", {{"type", "object"}}},
           {"description",
            "Each distinct source of the answer: source, tier (1 authoritative .. 4 inferred), "
            "engine."}}},
         {"answered_by", nullable_text},
         {"route", {{"type", {"object", "null"}}}},
         {"escalations", kObjects},
         {"runs", kObjects},
         {"relevance", {{"type", {"number", "null"}}}},
         {"confidence",
          {{"type", {"number", "null"}},
           {"description",
            "The calibrated probability that the short answer is right; null when none."}}},
         {"confidence_words", nullable_text},
         {"calibrator", nullable_text},
         {"abstained",
          {{"type", "boolean"},
           {"description", "Below the confidence floor: the answer says it does not know."}}},
         {"evidence",
          {{"type", "array"},
           {"items", {{"type", "object"}}},
           {"description", "The evidence features: name, value, effect (on the log-odds)."}}},
         {"conflicts",
          {{"type", "array"},
           {"items", {{"type", "object"}}},
           {"description",
            "Sources that disagree on a single-valued fact the answer states: subject, "
            "predicate, stated, rival, stated_sources, rival_sources, and the steps that kept "
            "each value (stated_selection, rival_selection)."}}},
         {"completeness",
          {{"type", {"object", "null"}},
           {"description",
            "What of the question the answer covers: asked, covered, list, answers_found, "
            "answers_named."}}},
         {"provenance", {{"type", {"object", "null"}}}},
         {"model", nullable_text},
         {"usage", {{"type", "object"}, {"description", "input_tokens, output_tokens"}}},
         {"duration_ms", {{"type", "integer"}}},
         {"termination_reason", text}},
        {"trace_id", "answer", "short_answer", "citations", "sources"});
}

// The question is `question`, as the CLI's --question and the HTTP body name it; `query`, its
// older name, is taken as an alias (ToolBox::call moves it; both and different is an error).
json resolve_intent_tool() {
    json alias =
        string_arg("Another name for question (older clients); give one of the two.", 16384);
    alias["deprecated"] = true;
    json input = object_schema(
        {{"question", string_arg("The question, in natural language.", 16384)},
         {"query", std::move(alias)},
         {"mode",
          {{"type", "string"},
           {"enum", {"auto", "graph-rag", "document-rag", "agent"}},
           {"description", "The engine; auto lets the query router decide (the default)."}}},
         {"collection", string_arg("The document collection to search (default: all).", 256)},
         {"session_id", string_arg("A conversation id: the question is a turn of it.", 256)},
         {"min_confidence",
          {{"type", "number"},
           {"minimum", 0},
           {"maximum", 1},
           {"description",
            "Below this calibrated confidence the answer says it does not know, what it found "
            "and why it is unsure (default: the query worker's, 0.25)."}}}},
        {"question"});
    json output = resolve_intent_output();
    return {{"name", "resolve_intent"},
            {"title", "Ask glassbox"},
            {"description",
             "Answers a question from the knowledge graph and documents through glassbox's query "
             "router, with numbered citations, their sources and data tiers, and the trace id "
             "of the run that explains every step."},
            {"inputSchema", std::move(input)},
            {"outputSchema", std::move(output)},
            {"annotations",
             {{"readOnlyHint", true},
              {"destructiveHint", false},
              {"idempotentHint", false},
              {"openWorldHint", false}}}};
}

json search_graph_tool() {
    json input =
        object_schema({{"query", string_arg("What to look for.", 4096)},
                       {"kind",
                        {{"type", "string"},
                         {"enum", {"chunks", "edges", "both"}},
                         {"description", "Document chunks, graph edges or both (the default)."}}},
                       {"collection", string_arg("The document collection (default: all).", 256)},
                       {"limit",
                        {{"type", "integer"},
                         {"minimum", 1},
                         {"maximum", 50},
                         {"description", "At most this many of each kind (default 10)."}}}},
                      {"query"});
    json output = output_schema({{"chunks", kObjects}, {"edges", kObjects}}, {"chunks", "edges"});
    return {{"name", "search_graph"},
            {"title", "Search the graph and documents"},
            {"description",
             "Retrieval only, no answer: graph edges (subject, predicate, object, score, their "
             "sources) and document chunks (text, document, title, score, data tier)."},
            {"inputSchema", std::move(input)},
            {"outputSchema", std::move(output)},
            {"annotations", read_only()}};
}

json explain_trace_tool() {
    json input =
        object_schema({{"trace", string_arg("A trace's session URI (urn:glassbox:<uuid>:question) "
                                            "or a unique prefix of its UUID.",
                                            1024)},
                       {"include_triples",
                        {{"type", "boolean"},
                         {"description", "List the trace's PROV-O triples (default true)."}}},
                       {"max_triples",
                        {{"type", "integer"},
                         {"minimum", 0},
                         {"maximum", 5000},
                         {"description", "At most this many triples (default 500)."}}}},
                      {"trace"});
    json output = output_schema({{"trace", {{"type", "string"}}},
                                 {"summary", {{"type", "object"}}},
                                 {"steps", kObjects},
                                 {"subtraces", kObjects},
                                 {"triples", kObjects},
                                 {"triples_total", {{"type", "integer"}}},
                                 {"truncated", {{"type", "boolean"}}},
                                 {"text", {{"type", "string"}}}},
                                {"trace", "steps", "triples", "text"});
    return {{"name", "explain_trace"},
            {"title", "Explain a trace"},
            {"description",
             "How an answer was made: the run's steps in order (routing, grounding, exploration, "
             "focus, synthesis, agent iterations, escalations, sub-runs) with their recorded "
             "values, and the PROV-O triples behind them."},
            {"inputSchema", std::move(input)},
            {"outputSchema", std::move(output)},
            {"annotations", read_only()}};
}

json list_traces_tool() {
    json input = object_schema(
        {{"kind",
          string_arg("The service that ran: query, graph-rag, document-rag, agent, echo.", 64)},
         {"status", {{"type", "string"}, {"enum", {"running", "complete", "error", "incomplete"}}}},
         {"since", string_arg("Started at or after (xsd:dateTime, UTC).", 64)},
         {"until", string_arg("Started before (xsd:dateTime, UTC).", 64)},
         {"search", string_arg("Text in the question.", 1024)},
         {"parent", string_arg("Only the sub-runs of this trace.", 1024)},
         {"all", {{"type", "boolean"}, {"description", "Include sub-runs as rows of their own."}}},
         {"evaluated",
          {{"type", "boolean"},
           {"description",
            "Only the runs with an evaluation (a question set's score, `glassbox eval`)."}}},
         {"uses_source",
          string_arg("Only the runs that used this source document (its URI).", 1024)},
         {"uses_document",
          string_arg("Only the runs that used this document or chunk (its URI).", 1024)},
         {"uses_fact",
          string_arg("Only the runs that used this fact: 'S P O' (N-Triples terms, or IRIs and "
                     "a plain literal).",
                     1024)},
         {"entity", string_arg("Only the runs whose used facts or seeds name this IRI.", 1024)},
         {"model", string_arg("Only the runs a step of which used this model.", 256)},
         {"text",
          string_arg("Only the runs whose question or answer holds every one of these words.",
                     1024)},
         {"affected",
          {{"type", "boolean"},
           {"description",
            "Only the runs a knowledge change affected (it removed a fact or source they "
            "used)."}}},
         {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 200}}},
         {"after", string_arg("The `next` cursor of a previous page.", 1024)}},
        json::array());
    json output = output_schema({{"sessions", kObjects},
                                 {"total", {{"type", "integer"}}},
                                 {"next", {{"type", {"string", "null"}}}}},
                                {"sessions"});
    return {{"name", "list_traces"},
            {"title", "List traces"},
            {"description",
             "The stored runs, newest first: question, kind, status, start, duration, "
             "sub-run count and evaluations; filters and a cursor as `glassbox traces list`."},
            {"inputSchema", std::move(input)},
            {"outputSchema", std::move(output)},
            {"annotations", read_only()}};
}

// An evaluation run's figures (docs/evaluation.md): the summary's counts and shares, without
// its reliability bins (the chart's data).
const json kMetrics = {
    {"type", "object"},
    {"description",
     "questions, errors, abstained, hits1 (Hits@1), exact (EM), f1, ece (calibration error; null "
     "without confidences), accuracy_at_coverage ([{coverage, kept, accuracy}] at 100/80/50 %), "
     "list_questions and complete when the set has list questions. Shares are from 0 to 1."}};

// Of the evaluation-run fields every run has, as GET /api/v1/evals names them.
json eval_run_properties() {
    const json text = {{"type", "string"}};
    const json nullable_text = {{"type", {"string", "null"}}};
    return {{"name",
             {{"type", "string"},
              {"description", "The run's name (its report folder's): show_evaluation reads it."}}},
            {"set", text},
            {"engine", text},
            {"collection", {{"type", "string"}, {"description", "\"\" for the default."}}},
            {"started", nullable_text},
            {"finished", nullable_text},
            {"recorded", nullable_text},
            {"metrics", kMetrics}};
}

json list_evaluations_tool() {
    json input =
        object_schema({{"limit",
                        {{"type", "integer"},
                         {"minimum", 1},
                         {"maximum", kMaxEvalListLimit},
                         {"description", "At most this many runs (default 20)."}}},
                       {"offset",
                        {{"type", "integer"},
                         {"minimum", 0},
                         {"maximum", kMaxEvalOffset},
                         {"description", "Skip this many of the newest runs (default 0)."}}}},
                      json::array());
    json run = {{"type", "object"},
                {"properties", eval_run_properties()},
                {"required", {"name", "metrics"}}};
    json output = output_schema(
        {{"runs", {{"type", "array"}, {"items", std::move(run)}}},
         {"total", {{"type", "integer"}, {"description", "How many runs the store keeps."}}},
         {"offset", {{"type", "integer"}}},
         {"next_offset",
          {{"type", {"integer", "null"}},
           {"description", "The offset of the next page; null on the last."}}}},
        {"runs", "total", "offset", "next_offset"});
    return {{"name", "list_evaluations"},
            {"title", "List evaluation runs"},
            {"description",
             "The question-set evaluations `glassbox eval` recorded, newest first: each run's set, "
             "engine, collection, times and figures (Hits@1, exact match, F1, calibration error, "
             "accuracy at 100/80/50 % coverage)."},
            {"inputSchema", std::move(input)},
            {"outputSchema", std::move(output)},
            {"annotations", read_only()}};
}

json show_evaluation_tool() {
    json input = object_schema(
        {{"name", string_arg("The run's name, as list_evaluations gives it.", 256)},
         {"rows_offset",
          {{"type", "integer"},
           {"minimum", 0},
           {"maximum", kMaxEvalRowsOffset},
           {"description", "The first per-question row to return (default 0)."}}},
         {"rows_limit",
          {{"type", "integer"},
           {"minimum", 0},
           {"maximum", kMaxEvalRowsLimit},
           {"description",
            "At most this many per-question rows (default 20; 0 for the figures alone)."}}}},
        {"name"});
    json properties = eval_run_properties();
    properties["set_path"] = {{"type", "string"}};
    properties["summary"] = {
        {"type", "object"},
        {"description", "The whole summary.json, the reliability bins included."}};
    properties["rows"] = {
        {"type", "array"},
        {"items", {{"type", "object"}}},
        {"description",
         "A page of per-question rows: id, question, verdict (hit, miss, abstain, error), "
         "correct, hit, exact, f1, confidence, abstained, named_share, error, seconds, trace."}};
    properties["rows_total"] = {{"type", "integer"}};
    properties["rows_offset"] = {{"type", "integer"}};
    properties["next_rows_offset"] = {
        {"type", {"integer", "null"}},
        {"description", "The rows_offset of the next page of rows; null on the last."}};
    json output = output_schema(
        std::move(properties),
        {"name", "metrics", "summary", "rows", "rows_total", "rows_offset", "next_rows_offset"});
    return {{"name", "show_evaluation"},
            {"title", "Show an evaluation run"},
            {"description",
             "One recorded evaluation run: its figures (Hits@1, exact match, F1, calibration "
             "error, accuracy at coverage), its whole summary, and a page of its per-question rows "
             "(each with its verdict, scores, confidence and the trace of its run, which "
             "explain_trace reads)."},
            {"inputSchema", std::move(input)},
            {"outputSchema", std::move(output)},
            {"annotations", read_only()}};
}

// `obj[key]` when it has the wanted JSON type, else `fallback` (the bus may leave fields out).
json pick(const json& obj, const char* key, json::value_t type, json fallback) {
    auto it = obj.find(key);
    if (it == obj.end() || it->type() != type) return fallback;
    return *it;
}

// The answer of POST /api/v1/query (docs/http.md §3) but for its request id, which belongs to
// an HTTP request: the members the output schema requires are there whatever the backend said.
json shape_answer(const json& r) {
    json out = r.is_object() ? r : json::object();
    out.erase("request_id");
    out["trace_id"] = pick(r, "trace_id", json::value_t::string, "");
    out["answer"] = pick(r, "answer", json::value_t::string, "");
    if (!out.contains("short_answer") ||
        !(out["short_answer"].is_string() || out["short_answer"].is_null()))
        out["short_answer"] = nullptr;
    out["citations"] = pick(r, "citations", json::value_t::array, json::array());
    out["sources"] = pick(r, "sources", json::value_t::array, json::array());
    return out;
}

json shape_search(const json& r) {
    return {{"chunks", pick(r, "chunks", json::value_t::array, json::array())},
            {"edges", pick(r, "edges", json::value_t::array, json::array())}};
}

json shape_list(json r) {
    if (!r.is_object()) r = json::object();
    if (!r.contains("sessions") || !r["sessions"].is_array()) r["sessions"] = json::array();
    if (r.contains("total") && !r["total"].is_number_integer()) r.erase("total");
    if (r.contains("next") && !(r["next"].is_string() || r["next"].is_null())) r.erase("next");
    return r;
}

// The figures of a run's summary: its members but the reliability bins.
json metrics_of(const json& summary) {
    json out = json::object();
    if (!summary.is_object()) return out;
    for (const auto& [key, value] : summary.items())
        if (key != "bins") out[key] = value;
    return out;
}

// An evaluation run as both tools give it: its recorded fields (the rows and summary left to
// the caller) and `metrics`.
json shape_eval_run(const json& run) {
    json out = json::object();
    for (const char* key :
         {"name", "set", "engine", "collection", "started", "finished", "recorded", "set_path"}) {
        if (run.contains(key) && (run[key].is_string() || run[key].is_null())) out[key] = run[key];
    }
    if (!out.contains("name")) out["name"] = "";
    out["metrics"] = metrics_of(run.is_object() ? run.value("summary", json::object()) : json());
    return out;
}

json shape_eval_list(const json& r, std::int64_t offset) {
    json runs = json::array();
    for (const auto& run : pick(r, "runs", json::value_t::array, json::array())) {
        if (!run.is_object()) continue;
        json shaped = shape_eval_run(run);
        shaped.erase("set_path");  // the evaluating host's file: show_evaluation has it
        runs.push_back(std::move(shaped));
    }
    const auto found = r.is_object() ? r.find("total") : r.end();
    const std::int64_t total = r.is_object() && found != r.end() && found->is_number_integer()
                                   ? found->get<std::int64_t>()
                                   : offset + static_cast<std::int64_t>(runs.size());
    const std::int64_t next = offset + static_cast<std::int64_t>(runs.size());
    const bool more = !runs.empty() && next < total;
    return {{"runs", std::move(runs)},
            {"total", total},
            {"offset", offset},
            {"next_offset", more ? json(next) : json(nullptr)}};
}

// One run with a page of its rows: `rows_limit` rows from `rows_offset`.
json shape_eval_show(const json& r, std::int64_t rows_offset, std::int64_t rows_limit) {
    const json run =
        r.is_object() && r.contains("run") && r["run"].is_object() ? r["run"] : json::object();
    json out = shape_eval_run(run);
    out["summary"] = pick(run, "summary", json::value_t::object, json::object());
    const json rows = pick(run, "rows", json::value_t::array, json::array());
    const auto total = static_cast<std::int64_t>(rows.size());
    const std::int64_t from = std::min(rows_offset, total);
    const std::int64_t to = std::min(total, from + rows_limit);
    json page = json::array();
    for (std::int64_t i = from; i < to; ++i) page.push_back(rows[static_cast<std::size_t>(i)]);
    out["rows"] = std::move(page);
    out["rows_total"] = total;
    out["rows_offset"] = from;
    out["next_rows_offset"] = to < total && rows_limit > 0 ? json(to) : json(nullptr);
    return out;
}

json text_block(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

json error_result(const base::Error& error) {
    return {{"content", json::array({text_block(error.describe())})}, {"isError", true}};
}

}  // namespace

ToolBox::ToolBox(Backend& backend) : backend_(backend) {
    list_ = {{"tools",
              json::array({resolve_intent_tool(), search_graph_tool(), explain_trace_tool(),
                           list_traces_tool(), list_evaluations_tool(), show_evaluation_tool()})}};
}

base::Result<json> ToolBox::run(const std::string& name, const json& args, json& content,
                                RunControl& control) {
    if (name == "resolve_intent") {
        auto r = backend_.resolve_intent(args, control);
        if (!r) return std::move(r).error();
        return shape_answer(*r);
    }
    if (name == "search_graph") {
        auto r = backend_.search_graph(args);
        if (!r) return std::move(r).error();
        return shape_search(*r);
    }
    if (name == "list_traces") {
        auto r = backend_.trace_list(args);
        if (!r) return std::move(r).error();
        return shape_list(std::move(*r));
    }
    if (name == "list_evaluations") {
        const std::int64_t offset = args.value("offset", std::int64_t{0});
        auto r = backend_.eval_list(args.value("limit", kDefaultEvalListLimit), offset);
        if (!r) return std::move(r).error();
        return shape_eval_list(*r, offset);
    }
    if (name == "show_evaluation") {
        auto r = backend_.eval_show(args.at("name").get<std::string>());
        if (!r) return std::move(r).error();
        return shape_eval_show(*r, args.value("rows_offset", std::int64_t{0}),
                               args.value("rows_limit", kDefaultEvalRowsLimit));
    }
    // explain_trace
    auto r = backend_.trace_show(args.at("trace").get<std::string>());
    if (!r) return std::move(r).error();
    TraceViewLimits limits;
    limits.max_triples = args.value("include_triples", true)
                             ? static_cast<std::size_t>(args.value("max_triples", 500))
                             : 0;
    json view = trace_view(*r, limits);
    content.push_back(text_block(view["text"].get<std::string>()));
    return view;
}

std::variant<json, RpcError> ToolBox::call(const json& params, RunControl& control) {
    auto name_it = params.find("name");
    if (name_it == params.end() || !name_it->is_string()) {
        return RpcError{kInvalidParams, "tools/call needs a tool name", nullptr};
    }
    const std::string name = name_it->get<std::string>();
    const json* tool = nullptr;
    for (const auto& t : list_["tools"]) {
        if (t["name"] == name) tool = &t;
    }
    if (tool == nullptr) {
        return RpcError{kInvalidParams, "unknown tool: " + name, {{"tool", name}}};
    }
    json args = params.contains("arguments") ? params["arguments"] : json::object();
    // MCP 2025-11-25: arguments that break the input schema are a tool execution error, so
    // the model sees what was wrong and can try again.
    if (name == "resolve_intent") {
        if (auto why = take_alias(args, "question", "query")) {
            return error_result(base::make_error(base::ErrorType::kInvalidRequest, *why));
        }
    }
    if (auto why = check_arguments((*tool)["inputSchema"], args)) {
        return error_result(base::make_error(base::ErrorType::kInvalidRequest, *why));
    }
    json content = json::array();
    auto structured = run(name, args, content, control);
    if (!structured) return error_result(structured.error());
    content.push_back(text_block(structured->dump()));
    return json{{"content", std::move(content)},
                {"structuredContent", std::move(*structured)},
                {"isError", false}};
}

}  // namespace glassbox::gateway::mcp
