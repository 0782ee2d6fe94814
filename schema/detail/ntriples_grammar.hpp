// Character classes of the N-Triples / N-Quads grammar (PN_CHARS_BASE, PN_CHARS_U, PN_CHARS)
// and a UTF-8 decoder for well-formed text, for the N-Quads reader and the N-Triples writer.
#pragma once

#include <cstddef>
#include <string_view>

namespace glassbox::schema::detail {

// Decodes the code point at text[i] (the text is well-formed UTF-8), advancing i.
inline char32_t next_code_point(std::string_view text, std::size_t& i) noexcept {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; k < len && i + k < text.size(); ++k) {
        cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    }
    i += len;
    return cp;
}

inline bool pn_chars_base(char32_t c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= 0xC0 && c <= 0xD6) ||
           (c >= 0xD8 && c <= 0xF6) || (c >= 0xF8 && c <= 0x2FF) || (c >= 0x370 && c <= 0x37D) ||
           (c >= 0x37F && c <= 0x1FFF) || (c >= 0x200C && c <= 0x200D) ||
           (c >= 0x2070 && c <= 0x218F) || (c >= 0x2C00 && c <= 0x2FEF) ||
           (c >= 0x3001 && c <= 0xD7FF) || (c >= 0xF900 && c <= 0xFDCF) ||
           (c >= 0xFDF0 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0xEFFFF);
}
inline bool pn_chars_u(char32_t c) noexcept { return pn_chars_base(c) || c == '_' || c == ':'; }
inline bool pn_chars(char32_t c) noexcept {
    return pn_chars_u(c) || c == '-' || (c >= '0' && c <= '9') || c == 0xB7 ||
           (c >= 0x300 && c <= 0x36F) || (c >= 0x203F && c <= 0x2040);
}

}  // namespace glassbox::schema::detail
