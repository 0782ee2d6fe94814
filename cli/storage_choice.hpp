// Which backend the stores keep their data in (issue 34): SQLite files in the home or a
// PostgreSQL database, as the storage.* settings choose it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "config/resolve.hpp"

namespace glassbox::cli {

enum class StorageBackend { kSqlite, kPostgres };

// "sqlite" or "postgres", as storage.backend spells it.
std::string_view to_string(StorageBackend backend) noexcept;

struct StorageChoice {
    StorageBackend backend = StorageBackend::kSqlite;
    // postgres: storage.postgres_dsn, never empty. Holds the password: print masked_dsn() of it.
    std::string dsn;
    // postgres: storage.postgres_read_dsn, for the trace store's queries; empty: use `dsn`.
    std::string read_dsn;

    // The DSN the query side connects with: read_dsn, else dsn.
    const std::string& query_dsn() const noexcept { return read_dsn.empty() ? dsn : read_dsn; }
};

// The choice `settings` make. InvalidRequest when storage.backend is postgres and
// storage.postgres_dsn is empty (a DSN libpq cannot read was refused when they were resolved).
base::Result<StorageChoice> storage_choice(const config::Resolved& settings);
// The choice of this process's configuration, for a command that needs storage: a problem
// prints "config error: <why>" and exits 2 before anything starts, like a bad setting.
StorageChoice required_storage_choice();

// The reference's "values" column of a connection string setting.
inline constexpr std::string_view kConnectionStringValues =
    "a libpq connection string: `key=value ...` or a `postgresql://` URI";
// Why libpq cannot read `dsn` as a connection string (PQconninfoParse), without quoting it or
// libpq's message, which may hold the password; nullopt when it can.
std::optional<std::string> connection_string_problem(std::string_view dsn);

}  // namespace glassbox::cli
