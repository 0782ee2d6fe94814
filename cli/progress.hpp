// Progress of a long command on stderr: a live bar on a terminal, plain lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace glassbox::cli {

// On a terminal: one line redrawn at most 10 times a second —
//   "kb.nt  [########......]  45%  450,000/1,000,000 statements  310,000/s  ETA 2s".
// Not a terminal (a log, a pipe): nothing while running; finish() prints one plain line. With a
// total of 0 the percent and ETA are left out (the count and rate remain).
class Progress {
public:
    Progress(std::string label, std::string unit, std::uint64_t total, bool enabled = true);
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    void set_total(std::uint64_t total) noexcept { total_ = total; }
    void update(std::uint64_t done);
    // Clears the live line; prints "label: N unit in T s (R/s)" plus `note` when given.
    void finish(const std::string& note = {});

    static bool stderr_is_terminal();

private:
    void draw(bool force);

    using Clock = std::chrono::steady_clock;
    std::string label_;
    std::string unit_;
    std::uint64_t total_ = 0;
    std::uint64_t done_ = 0;
    bool enabled_ = true;
    bool live_ = false;
    bool finished_ = false;
    Clock::time_point started_ = Clock::now();
    Clock::time_point last_draw_{};
};

// 1234567 -> "1,234,567".
std::string with_commas(std::uint64_t n);
// Seconds as "0.42 s", "12.3 s", "3m05s".
std::string format_seconds(double seconds);

}  // namespace glassbox::cli
