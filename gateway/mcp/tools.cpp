// The four MCP tools: schemas in one place, each call shaped into structured content.
#include "gateway/mcp/tools.hpp"

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
            "predicate, stated, rival, stated_sources, rival_sources."}}},
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
         {"session_id", string_arg("A conversation id: the question is a turn of it.", 256)}},
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

json text_block(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }

json error_result(const base::Error& error) {
    return {{"content", json::array({text_block(error.describe())})}, {"isError", true}};
}

}  // namespace

ToolBox::ToolBox(Backend& backend) : backend_(backend) {
    list_ = {{"tools", json::array({resolve_intent_tool(), search_graph_tool(),
                                    explain_trace_tool(), list_traces_tool()})}};
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
