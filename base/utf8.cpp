// The one UTF-8 validator: an ASCII fast path 8 bytes at a time, then Unicode §3.9's table.
#include "base/utf8.hpp"

#include <cstring>

namespace glassbox::base {

std::optional<std::size_t> find_invalid_utf8(std::string_view text) noexcept {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
        while (i + 8 <= n) {
            std::uint64_t word = 0;
            std::memcpy(&word, s + i, 8);
            if ((word & 0x8080808080808080ULL) != 0) break;
            i += 8;
        }
        if (i >= n) break;
        const unsigned char c = s[i];
        if (c < 0x80U) {
            ++i;
            continue;
        }
        std::size_t length = 0;
        unsigned char low = 0x80U;
        unsigned char high = 0xBFU;
        if (c >= 0xC2U && c <= 0xDFU) {
            length = 2;
        } else if (c >= 0xE0U && c <= 0xEFU) {
            length = 3;
            if (c == 0xE0U) low = 0xA0U;   // overlong
            if (c == 0xEDU) high = 0x9FU;  // surrogates
        } else if (c >= 0xF0U && c <= 0xF4U) {
            length = 4;
            if (c == 0xF0U) low = 0x90U;   // overlong
            if (c == 0xF4U) high = 0x8FU;  // above U+10FFFF
        } else {
            return i;
        }
        if (i + length > n || s[i + 1] < low || s[i + 1] > high) return i;
        for (std::size_t k = 2; k < length; ++k) {
            if ((s[i + k] & 0xC0U) != 0x80U) return i;
        }
        i += length;
    }
    return std::nullopt;
}

std::uint64_t count_code_points(std::string_view utf8_text) noexcept {
    std::uint64_t n = 0;
    for (const char ch : utf8_text) n += (static_cast<unsigned char>(ch) & 0xC0U) == 0x80U ? 0 : 1;
    return n;
}

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) noexcept {
    if (text.size() <= max_bytes) return text;
    std::size_t cut = max_bytes;
    // text[cut] is the first byte left out: while it continues a sequence, the sequence it
    // belongs to began inside the prefix and goes out with it.
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) --cut;
    return text.substr(0, cut);
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

int hex4(const char* p) noexcept {
    int value = 0;
    for (int i = 0; i < 4; ++i) {
        const char c = p[i];
        int digit = -1;
        if (c >= '0' && c <= '9')
            digit = c - '0';
        else if (c >= 'a' && c <= 'f')
            digit = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            digit = c - 'A' + 10;
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

std::string printable_utf8(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t bad = find_invalid_utf8(text.substr(i)).value_or(text.size() - i) + i;
        // The well-formed run [i, bad): only its ASCII controls need escaping.
        for (; i < bad; ++i) {
            const auto c = static_cast<unsigned char>(text[i]);
            if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7F) {
                out += "\\x";
                out += kHex[c >> 4];
                out += kHex[c & 0xF];
            } else {
                out += static_cast<char>(c);
            }
        }
        if (i < text.size()) {
            const auto c = static_cast<unsigned char>(text[i]);
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
            ++i;
        }
    }
    return out;
}

}  // namespace glassbox::base
