// A Virtuoso instance of glassbox's own: ini, command line, readiness probe, first-start step.
#include "http/virtuoso_instance.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "base/log.hpp"
#include "base/owner_only.hpp"

extern char** environ;

namespace glassbox::http::virtuoso {

using base::ErrorType;
using base::make_error;
using base::Result;
using std::chrono::milliseconds;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxPasswordBytes = 256;
constexpr std::size_t kMaxIsqlOutputBytes = std::size_t{64} * 1024;
// A graph only the anonymous-update probe writes (and removes).
constexpr std::string_view kProbeGraph = "urn:glassbox:virtuoso-update-probe";

std::shared_ptr<spdlog::logger> log() { return base::component_logger("virtuoso"); }

std::string random_password() {
    static constexpr char kAlphabet[] = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    std::random_device device;
    std::uniform_int_distribution<std::size_t> pick(0, sizeof(kAlphabet) - 2);
    std::string out;
    for (int i = 0; i < 24; ++i) out.push_back(kAlphabet[pick(device)]);
    return out;
}

std::string read_text(const fs::path& path, std::size_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    std::string text(max_bytes, '\0');
    in.read(text.data(), static_cast<std::streamsize>(max_bytes));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
}

// The lines of isql's output that say what went wrong ("*** Error ..." and the one after).
std::string isql_errors(const std::string& output) {
    std::istringstream lines(output);
    std::string out;
    for (std::string line; std::getline(lines, line);) {
        if (line.find("*** Error") == std::string::npos) continue;
        if (!out.empty()) out.append("; ");
        out.append(line.substr(line.find("*** Error") + 4));
    }
    return out;
}

// Waits for `pid` up to `timeout`, then kills it; its exit code, or -1 when it was killed.
int wait_for(pid_t pid, milliseconds timeout) {
    const auto give_up = Clock::now() + timeout;
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) return -1;
        if (Clock::now() >= give_up) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(milliseconds{20});
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Is an anonymous INSERT DATA through /sparql refused? (The probe's triple, if it got in, is
// left for the caller to remove.)
bool anonymous_update_refused(const Instance& instance) {
    SparqlConfig anonymous;
    anonymous.query_url = instance.query_url();
    anonymous.timeout = milliseconds{10'000};
    SparqlClient client(anonymous);
    std::string update = "INSERT DATA { GRAPH <";
    update.append(kProbeGraph).append("> { <").append(kProbeGraph).append("> <");
    update.append(kProbeGraph).append("> \"probe\" } }");
    return !client.query(update, kSparqlJson).ok();
}

// The dba password of the folder: the kept one, or (first start) a new one set from the
// package's default "dba".
Result<std::string> dba_password(const Instance& instance) {
    const fs::path file = instance.dir / std::string(kPasswordFile);
    std::error_code ec;
    if (fs::exists(file, ec)) {
        auto kept = base::read_owner_only_secret(file, kMaxPasswordBytes);
        if (!kept) return std::move(kept).error();
        std::string password = std::move(kept).value();
        while (!password.empty() && (password.back() == '\n' || password.back() == '\r'))
            password.pop_back();
        return password;
    }
    std::string password = random_password();
    // Written before it is set: a crash in between leaves a password that still works
    // ("dba", tried below) rather than one nobody knows.
    if (auto written = base::write_owner_only_file(file, password + "\n"); !written)
        return std::move(written).error();
    std::string sql = "USER_SET_PASSWORD('dba', '";
    sql.append(password).append("');");
    if (auto set = run_sql(instance, "dba", sql); !set) {
        fs::remove(file, ec);
        return make_error(ErrorType::kInvalidRequest,
                          "cannot set the dba password of the Virtuoso database in " +
                              instance.dir.string() + " (" + set.error().message + "); if " +
                              file.string() + " was deleted, delete the folder to start afresh");
    }
    log()->info("event=dba_password_set file={}", file.string());
    return password;
}

}  // namespace

std::string Instance::query_url() const {
    return "http://127.0.0.1:" + std::to_string(http_port) + "/sparql";
}

std::string Instance::graph_store_url() const {
    return "http://127.0.0.1:" + std::to_string(http_port) + "/sparql-graph-crud-auth";
}

std::optional<std::string> unavailable() {
    for (const auto binary : {kServerBinary, kIsqlBinary}) {
        if (::access(std::string(binary).c_str(), X_OK) != 0) {
            return std::string(binary) +
                   " is not installed: install Debian's virtuoso-opensource package "
                   "(ops/install-deps does)";
        }
    }
    return std::nullopt;
}

Result<std::uint16_t> free_loopback_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return make_error(ErrorType::kInternal, std::string("socket: ") + strerror(errno));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                       ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    const int bind_errno = errno;
    ::close(fd);
    if (!bound) {
        return make_error(ErrorType::kInternal,
                          std::string("no free loopback port: ") + strerror(bind_errno));
    }
    return static_cast<std::uint16_t>(ntohs(address.sin_port));
}

Result<void> write_ini(const Instance& instance) {
    if (auto made = base::ensure_owner_only_folder(instance.dir); !made) return made;
    if (auto made = base::ensure_owner_only_folder(instance.dir / "vsp"); !made) return made;
    const std::string dir = instance.dir.string();
    const auto in_dir = [&dir](const char* name) { return dir + "/" + name; };
    std::string ini = "; written by glassbox (http/virtuoso_instance.cpp) at each start\n";
    ini.append("[Database]\nDatabaseFile=").append(in_dir("virtuoso.db"));
    ini.append("\nErrorLogFile=").append(in_dir("virtuoso.log"));
    ini.append("\nLockFile=").append(in_dir("virtuoso.lck"));
    ini.append("\nTransactionFile=").append(in_dir("virtuoso.trx"));
    ini.append("\nxa_persistent_file=").append(in_dir("virtuoso.pxa"));
    ini.append("\n\n[TempDatabase]\nDatabaseFile=").append(in_dir("virtuoso-temp.db"));
    ini.append("\nTransactionFile=").append(in_dir("virtuoso-temp.trx"));
    ini.append("\n\n[Parameters]\nServerPort=127.0.0.1:").append(std::to_string(instance.sql_port));
    ini.append("\nDirsAllowed=., ").append(dir);
    ini.append("\n\n[HTTPServer]\nServerPort=127.0.0.1:")
        .append(std::to_string(instance.http_port));
    // Static pages from a folder of the instance's own (empty): /sparql is built in, and the
    // package's start page (virtuoso-vsp-startpage, a Recommends) need not be installed.
    ini.append("\nServerRoot=").append(in_dir("vsp")).append("\nEnabledDavVSP=0\n");
    ini.append("\n[SPARQL]\nResultSetMaxRows=100000\nMaxQueryExecutionTime=60\n");
    return base::write_owner_only_file(instance.ini(), ini);
}

std::vector<std::string> server_argv(const Instance& instance) {
    return {std::string(kServerBinary), "+configfile", instance.ini().string(), "+foreground"};
}

bool answers(const Instance& instance, milliseconds timeout) {
    HttpOptions options;
    options.connect_timeout = timeout;
    options.timeout = timeout;
    options.max_retries = 0;
    HttpClient client(options);
    HttpRequest request;
    request.url = instance.query_url();
    request.accept = "*/*";
    request.http_errors_as_responses = true;
    return client.request(request).ok();
}

Result<void> run_sql(const Instance& instance, std::string_view password, std::string_view sql,
                     milliseconds timeout) {
    const fs::path output = instance.dir / "isql.out";
    auto fd = base::open_owner_only_file(output, base::OpenFor::kTruncate);
    if (!fd) return std::move(fd).error();
    std::vector<std::string> args{std::string(kIsqlBinary),
                                  "127.0.0.1:" + std::to_string(instance.sql_port), "dba",
                                  std::string(password), "exec=" + std::string(sql)};
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, *fd, 1);
    posix_spawn_file_actions_adddup2(&actions, *fd, 2);
    // The caller's blocked signals (`glassbox up` blocks SIGTERM and SIGCHLD) are not isql's.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
    pid_t pid = -1;
    const int spawned = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    ::close(*fd);
    if (spawned != 0) {
        return make_error(ErrorType::kInternal, std::string("cannot run ").append(kIsqlBinary) +
                                                    ": " + strerror(spawned));
    }
    const int code = wait_for(pid, timeout);
    const std::string text = read_text(output, kMaxIsqlOutputBytes);
    std::error_code ec;
    fs::remove(output, ec);
    const std::string errors = isql_errors(text);
    if (code != 0 || !errors.empty()) {
        std::string message = "isql-vt on port " + std::to_string(instance.sql_port);
        message.append(code == -1 ? " did not finish" : " failed");
        if (!errors.empty()) message.append(": ").append(errors);
        return make_error(ErrorType::kInternal, std::move(message));
    }
    return {};
}

Result<SparqlConfig> secure(const Instance& instance, milliseconds query_timeout) {
    auto password = dba_password(instance);
    if (!password) return std::move(password).error();
    SparqlConfig config;
    config.query_url = instance.query_url();
    config.graph_store_url = instance.graph_store_url();
    config.user = "dba";
    config.password = std::move(password).value();
    config.timeout = query_timeout;
    if (!anonymous_update_refused(instance)) {
        log()->warn("event=anonymous_update_allowed action=revoke");
        if (auto revoked =
                run_sql(instance, config.password, "REVOKE SPARQL_UPDATE FROM \"SPARQL\";");
            !revoked) {
            return std::move(revoked).error();
        }
        SparqlClient writer(config);
        (void)writer.delete_graph(kProbeGraph);
        if (!anonymous_update_refused(instance)) {
            return make_error(ErrorType::kInternal,
                              "the anonymous /sparql user of the Virtuoso instance in " +
                                  instance.dir.string() + " can still update after the revoke");
        }
    }
    return config;
}

}  // namespace glassbox::http::virtuoso
