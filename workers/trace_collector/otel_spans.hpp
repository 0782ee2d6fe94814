// OpenTelemetry spans of a stored run (docs/traces.md, "OpenTelemetry export"): the run, its
// steps, its tool calls and its sub-runs as the OTel GenAI semantic conventions name them, what
// the OTLP encoder (otlp_encode.hpp) writes and the exporter sends.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace glassbox::trace::otel {

// opentelemetry/proto/trace/v1/trace.proto Span.SpanKind (the numbers are the wire values).
enum class SpanKind : int {
    kUnspecified = 0,
    kInternal = 1,
    kServer = 2,
    kClient = 3,
    kProducer = 4,
    kConsumer = 5,
};

// trace.proto Status.StatusCode.
enum class StatusCode : int { kUnset = 0, kOk = 1, kError = 2 };

// An attribute's value: OTLP's AnyValue without kvlists and bytes (glassbox writes none). Text
// is valid UTF-8 (it comes from validated explain messages).
using AttributeValue =
    std::variant<std::string, std::int64_t, double, bool, std::vector<std::string>,
                 std::vector<double>, std::vector<std::int64_t>>;

struct Attribute {
    std::string key;
    AttributeValue value;
    bool operator==(const Attribute&) const = default;
};

struct Span {
    std::string trace_id;        // 32 lowercase hex digits (schema/otel_ids.hpp)
    std::string span_id;         // 16 lowercase hex digits
    std::string parent_span_id;  // 16 lowercase hex digits; empty for the trace's root span
    std::string name;
    SpanKind kind = SpanKind::kInternal;
    std::uint64_t start_ns = 0;  // Unix epoch nanoseconds
    std::uint64_t end_ns = 0;
    std::vector<Attribute> attributes;
    StatusCode status = StatusCode::kUnset;
    std::string status_message;  // with kError: the run's error

    // The attribute `key`, or nullptr.
    const AttributeValue* attribute(std::string_view key) const noexcept;
    bool operator==(const Span&) const = default;
};

// What the exported spans' Resource says: service.name, and telemetry.sdk.* added by the encoder.
struct Resource {
    std::string service_name = "glassbox";  // otel.service_name
    std::vector<Attribute> attributes;      // more resource attributes, after service.name
};

// The span names and attribute keys, for the exporter's tests and the receiver's checks.
inline constexpr std::string_view kScopeName = "glassbox";
inline constexpr std::string_view kOperationName = "gen_ai.operation.name";
inline constexpr std::string_view kTraceIri = "glassbox.trace.iri";
inline constexpr std::string_view kRunIri = "glassbox.run.iri";
inline constexpr std::string_view kStepIri = "glassbox.step.iri";
inline constexpr std::string_view kStepType = "glassbox.step.type";

}  // namespace glassbox::trace::otel
