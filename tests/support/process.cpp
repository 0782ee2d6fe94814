// Child processes and temporary directories for integration tests.
#include "tests/support/process.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace glassbox::integration {

namespace {

using Clock = std::chrono::steady_clock;

ExitStatus decode_status(int status) {
    ExitStatus out;
    if (WIFEXITED(status)) {
        out.exited = true;
        out.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        out.signal = WTERMSIG(status);
    }
    return out;
}

// Every glassbox a test starts finds its default home in a fresh folder of this test process,
// never the user's ~/.glassbox: keys or endpoints left there by `glassbox up` would otherwise
// change what a test's processes do. A test that wants a home says so (--home, GLASSBOX_HOME).
struct IsolatedDefaultHome {
    IsolatedDefaultHome() {
        if (std::getenv("GLASSBOX_HOME") != nullptr) return;
        const std::string path = "/tmp/gb-test-home-" + std::to_string(::getpid());
        ::setenv("GLASSBOX_HOME", path.c_str(), 0);
    }
    ~IsolatedDefaultHome() {
        std::error_code ignored;
        std::filesystem::remove_all("/tmp/gb-test-home-" + std::to_string(::getpid()), ignored);
    }
};
const IsolatedDefaultHome isolated_default_home;

}  // namespace

TempDir::TempDir(const std::string& prefix) {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" + prefix + "-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()) == nullptr) {
        throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
    }
    path_ = buffer.data();
}

TempDir::~TempDir() {
    if (keep_ || std::getenv("GLASSBOX_KEEP_TEST_DIRS") != nullptr) {
        return;
    }
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

std::string ExitStatus::describe() const {
    if (exited) {
        return "exit code " + std::to_string(code);
    }
    if (signal != 0) {
        return "killed by signal " + std::to_string(signal);
    }
    return "unknown";
}

ChildProcess::ChildProcess(std::string name, std::vector<std::string> argv,
                           const std::filesystem::path& log_dir, std::optional<RunAs> run_as)
    : name_(std::move(name)), argv_(std::move(argv)), log_dir_(log_dir) {
    if (argv_.empty()) {
        throw std::invalid_argument("ChildProcess: empty argv");
    }
    // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
    std::vector<char*> args;
    args.reserve(argv_.size() + 1);
    for (auto& a : argv_) {
        args.push_back(a.data());
    }
    args.push_back(nullptr);
    const std::string out_path = stdout_path().string();
    const std::string err_path = stderr_path().string();
    const pid_t parent = ::getpid();
    int netns = -1;
    if (run_as && !run_as->netns.empty()) {
        netns = ::open(("/var/run/netns/" + run_as->netns).c_str(), O_RDONLY | O_CLOEXEC);
        if (netns < 0) {
            throw std::runtime_error("network namespace " + run_as->netns + ": " +
                                     std::strerror(errno));
        }
    }

    pid_ = ::fork();
    if (pid_ != 0 && netns >= 0) ::close(netns);
    if (pid_ < 0) {
        throw std::runtime_error("fork failed: " + std::string(std::strerror(errno)));
    }
    if (pid_ == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) {
            ::_exit(127);
        }
        // A fresh process group: signals meant for the test runner do not reach the child.
        ::setpgid(0, 0);
        const int in = ::open("/dev/null", O_RDONLY);
        const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0 || err < 0) {
            ::_exit(126);
        }
        ::dup2(in, STDIN_FILENO);
        ::dup2(out, STDOUT_FILENO);
        ::dup2(err, STDERR_FILENO);
        // The output files are opened first (the log folder may be closed to that user).
        // Changing user clears the parent-death signal: it is set again after.
        if (netns >= 0 && ::setns(netns, CLONE_NEWNET) != 0) {
            ::_exit(124);
        }
        if (run_as) {
            if (::setgroups(0, nullptr) != 0 || ::setgid(run_as->gid) != 0 ||
                ::setuid(run_as->uid) != 0) {
                ::_exit(125);
            }
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(127);
        }
        ::execv(args[0], args.data());
        ::_exit(127);
    }
}

ChildProcess::~ChildProcess() {
    if (pid_ > 0 && !status_) {
        kill();
    }
}

bool ChildProcess::running() {
    if (status_) {
        return false;
    }
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
        status_ = decode_status(status);
        return false;
    }
    return r == 0;
}

void ChildProcess::send_signal(int sig) {
    if (!status_ && pid_ > 0) {
        ::kill(pid_, sig);
    }
}

std::optional<ExitStatus> ChildProcess::wait_exit(std::chrono::milliseconds timeout) {
    const auto until = Clock::now() + timeout;
    while (true) {
        if (!running()) {
            return status_;
        }
        if (Clock::now() >= until) {
            return std::nullopt;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
}

ExitStatus ChildProcess::terminate(std::chrono::milliseconds grace) {
    send_signal(SIGTERM);
    if (auto status = wait_exit(grace)) {
        return *status;
    }
    return kill();
}

ExitStatus ChildProcess::kill() {
    if (status_) {
        return *status_;
    }
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    status_ = decode_status(status);
    return *status_;
}

std::filesystem::path ChildProcess::stdout_path() const { return log_dir_ / (name_ + ".out"); }
std::filesystem::path ChildProcess::stderr_path() const { return log_dir_ / (name_ + ".err"); }
std::string ChildProcess::stdout_text() const { return read_file(stdout_path()); }
std::string ChildProcess::stderr_text() const { return read_file(stderr_path()); }

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::optional<nlohmann::json> wait_for_ready_file(const std::filesystem::path& path,
                                                  ChildProcess& process,
                                                  std::chrono::milliseconds timeout) {
    const auto until = Clock::now() + timeout;
    while (Clock::now() < until) {
        std::error_code ec;
        if (std::filesystem::exists(path, ec)) {
            auto value = nlohmann::json::parse(read_file(path), nullptr, false);
            if (!value.is_discarded() && value.is_object()) {
                return value;
            }
        }
        if (!process.running()) {
            return std::nullopt;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    return std::nullopt;
}

CommandResult run_command(std::vector<std::string> argv, const std::filesystem::path& log_dir,
                          std::chrono::milliseconds timeout,
                          std::optional<ChildProcess::RunAs> run_as) {
    static std::atomic<int> counter{0};
    ChildProcess child("cmd-" + std::to_string(counter.fetch_add(1)), std::move(argv), log_dir,
                       run_as);
    CommandResult result;
    if (auto status = child.wait_exit(timeout)) {
        result.status = *status;
    } else {
        result.timed_out = true;
        result.status = child.kill();
    }
    result.out = child.stdout_text();
    result.err = child.stderr_text();
    return result;
}

}  // namespace glassbox::integration
