// The OpenTelemetry exporter's endpoint and headers as the OTel specification configures them
// (OTEL_EXPORTER_OTLP_ENDPOINT, _TRACES_ENDPOINT, _HEADERS; docs/operations.md "OpenTelemetry"):
// parsed once here for the collector that sends and for the settings check every command runs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "http/http_client.hpp"

namespace glassbox::http {

// otel.headers as OTEL_EXPORTER_OTLP_HEADERS reads ("Specifying headers via environment
// variables"): comma-separated key=value pairs, keys and values trimmed, values percent-decoded,
// empty entries skipped. An entry without '=' or with an empty key, or a bad %-escape:
// InvalidRequest naming the entry (never its value: headers carry secrets).
base::Result<Headers> parse_otel_headers(std::string_view text);

// The settings rule of otel.headers: why `text` cannot be used, or nullopt.
std::optional<std::string> otel_headers_problem(std::string_view text);

// The traces URL: `traces_endpoint` as it is; else `endpoint` + "/v1/traces" ("Endpoint URLs for
// OTLP/HTTP": the signal path appended, one slash); both empty: "" (no exporter).
std::string otel_traces_url(std::string_view endpoint, std::string_view traces_endpoint);

// `url` without user information, query or fragment: what status and stats show.
std::string otel_public_url(std::string_view url);

}  // namespace glassbox::http
