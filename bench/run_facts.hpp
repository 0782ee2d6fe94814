// Facts about a benchmark run for its report: the load average, the time in UTC, and the commit
// the binary was built from.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>

namespace glassbox::bench {

// "1-min 5-min 15-min" from /proc/loadavg.
inline std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string one, five, fifteen;
    in >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
}

// The 1-minute load average.
inline double load_average_1() { return std::strtod(load_average().c_str(), nullptr); }

inline std::string utc_now() {
    const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buffer;
}

// What a shell command prints, trailing blanks and newlines removed.
inline std::string command_output(const std::string& command) {
    std::string out;
    if (FILE* p = ::popen(command.c_str(), "r")) {
        char buffer[256];
        while (std::fgets(buffer, sizeof buffer, p) != nullptr) out += buffer;
        ::pclose(p);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

// The commit of the checkout at `source_dir`, and whether its working tree (which the binary is
// built from) differs from it; "unknown" outside a git checkout.
inline std::string git_commit(const std::string& source_dir) {
    const std::string git = "git -C '" + source_dir + "' ";
    std::string commit = command_output(git + "rev-parse --short HEAD 2>/dev/null");
    if (commit.empty()) return "unknown";
    if (!command_output(git + "status --porcelain --untracked-files=no 2>/dev/null").empty())
        commit += " (working tree with uncommitted changes)";
    return commit;
}

}  // namespace glassbox::bench
