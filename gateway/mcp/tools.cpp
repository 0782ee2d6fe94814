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
    return {{"type", "string"}, {"minLength", 1}, {"maxLength", max_length},
            {"description", std::move(description)}};
}

json object_schema(json properties, json required) {
    return {{"type", "object"}, {"properties", std::move(properties)},
            {"required", std::move(required)}, {"additionalProperties", false}};
}

// Output schemas stay open (additionalProperties allowed): a field the workers add later must
// not make every client's validation of older answers fail.
json output_schema(json properties, json required) {
    return {{"type", "object"}, {"properties", std::move(properties)},
            {"required", std::move(required)}};
}

const json kObjects = {{"type", "array"}, {"items", {{"type", "object"}}}};

json read_only() {
    return {{"readOnlyHint", true}, {"destructiveHint", false}, {"idempotentHint", true},
            {"openWorldHint", false}};
}

json resolve_intent_tool() {
    json input = object_schema(
        {{"query", string_arg("The question, in natural language.", 16384)},
         {"mode", {{"type", "string"},
                   {"enum", {"auto", "graph-rag", "document-rag", "agent"}},
                   {"description", "The engine; auto lets the query router decide (the default)."}}},
         {"collection", string_arg("The document collection to search (default: all).", 256)},
         {"session_id", string_arg("A conversation id: the question is a turn of it.", 256)}},
        {"query"});
    json output = output_schema(
        {{"response", {{"type", "string"}, {"description", "The whole answer, with [n] markers."}}},
         {"answer", {{"type", "string"}, {"description", "The short answer alone; empty when the evidence does not decide."}}},
         {"trace_id", {{"type", "string"}, {"description", "The run's trace (session URI): explain_trace reads it."}}},
         {"engine", {{"type", "string"}}},
         {"citations", kObjects},
         {"sources", {{"type", "array"}}},
         {"route", {{"type", "object"}}},
         {"provenance", {{"type", "object"}}},
         {"usage", {{"type", "object"}}}},
        {"response", "answer", "trace_id", "citations", "sources"});
    return {{"name", "resolve_intent"},
            {"title", "Ask glassbox"},
            {"description",
             "Answers a question from the knowledge graph and documents through glassbox's query "
             "router, with numbered citations, their sources and data tiers, and the trace id "
             "of the run that explains every step."},
            {"inputSchema", std::move(input)},
            {"outputSchema", std::move(output)},
            {"annotations", {{"readOnlyHint", true}, {"destructiveHint", false},
                             {"idempotentHint", false}, {"openWorldHint", false}}}};
}

json search_graph_tool() {
    json input = object_schema(
        {{"query", string_arg("What to look for.", 4096)},
         {"kind", {{"type", "string"}, {"enum", {"chunks", "edges", "both"}},
                   {"description", "Document chunks, graph edges or both (the default)."}}},
         {"collection", string_arg("The document collection (default: all).", 256)},
         {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 50},
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
    json input = object_schema(
        {{"trace", string_arg("A trace's session URI (urn:glassbox:<uuid>:question) or a unique prefix of its UUID.", 1024)},
         {"include_triples", {{"type", "boolean"}, {"description", "List the trace's PROV-O triples (default true)."}}},
         {"max_triples", {{"type", "integer"}, {"minimum", 0}, {"maximum", 5000},
                          {"description", "At most this many triples (default 500)."}}}},
        {"trace"});
    json output = output_schema(
        {{"trace", {{"type", "string"}}},
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
        {{"kind", string_arg("The service that ran: query, graph-rag, document-rag, agent, echo.", 64)},
         {"status", {{"type", "string"}, {"enum", {"running", "complete", "error", "incomplete"}}}},
         {"since", string_arg("Started at or after (xsd:dateTime, UTC).", 64)},
         {"until", string_arg("Started before (xsd:dateTime, UTC).", 64)},
         {"search", string_arg("Text in the question.", 1024)},
         {"parent", string_arg("Only the sub-runs of this trace.", 1024)},
         {"all", {{"type", "boolean"}, {"description", "Include sub-runs as rows of their own."}}},
         {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 200}}},
         {"after", string_arg("The `next` cursor of a previous page.", 1024)}},
        json::array());
    json output = output_schema(
        {{"sessions", kObjects},
         {"total", {{"type", "integer"}}},
         {"next", {{"type", {"string", "null"}}}}},
        {"sessions"});
    return {{"name", "list_traces"},
            {"title", "List traces"},
            {"description",
             "The stored runs, newest first: question, kind, status, start, duration and "
             "sub-run count; filters and a cursor as `glassbox traces list`."},
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

json shape_answer(const json& r) {
    json out = {{"response", pick(r, "response", json::value_t::string, "")},
                {"answer", pick(r, "answer", json::value_t::string, "")},
                {"trace_id", pick(r, "trace_id", json::value_t::string,
                                  pick(r, "session", json::value_t::string, ""))},
                {"citations", pick(r, "citations", json::value_t::array, json::array())},
                {"sources", pick(r, "sources", json::value_t::array, json::array())}};
    for (const char* key : {"route", "provenance", "usage"}) {
        if (auto v = pick(r, key, json::value_t::object, nullptr); !v.is_null()) out[key] = v;
    }
    if (auto v = pick(r, "engine", json::value_t::string, nullptr); !v.is_null()) out["engine"] = v;
    if (!out.contains("usage") && r.is_object() && r.contains("in_token")) {
        out["usage"] = {{"in_token", r["in_token"]}, {"out_token", r.value("out_token", json(0))}};
    }
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
