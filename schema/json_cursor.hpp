// The one reader of JSON text besides nlohmann's parser: a validating cursor that builds no tree,
// shared by the fast decoders (schema/json_fast) and the trace collector's explain scan.
//
// It checks what it reads as strictly as nlohmann's parser (RFC 8259 grammar, well-formed UTF-8,
// escapes with paired surrogates) and answers false for anything it does not accept; its users
// then hand the whole text to the tree-based decoder, which gives the result or the error. So a
// false may be over-cautious (an exponent in a skipped number, an escaped key), but what it
// accepts nlohmann accepts too.
#pragma once

#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/utf8.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::schema {

// Values nested deeper than this inside skipped values are refused (left to the tree decoder,
// which refuses text deeper than kMaxJsonDepth with its typed error). The cursor's recursion is
// bounded by this constant (or a smaller bound its user gives), never by the text.
inline constexpr int kMaxJsonSkipDepth = 64;
static_assert(static_cast<std::size_t>(kMaxJsonSkipDepth) + 2 <= kMaxJsonDepth);

// A JSON string as it stands in the text: `raw` is the text between the quotes, escapes not yet
// applied (the cursor has checked them).
struct JsonText {
    std::string_view raw;
    bool escaped = false;

    // The string's value: `raw` itself, or its unescaped copy in `scratch` when it has escapes.
    std::string_view value(std::string& scratch) const;
    std::string str() const;
};

// The keys an object has shown, as bit flags. A key seen twice is refused: nlohmann keeps the
// last, the readers leave that to it.
class JsonKeys {
public:
    bool first(unsigned bit) noexcept {
        if ((seen_ & bit) != 0) return false;
        seen_ |= bit;
        return true;
    }
    unsigned seen() const noexcept { return seen_; }

private:
    unsigned seen_ = 0;
};

// Appends the value of `raw`, the inside of a string token JsonCursor accepted.
void append_unescaped(std::string& out, std::string_view raw);

class JsonCursor {
public:
    // `max_skip_depth` (at most kMaxJsonSkipDepth) bounds the nesting skip() accepts.
    explicit JsonCursor(std::string_view text, int max_skip_depth = kMaxJsonSkipDepth) noexcept
        : p_(text.data()), end_(text.data() + text.size()), max_skip_depth_(max_skip_depth) {}

    const char* position() const noexcept { return p_; }

    void ws() noexcept {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
    }
    // Skips whitespace, then consumes `c` if it comes next.
    bool eat(char c) noexcept {
        ws();
        if (p_ < end_ && *p_ == c) {
            ++p_;
            return true;
        }
        return false;
    }
    bool at_end() noexcept {
        ws();
        return p_ == end_;
    }

    // A string token, checked, left escaped.
    bool raw_string(JsonText& out) noexcept;
    // As raw_string, and `token` is the string with its quotes, as it stands in the text.
    bool string_token(JsonText& out, std::string_view& token) noexcept {
        ws();
        const char* start = p_;
        if (!raw_string(out)) return false;
        token = std::string_view(start, static_cast<std::size_t>(p_ - start));
        return true;
    }
    // A string's value.
    bool string(std::string& out) {
        JsonText text;
        if (!raw_string(text)) return false;
        out.clear();
        if (text.escaped) {
            append_unescaped(out, text.raw);
        } else {
            out.append(text.raw);
        }
        return true;
    }

    // A JSON integer that fits std::uint64_t (what the tree decoder reads as unsigned); a
    // fraction or exponent makes it a float there, so it is refused.
    bool uint(std::uint64_t& out) noexcept {
        ws();
        if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
        if (*p_ == '0' && p_ + 1 < end_ && p_[1] >= '0' && p_[1] <= '9') return false;
        const auto [next, ec] = std::from_chars(p_, end_, out);
        if (ec != std::errc{}) return false;
        p_ = next;
        return p_ == end_ || (*p_ != '.' && *p_ != 'e' && *p_ != 'E');
    }

    bool boolean(bool& out) noexcept {
        ws();
        if (literal("true")) {
            out = true;
            return true;
        }
        if (literal("false")) {
            out = false;
            return true;
        }
        return false;
    }

    // A number as the tree decoder's get<double>() gives it (both round correctly). "-0" (an
    // integer zero there, so +0.0) and values beyond double's range are refused.
    bool real(double& out) noexcept {
        ws();
        const char* start = p_;
        std::size_t integer_digits = 0;
        bool exponent = false;
        if (!number(integer_digits, exponent)) return false;
        if (p_ - start == 2 && start[0] == '-' && start[1] == '0') return false;
        const auto [end, ec] = std::from_chars(start, p_, out);
        return ec == std::errc{} && end == p_;
    }

    // {"key": value, ...}: `on_key(key)` reads each value. An escaped key may spell any name,
    // so it is refused (a key is compared as it stands).
    template <typename OnKey>
    bool object(OnKey&& on_key) {
        if (!eat('{')) return false;
        if (eat('}')) return true;
        do {
            std::string_view key;
            if (!plain_key(key) || !eat(':')) return false;
            if (!on_key(key)) return false;
        } while (eat(','));
        return eat('}');
    }

    // [value, ...]: `on_item()` reads each value.
    template <typename OnItem>
    bool array(OnItem&& on_item) {
        if (!eat('[')) return false;
        if (eat(']')) return true;
        do {
            if (!on_item()) return false;
        } while (eat(','));
        return eat(']');
    }

    // Any value, checked and ignored; `depth` counts the levels above it.
    bool skip(int depth = 0);

private:
    // A key without escapes (raw_string's checks, on the short text keys are).
    bool plain_key(std::string_view& out) noexcept {
        ws();
        if (p_ == end_ || *p_ != '"') return false;
        const char* start = ++p_;
        unsigned high = 0;  // the key's bytes OR-ed: bit 7 set when it holds non-ASCII
        while (p_ < end_ && *p_ != '"') {
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '\\' || c < 0x20) return false;
            high |= c;
            ++p_;
        }
        if (p_ == end_) return false;
        out = std::string_view(start, static_cast<std::size_t>(p_ - start));
        ++p_;
        return (high & 0x80U) == 0 || !base::find_invalid_utf8(out);
    }

    // Past the bytes from `p` that are no quote, backslash or control byte, 8 at a time while 8
    // are left (a string of IRIs and labels is mostly such bytes): at the first of those bytes,
    // or where fewer than 8 are left. Bit 7 of `high` is set when a byte passed is 0x80 or more.
    [[gnu::always_inline]] static const char* skip_plain_bytes(const char* p, const char* end,
                                                               unsigned& high) noexcept {
        constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
        constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
        // Bit 7 of a byte of the result is set in the bytes of `x` that are 0 (exact as a
        // whole: nonzero when any byte is).
        const auto zero_byte = [](std::uint64_t x) { return (x - kOnes) & ~x & kHighs; };
        while (end - p >= 8) {
            std::uint64_t word;
            std::memcpy(&word, p, sizeof word);
            const std::uint64_t special = zero_byte(word ^ (kOnes * '"')) |
                                          zero_byte(word ^ (kOnes * '\\')) |
                                          ((word - kOnes * 0x20) & ~word & kHighs);
            if (special != 0) {
                // The lowest flagged byte is a true one (a borrow only flags bytes above it).
                if constexpr (std::endian::native == std::endian::little) {
                    const int at = std::countr_zero(special) / 8;
                    const std::uint64_t before = (std::uint64_t{1} << (8 * at)) - 1;
                    if ((word & kHighs & before) != 0) high |= 0x80U;
                    p += at;
                }
                break;
            }
            if ((word & kHighs) != 0) high |= 0x80U;
            p += 8;
        }
        return p;
    }

    bool literal(std::string_view word) noexcept {
        if (static_cast<std::size_t>(end_ - p_) < word.size() ||
            std::string_view(p_, word.size()) != word) {
            return false;
        }
        p_ += word.size();
        return true;
    }
    // JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    bool number(std::size_t& integer_digits, bool& exponent) noexcept;
    // At a backslash: one well-formed escape; \u surrogates must pair up (as nlohmann requires).
    bool escape() noexcept;

    const char* p_;
    const char* end_;
    int max_skip_depth_;
};

// Inlined into each reader: every string and key of a message goes through it.
[[gnu::always_inline]] inline bool JsonCursor::raw_string(JsonText& out) noexcept {
    ws();
    if (p_ == end_ || *p_ != '"') return false;
    const char* start = ++p_;
    const char* run = p_;
    // The bytes of the run so far OR-ed: bit 7 set when it holds non-ASCII to check. A
    // multi-byte sequence never holds a quote, a backslash or a control byte, so the runs
    // between them are checked for UTF-8 whole.
    unsigned high = 0;
    bool escaped = false;
    while (p_ < end_) {
        p_ = skip_plain_bytes(p_, end_, high);
        if (p_ == end_) break;
        const auto c = static_cast<unsigned char>(*p_);
        if (c == '"' || c == '\\') {
            if ((high & 0x80U) != 0 &&
                base::find_invalid_utf8(std::string_view(run, static_cast<std::size_t>(p_ - run))))
                return false;
            if (c == '"') {
                out.raw = std::string_view(start, static_cast<std::size_t>(p_ - start));
                out.escaped = escaped;
                ++p_;
                return true;
            }
            if (!escape()) return false;
            escaped = true;
            run = p_;
            high = 0;
            continue;
        }
        if (c < 0x20) return false;
        high |= c;
        ++p_;
    }
    return false;
}

}  // namespace glassbox::schema
