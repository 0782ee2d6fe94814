// The OTLP request encoder (docs/traces.md, "OpenTelemetry export"): the protobuf bytes of a
// small request checked by hand against the .proto field numbers, and the OTLP/JSON mapping.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "workers/trace_collector/otlp_encode.hpp"

namespace glassbox::trace::otel {
namespace {

using nlohmann::json;

std::string bytes(std::initializer_list<int> values) {
    std::string out;
    for (const int b : values) out += static_cast<char>(b);
    return out;
}

Span small_span() {
    Span span;
    span.trace_id = "0102030405060708090a0b0c0d0e0f10";
    span.span_id = "1112131415161718";
    span.name = "x";
    span.kind = SpanKind::kServer;
    span.start_ns = 1;
    span.end_ns = 2;
    span.attributes.push_back(Attribute{"k", std::int64_t{5}});
    return span;
}

TEST(OtlpEncode, ContentTypes) {
    EXPECT_EQ(content_type(Encoding::kProtobuf), "application/x-protobuf");
    EXPECT_EQ(content_type(Encoding::kJson), "application/json");
}

TEST(OtlpEncode, ProtobufBytesOfOneSmallSpan) {
    Resource resource;
    resource.service_name = "s";
    const std::string got = encode_export_request({small_span()}, resource, Encoding::kProtobuf);

    // Span (60 bytes): trace_id 1 and span_id 2 (bytes), name 5, kind 6 (SERVER = 2),
    // start 7 and end 8 (fixed64, little-endian), attributes 9 (KeyValue: key 1, value 2 =
    // AnyValue int_value 3).
    const std::string span =
        bytes({0x0a, 0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}) +
        bytes({0x12, 0x08, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18}) +
        bytes({0x2a, 0x01, 'x'}) + bytes({0x30, 0x02}) + bytes({0x39, 1, 0, 0, 0, 0, 0, 0, 0}) +
        bytes({0x41, 2, 0, 0, 0, 0, 0, 0, 0}) +
        bytes({0x4a, 0x07, 0x0a, 0x01, 'k', 0x12, 0x02, 0x18, 0x05});
    ASSERT_EQ(span.size(), 60u);
    // Resource (88 bytes): attributes 1, each a KeyValue of a string AnyValue (string_value 1).
    const std::string resource_bytes =
        bytes({0x0a, 0x13, 0x0a, 0x0c}) + "service.name" + bytes({0x12, 0x03, 0x0a, 0x01, 's'}) +
        bytes({0x0a, 0x20, 0x0a, 0x12}) + "telemetry.sdk.name" + bytes({0x12, 0x0a, 0x0a, 0x08}) +
        "glassbox" + bytes({0x0a, 0x1f, 0x0a, 0x16}) + "telemetry.sdk.language" +
        bytes({0x12, 0x05, 0x0a, 0x03}) + "cpp";
    ASSERT_EQ(resource_bytes.size(), 88u);
    // ScopeSpans (74 bytes): scope 1 (InstrumentationScope name 1), spans 2.
    const std::string scope_spans =
        bytes({0x0a, 0x0a, 0x0a, 0x08}) + "glassbox" + bytes({0x12, 0x3c}) + span;
    ASSERT_EQ(scope_spans.size(), 74u);
    // ResourceSpans (166 bytes): resource 1, scope_spans 2; the request: resource_spans 1.
    const std::string resource_spans =
        bytes({0x0a, 0x58}) + resource_bytes + bytes({0x12, 0x4a}) + scope_spans;
    ASSERT_EQ(resource_spans.size(), 166u);
    const std::string expected = bytes({0x0a, 0xa6, 0x01}) + resource_spans;
    EXPECT_EQ(got, expected);
}

TEST(OtlpEncode, ProtobufValuesParentAndStatus) {
    Span span = small_span();
    span.parent_span_id = "a1a2a3a4a5a6a7a8";
    span.attributes = {{"n", std::int64_t{-1}},
                       {"d", 0.5},
                       {"b", true},
                       {"a", std::vector<std::string>{"p", "q"}}};
    span.status = StatusCode::kError;
    span.status_message = "no";
    const std::string got = encode_export_request({span}, Resource{}, Encoding::kProtobuf);
    const auto has = [&](const std::string& part) { return got.find(part) != std::string::npos; };
    // parent_span_id 4
    EXPECT_TRUE(has(bytes({0x22, 0x08, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8})));
    // int64 -1: ten bytes of two's complement varint
    EXPECT_TRUE(has(bytes({0x0a, 0x01, 'n', 0x12, 0x0b, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                           0xff, 0xff, 0xff, 0x01})));
    // double_value 4: 0.5 = 0x3fe0000000000000, little-endian fixed64
    EXPECT_TRUE(has(bytes({0x0a, 0x01, 'd', 0x12, 0x09, 0x21, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f})));
    EXPECT_TRUE(has(bytes({0x0a, 0x01, 'b', 0x12, 0x02, 0x10, 0x01})));  // bool_value 2
    // array_value 5: ArrayValue.values 1, each an AnyValue
    EXPECT_TRUE(has(bytes({0x0a, 0x01, 'a', 0x12, 0x0c, 0x2a, 0x0a, 0x0a, 0x03, 0x0a, 0x01, 'p',
                           0x0a, 0x03, 0x0a, 0x01, 'q'})));
    // status 15: message 2, code 3 (ERROR = 2)
    EXPECT_TRUE(has(bytes({0x7a, 0x06, 0x12, 0x02, 'n', 'o', 0x18, 0x02})));
}

TEST(OtlpEncode, JsonFollowsTheOtlpJsonMapping) {
    Span root = small_span();
    root.attributes = {{"i", std::int64_t{42}},
                       {"d", 0.25},
                       {"b", false},
                       {"s", std::string("q\"uote")},
                       {"ids", std::vector<std::string>{"u1", "u2"}},
                       {"scores", std::vector<double>{0.5, 1.5}}};
    Span child = small_span();
    child.span_id = "2122232425262728";
    child.parent_span_id = root.span_id;
    child.kind = SpanKind::kInternal;
    child.start_ns = 1'790'000'000'000'000'001;
    child.end_ns = 1'790'000'000'000'000'002;
    child.status = StatusCode::kError;
    child.status_message = "boom";
    Resource resource;
    resource.service_name = "svc";
    resource.attributes.push_back({"deployment.environment", std::string("test")});
    const json got = json::parse(encode_export_request({root, child}, resource, Encoding::kJson));

    const json& rs = got.at("resourceSpans").at(0);
    EXPECT_EQ(rs.at("resource").at("attributes"),
              json::parse(R"([{"key":"service.name","value":{"stringValue":"svc"}},
                {"key":"telemetry.sdk.name","value":{"stringValue":"glassbox"}},
                {"key":"telemetry.sdk.language","value":{"stringValue":"cpp"}},
                {"key":"deployment.environment","value":{"stringValue":"test"}}])"));
    const json& ss = rs.at("scopeSpans").at(0);
    EXPECT_EQ(ss.at("scope"), json::parse(R"({"name":"glassbox"})"));
    ASSERT_EQ(ss.at("spans").size(), 2u);
    const json& a = ss.at("spans").at(0);
    EXPECT_EQ(a.at("traceId"), "0102030405060708090a0b0c0d0e0f10");
    EXPECT_EQ(a.at("spanId"), "1112131415161718");
    EXPECT_FALSE(a.contains("parentSpanId"));
    EXPECT_FALSE(a.contains("status"));
    EXPECT_EQ(a.at("name"), "x");
    EXPECT_EQ(a.at("kind"), 2);
    EXPECT_EQ(a.at("startTimeUnixNano"), "1");
    EXPECT_EQ(a.at("endTimeUnixNano"), "2");
    EXPECT_EQ(a.at("attributes"), json::parse(R"([
        {"key":"i","value":{"intValue":"42"}},
        {"key":"d","value":{"doubleValue":0.25}},
        {"key":"b","value":{"boolValue":false}},
        {"key":"s","value":{"stringValue":"q\"uote"}},
        {"key":"ids","value":{"arrayValue":{"values":[{"stringValue":"u1"},{"stringValue":"u2"}]}}},
        {"key":"scores","value":{"arrayValue":{"values":[{"doubleValue":0.5},{"doubleValue":1.5}]}}}
    ])"));
    const json& b = ss.at("spans").at(1);
    EXPECT_EQ(b.at("parentSpanId"), "1112131415161718");
    EXPECT_EQ(b.at("kind"), 1);
    EXPECT_EQ(b.at("startTimeUnixNano"), "1790000000000000001");
    EXPECT_EQ(b.at("status"), json::parse(R"({"code":2,"message":"boom"})"));
}

TEST(OtlpEncode, IdsThatAreNotHexAreLeftOut) {
    Span span = small_span();
    span.trace_id = "not-a-trace-id";
    span.parent_span_id = "123";
    const json got = json::parse(encode_export_request({span}, Resource{}, Encoding::kJson));
    const json& s = got["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    EXPECT_FALSE(s.contains("traceId"));
    EXPECT_FALSE(s.contains("parentSpanId"));
    const std::string pb = encode_export_request({span}, Resource{}, Encoding::kProtobuf);
    EXPECT_EQ(pb.find("not-a-trace-id"), std::string::npos);
}

TEST(OtlpEncode, NoSpansIsAValidEmptyScope) {
    const json got = json::parse(encode_export_request({}, Resource{}, Encoding::kJson));
    EXPECT_TRUE(got["resourceSpans"][0]["scopeSpans"][0]["spans"].empty());
}

}  // namespace
}  // namespace glassbox::trace::otel
