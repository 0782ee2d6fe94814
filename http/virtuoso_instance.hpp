// A Virtuoso Open Source 7 instance of glassbox's own (Debian's virtuoso-opensource): its
// configuration in a folder (the database files there too), the server's command line, a
// readiness probe and the first-start step that makes it safe on a shared machine (a random dba
// password kept owner-only in the folder; no updates through the anonymous /sparql endpoint).
// `glassbox up` (sparql.engine = "virtuoso") and the tests' fixture use it (docs/sparql.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "http/sparql_client.hpp"

namespace glassbox::http::virtuoso {

inline constexpr std::string_view kServerBinary = "/usr/bin/virtuoso-t";
inline constexpr std::string_view kIsqlBinary = "/usr/bin/isql-vt";
// The file in the instance's folder that holds its dba password (0600).
inline constexpr std::string_view kPasswordFile = "dba.password";
inline constexpr std::string_view kIniFile = "virtuoso.ini";

struct Instance {
    std::filesystem::path dir;    // the ini, the database, its logs, dba.password
    std::uint16_t sql_port = 0;   // isql (loopback only)
    std::uint16_t http_port = 0;  // /sparql and the Graph Store (loopback only)

    std::filesystem::path ini() const { return dir / std::string(kIniFile); }
    std::string query_url() const;        // http://127.0.0.1:<http_port>/sparql
    std::string graph_store_url() const;  // http://127.0.0.1:<http_port>/sparql-graph-crud-auth
};

// Why no instance can run on this machine (the binaries are missing: install
// virtuoso-opensource), or nullopt when one can.
std::optional<std::string> unavailable();

// A TCP port free on 127.0.0.1 now (bound to port 0 and released): kInternal on failure.
base::Result<std::uint16_t> free_loopback_port();

// Creates the folder (owner-only) and writes its ini for the instance's ports, replacing an
// earlier one (the database files stay: a restart keeps the data).
base::Result<void> write_ini(const Instance& instance);

// The server's command line: virtuoso-t +configfile <ini> +foreground (its log on stdout).
std::vector<std::string> server_argv(const Instance& instance);

// One probe: true when GET /sparql answers (any HTTP status) within `timeout`.
bool answers(const Instance& instance,
             std::chrono::milliseconds timeout = std::chrono::milliseconds{1'000});

// Once the server answers: on the first start, sets a random dba password (kept in
// <dir>/dba.password, 0600); on every start, checks that an anonymous INSERT DATA through
// /sparql is refused and, if not, revokes SPARQL_UPDATE from the "SPARQL" user (via isql-vt).
// Returns the client configuration (query URL, graph store URL, user dba, its password, the
// given query timeout). kInvalidRequest when the folder's database has a password this step
// does not know (dba.password lost: delete the folder to start afresh), kInternal when isql-vt
// fails.
base::Result<SparqlConfig> secure(const Instance& instance,
                                  std::chrono::milliseconds query_timeout);

// Runs SQL through isql-vt as dba with `password`; kInternal with isql's error text when it
// cannot log in or the statement fails.
base::Result<void> run_sql(const Instance& instance, std::string_view password,
                           std::string_view sql,
                           std::chrono::milliseconds timeout = std::chrono::milliseconds{30'000});

}  // namespace glassbox::http::virtuoso
