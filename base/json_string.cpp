// The JSON string writer: eight bytes at a time through plain ASCII.
#include "base/json_string.hpp"

#include <cstdint>
#include <cstring>

#include "base/utf8.hpp"

namespace glassbox::base {

namespace {

constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
constexpr std::uint64_t kHigh = 0x8080808080808080ULL;

// Whether any of the 8 bytes of `word` is not plain printable ASCII: a control character, '"',
// '\\' or a byte of a multi-byte UTF-8 sequence. It may say yes for a word that is plain (the
// byte loop then decides), never no for one that is not.
bool maybe_special(std::uint64_t word) noexcept {
    const auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHigh; };
    const std::uint64_t control = (word - 0x20 * kOnes) & ~word & kHigh;
    return (control | (word & kHigh) | has_zero(word ^ ('"' * kOnes)) |
            has_zero(word ^ ('\\' * kOnes))) != 0;
}

}  // namespace

// One pass, eight bytes at a time through plain ASCII (nearly all of an explain message: IRIs);
// the UTF-8 check runs only for a string that has a non-ASCII byte.
bool append_json_string(std::string& out, std::string_view value) {
    static constexpr char kHex[] = "0123456789abcdef";
    const std::size_t start = out.size();
    const char* const text = value.data();
    const std::size_t size = value.size();
    out += '"';
    std::size_t run = 0;  // start of the bytes not yet copied
    bool utf8_checked = false;
    std::size_t i = 0;
    while (i < size) {
        std::size_t take = 8;
        std::uint64_t word = 'a' * kOnes;  // a short tail is padded with plain bytes
        if (size - i >= 8) {
            std::memcpy(&word, text + i, 8);
        } else {
            take = size - i;
            std::memcpy(&word, text + i, take);
        }
        if (!maybe_special(word)) {
            i += take;
            continue;
        }
        for (const std::size_t end = i + take; i < end; ++i) {
            const auto c = static_cast<unsigned char>(text[i]);
            if (c >= 0x80) {
                if (!utf8_checked && find_invalid_utf8(value)) {
                    out.resize(start);
                    return false;
                }
                utf8_checked = true;
                continue;
            }
            if (c >= 0x20 && c != '"' && c != '\\') continue;
            out.append(text + run, i - run);
            run = i + 1;
            if (const std::string_view e = short_escape(c); !e.empty()) {
                out += e;
            } else {
                out += "\\u00";
                out += kHex[c >> 4];
                out += kHex[c & 0xF];
            }
        }
    }
    out.append(text + run, size - run);
    out += '"';
    return true;
}

}  // namespace glassbox::base
