// Enum values named once: one table of (value, name) pairs, read both ways.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace glassbox::base {

template <typename E>
using EnumName = std::pair<E, std::string_view>;

// The value that `names` calls `name`, if any.
template <typename E, std::size_t N>
constexpr std::optional<E> enum_from_name(const EnumName<E> (&names)[N],
                                          std::string_view name) noexcept {
    for (const auto& entry : names)
        if (entry.second == name) return entry.first;
    return std::nullopt;
}

// The name `names` gives `value`; the first entry's name for a value not in the table.
template <typename E, std::size_t N>
constexpr std::string_view enum_name(const EnumName<E> (&names)[N], E value) noexcept {
    for (const auto& entry : names)
        if (entry.first == value) return entry.second;
    return names[0].second;
}

}  // namespace glassbox::base
