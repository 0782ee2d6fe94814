// The OTLP/HTTP trace request body in protobuf (a hand-written wire encoder) and in OTLP/JSON.
//
// Field numbers: opentelemetry-proto, opentelemetry/proto/collector/trace/v1/trace_service.proto
// (ExportTraceServiceRequest.resource_spans = 1), trace/v1/trace.proto (ResourceSpans, ScopeSpans,
// Span, Status), common/v1/common.proto (AnyValue, ArrayValue, KeyValue, InstrumentationScope)
// and resource/v1/resource.proto (Resource).
#include "workers/trace_collector/otlp_encode.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <list>
#include <optional>
#include <type_traits>

#include "base/json_string.hpp"
#include "base/utf8.hpp"
#include "schema/json_fast.hpp"

namespace glassbox::trace::otel {

namespace {

// ---- shared -------------------------------------------------------------------------------

int hex_digit(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// An id's bytes: a trace id's 16 or a span id's 8, decoded on the stack (a std::string of 16
// bytes would be a heap allocation per span).
struct IdBytes {
    std::array<char, 16> bytes{};
    std::size_t size = 0;
    std::string_view view() const noexcept { return {bytes.data(), size}; }
};

// The bytes `hex` spells when it is `size` (at most 16) bytes of hex digits; nullopt otherwise.
std::optional<IdBytes> hex_bytes(std::string_view hex, std::size_t size) {
    if (size > 16 || hex.size() != 2 * size) return std::nullopt;
    IdBytes out;
    out.size = size;
    for (std::size_t i = 0; i < size; ++i) {
        const int hi = hex_digit(hex[2 * i]);
        const int lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out.bytes[i] = static_cast<char>((hi << 4) | lo);
    }
    return out;
}

bool valid_id(std::string_view hex, std::size_t size) { return hex_bytes(hex, size).has_value(); }

// Text as an OTLP string must be: valid UTF-8 (protobuf string fields and JSON both require it).
std::string_view utf8_text(std::string_view text, std::string& scratch) {
    if (!base::find_invalid_utf8(text)) return text;
    scratch = base::printable_utf8(text);
    return scratch;
}

// The resource's attributes: service.name, the SDK's, then the caller's.
std::vector<Attribute> resource_attributes(const Resource& resource) {
    std::vector<Attribute> out{{"service.name", resource.service_name},
                               {"telemetry.sdk.name", std::string("glassbox")},
                               {"telemetry.sdk.language", std::string("cpp")}};
    out.insert(out.end(), resource.attributes.begin(), resource.attributes.end());
    return out;
}

// ---- protobuf -----------------------------------------------------------------------------

enum WireType : unsigned { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

void put_varint(std::string& out, std::uint64_t value) {
    while (value >= 0x80) {
        out += static_cast<char>((value & 0x7f) | 0x80);
        value >>= 7;
    }
    out += static_cast<char>(value);
}

void put_tag(std::string& out, unsigned field, WireType type) {
    put_varint(out, (static_cast<std::uint64_t>(field) << 3) | type);
}

void put_fixed64(std::string& out, unsigned field, std::uint64_t value) {
    put_tag(out, field, kFixed64);
    for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

void put_bytes(std::string& out, unsigned field, std::string_view bytes) {
    put_tag(out, field, kLengthDelimited);
    put_varint(out, bytes.size());
    out.append(bytes);
}

void put_string(std::string& out, unsigned field, std::string_view text) {
    std::string scratch;
    put_bytes(out, field, utf8_text(text, scratch));
}

void put_varint_field(std::string& out, unsigned field, std::uint64_t value) {
    put_tag(out, field, kVarint);
    put_varint(out, value);
}

std::size_t varint_size(std::uint64_t value) {
    std::size_t n = 1;
    while (value >= 0x80) {
        value >>= 7;
        ++n;
    }
    return n;
}

// A length-delimited field (field number below 16) of `size` bytes, whole.
std::size_t field_size(std::size_t size) { return 1 + varint_size(size) + size; }

// AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4, array_value 5
// (ArrayValue.values 1). A KeyValue is written straight into its span, each length known before
// its bytes: a retrieval's hundreds of ids are copied once, with no buffer per id.
std::size_t any_size(std::string_view text) { return field_size(text.size()); }
std::size_t any_size(bool) { return 2; }
std::size_t any_size(std::int64_t n) { return 1 + varint_size(static_cast<std::uint64_t>(n)); }
std::size_t any_size(double) { return 9; }

void put_any(std::string& out, std::string_view text) { put_bytes(out, 1, text); }
void put_any(std::string& out, bool b) { put_varint_field(out, 2, b ? 1 : 0); }
void put_any(std::string& out, std::int64_t n) {
    put_varint_field(out, 3, static_cast<std::uint64_t>(n));  // int64: two's complement
}
void put_any(std::string& out, double x) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    put_fixed64(out, 4, bits);
}

// The values of an attribute as written: texts as utf8_text gives them (`fixed` holds the few
// made printable; a list, so the views stay put).
template <typename T>
const std::vector<T>& written(const std::vector<T>& values, std::list<std::string>&) {
    return values;
}
std::vector<std::string_view> written(const std::vector<std::string>& values,
                                      std::list<std::string>& fixed) {
    std::vector<std::string_view> out;
    out.reserve(values.size());
    for (const auto& value : values) {
        if (!base::find_invalid_utf8(value)) {
            out.emplace_back(value);
        } else {
            out.emplace_back(fixed.emplace_back(base::printable_utf8(value)));
        }
    }
    return out;
}
template <typename T>
T written(const T& value, std::list<std::string>&) {
    return value;
}
std::string_view written(const std::string& text, std::list<std::string>& fixed) {
    if (!base::find_invalid_utf8(text)) return text;
    return fixed.emplace_back(base::printable_utf8(text));
}

template <typename T>
std::size_t any_size(const std::vector<T>& items) {
    std::size_t body = 0;
    for (const auto& item : items) body += field_size(any_size(item));
    return field_size(body);
}
template <typename T>
void put_any(std::string& out, const std::vector<T>& items) {
    std::size_t body = 0;
    for (const auto& item : items) body += field_size(any_size(item));
    put_tag(out, 5, kLengthDelimited);
    put_varint(out, body);
    for (const auto& item : items) {
        put_tag(out, 1, kLengthDelimited);
        put_varint(out, any_size(item));
        put_any(out, item);
    }
}

// KeyValue: key 1, value 2.
void put_attribute(std::string& out, unsigned field, const Attribute& attribute) {
    std::list<std::string> fixed;  // empty unless a text is not valid UTF-8
    const std::string_view key = written(attribute.key, fixed);
    std::visit(
        [&](const auto& value) {
            const auto& shown = written(value, fixed);
            const std::size_t any = any_size(shown);
            put_tag(out, field, kLengthDelimited);
            put_varint(out, field_size(key.size()) + field_size(any));
            put_bytes(out, 1, key);
            put_tag(out, 2, kLengthDelimited);
            put_varint(out, any);
            put_any(out, shown);
        },
        attribute.value);
}

// Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7, end 8, attributes 9,
// status 15 (Status: message 2, code 3).
std::string span_message(const Span& span) {
    std::string out;
    if (auto id = hex_bytes(span.trace_id, 16)) put_bytes(out, 1, id->view());
    if (auto id = hex_bytes(span.span_id, 8)) put_bytes(out, 2, id->view());
    if (auto id = hex_bytes(span.parent_span_id, 8)) put_bytes(out, 4, id->view());
    if (!span.name.empty()) put_string(out, 5, span.name);
    if (span.kind != SpanKind::kUnspecified)
        put_varint_field(out, 6, static_cast<std::uint64_t>(span.kind));
    put_fixed64(out, 7, span.start_ns);
    put_fixed64(out, 8, span.end_ns);
    for (const auto& attribute : span.attributes) put_attribute(out, 9, attribute);
    if (span.status != StatusCode::kUnset || !span.status_message.empty()) {
        std::string status;
        if (!span.status_message.empty()) put_string(status, 2, span.status_message);
        if (span.status != StatusCode::kUnset)
            put_varint_field(status, 3, static_cast<std::uint64_t>(span.status));
        put_bytes(out, 15, status);
    }
    return out;
}

// Each span is encoded once and copied once into the request: the lengths of the enclosing
// ScopeSpans and ResourceSpans are summed from the encoded spans first.
std::string encode_protobuf(const std::vector<Span>& spans, const Resource& resource) {
    std::string resource_message;  // Resource: attributes 1
    for (const auto& attribute : resource_attributes(resource))
        put_attribute(resource_message, 1, attribute);
    std::string scope;  // InstrumentationScope: name 1
    put_string(scope, 1, kScopeName);
    std::vector<std::string> encoded;
    encoded.reserve(spans.size());
    std::size_t scope_spans_size = 1 + varint_size(scope.size()) + scope.size();
    for (const auto& span : spans) {
        encoded.push_back(span_message(span));
        scope_spans_size += 1 + varint_size(encoded.back().size()) + encoded.back().size();
    }
    const std::size_t resource_spans_size = 1 + varint_size(resource_message.size()) +
                                            resource_message.size() + 1 +
                                            varint_size(scope_spans_size) + scope_spans_size;
    std::string out;
    out.reserve(resource_spans_size + 8);
    put_tag(out, 1, kLengthDelimited);  // ExportTraceServiceRequest.resource_spans
    put_varint(out, resource_spans_size);
    put_bytes(out, 1, resource_message);  // ResourceSpans.resource
    put_tag(out, 2, kLengthDelimited);    // ResourceSpans.scope_spans
    put_varint(out, scope_spans_size);
    put_bytes(out, 1, scope);                                  // ScopeSpans.scope
    for (const auto& span : encoded) put_bytes(out, 2, span);  // ScopeSpans.spans
    return out;
}

// ---- JSON ---------------------------------------------------------------------------------

void json_string(std::string& out, std::string_view text) {
    if (base::append_json_string(out, text)) return;
    base::append_json_string(out, base::printable_utf8(text));
}

void json_any(std::string& out, const std::string& text) {
    out += "{\"stringValue\":";
    json_string(out, text);
    out += '}';
}
void json_any(std::string& out, bool b) {
    out += b ? "{\"boolValue\":true}" : "{\"boolValue\":false}";
}
// OTLP/JSON (proto3 JSON mapping): int64 as a decimal string.
void json_any(std::string& out, std::int64_t n) {
    out += "{\"intValue\":\"";
    out += std::to_string(n);
    out += "\"}";
}
void json_any(std::string& out, double x) {
    out += "{\"doubleValue\":";
    if (std::isnan(x)) {
        out += "\"NaN\"";
    } else if (std::isinf(x)) {
        out += x > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    } else {
        schema::append_json_number(out, x);
    }
    out += '}';
}
template <typename T>
void json_any(std::string& out, const std::vector<T>& values) {
    out += "{\"arrayValue\":{\"values\":[";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i > 0) out += ',';
        json_any(out, values[i]);
    }
    out += "]}}";
}

void json_attributes(std::string& out, const std::vector<Attribute>& attributes) {
    out += "\"attributes\":[";
    for (std::size_t i = 0; i < attributes.size(); ++i) {
        if (i > 0) out += ',';
        out += "{\"key\":";
        json_string(out, attributes[i].key);
        out += ",\"value\":";
        std::visit([&](const auto& value) { json_any(out, value); }, attributes[i].value);
        out += '}';
    }
    out += ']';
}

void json_span(std::string& out, const Span& span) {
    out += '{';
    if (valid_id(span.trace_id, 16)) out += "\"traceId\":\"" + span.trace_id + "\",";
    if (valid_id(span.span_id, 8)) out += "\"spanId\":\"" + span.span_id + "\",";
    if (valid_id(span.parent_span_id, 8))
        out += "\"parentSpanId\":\"" + span.parent_span_id + "\",";
    out += "\"name\":";
    json_string(out, span.name);
    out += ",\"kind\":" + std::to_string(static_cast<int>(span.kind));
    out += ",\"startTimeUnixNano\":\"" + std::to_string(span.start_ns) + "\"";
    out += ",\"endTimeUnixNano\":\"" + std::to_string(span.end_ns) + "\",";
    json_attributes(out, span.attributes);
    if (span.status != StatusCode::kUnset || !span.status_message.empty()) {
        out += ",\"status\":{\"code\":" + std::to_string(static_cast<int>(span.status));
        if (!span.status_message.empty()) {
            out += ",\"message\":";
            json_string(out, span.status_message);
        }
        out += '}';
    }
    out += '}';
}

std::string encode_json(const std::vector<Span>& spans, const Resource& resource) {
    std::string out = "{\"resourceSpans\":[{\"resource\":{";
    json_attributes(out, resource_attributes(resource));
    out += "},\"scopeSpans\":[{\"scope\":{\"name\":";
    json_string(out, kScopeName);
    out += "},\"spans\":[";
    for (std::size_t i = 0; i < spans.size(); ++i) {
        if (i > 0) out += ',';
        json_span(out, spans[i]);
    }
    out += "]}]}]}";
    return out;
}

}  // namespace

std::string_view content_type(Encoding encoding) noexcept {
    return encoding == Encoding::kJson ? "application/json" : "application/x-protobuf";
}

std::string encode_export_request(const std::vector<Span>& spans, const Resource& resource,
                                  Encoding encoding) {
    return encoding == Encoding::kJson ? encode_json(spans, resource)
                                       : encode_protobuf(spans, resource);
}

}  // namespace glassbox::trace::otel
