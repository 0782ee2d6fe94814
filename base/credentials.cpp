// Masking passwords in echoed text (credentials.hpp).
#include "base/credentials.hpp"

#include <algorithm>
#include <cctype>

namespace glassbox::base {

namespace {

constexpr std::string_view kMask = "***";

bool ends_authority(char c) noexcept {
    return c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' || c == ',' ||
           std::isspace(static_cast<unsigned char>(c)) != 0;
}

bool ends_value(char c) noexcept {
    return c == '&' || c == ';' || c == '"' || c == ',' ||
           std::isspace(static_cast<unsigned char>(c)) != 0;
}

// Masks the password of the user info of each URI in `text`.
std::string mask_user_info(std::string_view text) {
    std::string out;
    std::size_t at = 0;
    while (true) {
        const std::size_t scheme = text.find("://", at);
        if (scheme == std::string_view::npos) break;
        const std::size_t start = scheme + 3;
        std::size_t end = start;
        while (end < text.size() && !ends_authority(text[end])) ++end;
        const std::string_view authority = text.substr(start, end - start);
        const std::size_t user_end = authority.rfind('@');
        const std::size_t colon = authority.find(':');
        out.append(text.substr(at, start - at));
        if (user_end != std::string_view::npos && colon != std::string_view::npos &&
            colon < user_end) {
            out.append(authority.substr(0, colon + 1)).append(kMask);
            out.append(authority.substr(user_end));
        } else {
            out.append(authority);
        }
        at = end;
    }
    out.append(text.substr(at));
    return out;
}

// Masks the value of each `password=` keyword in `text`.
std::string mask_password_keywords(const std::string& text) {
    constexpr std::string_view kKey = "password";
    std::string lower(text);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string out;
    std::size_t at = 0;
    for (std::size_t key = lower.find(kKey); key != std::string::npos;
         key = lower.find(kKey, key + kKey.size())) {
        std::size_t i = key + kKey.size();
        while (i < text.size() && text[i] == ' ') ++i;
        if (i >= text.size() || text[i] != '=') continue;
        ++i;
        while (i < text.size() && text[i] == ' ') ++i;
        std::size_t end = i;
        if (i < text.size() && text[i] == '\'') {  // libpq: 'quoted', \' and \\ escaped
            for (end = i + 1; end < text.size() && text[end] != '\''; ++end)
                if (text[end] == '\\') ++end;
            end = std::min(end + 1, text.size());
        } else {
            while (end < text.size() && !ends_value(text[end])) ++end;
        }
        if (end == i) continue;
        out.append(text, at, i - at).append(kMask);
        at = end;
        key = end - kKey.size();
    }
    out.append(text, at);
    return out;
}

}  // namespace

std::string mask_credentials(std::string_view text) {
    return mask_password_keywords(mask_user_info(text));
}

}  // namespace glassbox::base
