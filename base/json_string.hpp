// JSON string literals, written once for every JSON glassbox writes by hand (the explain
// messages' fast writer in schema/, the JSON log lines): quotes, the escapes RFC 8259 requires
// (\" \\ \b \f \n \r \t, \u00XX for the other control characters), UTF-8 as it is.
#pragma once

#include <string>
#include <string_view>

namespace glassbox::base {

// Appends `value` to `out` as a JSON string with its quotes and returns true; when `value` is
// not well-formed UTF-8, leaves `out` as it was and returns false (the caller decides how
// ill-formed text is written: replaced, or escaped as printable_utf8 does).
bool append_json_string(std::string& out, std::string_view value);

// The two-character escape of `c` that JSON strings and N-Triples literals (ECHAR) share, for
// a quote, a backslash, and backspace, form feed, newline, carriage return and tab; empty for any
// other byte (each writer spells those as \u00XX its own way).
inline std::string_view short_escape(unsigned char c) noexcept {
    switch (c) {
        case '"':
            return "\\\"";
        case '\\':
            return "\\\\";
        case '\b':
            return "\\b";
        case '\f':
            return "\\f";
        case '\n':
            return "\\n";
        case '\r':
            return "\\r";
        case '\t':
            return "\\t";
        default:
            return {};
    }
}

}  // namespace glassbox::base
