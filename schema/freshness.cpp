// Revalidation ages, source dates and staleness: pure functions of their inputs and a clock.
#include "schema/freshness.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "base/time_format.hpp"

namespace glassbox::schema {

using base::ErrorType;
using base::make_error;

namespace {

struct AgeUnit {
    char letter;
    std::int64_t seconds;
};
constexpr std::array<AgeUnit, 5> kUnits{
    {{'w', 604'800}, {'d', 86'400}, {'h', 3'600}, {'m', 60}, {'s', 1}}};

std::string plural(std::int64_t n, std::string_view unit) {
    return std::to_string(n) + " " + std::string(unit) + (n == 1 ? "" : "s");
}

}  // namespace

base::Result<std::chrono::seconds> parse_max_age(std::string_view text) {
    const auto ms = base::parse_duration_ms(text);
    if (!ms) {
        return make_error(ErrorType::kInvalidRequest,
                          "max_age \"" + std::string(text) +
                              "\" is not a duration: 1-9 digits (not 0) then s, m, h, d or w, "
                              "e.g. 90d, 12h, 2w");
    }
    return std::chrono::seconds{*ms / 1'000};
}

std::string format_max_age(std::chrono::seconds age) {
    const std::int64_t s = age.count();
    if (s <= 0) return "0s";
    for (const auto& unit : kUnits) {
        if (s % unit.seconds == 0) return std::to_string(s / unit.seconds) + unit.letter;
    }
    return std::to_string(s) + "s";
}

std::optional<std::int64_t> parse_source_date_ms(std::string_view text) noexcept {
    if (text.size() >= 10 && (text.size() == 10 || text[10] != 'T')) {
        // xsd:date: YYYY-MM-DD then an optional zone; the day begins at its midnight.
        std::string as_time(text.substr(0, 10));
        as_time += "T00:00:00";
        as_time += text.substr(10);
        return base::parse_xsd_datetime_ms(as_time);
    }
    return base::parse_xsd_datetime_ms(text);
}

std::optional<SourceAge> source_age(std::string_view loaded_at, std::string_view date,
                                    FreshnessClock::time_point now) {
    const std::int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    if (const auto dated = parse_source_date_ms(date))
        return SourceAge{std::chrono::milliseconds{now_ms - *dated}, true};
    if (const auto loaded = base::parse_xsd_datetime_ms(loaded_at))
        return SourceAge{std::chrono::milliseconds{now_ms - *loaded}, false};
    return std::nullopt;
}

bool is_stale(std::string_view loaded_at, std::string_view date, std::chrono::seconds max_age,
              FreshnessClock::time_point now) {
    const auto age = source_age(loaded_at, date, now);
    return age && age->age > std::chrono::duration_cast<std::chrono::milliseconds>(max_age);
}

std::string describe_age(std::chrono::milliseconds age) {
    const std::int64_t s = std::max<std::int64_t>(0, age.count() / 1'000);
    if (s >= 86'400) return plural(s / 86'400, "day");
    if (s >= 3'600) return plural(s / 3'600, "hour");
    if (s >= 60) return plural(s / 60, "minute");
    return plural(s, "second");
}

std::string stale_sources_note(const std::vector<RagCitation>& citations,
                               FreshnessClock::time_point now) {
    std::string note;
    for (const auto& c : citations) {
        if (!c.stale || !*c.stale) continue;
        const auto age = source_age(c.loaded_at.value_or(""), c.date.value_or(""), now);
        if (!age) continue;
        note += note.empty() ? "Note: [" : " [";
        note += std::to_string(c.n) + "] ";
        note += age->from_date ? "dates from " + *c.date + " (" + describe_age(age->age) + " ago)"
                               : "was loaded " + describe_age(age->age) + " ago";
        note += ", past this collection's revalidation age of " + c.max_age.value_or("?") + ".";
    }
    return note;
}

}  // namespace glassbox::schema
