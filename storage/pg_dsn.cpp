// PostgreSQL connection strings, shown without their passwords (see pg_dsn.hpp).
#include "storage/pg_dsn.hpp"

#include <libpq-fe.h>

#include <memory>

#include "base/ascii.hpp"

namespace glassbox::storage {

namespace {

struct OptionsFree {
    void operator()(PQconninfoOption* options) const noexcept { PQconninfoFree(options); }
};
using Options = std::unique_ptr<PQconninfoOption, OptionsFree>;

// libpq's own reading of the DSN (both forms), or null when it cannot read it.
Options parse(std::string_view dsn) {
    const std::string text(dsn);
    char* error = nullptr;
    Options options(PQconninfoParse(text.c_str(), &error));
    if (error != nullptr) PQfreemem(error);
    return options;
}

// A value as the key=value form writes it: bare when it is a plain word, else quoted with
// backslashes before quotes and backslashes.
std::string conninfo_value(std::string_view value) {
    const bool plain = !value.empty() && value.find_first_of(" '\\\t\n\r") == std::string::npos;
    if (plain) return std::string(value);
    std::string out = "'";
    for (const char c : value) {
        if (c == '\'' || c == '\\') out.push_back('\\');
        out.push_back(c);
    }
    out.push_back('\'');
    return out;
}

}  // namespace

std::string masked_dsn(std::string_view dsn) {
    const Options options = parse(dsn);
    if (!options) {
        return base::ascii_lower(dsn).find("password") == std::string::npos
                   ? std::string(dsn)
                   : std::string("(a connection string)");
    }
    bool has_password = false;
    std::string out;
    for (const PQconninfoOption* o = options.get(); o->keyword != nullptr; ++o) {
        if (o->val == nullptr) continue;
        const std::string_view keyword(o->keyword);
        const bool password = keyword == "password";
        has_password = has_password || password;
        if (!out.empty()) out.push_back(' ');
        out.append(keyword).append("=").append(password ? "***" : conninfo_value(o->val));
    }
    // Without a password the string is shown as it was written (a URI stays a URI).
    return has_password ? out : std::string(dsn);
}

std::string dsn_server(std::string_view dsn) {
    const Options options = parse(dsn);
    if (!options) return "(unreadable connection string)";
    std::string host;
    std::string port;
    for (const PQconninfoOption* o = options.get(); o->keyword != nullptr; ++o) {
        if (o->val == nullptr || *o->val == '\0') continue;
        const std::string_view keyword(o->keyword);
        if (keyword == "host" || (keyword == "hostaddr" && host.empty())) host = o->val;
        if (keyword == "port") port = o->val;
    }
    if (host.empty()) host = "local socket";
    return host + ":" + (port.empty() ? "5432" : port);
}

}  // namespace glassbox::storage
