// Parsing `--listen HOST:PORT`.
#include "gateway/listen_address.hpp"

#include <charconv>

namespace glassbox::gateway {

using base::ErrorType;
using base::make_error;

base::Result<ListenAddress> parse_listen_address(std::string_view text) {
    const auto bad = [&](const std::string& why) {
        return make_error(ErrorType::kInvalidRequest, "--listen " + std::string(text) + ": " + why);
    };
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("not HOST:PORT");
    std::string_view host = text.substr(0, colon);
    const std::string_view port_text = text.substr(colon + 1);
    int port = -1;
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
        port < 0 || port > 65535)
        return bad("the port must be a number from 0 to 65535");
    ListenAddress address;
    address.port = port;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        address.host = std::string(host.substr(1, host.size() - 2));
        address.url_host = std::string(host);
    } else {
        if (host.find(':') != std::string_view::npos)
            return bad("write an IPv6 address in brackets: [::1]:8080");
        address.host = std::string(host);
        address.url_host = std::string(host);
    }
    if (address.host.empty()) return bad("the host is empty");
    for (const char c : address.host) {
        const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                        (c >= 'A' && c <= 'Z') || c == '.' || c == '-' || c == ':';
        if (!ok) return bad("the host holds a character no address has");
    }
    address.loopback = is_loopback_host(address.host);
    return address;
}

bool is_loopback_host(std::string_view host) noexcept {
    return host == "localhost" || host == "::1" || host.starts_with("127.");
}

}  // namespace glassbox::gateway
