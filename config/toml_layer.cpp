// Reading a settings file with toml++ and checking each entry against the registry.
#include "config/toml_layer.hpp"

#include <fstream>
#include <sstream>
#include <system_error>

#include <toml++/toml.h>

#include "base/credentials.hpp"

namespace glassbox::config {
namespace {

using base::ErrorType;
using base::make_error;

std::string at_line(const std::string& path, const toml::source_region& where) {
    return path + ":" + std::to_string(where.begin.line);
}

// The node as a value of `setting`'s kind where TOML's type allows it; anything else is kept
// as a description of what it is, for the error.
struct Reading {
    std::optional<Value> value;
    std::string what;  // for a node no Value can hold: "a table", "an array", ...
};

Reading read_node(const toml::node& node) {
    if (const auto* v = node.as_string()) return {Value{v->get()}, {}};
    if (const auto* v = node.as_integer()) return {Value{v->get()}, {}};
    if (const auto* v = node.as_floating_point()) return {Value{v->get()}, {}};
    if (const auto* v = node.as_boolean()) return {Value{v->get()}, {}};
    if (node.is_table()) return {std::nullopt, "a table"};
    if (node.is_array()) return {std::nullopt, "an array"};
    return {std::nullopt, "a date or time"};
}

// A TOML array or table as one line of JSON (toml++'s JSON writer, its line breaks dropped: a
// newline in a string is written as \\n, so no line break is part of a value).
std::string structured_json(const toml::node& node) {
    std::ostringstream out;
    if (const auto* array = node.as_array()) {
        out << toml::json_formatter{*array};
    } else {
        out << toml::json_formatter{*node.as_table()};
    }
    std::string text;
    bool in_string = false;
    bool escaped = false;
    for (const char c : out.str()) {
        if (in_string) {
            text += c;
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') in_string = true;
        if (c == '\n' || c == ' ') continue;
        text += c;
    }
    return text;
}

class Walker {
public:
    Walker(const Registry& registry, const std::string& path) : registry_(registry), path_(path) {}

    base::Result<void> walk(const toml::table& table, const std::string& prefix) {
        for (auto&& [name, node] : table) {
            const std::string key =
                prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
            const auto& where = name.source().begin.line != 0 ? name.source() : node.source();
            if (const Setting* setting = registry_.find(key)) {
                if (auto entry = read_entry(*setting, node, where); !entry) return entry;
            } else if (registry_.is_table(key)) {
                const auto* inner = node.as_table();
                if (inner == nullptr) {
                    std::string message = key;
                    message.append(": expected a table of settings ([")
                        .append(key)
                        .append("]), got ")
                        .append(describe(node));
                    return error(where, message);
                }
                if (auto inner_walk = walk(*inner, key); !inner_walk) return inner_walk;
            } else {
                const bool table = node.is_table();
                std::string message = table ? "unknown table [" + key + "]" : "unknown key " + key;
                if (auto near = registry_.suggest(key, table)) {
                    message += table ? " (did you mean [" + *near + "]?)"
                                     : " (did you mean " + *near + "?)";
                }
                return error(where, message);
            }
        }
        return {};
    }

    Layer take() { return std::move(layer_); }

private:
    base::Result<void> read_entry(const Setting& setting, const toml::node& node,
                                  const toml::source_region& key_at) {
        const auto& where = node.source().begin.line != 0 ? node.source() : key_at;
        if (setting.structured && (node.is_array() || node.is_table())) {
            Value value{structured_json(node)};
            if (auto why = setting.problem(value)) return error(where, *why);
            layer_.set(setting.key, std::move(value), Origin{Source::kFile, at_line(path_, where)});
            return {};
        }
        auto reading = read_node(node);
        if (!reading.value) {
            return error(where, setting.key + ": expected " + setting.expectation() + ", got " +
                                    reading.what);
        }
        Value value = std::move(*reading.value);
        // A whole number is a fine value for a real-valued setting (`rate_limit = 50`).
        if (setting.kind == Kind::kNumber) {
            if (const auto* whole = std::get_if<std::int64_t>(&value))
                value = static_cast<double>(*whole);
        }
        if (auto why = setting.problem(value)) return error(where, *why);
        layer_.set(setting.key, std::move(value), Origin{Source::kFile, at_line(path_, where)});
        return {};
    }

    static std::string describe(const toml::node& node) {
        auto reading = read_node(node);
        if (!reading.value) return reading.what;
        if (const auto* text = std::get_if<std::string>(&*reading.value))
            return "\"" + *text + "\"";
        return to_text(*reading.value);
    }

    // The message with any password a quoted value holds masked.
    base::Error error(const toml::source_region& where, const std::string& message) const {
        return make_error(ErrorType::kInvalidRequest,
                          at_line(path_, where) + ": " + base::mask_credentials(message));
    }

    const Registry& registry_;
    const std::string& path_;
    Layer layer_;
};

}  // namespace

base::Result<Layer> parse_toml(const Registry& registry, std::string_view text,
                               const std::string& path) {
    toml::table table;
    try {
        table = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
        const auto& begin = e.source().begin;
        return make_error(ErrorType::kInvalidRequest, path + ":" + std::to_string(begin.line) +
                                                          ":" + std::to_string(begin.column) +
                                                          ": " + std::string(e.description()));
    }
    Walker walker(registry, path);
    if (auto walked = walker.walk(table, ""); !walked) return walked.error();
    return walker.take();
}

base::Result<Layer> load_toml_file(const Registry& registry, const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return Layer{};
    if (std::filesystem::is_directory(path, ec)) {
        return make_error(ErrorType::kInvalidRequest,
                          path.string() + ": is a folder, not a settings file");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(ErrorType::kInvalidRequest, path.string() + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_toml(registry, text.str(), path.string());
}

}  // namespace glassbox::config
