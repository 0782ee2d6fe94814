// `--listen HOST:PORT`: parsed, with whether it is a loopback address (served without tokens).
#pragma once

#include <string>
#include <string_view>

#include "base/result.hpp"

namespace glassbox::gateway {

struct ListenAddress {
    std::string host;       // as bound: "127.0.0.1", "::1", "0.0.0.0"
    std::string url_host;   // as written in a URL: "127.0.0.1", "[::1]"
    int port = 0;           // 0: any free port
    bool loopback = false;  // 127.0.0.0/8, ::1 or localhost
};

// 127.0.0.0/8, ::1 or localhost.
bool is_loopback_host(std::string_view host) noexcept;

// "127.0.0.1:8080", "localhost:0", "[::1]:8080", "0.0.0.0:80". InvalidRequest otherwise.
base::Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace glassbox::gateway
