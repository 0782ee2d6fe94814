// Frame validation helpers of the bus protocol.
#include "schema/protocol.hpp"

namespace glassbox::schema::protocol {

bool is_valid_service_name(std::string_view name) noexcept {
    if (name.empty() || name.size() > kMaxServiceName) return false;
    for (const char c : name) {
        if (c < 0x21 || c > 0x7E) return false;
    }
    return true;
}

std::optional<std::uint64_t> parse_ascii_int(std::string_view frame) noexcept {
    if (frame.empty() || frame.size() > kMaxAsciiIntDigits) return std::nullopt;
    std::uint64_t value = 0;
    for (const char c : frame) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
}

}  // namespace glassbox::schema::protocol
