// Edit distance and the nearest name.
#include "base/spelling.hpp"

#include <algorithm>
#include <vector>

#include "base/ascii.hpp"

namespace glassbox::base {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] =
                std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::optional<std::string> nearest_name(std::string_view wanted,
                                        std::span<const std::string> candidates) {
    const std::string w = ascii_lower(wanted);
    if (w.empty()) return std::nullopt;
    std::optional<std::string> best;
    std::size_t best_distance = 0;
    for (const auto& candidate : candidates) {
        const std::string c = ascii_lower(candidate);
        const std::size_t d = c.starts_with(w) ? 0 : edit_distance(w, c);
        if (!best || d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    if (best && best_distance <= std::max<std::size_t>(2, w.size() / 4)) return best;
    return std::nullopt;
}

std::string did_you_mean(std::string_view wanted, std::span<const std::string> candidates) {
    const auto near = nearest_name(wanted, candidates);
    return near ? " (did you mean " + *near + "?)" : std::string();
}

}  // namespace glassbox::base
