// OpenTelemetry ids derived from run UUIDs and step IRIs.
#include "schema/otel_ids.hpp"

#include <gtest/gtest.h>

#include "schema/explain_uris.hpp"

namespace glassbox::schema::otel {
namespace {

TEST(OtelIds, TraceIdIsTheRunUuidWithoutDashes) {
    const auto run = explain::RunUris::from_uuid("4216e2f4-9b47-4ce7-98e1-1776db7914f9");
    ASSERT_TRUE(run.has_value());
    EXPECT_EQ(trace_id_of(run->question()), "4216e2f49b474ce798e11776db7914f9");
    // Any URI of the run names the same trace.
    EXPECT_EQ(trace_id_of(run->analysis(3)), "4216e2f49b474ce798e11776db7914f9");
}

TEST(OtelIds, NoTraceIdForAUriNoRunBuilt) {
    EXPECT_FALSE(trace_id_of("urn:example:thing").has_value());
    EXPECT_FALSE(trace_id_of("").has_value());
    EXPECT_FALSE(trace_id_of("urn:glassbox:not-a-uuid:question").has_value());
}

TEST(OtelIds, SpanIdsAreStableSixteenHexDigitsAndDiffer) {
    const std::string a = span_id_of("urn:glassbox:4216e2f4-9b47-4ce7-98e1-1776db7914f9:question");
    const std::string b = span_id_of("urn:glassbox:4216e2f4-9b47-4ce7-98e1-1776db7914f9:focus");
    EXPECT_EQ(a.size(), 16u);
    EXPECT_NE(a, b);
    EXPECT_EQ(a, span_id_of("urn:glassbox:4216e2f4-9b47-4ce7-98e1-1776db7914f9:question"));
    EXPECT_NE(a, std::string(16, '0'));
    // FNV-1a 64 of "a" is the published test vector.
    EXPECT_EQ(span_id_of("a"), "af63dc4c8601ec8c");
}

TEST(OtelIds, ValidTraceIdFollowsW3cTraceContext) {
    EXPECT_TRUE(valid_trace_id("4216e2f49b474ce798e11776db7914f9"));
    EXPECT_FALSE(valid_trace_id(std::string(32, '0')));
    EXPECT_FALSE(valid_trace_id("4216E2F49B474CE798E11776DB7914F9"));
    EXPECT_FALSE(valid_trace_id("4216e2f49b474ce798e11776db7914f"));
}

}  // namespace
}  // namespace glassbox::schema::otel
