// A PostgreSQL server of a test's own: a fresh cluster (initdb) in a temporary folder, the server
// on a random loopback port with its socket in the same folder, stopped and removed with the
// fixture. Run as root (CI), initdb and the server run as Debian's `postgres` user, since
// PostgreSQL refuses to run as root. Tests that need one skip, with unavailable()'s reason, only
// when the server's binaries are not installed (ops/install-deps installs them).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/process.hpp"

namespace glassbox::integration {

// While it lives, every process started (they inherit the environment) keeps its state in
// PostgreSQL at `dsn`: GLASSBOX_STORAGE_BACKEND=postgres and GLASSBOX_PG_DSN set, both unset
// again on destruction.
class PostgresStorageEnv {
public:
    explicit PostgresStorageEnv(const std::string& dsn);
    ~PostgresStorageEnv();
    PostgresStorageEnv(const PostgresStorageEnv&) = delete;
    PostgresStorageEnv& operator=(const PostgresStorageEnv&) = delete;
};

class PostgresServer {
public:
    struct Options {
        // fsync and full-page writes on: for tests of what survives a crash of the server.
        // Off by default, which makes a test's cluster several times faster to write.
        bool durable = false;
        // More server settings, "name=value" each (passed as -c name=value).
        std::vector<std::string> settings;
        // A streaming hot standby of this (running) server instead of a fresh cluster: a base
        // backup of it (pg_basebackup -R), read-only, replaying its WAL as it comes.
        const PostgresServer* standby_of = nullptr;
        // Run on another "host": inside this network namespace (tests/support/netns_lab.hpp),
        // listening on `listen_address` there and trusting connections from `trusted_network`
        // (CIDR) as well. The test itself then connects through the socket in the server's
        // folder (host() is that folder); network_dsn() is what the other hosts use. Root only.
        std::string netns = {};
        std::string listen_address = {};
        std::string trusted_network = {};
    };

    // Why no server can be started here, or nullopt when one can: the binaries are missing, or
    // the process runs as root and there is no `postgres` user to run them as.
    static std::optional<std::string> unavailable();

    // Creates the cluster and starts the server; throws std::runtime_error with the server's
    // log when it does not come up.
    PostgresServer() : PostgresServer(Options{}) {}
    explicit PostgresServer(Options options);
    ~PostgresServer();
    PostgresServer(const PostgresServer&) = delete;
    PostgresServer& operator=(const PostgresServer&) = delete;

    const std::string& host() const noexcept { return host_; }
    int port() const noexcept { return port_; }
    // A libpq connection string for `database`, as the cluster's superuser (`glassbox`, trusted
    // on loopback: the server listens on 127.0.0.1 only).
    std::string dsn(const std::string& database = "postgres") const;
    // The DSN over TCP to its listen address (Options::listen_address; 127.0.0.1 by default).
    std::string network_dsn(const std::string& database = "postgres") const;
    // CREATE DATABASE; throws std::runtime_error with the server's message.
    void create_database(const std::string& name) const;
    // Runs SQL (one or more statements, no results) in `database`; throws on error.
    void exec(const std::string& sql, const std::string& database = "postgres") const;

    bool running();
    // Fast shutdown (SIGINT: open sessions are ended), waiting until the server has exited.
    void stop();
    // SIGKILL: the server dies as in a crash (its backends follow).
    void kill();
    // Starts the server again on the same cluster and port, after stop() or kill().
    void start();
    // The server's log so far (for a failing test's message).
    std::string log() const;

private:
    std::filesystem::path bin(const char* name) const { return bindir_ / name; }
    void init_cluster();
    std::string listen_address() const;
    void wait_ready(std::chrono::milliseconds timeout);

    Options options_;
    std::filesystem::path bindir_;
    std::unique_ptr<TempDir> dir_;
    std::optional<ChildProcess::RunAs> run_as_;
    std::string host_ = "127.0.0.1";
    int port_ = 0;
    std::unique_ptr<ChildProcess> server_;
    int starts_ = 0;
};

}  // namespace glassbox::integration
