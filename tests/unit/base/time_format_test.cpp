// xsd:dateTime formatting and parsing: the forms the trace store, the CLI and the store accept.
#include "base/time_format.hpp"

#include <gtest/gtest.h>

namespace glassbox::base {
namespace {

constexpr std::int64_t kT0 = 1'790'000'000'000;  // 2026-09-21, epoch ms

TEST(TimeFormat, ParsesXsdForms) {
    EXPECT_EQ(parse_xsd_datetime_ms("1970-01-01T00:00:00Z"), 0);
    EXPECT_EQ(parse_xsd_datetime_ms("1970-01-01T00:00:01.5Z"), 1500);
    EXPECT_EQ(parse_xsd_datetime_ms("1970-01-01T00:00:01.123456Z"), 1123);
    EXPECT_EQ(parse_xsd_datetime_ms("1970-01-01T01:00:00+01:00"), 0);
    EXPECT_EQ(parse_xsd_datetime_ms("2026-11-22T00:00:00"),
              parse_xsd_datetime_ms("2026-11-22T00:00:00.000Z"));
    EXPECT_FALSE(parse_xsd_datetime_ms("yesterday"));
    EXPECT_FALSE(parse_xsd_datetime_ms("2026-13-01T00:00:00Z"));
    EXPECT_FALSE(parse_xsd_datetime_ms("2026-11-22T00:00:00Zjunk"));
    EXPECT_FALSE(parse_xsd_datetime_ms("2026-11-22T00:00:00."));
    EXPECT_FALSE(parse_xsd_datetime_ms("2026-11-22T00:00:00+15:00"));
}

TEST(TimeFormat, FormatsMillisAndSeconds) {
    EXPECT_EQ(format_xsd_datetime_ms(kT0 + 7), "2026-09-21T14:13:20.007Z");
    EXPECT_EQ(format_xsd_datetime_ms(kT0 + 7, TimePrecision::kSeconds), "2026-09-21T14:13:20Z");
    EXPECT_EQ(format_xsd_datetime_ms(-1), "1969-12-31T23:59:59.999Z");
    EXPECT_EQ(parse_xsd_datetime_ms(format_xsd_datetime_ms(kT0 + 7)), kT0 + 7);
    const auto tp = std::chrono::system_clock::time_point(std::chrono::milliseconds(kT0 + 999));
    EXPECT_EQ(format_xsd_datetime(tp), "2026-09-21T14:13:20.999Z");
}

TEST(TimeFormat, RecognisesTheLexicalForm) {
    EXPECT_TRUE(is_xsd_datetime("2026-11-22T10:00:00Z"));
    EXPECT_TRUE(is_xsd_datetime("-12026-11-22T10:00:00.5+02:00"));
    EXPECT_TRUE(is_xsd_datetime("2026-11-22T10:00:00"));
    EXPECT_FALSE(is_xsd_datetime("26-11-22T10:00:00Z"));
    EXPECT_FALSE(is_xsd_datetime("2026-11-22 10:00:00Z"));
    EXPECT_FALSE(is_xsd_datetime("2026-11-22T10:00:00.Z"));
    EXPECT_FALSE(is_xsd_datetime("2026-11-22T10:00:00Z "));
    // Every formatted time is one.
    EXPECT_TRUE(is_xsd_datetime(format_xsd_datetime_ms(kT0)));
    EXPECT_TRUE(is_xsd_datetime(format_xsd_datetime_ms(kT0, TimePrecision::kSeconds)));
}

}  // namespace
}  // namespace glassbox::base

namespace glassbox::base {
namespace {

TEST(Duration, ParsesAgesWithAUnit) {
    EXPECT_EQ(parse_duration_ms("90s"), 90'000);
    EXPECT_EQ(parse_duration_ms("90m"), 90 * 60'000);
    EXPECT_EQ(parse_duration_ms("12h"), 12 * 3'600'000);
    EXPECT_EQ(parse_duration_ms("30d"), std::int64_t{30} * 86'400'000);
    EXPECT_EQ(parse_duration_ms("2w"), std::int64_t{14} * 86'400'000);
    EXPECT_EQ(parse_duration_ms("999999999w"), std::int64_t{999'999'999} * 604'800'000);
    for (const char* bad :
         {"", "d", "30", "0d", "-1d", "1.5h", "30 d", "30D", "30y", "1234567890s"})
        EXPECT_FALSE(parse_duration_ms(bad)) << bad;
}

}  // namespace
}  // namespace glassbox::base
