// Tool files: parsing, the built-in default, selection and argument checks.
#include "workers/agent/tool_catalog.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "base/spelling.hpp"
#include "base/utf8.hpp"
#include "schema/messages.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::agent {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {

// The built-in tool file; docs/agent.md shows the same.
constexpr std::string_view kDefaultTools = R"json({"tools": [
  {"name": "knowledge-query", "kind": "graph-rag",
   "description": "Ask the knowledge graph one question (graph RAG); returns a short answer and the facts it rests on. Best for one relation of a named entity.",
   "arguments": {"type": "object", "required": ["question"],
                 "properties": {"question": {"type": "string", "description": "one self-contained question"}}}},
  {"name": "document-query", "kind": "document-rag",
   "description": "Ask the documents one question (document RAG); returns a short answer, the passages it rests on and their documents.",
   "arguments": {"type": "object", "required": ["question"],
                 "properties": {"question": {"type": "string", "description": "one self-contained question"}}}},
  {"name": "triples-query", "kind": "triples",
   "description": "Exact lookup: the facts (subject, predicate, object) around one entity of the knowledge graph, given by name or IRI; optionally only those of one predicate.",
   "arguments": {"type": "object", "required": ["subject"],
                 "properties": {"subject": {"type": "string", "description": "an entity name or IRI"},
                                "predicate": {"type": "string", "description": "only facts whose predicate names this"}}}},
  {"name": "graph-query", "kind": "graph-query",
   "description": "Counts, filters on values, superlatives and comparisons over the knowledge graph: 1 to 3 triple patterns joined on shared variables, then filters, grouping, one aggregate, order and limit (a SPARQL SELECT in JSON). A slot is \"?var\", a name (an entity, or a class after the predicate \"type\"), relation words for a predicate (\"built by\"), \"<IRI>\", or {\"var\", \"values\": [names]}. Rows come with the facts behind them.",
   "arguments": {"type": "object", "required": ["match"],
                 "properties": {
                   "match": {"type": "array", "description": "[{\"s\", \"p\", \"o\"}], 1 to 3 patterns"},
                   "filter": {"type": "array", "description": "[{\"var\", \"cmp\": \"<|<=|>|>=|=|!=\", \"value\"}]; numbers, years and dates compare as values"},
                   "group_by": {"type": "array", "description": "variables"},
                   "aggregate": {"type": "object", "description": "{\"fn\": \"count|min|max|sum|avg\", \"var\"}"},
                   "order_by": {"type": "object", "description": "{\"var\" (or \"value\"), \"dir\": \"asc|desc\"}"},
                   "limit": {"type": "integer"},
                   "widen": {"type": "boolean", "description": "map relation words to every predicate they match, not the best only"}}}},
  {"name": "text-completion", "kind": "completion",
   "description": "Ask the language model a free question (no retrieval): for rephrasing, comparing or computing from what the observations already say.",
   "arguments": {"type": "object", "required": ["prompt"],
                 "properties": {"prompt": {"type": "string"}}}}
]})json";

std::optional<ToolKind> kind_from_string(std::string_view text) {
    for (auto kind : {ToolKind::kGraphRag, ToolKind::kDocumentRag, ToolKind::kTriples,
                      ToolKind::kCompletion, ToolKind::kGraphQuery}) {
        if (to_string(kind) == text) return kind;
    }
    return std::nullopt;
}

bool valid_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    });
}

bool has_type(const json& value, std::string_view type) {
    if (type == "string") return value.is_string();
    if (type == "integer") return value.is_number_integer();
    if (type == "number") return value.is_number();
    if (type == "boolean") return value.is_boolean();
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    return true;  // a type this light check does not know is left to the tool
}

}  // namespace

std::string_view to_string(ToolKind kind) noexcept {
    switch (kind) {
        case ToolKind::kGraphRag:
            return "graph-rag";
        case ToolKind::kDocumentRag:
            return "document-rag";
        case ToolKind::kTriples:
            return "triples";
        case ToolKind::kCompletion:
            return "completion";
        case ToolKind::kGraphQuery:
            return "graph-query";
    }
    return "graph-rag";
}

base::Result<std::vector<Tool>> parse_tools(std::string_view text) {
    auto parsed = schema::parse_untrusted_json(text);
    if (!parsed)
        return make_error(ErrorType::kInvalidRequest, "tool file: " + parsed.error().message);
    if (!parsed->is_object() || !parsed->contains("tools") || !(*parsed)["tools"].is_array())
        return make_error(ErrorType::kInvalidRequest,
                          "tool file: expected an object with a \"tools\" array");
    std::vector<Tool> tools;
    std::set<std::string> names;
    std::size_t i = 0;
    for (const json& entry : (*parsed)["tools"]) {
        const std::string where = "tool file: tools[" + std::to_string(i++) + "]";
        if (!entry.is_object())
            return make_error(ErrorType::kInvalidRequest, where + ": expected an object");
        Tool tool;
        const auto name = entry.find("name");
        if (name == entry.end() || !name->is_string() || !valid_name(name->get<std::string>()))
            return make_error(ErrorType::kInvalidRequest,
                              where + ".name: expected 1 to 64 of a-z 0-9 - _");
        tool.name = name->get<std::string>();
        if (!names.insert(tool.name).second)
            return make_error(ErrorType::kInvalidRequest,
                              where + ": tool \"" + tool.name + "\" named twice");
        const auto kind = entry.find("kind");
        const auto known = kind != entry.end() && kind->is_string()
                               ? kind_from_string(kind->get<std::string>())
                               : std::nullopt;
        if (!known)
            return make_error(
                ErrorType::kInvalidRequest,
                where +
                    ".kind: expected graph-rag, document-rag, triples, completion or graph-query");
        tool.kind = *known;
        const auto description = entry.find("description");
        if (description == entry.end() || !description->is_string() ||
            description->get<std::string>().empty())
            return make_error(ErrorType::kInvalidRequest,
                              where + ".description: expected a non-empty string");
        tool.description = description->get<std::string>();
        const auto arguments = entry.find("arguments");
        if (arguments == entry.end() || !arguments->is_object())
            return make_error(ErrorType::kInvalidRequest,
                              where + ".arguments: expected a JSON Schema object");
        tool.arguments = *arguments;
        tools.push_back(std::move(tool));
    }
    if (tools.empty()) return make_error(ErrorType::kInvalidRequest, "tool file: no tools");
    return tools;
}

std::string_view default_tools_text() noexcept { return kDefaultTools; }

const std::vector<Tool>& default_tools() {
    // The built-in file is part of the binary: a parse failure is a programmer error.
    static const std::vector<Tool> tools = [] {
        auto parsed = parse_tools(kDefaultTools);
        if (!parsed) throw std::logic_error("built-in tool file: " + parsed.error().message);
        return std::move(*parsed);
    }();
    return tools;
}

base::Result<std::vector<Tool>> load_tools(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return make_error(ErrorType::kInvalidRequest, "tool file " + path + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    auto tools = parse_tools(text.str());
    if (!tools) return make_error(ErrorType::kInvalidRequest, path + ": " + tools.error().message);
    return tools;
}

base::Result<std::vector<Tool>> select_tools(const std::vector<Tool>& tools,
                                             const std::vector<std::string>& names) {
    if (names.empty()) return tools;
    for (const auto& name : names) {
        if (std::none_of(tools.begin(), tools.end(),
                         [&](const Tool& t) { return t.name == name; })) {
            std::vector<std::string> offered;
            offered.reserve(tools.size());
            for (const auto& t : tools) offered.push_back(t.name);
            std::string listed;
            for (const auto& n : offered) listed += (listed.empty() ? "" : ", ") + n;
            return make_error(ErrorType::kInvalidRequest,
                              "tools: unknown tool \"" + base::printable_utf8(name) + "\"" +
                                  base::did_you_mean(name, offered) + "; the tools are " + listed);
        }
    }
    std::vector<Tool> selected;
    for (const auto& tool : tools) {
        if (std::find(names.begin(), names.end(), tool.name) != names.end())
            selected.push_back(tool);
    }
    return selected;
}

std::optional<std::string> check_arguments(const Tool& tool, const json& args) {
    if (!args.is_object()) return "the arguments of " + tool.name + " must be a JSON object";
    const json properties = tool.arguments.value("properties", json::object());
    const json required = tool.arguments.value("required", json::array());
    if (required.is_array()) {
        for (const json& r : required) {
            if (r.is_string() && !args.contains(r.get<std::string>()))
                return tool.name + " needs the argument \"" + r.get<std::string>() + "\"";
        }
    }
    if (!properties.is_object()) return std::nullopt;
    for (const auto& [key, value] : args.items()) {
        const auto declared = properties.find(key);
        if (declared == properties.end() || !declared->is_object()) continue;
        const auto type = declared->find("type");
        if (type != declared->end() && type->is_string() &&
            !has_type(value, type->get<std::string>()))
            return "argument \"" + key + "\" of " + tool.name + " must be of type " +
                   type->get<std::string>();
    }
    return std::nullopt;
}

json tools_for_model(const std::vector<Tool>& tools) {
    json list = json::array();
    for (const auto& t : tools)
        list.push_back(
            {{"name", t.name}, {"description", t.description}, {"arguments", t.arguments}});
    return list;
}

}  // namespace glassbox::agent
