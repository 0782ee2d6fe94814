// PostgreSQL connection strings (libpq's DSN: `key=value ...` or a `postgresql://` URI) as the
// configuration, `config show`, `status` and error messages show them: never with a password.
#pragma once

#include <string>
#include <string_view>

namespace glassbox::storage {

// `dsn` with every password replaced by "***": a `password=` keyword (quoted or not), the
// password of a URI's user info (`postgresql://user:secret@host`) and a `password=` query
// parameter of a URI. Anything it cannot read is returned whole only when it holds no
// "password" at all; otherwise "(a connection string)", so a malformed DSN never leaks one.
std::string masked_dsn(std::string_view dsn);

// "host:port" of the server a DSN names, for messages ("PostgreSQL at db1:5432 ..."): libpq's
// defaults when it names none (the local socket, port 5432); "(unreadable connection string)"
// when libpq cannot parse it.
std::string dsn_server(std::string_view dsn);

}  // namespace glassbox::storage
