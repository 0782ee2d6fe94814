// Content negotiation by Accept (RFC 9110 §12.5.1).
#include "gateway/content_negotiation.hpp"

#include <algorithm>
#include <tuple>

#include "base/ascii.hpp"

namespace glassbox::gateway {

namespace {

constexpr int kFullWeight = 1000;

// RFC 9110 §5.6.2: tchar.
bool is_token_char(char c) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), is_token_char);
}

using base::ascii_lower;

// RFC 9110 §5.6.3: OWS is spaces and tabs.
std::string_view trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos) return {};
    return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// `text` cut at each `separator` outside a quoted-string (RFC 9110 §5.6.4: a quoted-string may
// hold commas and semicolons, and a backslash quotes the next character).
std::vector<std::string_view> split_outside_quotes(std::string_view text, char separator) {
    std::vector<std::string_view> parts;
    bool quoted = false;
    std::size_t start = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted && c == '\\') {
            ++i;
        } else if (c == '"') {
            quoted = !quoted;
        } else if (!quoted && c == separator) {
            parts.push_back(text.substr(start, i - start));
            start = i + 1;
        }
    }
    parts.push_back(text.substr(std::min(start, text.size())));
    return parts;
}

// A parameter value: a token, or a quoted-string unquoted; nullopt for anything else.
std::optional<std::string> parameter_value(std::string_view text) {
    if (is_token(text)) return std::string(text);
    if (text.size() < 2 || text.front() != '"' || text.back() != '"') return std::nullopt;
    std::string out;
    for (std::size_t i = 1; i + 1 < text.size(); ++i) {
        if (text[i] == '\\') {
            if (i + 2 >= text.size()) return std::nullopt;  // a backslash quoting the closing quote
            ++i;
        } else if (text[i] == '"') {
            return std::nullopt;
        }
        out += text[i];
    }
    return out;
}

// RFC 9110 §12.4.2: a qvalue, 0 to 1 with up to three decimals, in thousandths. Further decimals
// round up, so a positive weight stays positive; a missing leading 0 is allowed (q=.5).
std::optional<int> weight_of(std::string_view text) {
    const auto dot = text.find('.');
    const std::string_view whole = text.substr(0, dot);
    const std::string_view fraction =
        dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
    const auto digits = [](std::string_view s) {
        return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if ((whole.empty() && fraction.empty()) || !digits(whole) || !digits(fraction))
        return std::nullopt;
    int weight = 0;
    for (const char c : whole) {
        weight = weight * 10 + (c - '0');
        if (weight > 1) return std::nullopt;
    }
    weight *= kFullWeight;
    int scale = kFullWeight / 10;
    for (std::size_t i = 0; i < std::min<std::size_t>(fraction.size(), 3); ++i, scale /= 10)
        weight += (fraction[i] - '0') * scale;
    if (fraction.size() > 3 && fraction.substr(3).find_first_not_of('0') != std::string_view::npos)
        ++weight;
    if (weight > kFullWeight) return std::nullopt;
    return weight;
}

// How specific a range is for an offered type it matches: */* < type/* < type/subtype, and
// then the more parameters the more specific.
using Specificity = std::pair<int, std::size_t>;

// The specificity with which `range` matches `offered`, or nullopt when it does not.
std::optional<Specificity> match(const MediaRange& range, const MediaRange& offered) {
    int level = 0;  // */*
    if (range.type != "*") {
        if (range.type != offered.type) return std::nullopt;
        level = 1;  // type/*
        if (range.subtype != "*") {
            if (range.subtype != offered.subtype) return std::nullopt;
            level = 2;
        }
    }
    // Named, not a structured binding: clang before 16 (clang-tidy) cannot capture one in a
    // lambda, which C++20 allows.
    for (const auto& parameter : range.parameters) {
        const std::string& name = parameter.first;
        const std::string& value = parameter.second;
        // Every answer is UTF-8 (JSON has no other, and the text types are sent as UTF-8).
        if (name == "charset") {
            if (!base::ascii_iequals(value, "utf-8")) return std::nullopt;
            continue;
        }
        const auto same = [&](const auto& p) {
            return p.first == name && base::ascii_iequals(p.second, value);
        };
        if (std::none_of(offered.parameters.begin(), offered.parameters.end(), same))
            return std::nullopt;
    }
    return Specificity{level, range.parameters.size()};
}

}  // namespace

std::optional<MediaRange> parse_media_range(std::string_view text) {
    const auto segments = split_outside_quotes(text, ';');
    std::string_view name = trim(segments.front());
    if (name == "*") name = "*/*";
    const auto slash = name.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    MediaRange range;
    range.type = ascii_lower(name.substr(0, slash));
    range.subtype = ascii_lower(name.substr(slash + 1));
    if (!is_token(range.type) || !is_token(range.subtype) ||
        (range.type == "*" && range.subtype != "*"))
        return std::nullopt;
    for (std::size_t i = 1; i < segments.size(); ++i) {
        const std::string_view parameter = trim(segments[i]);
        if (parameter.empty()) continue;  // RFC 9110 §5.6.6: "a;;b" and a trailing ";" are allowed
        const auto equals = parameter.find('=');
        if (equals == std::string_view::npos || !is_token(parameter.substr(0, equals)))
            return std::nullopt;
        const std::string key = ascii_lower(parameter.substr(0, equals));
        const auto value = parameter_value(parameter.substr(equals + 1));
        if (!value) return std::nullopt;
        if (key == "q") {
            const auto weight = weight_of(*value);
            if (!weight) return std::nullopt;
            range.weight = *weight;
            break;  // what follows the weight is accept-ext, ignored
        }
        range.parameters.emplace_back(key, *value);
    }
    return range;
}

std::vector<MediaRange> parse_accept(std::string_view accept) {
    std::vector<MediaRange> ranges;
    for (const std::string_view element : split_outside_quotes(accept, ',')) {
        if (trim(element).empty()) continue;  // RFC 9110 §5.6.1: empty list elements are allowed
        if (auto range = parse_media_range(element)) ranges.push_back(std::move(*range));
    }
    return ranges;
}

std::optional<std::size_t> preferred_media_type(std::string_view accept,
                                                std::span<const std::string_view> offered) {
    if (offered.empty()) return std::nullopt;
    const auto ranges = parse_accept(accept);
    if (ranges.empty()) return 0;
    std::optional<std::size_t> best;
    std::tuple<int, Specificity> best_rank{0, {0, 0}};
    for (std::size_t i = 0; i < offered.size(); ++i) {
        const auto type = parse_media_range(offered[i]);
        if (!type) continue;
        // The weight of the most specific range matching the type (the first of equals).
        std::optional<std::tuple<int, Specificity>> rank;
        for (const auto& range : ranges) {
            const auto specificity = match(range, *type);
            if (specificity && (!rank || *specificity > std::get<1>(*rank)))
                rank.emplace(range.weight, *specificity);
        }
        if (!rank || std::get<0>(*rank) == 0) continue;
        if (!best || *rank > best_rank) {
            best = i;
            best_rank = *rank;
        }
    }
    return best;
}

}  // namespace glassbox::gateway
