// xsd:dateTime formatting and parsing (UTC, millisecond precision).
#include "base/time_format.hpp"

#include <array>
#include <cstdio>
#include <ctime>

namespace glassbox::base {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

}  // namespace

std::string format_xsd_datetime_ms(std::int64_t epoch_ms, TimePrecision precision) {
    const std::int64_t secs = (epoch_ms >= 0 ? epoch_ms : epoch_ms - 999) / 1000;
    const auto millis = static_cast<int>(epoch_ms - secs * 1000);
    const auto t = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::array<char, 96> buf{};  // room for any int the format could print
    if (precision == TimePrecision::kMillis) {
        std::snprintf(buf.data(), buf.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                      tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                      tm.tm_sec, millis);
    } else {
        std::snprintf(buf.data(), buf.size(), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                      tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    }
    return buf.data();
}

std::string format_xsd_datetime(std::chrono::system_clock::time_point time,
                                TimePrecision precision) {
    const auto ms = std::chrono::floor<std::chrono::milliseconds>(time.time_since_epoch());
    return format_xsd_datetime_ms(static_cast<std::int64_t>(ms.count()), precision);
}

std::optional<std::int64_t> parse_xsd_datetime_ms(std::string_view s) noexcept {
    const auto digits = [&](std::size_t at, std::size_t n) -> std::optional<unsigned> {
        if (at + n > s.size()) return std::nullopt;
        unsigned v = 0;
        for (std::size_t i = at; i < at + n; ++i) {
            if (s[i] < '0' || s[i] > '9') return std::nullopt;
            v = v * 10 + static_cast<unsigned>(s[i] - '0');
        }
        return v;
    };
    // YYYY-MM-DDTHH:MM:SS
    if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
        s[13] != ':' || s[16] != ':') {
        return std::nullopt;
    }
    const auto year = digits(0, 4), month = digits(5, 2), day = digits(8, 2);
    const auto hour = digits(11, 2), minute = digits(14, 2), second = digits(17, 2);
    if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
    if (*month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 24 || *minute > 59 ||
        *second > 60) {
        return std::nullopt;
    }
    std::size_t at = 19;
    std::int64_t millis = 0;
    if (at < s.size() && s[at] == '.') {
        ++at;
        std::size_t n = 0;
        std::int64_t scale = 100;
        while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
            if (n < 3) millis += (s[at] - '0') * scale;
            scale /= 10;
            ++n;
            ++at;
        }
        if (n == 0) return std::nullopt;
    }
    std::int64_t offset_min = 0;
    if (at < s.size()) {
        if ((s[at] == 'Z' || s[at] == 'z') && at + 1 == s.size()) {
            ++at;
        } else if ((s[at] == '+' || s[at] == '-') && at + 6 == s.size() && s[at + 3] == ':') {
            const auto oh = digits(at + 1, 2), om = digits(at + 4, 2);
            if (!oh || !om || *oh > 14 || *om > 59) return std::nullopt;
            offset_min = (s[at] == '-' ? -1 : 1) * static_cast<std::int64_t>(*oh * 60 + *om);
            at += 6;
        } else {
            return std::nullopt;
        }
    }
    const std::int64_t days = days_from_civil(*year, *month, *day);
    const std::int64_t secs = days * 86400 + std::int64_t{*hour} * 3600 +
                              std::int64_t{*minute} * 60 + *second - offset_min * 60;
    return secs * 1000 + millis;
}

bool is_xsd_datetime(std::string_view s) noexcept {
    const auto digits = [&](std::size_t at, std::size_t count) {
        if (at + count > s.size()) return false;
        for (std::size_t i = at; i < at + count; ++i) {
            if (s[i] < '0' || s[i] > '9') return false;
        }
        return true;
    };
    std::size_t p = s.starts_with('-') ? 1 : 0;
    std::size_t year = 0;
    while (p + year < s.size() && s[p + year] >= '0' && s[p + year] <= '9') ++year;
    if (year < 4) return false;
    p += year;
    if (!(p < s.size() && s[p] == '-' && digits(p + 1, 2) && p + 3 < s.size() && s[p + 3] == '-' &&
          digits(p + 4, 2) && p + 6 < s.size() && s[p + 6] == 'T' && digits(p + 7, 2) &&
          p + 9 < s.size() && s[p + 9] == ':' && digits(p + 10, 2) && p + 12 < s.size() &&
          s[p + 12] == ':' && digits(p + 13, 2))) {
        return false;
    }
    p += 15;
    if (p < s.size() && s[p] == '.') {
        const std::size_t start = ++p;
        while (p < s.size() && s[p] >= '0' && s[p] <= '9') ++p;
        if (p == start) return false;
    }
    if (p == s.size()) return true;
    if (s[p] == 'Z') return p + 1 == s.size();
    return (s[p] == '+' || s[p] == '-') && digits(p + 1, 2) && p + 3 < s.size() &&
           s[p + 3] == ':' && digits(p + 4, 2) && p + 6 == s.size();
}

std::optional<std::int64_t> parse_duration_ms(std::string_view text) noexcept {
    if (text.size() < 2 || text.size() > 10) return std::nullopt;
    std::int64_t n = 0;
    for (const char c : text.substr(0, text.size() - 1)) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + (c - '0');
    }
    if (n == 0) return std::nullopt;
    switch (text.back()) {
        case 's':
            return n * 1'000;
        case 'm':
            return n * 60'000;
        case 'h':
            return n * 3'600'000;
        case 'd':
            return n * 86'400'000;
        case 'w':
            return n * 604'800'000;
        default:
            return std::nullopt;
    }
}

}  // namespace glassbox::base
