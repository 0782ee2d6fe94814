// Template parsing (header, then prompt), rendering with variable checks, and the template set.
#include "workers/llm/prompt_template.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

#include "schema/untrusted_json.hpp"
#include "workers/llm/json_schema.hpp"
#include "workers/llm/json_variable.hpp"

namespace glassbox::llm {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {

constexpr std::string_view kBuiltinOrigin = "built-in";

base::Error invalid_template(std::string message) {
    return make_error(ErrorType::kInvalidRequest, std::move(message));
}

std::string_view trim_line(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

// A placeholder at `pos` ("{{ name }}"): its name and length, or nullopt.
std::optional<std::pair<std::string_view, std::size_t>> placeholder_at(std::string_view text,
                                                                       std::size_t pos) {
    if (text.compare(pos, 2, "{{") != 0) return std::nullopt;
    std::size_t i = pos + 2;
    while (i < text.size() && text[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < text.size() && name_char(text[i])) ++i;
    const std::size_t end = i;
    while (i < text.size() && text[i] == ' ') ++i;
    if (end == start || text.compare(i, 2, "}}") != 0) return std::nullopt;
    return std::pair{text.substr(start, end - start), i + 2 - pos};
}

// One header entry: its key, value and the line it started on.
struct HeaderEntry {
    std::string key;
    std::string value;
    std::size_t line = 0;
};

}  // namespace

std::string_view to_string(OutputKind kind) noexcept {
    return kind == OutputKind::kJson ? "json" : "text";
}

bool valid_template_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > 64) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    });
}

namespace {

// A template's error: its origin, the line when known (0: none), why.
base::Error template_error(const std::string& origin, std::size_t line, const std::string& why) {
    return invalid_template("template " + origin +
                            (line ? std::string(":").append(std::to_string(line)) : "") + ": " +
                            why);
}

// The header's entries, the lines up to the first "---" ("key: value", indented continuation
// lines, blank and '#' lines skipped), and where the prompt starts after it.
base::Result<std::size_t> split_header(std::string_view text, const std::string& origin,
                                       std::vector<HeaderEntry>& entries) {
    std::size_t pos = 0;
    std::size_t line_number = 0;
    while (pos < text.size()) {
        const std::size_t eol = text.find('\n', pos);
        const std::string_view raw =
            text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
        pos = eol == std::string_view::npos ? text.size() : eol + 1;
        ++line_number;
        if (trim_line(raw) == "---") return pos;
        if (trim_line(raw).empty() || trim_line(raw).front() == '#') continue;
        if (raw.front() == ' ' || raw.front() == '\t') {
            if (entries.empty())
                return template_error(origin, line_number, "a continuation line before any key");
            entries.back().value += "\n";
            entries.back().value += trim_line(raw);
            continue;
        }
        const std::size_t colon = raw.find(':');
        if (colon == std::string_view::npos)
            return template_error(origin, line_number,
                                  "expected \"key: value\" or the \"---\" line");
        entries.push_back({std::string(trim_line(raw.substr(0, colon))),
                           std::string(trim_line(raw.substr(colon + 1))), line_number});
    }
    return template_error(origin, 0, "no \"---\" line between the header and the prompt");
}

// A "variable NAME: text | json [schema]" entry; `declared` holds the names seen before.
base::Result<TemplateVariable> read_variable_entry(const HeaderEntry& entry,
                                                   const std::string& origin,
                                                   std::set<std::string, std::less<>>& declared) {
    const auto fail = [&](const std::string& why) {
        return template_error(origin, entry.line, why);
    };
    TemplateVariable v;
    v.name = std::string(trim_line(std::string_view(entry.key).substr(9)));
    if (v.name.empty() || !std::all_of(v.name.begin(), v.name.end(), name_char))
        return fail("a variable name is letters, digits, '_' and '-'");
    if (!declared.insert(v.name).second) return fail("variable \"" + v.name + "\" declared twice");
    const std::string_view value = entry.value;
    if (value == "text") {
        v.json = false;
    } else if (value.starts_with("json")) {
        v.json = true;
        const std::string_view rest = trim_line(value.substr(4));
        if (!rest.empty()) {
            auto read = schema::parse_untrusted_json(rest);
            if (!read)
                return fail("the schema of variable \"" + v.name + "\": " + read.error().message);
            v.schema = std::move(read).value();
            if (auto why = check_schema(v.schema))
                return fail("variable \"" + v.name + "\" schema " + *why);
        }
    } else {
        return fail("variable \"" + v.name + "\" must be \"text\" or \"json [schema]\"");
    }
    return v;
}

// What the header entries said, for the checks across them (check_header).
struct HeaderSeen {
    bool output = false;
    bool schema = false;
    std::size_t answer_line = 0;
    std::size_t cite_line = 0;
};

// One header entry into the template.
base::Result<void> read_header_entry(PromptTemplate& t, const HeaderEntry& entry, HeaderSeen& seen,
                                     std::set<std::string, std::less<>>& declared) {
    const auto fail = [&](const std::string& why) {
        return template_error(t.origin, entry.line, why);
    };
    if (entry.key == "output") {
        if (entry.value == "text") {
            t.output = OutputKind::kText;
        } else if (entry.value == "json") {
            t.output = OutputKind::kJson;
        } else {
            return fail("output must be \"text\" or \"json\", not \"" + entry.value + "\"");
        }
        seen.output = true;
    } else if (entry.key == "schema") {
        auto read = schema::parse_untrusted_json(entry.value);
        if (!read) return fail("the schema: " + read.error().message);
        t.schema = std::move(read).value();
        if (auto why = check_schema(t.schema)) return fail("schema " + *why);
        seen.schema = true;
    } else if (entry.key == "answer") {
        if (entry.value != "first-line")
            return fail("answer must be \"first-line\", not \"" + entry.value + "\"");
        t.answer = AnswerForm::kFirstLine;
        seen.answer_line = entry.line;
    } else if (entry.key == "cite") {
        t.cite = entry.value;
        seen.cite_line = entry.line;
    } else if (entry.key.starts_with("variable ") || entry.key.starts_with("variable\t")) {
        auto v = read_variable_entry(entry, t.origin, declared);
        if (!v) return std::move(v).error();
        t.variables.push_back(std::move(v).value());
    } else {
        return fail("unknown header key \"" + entry.key +
                    "\" (known: output, schema, answer, cite, variable NAME)");
    }
    return {};
}

// The rules across the header's entries: an output kind; a schema for json output and none for
// text; "answer" for text only; "cite" names a json variable.
base::Result<void> check_header(const PromptTemplate& t, const HeaderSeen& seen) {
    const auto fail = [&](std::size_t line, const std::string& why) {
        return template_error(t.origin, line, why);
    };
    if (!seen.output) return fail(0, "no \"output:\" line (text or json)");
    if (t.output == OutputKind::kJson && !seen.schema)
        return fail(0, "a json template needs a \"schema:\" for its output");
    if (t.output == OutputKind::kText && seen.schema)
        return fail(0, "a text template has no output schema");
    if (t.output == OutputKind::kJson && seen.answer_line != 0)
        return fail(seen.answer_line, "\"answer\" is for text templates only");
    if (seen.cite_line != 0) {
        const TemplateVariable* cited = t.variable(t.cite);
        if (cited == nullptr || !cited->json)
            return fail(seen.cite_line,
                        "cite must name a variable declared as json, not \"" + t.cite + "\"");
    }
    return {};
}

// Placeholders the header did not declare are text variables.
void add_placeholder_variables(PromptTemplate& t, std::set<std::string, std::less<>>& declared) {
    for (std::size_t i = t.prompt.find("{{"); i != std::string::npos;
         i = t.prompt.find("{{", i + 1)) {
        if (auto p = placeholder_at(t.prompt, i); p && !declared.contains(p->first)) {
            declared.insert(std::string(p->first));
            t.variables.push_back({std::string(p->first), false, json::object()});
        }
    }
}

}  // namespace

base::Result<PromptTemplate> PromptTemplate::parse(std::string name, std::string_view text,
                                                   std::string origin) {
    PromptTemplate t;
    t.name = std::move(name);
    t.origin = std::move(origin);
    // A UTF-8 byte-order mark (some editors write one) is not part of the first line.
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
    std::vector<HeaderEntry> entries;
    auto prompt_start = split_header(text, t.origin, entries);
    if (!prompt_start) return std::move(prompt_start).error();
    t.prompt = std::string(text.substr(*prompt_start));
    HeaderSeen seen;
    std::set<std::string, std::less<>> declared;
    for (const auto& entry : entries) {
        if (auto read = read_header_entry(t, entry, seen, declared); !read)
            return std::move(read).error();
    }
    if (auto checked = check_header(t, seen); !checked) return std::move(checked).error();
    add_placeholder_variables(t, declared);
    return t;
}

const TemplateVariable* PromptTemplate::variable(std::string_view wanted) const {
    for (const auto& v : variables)
        if (v.name == wanted) return &v;
    return nullptr;
}

base::Result<RenderedPrompt> PromptTemplate::render(
    const std::map<std::string, std::string>& values) const {
    RenderedPrompt out;
    for (const auto& v : variables) {
        const auto it = values.find(v.name);
        if (it == values.end())
            return invalid_template("template " + name + " needs variable \"" + v.name + "\"");
        if (!v.json) continue;
        auto read = parse_json_variable(it->second);
        if (!read)
            return invalid_template("variable \"" + v.name + "\" of template " + name +
                                    " must be JSON text: " + read.error().message);
        json parsed = std::move(read).value();
        if (auto why = validate_json(parsed, v.schema)) {
            return invalid_template("variable \"" + v.name + "\" of template " + name +
                                    " is not of the expected shape: " + *why);
        }
        out.json_variables.emplace(v.name, std::move(parsed));
    }
    // The text between placeholders is copied a run at a time; each value's size is known here,
    // so the text grows once.
    std::size_t size = prompt.size();
    for (const auto& v : variables) size += values.at(v.name).size();
    out.text.reserve(size);
    const std::string_view text = prompt;
    std::size_t copied = 0;
    for (std::size_t i = text.find("{{"); i != std::string_view::npos; i = text.find("{{", i + 1)) {
        if (i < copied) continue;  // inside a placeholder already filled in
        if (auto p = placeholder_at(text, i)) {
            out.text.append(text.substr(copied, i - copied));
            out.text += values.at(std::string(p->first));
            copied = i + p->second;
        }
    }
    out.text.append(text.substr(copied));
    return out;
}

base::Result<TemplateSet> TemplateSet::builtin() {
    TemplateSet set;
    for (const auto& b : builtin_templates()) {
        auto t = PromptTemplate::parse(std::string(b.name), b.text,
                                       std::string(kBuiltinOrigin) + " " + std::string(b.name));
        if (!t) return std::move(t).error();
        std::string name = t->name;
        set.templates_.insert_or_assign(std::move(name), std::move(t).value());
    }
    return set;
}

base::Result<TemplateSet> TemplateSet::load(const std::filesystem::path& dir) {
    auto set = builtin();
    if (!set) return set;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        return make_error(ErrorType::kNotFound,
                          "templates folder " + dir.string() + " does not exist");
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        if (entry.path().extension() == ".txt" && entry.is_regular_file())
            files.push_back(entry.path());
    }
    if (ec)
        return make_error(ErrorType::kNotFound,
                          "cannot list templates folder " + dir.string() + ": " + ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& path : files) {
        const std::string name = path.stem().string();
        if (!valid_template_name(name)) {
            return invalid_template("template file " + path.string() +
                                    ": a template name is lower-case letters, digits, '_' and '-'");
        }
        std::ifstream in(path, std::ios::binary);
        if (!in) return invalid_template("cannot read template file " + path.string());
        const std::string text((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
        auto t = PromptTemplate::parse(name, text, path.string());
        if (!t) return std::move(t).error();
        set->templates_.insert_or_assign(name, std::move(t).value());
    }
    return set;
}

const PromptTemplate* TemplateSet::find(std::string_view name) const {
    const auto it = templates_.find(name);
    return it == templates_.end() ? nullptr : &it->second;
}

std::vector<std::string> TemplateSet::names() const {
    std::vector<std::string> out;
    for (const auto& [name, t] : templates_) out.push_back(name);
    return out;
}

}  // namespace glassbox::llm
