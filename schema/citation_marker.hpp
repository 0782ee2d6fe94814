// Where a citation's "[n]" marker goes in an answer text, the one rule for every place that
// writes markers from spans (the CLI's rendering, the agent passing a RAG tool's text on).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "schema/messages.hpp"

namespace glassbox::schema {

// The byte offset of code point `n` of the UTF-8 `text` (its size when `n` is past the end).
inline std::size_t code_point_byte(std::string_view text, std::uint64_t n) noexcept {
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (seen++ == n) return i;
    }
    return text.size();
}

// The code point of `text` (`code_points` long) where the marker of `span` goes: the span's
// end, or before its sentence's closing stop when the span ends with it ("rebuilt [1]." not
// "rebuilt. [1]"; an ellipsis or "?!" keeps the marker after it). nullopt for a span that ends
// at 0 or past the text.
inline std::optional<std::uint64_t> marker_point(std::string_view text, std::uint64_t code_points,
                                                 const AnswerSpan& span) noexcept {
    if (span.end == 0 || span.end > code_points) return std::nullopt;
    const auto stop = [](char c) { return c == '.' || c == '!' || c == '?'; };
    std::uint64_t at = span.end;
    const std::size_t last = code_point_byte(text, at - 1);
    if (at > span.start + 1 && stop(text[last]) && !(last > 0 && stop(text[last - 1]))) --at;
    return at;
}

}  // namespace glassbox::schema
