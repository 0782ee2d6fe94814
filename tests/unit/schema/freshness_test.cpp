// Freshness (issue 35): revalidation ages parsed strictly, source dates, and staleness on an
// injected clock.
#include "schema/freshness.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

#include "base/time_format.hpp"

namespace glassbox::schema {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

// A fixed instant: tests never read the real clock.
FreshnessClock::time_point at(const char* datetime) {
    const auto ms = base::parse_xsd_datetime_ms(datetime);
    EXPECT_TRUE(ms) << datetime;
    return FreshnessClock::time_point{std::chrono::milliseconds{ms.value_or(0)}};
}

TEST(MaxAgeTest, ParsesEachUnit) {
    EXPECT_EQ(*parse_max_age("90d"), hours{90 * 24});
    EXPECT_EQ(*parse_max_age("12h"), hours{12});
    EXPECT_EQ(*parse_max_age("2w"), hours{14 * 24});
    EXPECT_EQ(*parse_max_age("30m"), seconds{1'800});
    EXPECT_EQ(*parse_max_age("45s"), seconds{45});
}

TEST(MaxAgeTest, RefusesAnythingElseWithATypedErrorNamingTheText) {
    for (const char* bad : {"", "d", "0d", "-1d", "+1d", "1.5d", "1 d", " 1d", "1d ", "1y", "1D",
                            "90", "1dd", "1234567890d", "ninety days"}) {
        const auto age = parse_max_age(bad);
        ASSERT_FALSE(age) << "accepted \"" << bad << "\"";
        EXPECT_EQ(age.error().type, base::ErrorType::kInvalidRequest) << bad;
        EXPECT_NE(age.error().message.find(std::string("\"") + bad + "\""), std::string::npos)
            << age.error().message;
    }
}

TEST(MaxAgeTest, FormatsInTheLargestWholeUnitAndReadsBack) {
    EXPECT_EQ(format_max_age(hours{90 * 24}), "90d");
    EXPECT_EQ(format_max_age(hours{14 * 24}), "2w");
    EXPECT_EQ(format_max_age(hours{36}), "36h");
    EXPECT_EQ(format_max_age(seconds{90}), "90s");
    for (const char* text : {"90d", "2w", "36h", "5m", "7s", "1d"})
        EXPECT_EQ(format_max_age(*parse_max_age(text)), text);
}

TEST(SourceDateTest, ReadsDatesAndDateTimesAndNothingElse) {
    EXPECT_EQ(parse_source_date_ms("1970-01-02"), 86'400'000);
    EXPECT_EQ(parse_source_date_ms("1970-01-02Z"), 86'400'000);
    EXPECT_EQ(parse_source_date_ms("1970-01-02+01:00"), 86'400'000 - 3'600'000);
    EXPECT_EQ(parse_source_date_ms("1970-01-01T00:00:01Z"), 1'000);
    for (const char* bad : {"", "yesterday", "2020", "2020-01", "01/02/2020", "2020-01-01 x"})
        EXPECT_FALSE(parse_source_date_ms(bad)) << bad;
}

TEST(StalenessTest, AnOwnDateDecidesBeforeTheLoadTime) {
    const auto now = at("2026-11-30T12:00:00Z");
    // Loaded an hour ago, but dated 2020: stale under a day's revalidation age.
    EXPECT_TRUE(is_stale("2026-11-30T11:00:00Z", "2020-01-01", hours{24}, now));
    // Loaded long ago, but its own date is recent: fresh.
    EXPECT_FALSE(is_stale("2020-01-01T00:00:00Z", "2026-11-30", hours{24}, now));
}

TEST(StalenessTest, WithoutADateTheLoadTimeDecidesAndTheBoundaryIsNotStale) {
    const auto now = at("2026-11-30T12:00:00Z");
    EXPECT_FALSE(is_stale("2026-11-29T12:00:00Z", "", hours{24}, now)) << "exactly max_age old";
    EXPECT_TRUE(is_stale("2026-11-29T11:59:59Z", "", hours{24}, now));
    EXPECT_FALSE(is_stale("2026-11-30T11:00:00Z", "not a date", hours{24}, now))
        << "a date that does not parse falls back to the load time";
    EXPECT_FALSE(is_stale("", "", hours{24}, now)) << "an age not known is not called stale";
}

TEST(StalenessTest, TheNoteNamesEachStaleCitationAfterTheAnswer) {
    const auto now = at("2026-11-30T00:00:00Z");
    RagCitation fresh;
    fresh.n = 1;
    fresh.loaded_at = "2026-11-29T12:00:00Z";
    fresh.max_age = "1d";
    fresh.stale = false;
    RagCitation loaded_long_ago = fresh;
    loaded_long_ago.n = 2;
    loaded_long_ago.loaded_at = "2025-10-26T00:00:00Z";
    loaded_long_ago.max_age = "90d";
    loaded_long_ago.stale = true;
    RagCitation dated = fresh;
    dated.n = 3;
    dated.date = "2020-01-01";
    dated.stale = true;
    EXPECT_EQ(stale_sources_note({fresh}, now), "");
    EXPECT_EQ(stale_sources_note({fresh, loaded_long_ago, dated}, now),
              "Note: [2] was loaded 400 days ago, past this collection's revalidation age of 90d. "
              "[3] dates from 2020-01-01 (2525 days ago), past this collection's revalidation "
              "age of 1d.");
}

TEST(StalenessTest, AgesAreSaidInTheirLargestUnit) {
    EXPECT_EQ(describe_age(std::chrono::milliseconds{86'400'000}), "1 day");
    EXPECT_EQ(describe_age(std::chrono::hours{49}), "2 days");
    EXPECT_EQ(describe_age(std::chrono::hours{5}), "5 hours");
    EXPECT_EQ(describe_age(std::chrono::minutes{1}), "1 minute");
    EXPECT_EQ(describe_age(std::chrono::seconds{30}), "30 seconds");
}

}  // namespace
}  // namespace glassbox::schema
