// The OpenTelemetry exporter's endpoint and headers (docs/operations.md, "OpenTelemetry").
#include "http/otel_headers.hpp"

#include <algorithm>
#include <utility>

namespace glassbox::http {

using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

std::string_view trimmed(std::string_view s) {
    const auto blank = [](char c) { return c == ' ' || c == '\t'; };
    while (!s.empty() && blank(s.front())) s.remove_prefix(1);
    while (!s.empty() && blank(s.back())) s.remove_suffix(1);
    return s;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// `s` with its %XX escapes decoded ('+' stays: the specification decodes percent-escapes only).
std::optional<std::string> percent_decoded(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) return std::nullopt;
        const int hi = hex_digit(s[i + 1]);
        const int lo = hex_digit(s[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

}  // namespace

Result<Headers> parse_otel_headers(std::string_view text) {
    Headers out;
    std::size_t start = 0;
    for (int index = 1; start <= text.size(); ++index) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        const std::string_view entry = trimmed(text.substr(start, comma - start));
        start = comma + 1;
        if (entry.empty()) continue;
        const std::size_t eq = entry.find('=');
        const std::string_view key =
            eq == std::string_view::npos ? "" : trimmed(entry.substr(0, eq));
        if (key.empty()) {
            return make_error(ErrorType::kInvalidRequest,
                              "entry " + std::to_string(index) +
                                  " is not key=value (comma-separated, values URL-encoded)");
        }
        auto value = percent_decoded(trimmed(entry.substr(eq + 1)));
        if (!value) {
            return make_error(ErrorType::kInvalidRequest,
                              "the value of " + std::string(key) +
                                  " has a bad %-escape (values are URL-encoded)");
        }
        out.emplace_back(std::string(key), std::move(*value));
    }
    return out;
}

std::string otel_traces_url(std::string_view endpoint, std::string_view traces_endpoint) {
    if (!trimmed(traces_endpoint).empty()) return std::string(trimmed(traces_endpoint));
    std::string_view base = trimmed(endpoint);
    if (base.empty()) return {};
    while (!base.empty() && base.back() == '/') base.remove_suffix(1);
    return std::string(base) + "/v1/traces";
}

std::string otel_public_url(std::string_view url) {
    std::string_view rest = url;
    std::string scheme;
    if (const auto sep = rest.find("://"); sep != std::string_view::npos) {
        scheme = std::string(rest.substr(0, sep + 3));
        rest.remove_prefix(sep + 3);
    }
    rest = rest.substr(0, std::min(rest.find('?'), rest.find('#')));
    const std::size_t slash = std::min(rest.find('/'), rest.size());
    if (const auto at = rest.substr(0, slash).rfind('@'); at != std::string_view::npos)
        rest.remove_prefix(at + 1);
    return scheme + std::string(rest);
}

std::optional<std::string> otel_headers_problem(std::string_view text) {
    auto headers = parse_otel_headers(text);
    if (headers) return std::nullopt;
    return headers.error().message;
}

}  // namespace glassbox::http
