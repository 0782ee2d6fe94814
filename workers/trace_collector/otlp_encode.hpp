// OTLP/HTTP request bodies (docs/traces.md, "OpenTelemetry export"): an ExportTraceServiceRequest
// of spans in either encoding the OTLP specification gives, binary protobuf (written by hand: a
// few varints, length-delimited fields and fixed64 times) or the OTLP/JSON mapping.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "workers/trace_collector/otel_spans.hpp"

namespace glassbox::trace::otel {

enum class Encoding { kProtobuf, kJson };

// "application/x-protobuf" or "application/json": the Content-Type of an OTLP/HTTP request.
std::string_view content_type(Encoding encoding) noexcept;

// One ExportTraceServiceRequest holding one ResourceSpans (`resource`: service.name,
// telemetry.sdk.name "glassbox", telemetry.sdk.language "cpp", then resource.attributes) with
// one ScopeSpans (scope "glassbox") of `spans`, in `encoding`. Protobuf: the fields of
// opentelemetry/proto/{collector/trace,trace,common,resource}/v1 with their numbers, ids as
// bytes, times fixed64; JSON: lowerCamelCase names, ids as hex, times and intValue as decimal
// strings, enums as integers. Ids that are not hex of the right length are left out.
std::string encode_export_request(const std::vector<Span>& spans, const Resource& resource,
                                  Encoding encoding);

}  // namespace glassbox::trace::otel
