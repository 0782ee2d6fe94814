// Child processes and temporary directories for integration tests: always killed and reaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace glassbox::integration {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction unless
// keep() was called or GLASSBOX_KEEP_TEST_DIRS is set.
class TempDir {
public:
    explicit TempDir(const std::string& prefix = "glassbox-it");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const noexcept { return path_; }
    void keep() noexcept { keep_ = true; }

private:
    std::filesystem::path path_;
    bool keep_ = false;
};

// How a child ended, decoded from waitpid's status.
struct ExitStatus {
    bool exited = false;  // returned from main or called exit()
    int code = -1;        // exit code when `exited`
    int signal = 0;       // the terminating signal otherwise
    std::string describe() const;
};

// One child process: fork/exec with argv, stdout and stderr to files. The destructor sends
// SIGKILL if it still runs and always reaps it. The child also dies with the test process
// (PR_SET_PDEATHSIG), so a crashed or timed-out test leaves nothing behind.
class ChildProcess {
public:
    // Another user to run the child as (a test running as root starting a server that refuses
    // root, such as PostgreSQL): its uid and gid, no supplementary groups; and optionally a
    // network namespace (`ip netns` name) it joins first, as a server on another "host".
    struct RunAs {
        uid_t uid = 0;
        gid_t gid = 0;
        std::string netns;
    };

    // Starts `argv[0]` (an absolute path) with `argv`; output goes to <log_dir>/<name>.out/.err.
    ChildProcess(std::string name, std::vector<std::string> argv,
                 const std::filesystem::path& log_dir, std::optional<RunAs> run_as = std::nullopt);
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const noexcept { return pid_; }
    const std::string& name() const noexcept { return name_; }
    const std::vector<std::string>& argv() const noexcept { return argv_; }

    // True while the child has not exited (reaps it if it has).
    bool running();
    // Sends a signal (no-op once reaped).
    void send_signal(int sig);
    // Waits up to `timeout` for the child to exit; its status if it did.
    std::optional<ExitStatus> wait_exit(std::chrono::milliseconds timeout);
    // SIGTERM, then SIGKILL after `grace`; returns how it ended.
    ExitStatus terminate(std::chrono::milliseconds grace = std::chrono::milliseconds{3000});
    // SIGKILL and reap.
    ExitStatus kill();

    std::filesystem::path stdout_path() const;
    std::filesystem::path stderr_path() const;
    std::string stdout_text() const;
    std::string stderr_text() const;

private:
    std::string name_;
    std::vector<std::string> argv_;
    std::filesystem::path log_dir_;
    pid_t pid_ = -1;
    std::optional<ExitStatus> status_;
};

// Reads a whole file; empty if it cannot be read.
std::string read_file(const std::filesystem::path& path);

// Waits until `path` holds a complete JSON object (the broker's ready file). nullopt on
// timeout or when `process` exits first.
std::optional<nlohmann::json> wait_for_ready_file(const std::filesystem::path& path,
                                                  ChildProcess& process,
                                                  std::chrono::milliseconds timeout);

// Runs a command to completion with a timeout (killed after it); returns status and output.
struct CommandResult {
    ExitStatus status;
    std::string out;
    std::string err;
    bool timed_out = false;
};
// Whether the command ran to its end and returned `code`.
inline bool exited_with(const CommandResult& r, int code) {
    return r.status.exited && r.status.code == code;
}
CommandResult run_command(std::vector<std::string> argv, const std::filesystem::path& log_dir,
                          std::chrono::milliseconds timeout,
                          std::optional<ChildProcess::RunAs> run_as = std::nullopt);

}  // namespace glassbox::integration
