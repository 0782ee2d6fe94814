// UTF-8 checks every component needs: where text stops being well-formed, and how many code
// points it holds (the unit of every character offset in glassbox).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace glassbox::base {

// The byte offset of the first byte that does not begin a well-formed UTF-8 sequence (overlong
// forms, surrogates and values above U+10FFFF are ill-formed, as in Unicode §3.9), or nullopt.
std::optional<std::size_t> find_invalid_utf8(std::string_view text) noexcept;

// The same as an offset: the first ill-formed byte, or std::string_view::npos when it is all
// well formed (for callers that carry offsets).
inline std::size_t invalid_utf8_at(std::string_view text) noexcept {
    return find_invalid_utf8(text).value_or(std::string_view::npos);
}

// Code points in well-formed UTF-8 (counts the bytes that are not continuation bytes).
std::uint64_t count_code_points(std::string_view utf8_text) noexcept;

// The longest prefix of `text` of at most `max_bytes` bytes that does not end inside a UTF-8
// sequence (a cut never leaves half a character behind).
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) noexcept;

// Appends code point `cp` (at most U+10FFFF, not a surrogate) as UTF-8.
void append_utf8(std::string& out, std::uint32_t cp);

// `text` made safe to quote in an error message (issue 16: every error text is valid UTF-8):
// well-formed UTF-8 is kept, each byte of an ill-formed sequence becomes "\xFF" (upper-case
// hex) and each ASCII control character but tab and newline "\x01". Text that has none
// of these is returned unchanged, so applying it twice changes nothing more.
std::string printable_utf8(std::string_view text);

// The value of the four hex digits at `p` (four chars must be readable), or -1: a JSON \u escape.
int hex4(const char* p) noexcept;

}  // namespace glassbox::base
