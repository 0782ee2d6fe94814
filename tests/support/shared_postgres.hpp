// The one PostgreSQL server of a test binary, shared by every test that needs a database: started
// on first use, stopped when the binary exits. Each test works in a fresh schema of its own.
#pragma once

#include <optional>
#include <string>

#include "tests/support/postgres_server.hpp"

namespace glassbox::integration {

// The binary's server, or null with `unavailable` saying why none can run here.
PostgresServer* shared_postgres(std::optional<std::string>& unavailable);

// A fresh schema in the shared server, dropped (with everything in it) on destruction.
class FreshSchema {
public:
    // unavailable() says why when the server cannot run here.
    FreshSchema();
    ~FreshSchema();
    FreshSchema(const FreshSchema&) = delete;
    FreshSchema& operator=(const FreshSchema&) = delete;

    const std::optional<std::string>& unavailable() const noexcept { return unavailable_; }
    const std::string& name() const noexcept { return name_; }
    // The server's DSN (the schema is not in it: use name() as a search_path).
    const std::string& server_dsn() const noexcept { return server_dsn_; }
    // The DSN with this schema as its search_path.
    const std::string& dsn() const noexcept { return dsn_; }
    // Runs SQL with this schema as its search_path, as the superuser; throws on error.
    void exec(const std::string& sql) const;

private:
    std::optional<std::string> unavailable_;
    PostgresServer* server_ = nullptr;
    std::string name_;
    std::string server_dsn_;
    std::string dsn_;
};

}  // namespace glassbox::integration
