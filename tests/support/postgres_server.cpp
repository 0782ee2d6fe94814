// A PostgreSQL server of a test's own (see postgres_server.hpp).
#include "tests/support/postgres_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <system_error>

#include <libpq-fe.h>

#include "tests/support/wait_until.hpp"

namespace glassbox::integration {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

// The newest PostgreSQL's binaries (Debian keeps each major version in its own folder), or
// GLASSBOX_PG_BINDIR when set.
std::optional<fs::path> find_bindir() {
    if (const char* forced = std::getenv("GLASSBOX_PG_BINDIR"); forced && *forced) {
        if (fs::exists(fs::path(forced) / "postgres")) return fs::path(forced);
        return std::nullopt;
    }
    std::vector<fs::path> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
        if (fs::exists(entry.path() / "bin" / "postgres") &&
            fs::exists(entry.path() / "bin" / "initdb"))
            found.push_back(entry.path() / "bin");
    }
    if (found.empty()) return std::nullopt;
    // Folders are major versions ("15", "16"): the highest number wins.
    std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
        return std::atoi(a.parent_path().filename().c_str()) <
               std::atoi(b.parent_path().filename().c_str());
    });
    return found.back();
}

std::optional<ChildProcess::RunAs> postgres_user() {
    const passwd* user = ::getpwnam("postgres");
    if (user == nullptr) return std::nullopt;
    return ChildProcess::RunAs{user->pw_uid, user->pw_gid, {}};
}

// A loopback port nobody listens on now (the kernel's pick for port 0). Another process may take
// it before the server binds it: start() then fails and the caller picks again.
int free_loopback_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        const int error = errno;
        ::close(fd);
        throw std::system_error(error, std::generic_category(), "bind 127.0.0.1:0");
    }
    ::close(fd);
    return ntohs(address.sin_port);
}

// An empty cluster made by initdb once and copied for each server: initdb takes ~2 s, a copy of
// its 39 MB a fraction of that, and the test suite starts a server for each of ~300 tests. Kept
// in the temporary folder under a name that changes with the binaries (their folder and initdb's
// modification time) and the server's user. Made in a folder of its own and renamed into place,
// so processes racing to make it never see half a cluster. Used only when that user owns it and
// nobody else can write it; otherwise (or when it cannot be made) the cluster is initdb's own.
std::optional<fs::path> cluster_template(const fs::path& bindir,
                                         const std::optional<ChildProcess::RunAs>& run_as,
                                         const std::vector<std::string>& initdb_options) {
    const uid_t owner = run_as ? run_as->uid : ::geteuid();
    std::error_code ec;
    const auto stamp = fs::last_write_time(bindir / "initdb", ec);
    if (ec) return std::nullopt;
    std::string key = bindir.string() + "|" + std::to_string(stamp.time_since_epoch().count()) +
                      "|" + std::to_string(owner);
    for (const auto& option : initdb_options) key += "|" + option;
    const fs::path made = fs::temp_directory_path() /
                          ("glassbox-pg-template-" + std::to_string(std::hash<std::string>{}(key)));
    const auto usable = [&] {
        struct stat info {};
        return ::lstat(made.c_str(), &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == owner &&
               (info.st_mode & (S_IWGRP | S_IWOTH)) == 0 &&
               fs::exists(made / "data" / "PG_VERSION", ec);
    };
    if (usable()) return made;
    static std::atomic<int> counter{0};
    const fs::path staging =
        made.string() + ".making." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fs::create_directory(staging, ec);
    if (ec) return std::nullopt;
    ::chmod(staging.c_str(), 0700);
    if (run_as && ::chown(staging.c_str(), run_as->uid, run_as->gid) != 0) {
        fs::remove_all(staging, ec);
        return std::nullopt;
    }
    std::vector<std::string> argv{(bindir / "initdb").string(), "-D", (staging / "data").string()};
    argv.insert(argv.end(), initdb_options.begin(), initdb_options.end());
    auto result = run_command(argv, staging, milliseconds{120'000}, run_as);
    // Another process may have put its template in place meanwhile: then ours goes.
    if (!exited_with(result, 0) || ::rename(staging.c_str(), made.c_str()) != 0)
        fs::remove_all(staging, ec);
    if (usable()) return made;
    return std::nullopt;
}

struct ConnectionCloser {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct ResultClearer {
    void operator()(PGresult* r) const noexcept { PQclear(r); }
};

}  // namespace

std::optional<std::string> PostgresServer::unavailable() {
    if (!find_bindir()) {
        return "no PostgreSQL server binaries (/usr/lib/postgresql/<version>/bin/postgres): "
               "install postgresql-15 (ops/install-deps) or set GLASSBOX_PG_BINDIR";
    }
    if (::geteuid() == 0 && !postgres_user()) {
        return "running as root and there is no `postgres` user to run the server as "
               "(PostgreSQL refuses root)";
    }
    return std::nullopt;
}

PostgresServer::PostgresServer(Options options) : options_(std::move(options)) {
    if (auto why = unavailable()) throw std::runtime_error("PostgresServer: " + *why);
    bindir_ = *find_bindir();
    dir_ = std::make_unique<TempDir>("glassbox-pg");
    if (::geteuid() == 0) {
        run_as_ = postgres_user();
        // The cluster, the socket and the logs live here: the server's user must own it.
        if (::chown(dir_->path().c_str(), run_as_->uid, run_as_->gid) != 0)
            throw std::system_error(errno, std::generic_category(),
                                    "chown " + dir_->path().string());
    }
    if (!options_.netns.empty()) {
        if (!run_as_) throw std::runtime_error("PostgresServer: a network namespace needs root");
        run_as_->netns = options_.netns;
        // The test reaches it through its socket; the other hosts over TCP.
        host_ = dir_->path().string();
    }
    init_cluster();
    if (!options_.trusted_network.empty()) {
        std::ofstream hba(dir_->path() / "data" / "pg_hba.conf", std::ios::app);
        hba << "host all all " << options_.trusted_network << " trust\n";
        if (!hba) throw std::runtime_error("PostgresServer: cannot extend pg_hba.conf");
    }
    start();
}

PostgresServer::~PostgresServer() {
    try {
        if (server_ && server_->running()) stop();
    } catch (const std::exception&) {
        // The ChildProcess destructor kills and reaps it.
    }
    server_.reset();
}

void PostgresServer::init_cluster() {
    if (options_.standby_of != nullptr) {
        // initdb's pg_hba.conf trusts replication connections from 127.0.0.1 too.
        const auto* primary = options_.standby_of;
        auto copied = run_command({bin("pg_basebackup").string(), "-h", primary->host(), "-p",
                                   std::to_string(primary->port()), "-U", "glassbox", "-D",
                                   (dir_->path() / "data").string(), "-R", "-X", "stream",
                                   "--checkpoint=fast", "--no-sync"},
                                  dir_->path(), milliseconds{120'000}, run_as_);
        if (!exited_with(copied, 0)) {
            throw std::runtime_error("pg_basebackup failed (" + copied.status.describe() +
                                     "): " + copied.err + copied.out);
        }
        return;
    }
    // Trusted local connections for the superuser `glassbox`; no fsync while creating files.
    const std::vector<std::string> options{"-U", "glassbox", "-A",          "trust",
                                           "-E", "UTF8",     "--no-locale", "--no-sync"};
    const fs::path data = dir_->path() / "data";
    if (const auto made = cluster_template(bindir_, run_as_, options)) {
        // Copied by the server's user, so the copy is its own with the template's modes.
        auto copied = run_command({"/bin/cp", "-a", (*made / "data").string(), data.string()},
                                  dir_->path(), milliseconds{120'000}, run_as_);
        if (exited_with(copied, 0)) return;
        std::error_code ec;
        fs::remove_all(data, ec);
    }
    std::vector<std::string> argv{bin("initdb").string(), "-D", data.string()};
    argv.insert(argv.end(), options.begin(), options.end());
    auto result = run_command(argv, dir_->path(), milliseconds{120'000}, run_as_);
    if (!exited_with(result, 0)) {
        throw std::runtime_error("initdb failed (" + result.status.describe() + "): " + result.err +
                                 result.out);
    }
}

void PostgresServer::start() {
    if (server_ && server_->running()) return;
    // A first start picks a port; later ones keep it (clients hold the DSN). The port may be
    // taken between the pick and the bind: then a first start picks another.
    for (int attempt = 0; attempt < 5; ++attempt) {
        if (starts_ == 0) port_ = free_loopback_port();
        std::vector<std::string> argv{bin("postgres").string(),
                                      "-D",
                                      (dir_->path() / "data").string(),
                                      "-p",
                                      std::to_string(port_),
                                      "-k",
                                      dir_->path().string(),
                                      "-c",
                                      "listen_addresses=" + listen_address()};
        if (!options_.durable) {
            for (const char* setting : {"fsync=off", "full_page_writes=off"}) {
                argv.insert(argv.end(), {"-c", setting});
            }
        }
        for (const auto& setting : options_.settings) argv.insert(argv.end(), {"-c", setting});
        server_ = std::make_unique<ChildProcess>("postgres-" + std::to_string(++starts_), argv,
                                                 dir_->path(), run_as_);
        try {
            wait_ready(milliseconds{60'000});
            return;
        } catch (const std::runtime_error&) {
            const std::string said = log();
            const bool port_taken = said.find("could not bind") != std::string::npos ||
                                    said.find("Address already in use") != std::string::npos;
            // After kill(), the old server's backends may hold its shared memory for a moment.
            const bool old_backends =
                said.find("pre-existing shared memory block") != std::string::npos;
            server_->kill();
            if (port_taken && starts_ == 1) {
                starts_ = 0;
            } else if (!old_backends) {
                throw;
            }
        }
    }
    throw std::runtime_error("PostgresServer: no free port after 5 attempts");
}

void PostgresServer::wait_ready(milliseconds timeout) {
    const std::string conninfo = dsn("postgres") + " connect_timeout=2";
    bool exited = false;
    const bool ready = test_support::wait_until(
        [&] {
            if (!server_->running()) {
                exited = true;
                return true;
            }
            return PQping(conninfo.c_str()) == PQPING_OK;
        },
        timeout, milliseconds{20});
    if (!ready || exited) {
        throw std::runtime_error(std::string("PostgreSQL did not come up") +
                                 (exited ? " (the server exited)" : " (timed out)") + ": " + log());
    }
}

PostgresStorageEnv::PostgresStorageEnv(const std::string& dsn) {
    ::setenv("GLASSBOX_STORAGE_BACKEND", "postgres", 1);
    ::setenv("GLASSBOX_PG_DSN", dsn.c_str(), 1);
}

PostgresStorageEnv::~PostgresStorageEnv() {
    ::unsetenv("GLASSBOX_STORAGE_BACKEND");
    ::unsetenv("GLASSBOX_PG_DSN");
}

std::string PostgresServer::listen_address() const {
    return options_.listen_address.empty() ? std::string("127.0.0.1") : options_.listen_address;
}

std::string PostgresServer::network_dsn(const std::string& database) const {
    return "host=" + listen_address() + " port=" + std::to_string(port_) +
           " user=glassbox dbname=" + database;
}

std::string PostgresServer::dsn(const std::string& database) const {
    return "host=" + host_ + " port=" + std::to_string(port_) + " user=glassbox dbname=" + database;
}

void PostgresServer::exec(const std::string& sql, const std::string& database) const {
    std::unique_ptr<PGconn, ConnectionCloser> connection(PQconnectdb(dsn(database).c_str()));
    if (PQstatus(connection.get()) != CONNECTION_OK) {
        throw std::runtime_error("connecting to " + dsn(database) + ": " +
                                 PQerrorMessage(connection.get()));
    }
    std::unique_ptr<PGresult, ResultClearer> result(PQexec(connection.get(), sql.c_str()));
    const auto status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        throw std::runtime_error(sql + ": " + PQerrorMessage(connection.get()));
    }
}

void PostgresServer::create_database(const std::string& name) const {
    // Identifiers are quoted; a test's names never hold a double quote.
    exec("CREATE DATABASE \"" + name + "\"");
}

bool PostgresServer::running() { return server_ && server_->running(); }

void PostgresServer::stop() {
    if (!running()) return;
    server_->send_signal(SIGINT);
    if (!server_->wait_exit(milliseconds{60'000})) server_->kill();
}

void PostgresServer::kill() {
    if (server_) server_->kill();
}

std::string PostgresServer::log() const {
    return server_ ? server_->stderr_text() + server_->stdout_text() : std::string{};
}

}  // namespace glassbox::integration
