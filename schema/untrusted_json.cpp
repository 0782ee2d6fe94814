// Depth-bounded, non-throwing JSON parsing of untrusted text.
#include "schema/untrusted_json.hpp"

#include <exception>
#include <string>

namespace glassbox::schema {
namespace {

// Whether no array or object of `text` opens deeper than `max_depth`. One pass, no recursion:
// brackets inside strings (escaped quotes included) do not count; a closing bracket without an
// opening one is left for the parser to refuse.
bool nesting_within(std::string_view text, std::size_t max_depth) noexcept {
    std::size_t depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) return false;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return true;
}

}  // namespace

base::Result<nlohmann::json> parse_untrusted_json(std::string_view text, std::size_t max_depth) {
    if (!nesting_within(text, max_depth)) {
        return base::make_error(
            base::ErrorType::kInvalidJson,
            "the JSON nests deeper than " + std::to_string(max_depth) + " levels");
    }
    try {
        // No callback, no exceptions: an error (ill-formed UTF-8 included) gives `discarded`.
        auto value = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
        if (value.is_discarded()) {
            return base::make_error(base::ErrorType::kInvalidJson,
                                    "not valid JSON (or not valid UTF-8)");
        }
        return value;
    } catch (const std::exception& e) {  // std::bad_alloc
        return base::make_error(base::ErrorType::kInvalidJson, e.what());
    }
}

}  // namespace glassbox::schema
