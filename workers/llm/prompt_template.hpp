// Prompt templates: files with a small header (output kind, output schema, variables) and a
// prompt with {{variable}} placeholders; the built-in set and a user folder that overrides it.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace glassbox::llm {

enum class OutputKind { kText, kJson };
std::string_view to_string(OutputKind kind) noexcept;  // "text", "json"

// How a text template's reply carries its short answer (docs/llm.md, "The answer contract").
enum class AnswerForm {
    kNone,       // free text
    kFirstLine,  // "Answer: <short answer> [id]..." on the first line, then the cited sentences
};

// A variable the template needs. Every value arrives as a string; a JSON variable's string
// must parse as JSON and meet `schema`.
struct TemplateVariable {
    std::string name;
    bool json = false;
    nlohmann::json schema = nlohmann::json::object();  // JSON variables only
};

// A prompt with its variables checked and filled in.
struct RenderedPrompt {
    std::string text;
    std::map<std::string, nlohmann::json, std::less<>> json_variables;  // parsed JSON variables
};

// File format (UTF-8):
//   # comment lines
//   output: text | json
//   schema: <JSON Schema of the output>          (json output only; required there)
//   answer: first-line                           (text output only: the answer contract)
//   cite: NAME                                   (the JSON variable whose items' "id"s are
//                                                 the only markers the reply may use)
//   variable NAME: text
//   variable NAME: json <JSON Schema of the value>
//   ---
//   the prompt, with {{NAME}} placeholders (spaces inside the braces allowed)
// A header line starting with a space or tab continues the previous key's value. Placeholders
// not declared as variables are text variables. Every variable is required.
struct PromptTemplate {
    std::string name;
    std::string origin;  // "built-in" or the file it was read from
    OutputKind output = OutputKind::kText;
    nlohmann::json schema;  // of the output, when json
    AnswerForm answer = AnswerForm::kNone;
    std::string cite;  // a declared JSON variable, or empty (markers unchecked)
    std::vector<TemplateVariable> variables;
    std::string prompt;

    // kInvalidRequest naming `origin` and the line for a malformed template.
    static base::Result<PromptTemplate> parse(std::string name, std::string_view text,
                                              std::string origin);

    // Checks every variable is given (and well formed) and fills the placeholders in.
    // kInvalidRequest naming the variable otherwise. Variables the template does not use are
    // ignored.
    base::Result<RenderedPrompt> render(const std::map<std::string, std::string>& variables) const;

    const TemplateVariable* variable(std::string_view name) const;
};

// The built-in templates (generated from workers/llm/templates/*.txt at build time).
struct BuiltinTemplate {
    std::string_view name;
    std::string_view text;
};
std::span<const BuiltinTemplate> builtin_templates();

// The templates a worker serves: the built-in ones, each replaced by `<dir>/<name>.txt` when
// that file exists; other `*.txt` files in `dir` add templates. Loaded once, at start-up.
class TemplateSet {
public:
    // Built-in templates only.
    static base::Result<TemplateSet> builtin();
    // Built-in templates with `dir` on top (kNotFound when `dir` is not a folder;
    // kInvalidRequest for a malformed file, naming it).
    static base::Result<TemplateSet> load(const std::filesystem::path& dir);

    const PromptTemplate* find(std::string_view name) const;
    std::vector<std::string> names() const;

private:
    std::map<std::string, PromptTemplate, std::less<>> templates_;
};

// A template name is [a-z0-9_-]{1,64}: the file name without ".txt".
bool valid_template_name(std::string_view name) noexcept;

}  // namespace glassbox::llm
