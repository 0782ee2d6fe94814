// Child process supervision for `glassbox up`: fork/exec, reap, restart with backoff, ordered stop.
#include "cli/process_supervisor.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <thread>

#include "base/log.hpp"
#include "base/owner_only.hpp"

namespace glassbox::cli {

using Clock = std::chrono::steady_clock;

struct ProcessSupervisor::Child {
    ChildSpec spec;
    pid_t pid = -1;
    Clock::time_point started{};
    std::optional<Clock::time_point> restart_at;
    std::chrono::milliseconds backoff{0};
    int restarts = 0;
};

namespace {

std::shared_ptr<spdlog::logger> log() { return base::component_logger("up"); }

std::string describe_status(int status) {
    if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string{"signal "} + strsignal(WTERMSIG(status));
    return "status " + std::to_string(status);
}

// Runs in the forked child: only async-signal-safe calls until exec. `log_fd` is the child's
// log, opened by the parent (owner-only, never through a symbolic link).
[[noreturn]] void exec_child(int log_fd, const std::vector<char*>& argv) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // Own process group: a terminal's Ctrl-C reaches the supervisor only, which then stops
    // children in order (workers before the broker) instead of all at once.
    setpgid(0, 0);
    // If the supervisor dies without stopping us, stop anyway rather than run orphaned.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    // dup2 clears O_CLOEXEC on the copies: the program keeps them, not the original.
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
}

}  // namespace

ProcessSupervisor::ProcessSupervisor(SupervisorConfig config) : config_(config) {}

ProcessSupervisor::~ProcessSupervisor() { stop_all(); }

base::Result<void> ProcessSupervisor::start(ChildSpec spec) {
    auto child = std::make_unique<Child>();
    child->spec = std::move(spec);
    child->backoff = config_.initial_backoff;
    auto started = spawn(*child);
    children_.push_back(std::move(child));
    return started;
}

base::Result<void> ProcessSupervisor::spawn(Child& child) {
    std::vector<char*> argv;
    argv.reserve(child.spec.argv.size() + 1);
    for (auto& arg : child.spec.argv) argv.push_back(arg.data());
    argv.push_back(nullptr);

    auto log_fd = base::open_owner_only_file(child.spec.log_file, base::OpenFor::kAppend);
    if (!log_fd) {
        log()->error("event=spawn_failed child={} error=\"{}\"", child.spec.name,
                     log_fd.error().describe());
        child.restart_at = Clock::now() + child.backoff;
        return std::move(log_fd).error();
    }
    const pid_t pid = fork();
    if (pid == 0) exec_child(*log_fd, argv);
    const int fork_errno = errno;
    ::close(*log_fd);
    if (pid < 0) {
        log()->error("event=spawn_failed child={} error=\"{}\"", child.spec.name,
                     std::strerror(fork_errno));
        child.restart_at = Clock::now() + child.backoff;
        return base::make_error(base::ErrorType::kInternal, "cannot start " + child.spec.name +
                                                                ": " + std::strerror(fork_errno));
    }
    child.pid = pid;
    child.started = Clock::now();
    child.restart_at.reset();
    log()->info("event=started child={} pid={} log={}", child.spec.name, pid,
                child.spec.log_file.string());
    return {};
}

void ProcessSupervisor::reap() {
    for (;;) {
        int status = 0;
        const pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) return;
        for (auto& child : children_) {
            if (child->pid != pid) continue;
            child->pid = -1;
            const auto ran = Clock::now() - child->started;
            if (ran >= config_.stable_after) child->backoff = config_.initial_backoff;
            child->restart_at = Clock::now() + child->backoff;
            log()->warn("event=exited child={} pid={} cause=\"{}\" restart_in_ms={}",
                        child->spec.name, pid, describe_status(status), child->backoff.count());
            child->backoff = std::min(child->backoff * 2, config_.max_backoff);
        }
    }
}

void ProcessSupervisor::restart_due() {
    const auto now = Clock::now();
    for (auto& child : children_) {
        if (child->pid < 0 && child->restart_at && *child->restart_at <= now) {
            ++child->restarts;
            (void)spawn(*child);  // a failure is logged and retried after the backoff
        }
    }
}

std::optional<int> ProcessSupervisor::supervise_once(std::chrono::milliseconds wait,
                                                     const sigset_t& stop_signals) {
    reap();
    restart_due();
    // Wake no later than the next restart that is due.
    auto until = Clock::now() + wait;
    for (const auto& child : children_) {
        if (child->pid < 0 && child->restart_at) until = std::min(until, *child->restart_at);
    }
    const auto left = std::max(std::chrono::nanoseconds{0}, until - Clock::now());
    timespec timeout{};
    timeout.tv_sec = static_cast<time_t>(left.count() / 1'000'000'000);
    timeout.tv_nsec = static_cast<long>(left.count() % 1'000'000'000);
    const int signal = sigtimedwait(&stop_signals, nullptr, &timeout);
    if (signal == SIGINT || signal == SIGTERM) return signal;
    reap();
    restart_due();
    return std::nullopt;
}

void ProcessSupervisor::stop_all() {
    for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
        Child& child = **it;
        child.restart_at.reset();
        if (child.pid < 0) continue;
        kill(child.pid, SIGTERM);
        const auto give_up = Clock::now() + config_.stop_grace;
        int status = 0;
        pid_t done = 0;
        while ((done = waitpid(child.pid, &status, WNOHANG)) == 0 && Clock::now() < give_up) {
            std::this_thread::sleep_for(std::chrono::milliseconds{20});
        }
        if (done == 0) {
            log()->warn("event=kill child={} pid={} reason=\"no exit within grace\"",
                        child.spec.name, child.pid);
            kill(child.pid, SIGKILL);
            waitpid(child.pid, &status, 0);
        }
        log()->info("event=stopped child={} pid={}", child.spec.name, child.pid);
        child.pid = -1;
    }
}

void ProcessSupervisor::set_argv(const std::string& name, const std::vector<std::string>& argv) {
    for (auto& child : children_) {
        if (child->spec.name == name) child->spec.argv = argv;
    }
}

sigset_t block_supervisor_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    return set;
}

}  // namespace glassbox::cli
