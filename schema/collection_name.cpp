// The rule for collection names.
#include "schema/collection_name.hpp"

#include "base/utf8.hpp"

namespace glassbox::schema {

base::Result<std::string> validate_collection(std::string_view name) {
    if (name.empty()) return std::string(kDefaultCollection);
    const auto letter_or_digit = [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    };
    bool ok = name.size() <= 64 && letter_or_digit(name.front());
    for (const char c : name) ok = ok && (letter_or_digit(c) || c == '_' || c == '-' || c == '.');
    if (!ok) {
        return base::make_error(base::ErrorType::kInvalidRequest,
                                "collection \"" + base::printable_utf8(name) +
                                    "\" is not a valid name: 1-64 of A-Z a-z 0-9 _ - . starting "
                                    "with a letter or digit");
    }
    return std::string(name);
}

}  // namespace glassbox::schema
