// Printable frames for logs; the rest of the shared codec pieces are inline in the header.
#include "bus/frame_codec.hpp"

namespace glassbox::bus {

std::string printable(std::string_view bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x21 && byte <= 0x7E && c != '\\') {
            out.push_back(c);
        } else {
            out.push_back('\\');
            out.push_back(kHex[byte >> 4]);
            out.push_back(kHex[byte & 0xF]);
        }
    }
    return out;
}

}  // namespace glassbox::bus
