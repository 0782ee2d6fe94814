// Starts child processes, restarts the ones that crash with exponential backoff, stops them all in
// order.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace glassbox::cli {

struct SupervisorConfig {
    // First restart delay after a crash; doubles on each crash in a row, up to max_backoff.
    std::chrono::milliseconds initial_backoff{500};
    std::chrono::milliseconds max_backoff{30'000};
    // A child that ran this long before it exited is considered healthy again: backoff resets.
    std::chrono::milliseconds stable_after{60'000};
    // How long a child has after SIGTERM before it is sent SIGKILL.
    std::chrono::milliseconds stop_grace{10'000};
};

struct ChildSpec {
    std::string name;                // "broker", "echo": used in logs and log file names
    std::vector<std::string> argv;   // argv[0] is the executable path
    std::filesystem::path log_file;  // the child's stdout and stderr, appended
};

// Owns a set of children. Not thread-safe: one supervising thread drives it.
class ProcessSupervisor {
public:
    explicit ProcessSupervisor(SupervisorConfig config);
    ~ProcessSupervisor();  // stops whatever still runs
    ProcessSupervisor(const ProcessSupervisor&) = delete;
    ProcessSupervisor& operator=(const ProcessSupervisor&) = delete;

    // Starts a child now. Its log file is opened here, owner-only (0600) and never through a
    // symbolic link (base::open_owner_only_file); the error (also logged) says why it could
    // not be opened or the child not be forked. A child that failed is retried after its backoff.
    base::Result<void> start(ChildSpec spec);

    // Replaces the command line a child is restarted with (takes effect at its next start).
    void set_argv(const std::string& name, const std::vector<std::string>& argv);

    // Reaps exited children and restarts crashed ones whose backoff has passed. Returns after
    // at most `wait`, or earlier when one of `stop_signals` (blocked by the caller) arrives;
    // then returns that signal number.
    std::optional<int> supervise_once(std::chrono::milliseconds wait, const sigset_t& stop_signals);

    // SIGTERM to every child in reverse start order (workers before the broker), waiting up to
    // stop_grace for each, then SIGKILL.
    void stop_all();

private:
    struct Child;
    void reap();
    void restart_due();
    base::Result<void> spawn(Child& child);

    SupervisorConfig config_;
    std::vector<std::unique_ptr<Child>> children_;
};

// Blocks SIGINT, SIGTERM and SIGCHLD in the calling thread (before any thread starts) so that
// supervise_once can wait for them; returns the set to wait on.
sigset_t block_supervisor_signals();

}  // namespace glassbox::cli
