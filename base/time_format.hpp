// xsd:dateTime in UTC: the one formatter and parser every layer uses (explain times, trace
// store columns, document load times, CLI time bounds).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace glassbox::base {

enum class TimePrecision { kSeconds, kMillis };

// Epoch milliseconds to "2025-01-02T03:04:05.678Z" (kMillis) or "2025-01-02T03:04:05Z"
// (kSeconds, the milliseconds dropped). Times before 1970 round towards the earlier second.
std::string format_xsd_datetime_ms(std::int64_t epoch_ms,
                                   TimePrecision precision = TimePrecision::kMillis);

// A system clock time point, formatted as format_xsd_datetime_ms.
std::string format_xsd_datetime(std::chrono::system_clock::time_point time,
                                TimePrecision precision = TimePrecision::kMillis);

// "2025-01-02T03:04:05.678Z" and the other xsd:dateTime forms with a four-digit year (fraction
// optional and cut to milliseconds, Z or ±hh:mm, no zone read as UTC) to epoch milliseconds;
// nullopt if it is not one.
std::optional<std::int64_t> parse_xsd_datetime_ms(std::string_view text) noexcept;

// An age or interval such as "90s", "15m", "12h", "30d" or "2w" (1-9 digits, then s, m, h, d or
// w) to milliseconds; nullopt if it is not one (no sign, no space, no other unit, not 0).
std::optional<std::int64_t> parse_duration_ms(std::string_view text) noexcept;

// Whether `text` is an xsd:dateTime lexical form, [-]YYYY-MM-DDThh:mm:ss[.s+][Z|(+|-)hh:mm]
// (any number of year digits from four, any fraction): a check of the form, not of the calendar.
bool is_xsd_datetime(std::string_view text) noexcept;

}  // namespace glassbox::base
