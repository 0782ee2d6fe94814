// Strings that exercise every JSON escape, non-ASCII text, and ill-formed UTF-8: for tests that
// hold a text writer to the bytes nlohmann's dump() writes.
#pragma once

#include <string>
#include <vector>

namespace glassbox::schema::testing {

inline const std::vector<std::string>& tricky_strings() {
    static const std::vector<std::string> strings{
        "",
        "plain",
        "quote \" backslash \\ slash /",
        "controls \b\f\n\r\t \x01\x1f end",
        std::string("nul \0 inside", 12),
        "del \x7f",
        "日本語 — Ünïcödé 🚀",
        "bad \xff byte",
        "truncated \xe2\x82",
        "overlong \xc0\xaf",
        "surrogate \xed\xa0\x80",
    };
    return strings;
}

}  // namespace glassbox::schema::testing
