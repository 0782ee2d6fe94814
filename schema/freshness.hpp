// Freshness of knowledge sources (docs/knowledge.md §3): a collection's revalidation age
// (`max_age`), a source's own date, and whether a source is past that age at a given time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/messages.hpp"

namespace glassbox::schema {

using FreshnessClock = std::chrono::system_clock;

// A revalidation age: 1-9 digits then s, m, h, d or w ("90d", "12h", "2w"); InvalidRequest
// naming the text and the form otherwise (no sign, space, fraction, other unit, or 0).
base::Result<std::chrono::seconds> parse_max_age(std::string_view text);

// The age in its largest whole unit ("90d", "2w", "36h"): parse_max_age reads it back.
std::string format_max_age(std::chrono::seconds age);

// A source's own date as epoch milliseconds: an xsd:date ("2020-01-01", a zone allowed, the day
// from its midnight) or an xsd:dateTime; nullopt for anything else.
std::optional<std::int64_t> parse_source_date_ms(std::string_view text) noexcept;

// How old a source is at `now`: from its own date when that parses, else from loaded_at.
struct SourceAge {
    std::chrono::milliseconds age{0};
    bool from_date = false;  // the source's own date, not its loading, gave the age
};
std::optional<SourceAge> source_age(std::string_view loaded_at, std::string_view date,
                                    FreshnessClock::time_point now);

// Whether the source is past `max_age` at `now` (its age greater than it). A source whose age is
// not known (neither time parses) is not called stale.
bool is_stale(std::string_view loaded_at, std::string_view date, std::chrono::seconds max_age,
              FreshnessClock::time_point now);

// "400 days", "1 day", "5 hours", "12 minutes", "30 seconds": an age as a reader says it.
std::string describe_age(std::chrono::milliseconds age);

// The note an answer ends with when it cites sources past their revalidation age, one sentence
// per stale citation ("Note: [2] was loaded 400 days ago, past this collection's revalidation age
// of 90d."); "" when no citation is stale.
std::string stale_sources_note(const std::vector<RagCitation>& citations,
                               FreshnessClock::time_point now);

}  // namespace glassbox::schema
