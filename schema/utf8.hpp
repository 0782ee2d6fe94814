// UTF-8 checks every component needs: where text stops being well-formed, and how many code
// points it holds (the unit of every character offset in glassbox).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace glassbox::schema {

// The byte offset of the first byte that does not begin a well-formed UTF-8 sequence (overlong
// forms, surrogates and values above U+10FFFF are ill-formed, as in Unicode §3.9), or nullopt.
std::optional<std::size_t> find_invalid_utf8(std::string_view text) noexcept;

// Code points in well-formed UTF-8 (counts the bytes that are not continuation bytes).
std::uint64_t count_code_points(std::string_view utf8_text) noexcept;

}  // namespace glassbox::schema
