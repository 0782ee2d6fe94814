// "Did you mean …?": the nearest of the names a user could have meant, for every place that
// refuses a name (a subcommand, a trace kind, a tool, a configuration key).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace glassbox::base {

// Edits (insert, delete, substitute) that turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `wanted`, compared without case, when it is near enough to be what
// was meant: at most max(2, |wanted| / 4) edits, or `wanted` a prefix of it. The first of equals.
std::optional<std::string> nearest_name(std::string_view wanted,
                                        std::span<const std::string> candidates);

// " (did you mean X?)" for the nearest name, "" when none is near.
std::string did_you_mean(std::string_view wanted, std::span<const std::string> candidates);

}  // namespace glassbox::base
