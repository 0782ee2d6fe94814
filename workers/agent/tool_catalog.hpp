// The agent's tools: what each is called, what it does, its arguments (a JSON Schema) and the
// service behind it; loaded from a JSON tool file (docs/agent.md) or the built-in default.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"

namespace glassbox::agent {

// What runs when the model names a tool.
enum class ToolKind {
    kGraphRag,     // a graph-rag sub-request (a sub-trace of the calling Analysis)
    kDocumentRag,  // a document-rag sub-request (a sub-trace)
    kTriples,      // store pattern query around one entity, resolved from a name or an IRI
    kCompletion,   // one llm completion of a free prompt
    kGraphQuery,   // an aggregate/filter query over the graph (the store's `aggregate` op)
};
std::string_view to_string(ToolKind kind) noexcept;  // "graph-rag", "document-rag", ...

struct Tool {
    std::string name;
    ToolKind kind = ToolKind::kGraphRag;
    std::string description;
    nlohmann::json arguments = nlohmann::json::object();  // JSON Schema of the args object
};

// The tool file's text: {"tools": [{"name", "kind", "description", "arguments"}]}.
// InvalidRequest naming the tool and field for anything malformed (an unknown kind, a name
// used twice, a name outside [a-z0-9_-]{1,64}, arguments that are not a JSON Schema object).
base::Result<std::vector<Tool>> parse_tools(std::string_view text);
// The built-in tool file (the five tools of docs/agent.md).
const std::vector<Tool>& default_tools();
std::string_view default_tools_text() noexcept;
// Reads and parses a tool file; InvalidRequest naming the path when it cannot be read.
base::Result<std::vector<Tool>> load_tools(const std::string& path);

// `tools` narrowed to `names` (in the order of `tools`); empty `names`: all of them.
// InvalidRequest naming an unknown tool.
base::Result<std::vector<Tool>> select_tools(const std::vector<Tool>& tools,
                                             const std::vector<std::string>& names);

// Checks `args` against the tool's schema: an object, every "required" property present and of
// the declared simple type (string, integer, number, boolean). The problem as text, or nullopt.
std::optional<std::string> check_arguments(const Tool& tool, const nlohmann::json& args);

// The tools as the model sees them: [{"name", "description", "arguments"}].
nlohmann::json tools_for_model(const std::vector<Tool>& tools);

}  // namespace glassbox::agent
