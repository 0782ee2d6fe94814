// The checks every route makes alike of the names and the question a client sent.
#include "gateway/request_checks.hpp"

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/utf8.hpp"

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;

namespace {

std::string listed(std::span<const std::string_view> names) {
    if (names.empty()) return "none";
    std::string out;
    for (const auto name : names) {
        if (!out.empty()) out += ", ";
        out += name;
    }
    return out;
}

// Unicode White_Space beyond ASCII, as UTF-8: U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028,
// U+2029, U+202F, U+205F, U+3000.
constexpr std::string_view kWideSpaces[] = {
    "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81",
    "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86",
    "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8",
    "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80",
};

}  // namespace

base::Result<void> only_known(std::string_view what, std::span<const std::string> given,
                              std::span<const std::string_view> accepted) {
    for (std::size_t i = 0; i < given.size(); ++i) {
        const std::string& name = given[i];
        const bool known = std::find(accepted.begin(), accepted.end(), name) != accepted.end();
        const bool again = std::find(given.begin(), given.begin() + static_cast<std::ptrdiff_t>(i),
                                     name) != given.begin() + static_cast<std::ptrdiff_t>(i);
        if (known && !again) continue;
        return make_error(ErrorType::kInvalidRequest,
                          std::string(known ? "repeated " : "unknown ") + std::string(what) +
                              " \"" + base::printable_utf8(name) + "\" (this route takes " +
                              listed(accepted) + ")");
    }
    return {};
}

base::Result<void> only_known_fields(const nlohmann::json& body,
                                     std::span<const std::string_view> accepted) {
    std::vector<std::string> names;
    if (body.is_object())
        for (const auto& [name, value] : body.items()) names.push_back(name);
    return only_known("field", names, accepted);
}

bool is_blank(std::string_view text) {
    std::size_t at = 0;
    while (at < text.size()) {
        if (std::string_view(" \t\n\v\f\r").find(text[at]) != std::string_view::npos) {
            ++at;
            continue;
        }
        const auto rest = text.substr(at);
        const auto wide =
            std::find_if(std::begin(kWideSpaces), std::end(kWideSpaces),
                         [&](std::string_view space) { return rest.starts_with(space); });
        if (wide == std::end(kWideSpaces)) return false;
        at += wide->size();
    }
    return true;
}

}  // namespace glassbox::gateway
