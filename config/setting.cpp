// Settings: checking values against their kind and bounds, parsing text, the registry's lookups.
#include "config/setting.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "base/ascii.hpp"
#include "base/credentials.hpp"
#include "base/spelling.hpp"

namespace glassbox::config {
namespace {

using base::ErrorType;
using base::make_error;

// A string as `config show` and errors quote it: JSON-style, so spaces and quotes stay visible.
std::string quoted(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
            out += escaped;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::string number_text(double value) {
    char buffer[64];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    std::string text = ec == std::errc{} ? std::string(buffer, end) : std::to_string(value);
    // TOML needs a dot or an exponent to read it back as a float.
    if (std::isfinite(value) && text.find_first_of(".eE") == std::string::npos) text += ".0";
    return text;
}

// A value as an error quotes it: a password in it (a connection string typed where it does not
// belong) is masked.
std::string got_text(const Value& value) {
    if (const auto* text = std::get_if<std::string>(&value))
        return base::mask_credentials(quoted(*text));
    return to_text(value);
}

bool valid_segment(std::string_view segment) {
    if (segment.empty() || !std::islower(static_cast<unsigned char>(segment.front()))) return false;
    return std::all_of(segment.begin(), segment.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) ||
               std::isdigit(static_cast<unsigned char>(c)) || c == '_';
    });
}

bool valid_key(std::string_view key) {
    std::size_t segments = 0;
    std::size_t start = 0;
    for (;;) {
        const auto dot = key.find('.', start);
        if (!valid_segment(key.substr(start, dot == std::string_view::npos ? dot : dot - start)))
            return false;
        ++segments;
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return segments >= 2;
}

std::string_view last_segment(std::string_view key) {
    const auto dot = key.rfind('.');
    return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

Setting make_setting(std::string key, Kind kind, Value fallback, std::string doc) {
    Setting setting;
    setting.key = std::move(key);
    setting.kind = kind;
    setting.fallback = std::move(fallback);
    setting.doc = std::move(doc);
    return setting;
}

}  // namespace

std::string to_text(const Value& value) {
    return std::visit(
        [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>) {
                return v ? "true" : "false";
            } else if constexpr (std::is_same_v<T, std::int64_t>) {
                return std::to_string(v);
            } else if constexpr (std::is_same_v<T, double>) {
                return number_text(v);
            } else {
                return v;
            }
        },
        value);
}

std::string Setting::env_name() const {
    std::string name = "GLASSBOX_";
    for (const char c : key) {
        name += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return name;
}

std::string Setting::expectation() const {
    switch (kind) {
        case Kind::kText:
            return "a string";
        case Kind::kBool:
            return "true or false";
        case Kind::kInteger:
            if (max == std::numeric_limits<std::int64_t>::max()) {
                if (min == 1) return "a positive integer";
                if (min == 0) return "a non-negative integer";
                return "an integer of at least " + std::to_string(min);
            }
            return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
        case Kind::kNumber:
            return "a number from " + number_text(min_number) + " to " + number_text(max_number);
        case Kind::kChoice: {
            std::string text = "one of ";
            for (std::size_t i = 0; i < choices.size(); ++i) {
                if (i > 0) text += ", ";
                text += quoted(choices[i]);
            }
            return text;
        }
    }
    return "a value";
}

std::optional<std::string> Setting::problem(const Value& value) const {
    bool fits = false;
    switch (kind) {
        case Kind::kText:
            fits = std::holds_alternative<std::string>(value);
            break;
        case Kind::kBool:
            fits = std::holds_alternative<bool>(value);
            break;
        case Kind::kInteger: {
            const auto* v = std::get_if<std::int64_t>(&value);
            fits = v != nullptr && *v >= min && *v <= max;
            break;
        }
        case Kind::kNumber: {
            const auto* v = std::get_if<double>(&value);
            fits = v != nullptr && std::isfinite(*v) && *v >= min_number && *v <= max_number;
            break;
        }
        case Kind::kChoice: {
            const auto* v = std::get_if<std::string>(&value);
            fits = v != nullptr && std::find(choices.begin(), choices.end(), *v) != choices.end();
            break;
        }
    }
    if (fits) return std::nullopt;
    return key + ": expected " + expectation() + ", got " + got_text(value);
}

base::Result<Value> Setting::parse_text(std::string_view text) const {
    Value value{std::string(text)};  // as given: what a mismatch reports
    switch (kind) {
        case Kind::kText:
        case Kind::kChoice:
            break;
        case Kind::kInteger: {
            std::int64_t parsed = 0;
            const auto* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
            if (ec == std::errc{} && ptr == end && !text.empty()) value = parsed;
            break;
        }
        case Kind::kNumber: {
            double parsed = 0;
            const auto* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
            if (ec == std::errc{} && ptr == end && !text.empty()) value = parsed;
            break;
        }
        case Kind::kBool: {
            const auto word = base::ascii_lower(text);
            if (word == "true" || word == "1" || word == "yes" || word == "on") value = true;
            if (word == "false" || word == "0" || word == "no" || word == "off") value = false;
            break;
        }
    }
    if (auto why = problem(value)) return make_error(ErrorType::kInvalidRequest, *why);
    return value;
}

Setting& Setting::flag(std::string name) {
    flags.push_back(std::move(name));
    return *this;
}

Setting& Setting::env_alias(std::string name) {
    env_aliases.push_back(std::move(name));
    return *this;
}

Setting& Setting::structured_value() {
    structured = true;
    return *this;
}

Setting text_setting(std::string key, std::string fallback, std::string doc) {
    return make_setting(std::move(key), Kind::kText, Value{std::move(fallback)}, std::move(doc));
}

Setting integer_setting(std::string key, std::int64_t fallback, std::int64_t min, std::int64_t max,
                        std::string doc) {
    auto setting = make_setting(std::move(key), Kind::kInteger, Value{fallback}, std::move(doc));
    setting.min = min;
    setting.max = max;
    return setting;
}

Setting number_setting(std::string key, double fallback, double min, double max, std::string doc) {
    auto setting = make_setting(std::move(key), Kind::kNumber, Value{fallback}, std::move(doc));
    setting.min_number = min;
    setting.max_number = max;
    return setting;
}

Setting bool_setting(std::string key, bool fallback, std::string doc) {
    return make_setting(std::move(key), Kind::kBool, Value{fallback}, std::move(doc));
}

Setting choice_setting(std::string key, std::string fallback, std::vector<std::string> choices,
                       std::string doc) {
    auto setting =
        make_setting(std::move(key), Kind::kChoice, Value{std::move(fallback)}, std::move(doc));
    setting.choices = std::move(choices);
    return setting;
}

Registry::Registry(std::vector<Setting> settings) : settings_(std::move(settings)) {
    std::set<std::string> keys;
    std::set<std::string> env_names;
    for (const auto& setting : settings_) {
        if (!valid_key(setting.key))
            throw std::invalid_argument("malformed setting key '" + setting.key + "'");
        if (!keys.insert(setting.key).second)
            throw std::invalid_argument("setting '" + setting.key + "' twice");
        if (auto why = setting.problem(setting.fallback)) {
            throw std::invalid_argument("the default of " + *why);
        }
        if (!env_names.insert(setting.env_name()).second) {
            throw std::invalid_argument("environment name " + setting.env_name() + " twice");
        }
        for (const auto& alias : setting.env_aliases) {
            if (!env_names.insert(alias).second)
                throw std::invalid_argument("environment name " + alias + " twice");
        }
    }
    // A key must not also be a table ("a.b" and "a.b.c"): TOML could not hold both.
    for (const auto& setting : settings_) {
        if (is_table(setting.key))
            throw std::invalid_argument("setting '" + setting.key + "' is also a table");
    }
}

const Setting* Registry::find(std::string_view key) const noexcept {
    for (const auto& setting : settings_) {
        if (setting.key == key) return &setting;
    }
    return nullptr;
}

bool Registry::is_table(std::string_view prefix) const noexcept {
    for (const auto& setting : settings_) {
        const std::string_view key = setting.key;
        if (key.size() > prefix.size() && key.substr(0, prefix.size()) == prefix &&
            key[prefix.size()] == '.') {
            return true;
        }
    }
    return false;
}

std::optional<std::string> Registry::suggest(std::string_view unknown, bool as_table) const {
    std::set<std::string> candidates;
    for (const auto& setting : settings_) {
        if (!as_table) {
            candidates.insert(setting.key);
            continue;
        }
        // Every table a key lies in: "broker" for broker.heartbeat_ms.
        for (auto dot = setting.key.find('.'); dot != std::string::npos;
             dot = setting.key.find('.', dot + 1)) {
            candidates.insert(setting.key.substr(0, dot));
        }
    }
    const std::string wanted = base::ascii_lower(unknown);
    std::optional<std::string> best;
    std::size_t best_distance = 0;
    for (const auto& candidate : candidates) {
        const auto d = base::edit_distance(wanted, candidate);
        if (!best || d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    if (best && best_distance <= std::max<std::size_t>(2, wanted.size() / 4)) return best;
    // A key written without its table (`heartbeat_ms = 100` at the top) or in the wrong one.
    if (!as_table) {
        for (const auto& setting : settings_) {
            if (last_segment(setting.key) == last_segment(wanted)) return setting.key;
        }
    }
    return std::nullopt;
}

}  // namespace glassbox::config
