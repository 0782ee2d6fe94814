// ASCII letter case, the one way glassbox folds case: protocol words (HTTP field names, "Bearer",
// ReAct keys), names (kinds, tools, collections, entity labels compared loosely). No locale:
// bytes outside A-Z, UTF-8 sequences included, pass unchanged.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace glassbox::base {

constexpr char ascii_lower(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

inline std::string ascii_lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = ascii_lower(c);
    return out;
}

// Equal but for ASCII letter case.
inline bool ascii_iequals(std::string_view a, std::string_view b) noexcept {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return ascii_lower(x) == ascii_lower(y);
           });
}

}  // namespace glassbox::base
