// The JSON text cursor's out-of-line parts: escapes, numbers, skipped values, unescaping.
#include "schema/json_cursor.hpp"

namespace glassbox::schema {

std::string_view JsonText::value(std::string& scratch) const {
    if (!escaped) return raw;
    scratch.clear();
    append_unescaped(scratch, raw);
    return scratch;
}

std::string JsonText::str() const {
    if (!escaped) return std::string(raw);
    std::string out;
    append_unescaped(out, raw);
    return out;
}

void append_unescaped(std::string& out, std::string_view raw) {
    out.reserve(out.size() + raw.size());
    for (std::size_t i = 0; i < raw.size();) {
        const std::size_t slash = raw.find('\\', i);
        out.append(raw.substr(i, slash - i));
        if (slash == std::string_view::npos) return;
        const char e = raw[slash + 1];
        i = slash + 2;
        switch (e) {
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                auto cp = static_cast<std::uint32_t>(base::hex4(raw.data() + i));
                i += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {  // the cursor checked the low half follows
                    const auto low = static_cast<std::uint32_t>(base::hex4(raw.data() + i + 2));
                    i += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                }
                base::append_utf8(out, cp);
                break;
            }
            default:  // '"', '\\', '/'
                out += e;
                break;
        }
    }
}

bool JsonCursor::number(std::size_t& integer_digits, bool& exponent) noexcept {
    const auto digit = [this] { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; };
    if (p_ < end_ && *p_ == '-') ++p_;
    if (!digit()) return false;
    const char* integer = p_;
    if (*p_ == '0') {
        ++p_;
    } else {
        while (digit()) ++p_;
    }
    integer_digits = static_cast<std::size_t>(p_ - integer);
    if (p_ < end_ && *p_ == '.') {
        ++p_;
        if (!digit()) return false;
        while (digit()) ++p_;
    }
    exponent = p_ < end_ && (*p_ == 'e' || *p_ == 'E');
    if (exponent) {
        ++p_;
        if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
        if (!digit()) return false;
        while (digit()) ++p_;
    }
    return true;
}

bool JsonCursor::escape() noexcept {
    if (end_ - p_ < 2) return false;
    switch (p_[1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            p_ += 2;
            return true;
        case 'u': {
            if (end_ - p_ < 6) return false;
            const int unit = base::hex4(p_ + 2);
            if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return false;
            p_ += 6;
            if (unit >= 0xD800 && unit <= 0xDBFF) {
                if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u') return false;
                const int low = base::hex4(p_ + 2);
                if (low < 0xDC00 || low > 0xDFFF) return false;
                p_ += 6;
            }
            return true;
        }
        default:
            return false;
    }
}

bool JsonCursor::skip(int depth) {
    if (depth > max_skip_depth_ || depth > kMaxJsonSkipDepth) return false;
    ws();
    if (p_ == end_) return false;
    switch (*p_) {
        case '"': {
            JsonText ignored;
            return raw_string(ignored);
        }
        case '{': {
            // Keys of a skipped object may be escaped: nothing reads them.
            ++p_;
            if (eat('}')) return true;
            do {
                JsonText key;
                if (!raw_string(key) || !eat(':') || !skip(depth + 1)) return false;
            } while (eat(','));
            return eat('}');
        }
        case '[':
            return array([&] { return skip(depth + 1); });
        case 't':
            return literal("true");
        case 'f':
            return literal("false");
        case 'n':
            return literal("null");
        default: {
            // nlohmann refuses a number that overflows a double. Without an exponent that takes
            // more than 308 integer digits; exponents (and their range) are the tree's to judge.
            std::size_t integer_digits = 0;
            bool exponent = false;
            return number(integer_digits, exponent) && !exponent && integer_digits <= 308;
        }
    }
}

}  // namespace glassbox::schema
