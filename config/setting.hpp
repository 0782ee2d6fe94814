// A setting (key, type, bounds, default, flags, environment variable, doc) and the registry of
// them.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.hpp"

namespace glassbox::config {

// What a setting holds. Durations are integers in a unit the key names (`heartbeat_ms`).
enum class Kind {
    kText,     // any string
    kInteger,  // a whole number within [min, max]
    kNumber,   // a real number within [min_number, max_number]
    kBool,     // true or false
    kChoice,   // one of a fixed list of strings
};

using Value = std::variant<bool, std::int64_t, double, std::string>;

// How a value reads in `config show` and error messages: strings as they are, numbers and
// booleans as TOML writes them.
std::string to_text(const Value& value);

struct Setting {
    // "table.name" (lower case, digits and `_`, at least one dot): the TOML table and key.
    std::string key;
    Kind kind = Kind::kText;
    Value fallback;  // the built-in default
    std::int64_t min = std::numeric_limits<std::int64_t>::min();
    std::int64_t max = std::numeric_limits<std::int64_t>::max();
    double min_number = -std::numeric_limits<double>::max();
    double max_number = std::numeric_limits<double>::max();
    std::vector<std::string> choices;
    // Command-line flags that set it ("--heartbeat-ms"); for documentation and `config show`.
    std::vector<std::string> flags;
    // Older environment variable names still read (below the mechanical name).
    std::vector<std::string> env_aliases;
    std::string doc;  // one line
    // A text setting whose file form may also be a TOML array or table (`rules = ["email"]`,
    // `prices = { "gpt-4o" = { input = 2.5, output = 10.0 } }`): the layer holds it as its JSON
    // text, which is also what its environment variable and flag take.
    bool structured = false;

    // GLASSBOX_ + the key upper-cased, dots as underscores: broker.heartbeat_ms ->
    // GLASSBOX_BROKER_HEARTBEAT_MS.
    std::string env_name() const;
    // "a positive integer", "an integer from 10 to 3600000", "one of \"reject\", \"drop-oldest\"".
    std::string expectation() const;
    // Empty when `value` is of this setting's kind and within its bounds.
    std::optional<std::string> problem(const Value& value) const;
    // Parses a flag's or environment variable's text: "fast" for an integer is an error naming
    // the key ("broker.heartbeat_ms: expected a positive integer, got \"fast\"").
    base::Result<Value> parse_text(std::string_view text) const;

    // Builder steps for a registry table that reads as one line per setting.
    Setting& flag(std::string name);
    Setting& env_alias(std::string name);
    Setting& structured_value();
};

Setting text_setting(std::string key, std::string fallback, std::string doc);
Setting integer_setting(std::string key, std::int64_t fallback, std::int64_t min, std::int64_t max,
                        std::string doc);
Setting number_setting(std::string key, double fallback, double min, double max, std::string doc);
Setting bool_setting(std::string key, bool fallback, std::string doc);
Setting choice_setting(std::string key, std::string fallback, std::vector<std::string> choices,
                       std::string doc);

// Every setting a program knows, by key. Adding a setting is one more entry.
class Registry {
public:
    // std::invalid_argument (a programmer error) for a malformed or repeated key, a repeated
    // environment name, or a default outside the setting's own bounds.
    explicit Registry(std::vector<Setting> settings);

    const std::vector<Setting>& settings() const noexcept { return settings_; }
    const Setting* find(std::string_view key) const noexcept;
    // True when `prefix` names a table: some key starts with `prefix.`.
    bool is_table(std::string_view prefix) const noexcept;
    // The closest known key (or table, when `as_table`) to a misspelt one, if one is close.
    std::optional<std::string> suggest(std::string_view unknown, bool as_table) const;

private:
    std::vector<Setting> settings_;
};

}  // namespace glassbox::config
