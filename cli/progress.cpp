// The progress line of `glassbox load`: drawn with \r on a terminal, summarised otherwise.
#include "cli/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>

namespace glassbox::cli {

std::string with_commas(std::uint64_t n) {
    std::string digits = std::to_string(n);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

std::string format_seconds(double seconds) {
    char buffer[32];
    if (seconds < 10) {
        std::snprintf(buffer, sizeof buffer, "%.2f s", seconds);
    } else if (seconds < 60) {
        std::snprintf(buffer, sizeof buffer, "%.1f s", seconds);
    } else {
        const auto whole = static_cast<long>(seconds);
        std::snprintf(buffer, sizeof buffer, "%ldm%02lds", whole / 60, whole % 60);
    }
    return buffer;
}

bool Progress::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string label, std::string unit, std::uint64_t total, bool enabled)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), enabled_(enabled) {
    live_ = enabled_ && stderr_is_terminal();
}

Progress::~Progress() {
    if (live_ && !finished_) std::cerr << "\r\033[K" << std::flush;
}

void Progress::update(std::uint64_t done) {
    done_ = done;
    draw(false);
}

void Progress::draw(bool force) {
    if (!live_) return;
    const auto now = Clock::now();
    if (!force && now - last_draw_ < std::chrono::milliseconds{100}) return;
    last_draw_ = now;
    const double elapsed = std::chrono::duration<double>(now - started_).count();
    const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0.0;
    std::string line = label_ + "  ";
    if (total_ > 0) {
        const double fraction =
            std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
        constexpr int kWidth = 24;
        const int filled = static_cast<int>(std::lround(fraction * kWidth));
        line += "[" + std::string(static_cast<std::size_t>(filled), '#') +
                std::string(static_cast<std::size_t>(kWidth - filled), '.') + "] ";
        line += std::to_string(static_cast<int>(fraction * 100)) + "%  ";
        line += with_commas(done_) + "/" + with_commas(total_) + " " + unit_;
    } else {
        line += with_commas(done_) + " " + unit_;
    }
    line += "  " + with_commas(static_cast<std::uint64_t>(rate)) + "/s";
    if (total_ > 0 && rate > 0 && done_ < total_) {
        line += "  ETA " + format_seconds(static_cast<double>(total_ - done_) / rate);
    }
    std::cerr << "\r\033[K" << line << std::flush;
}

void Progress::finish(const std::string& note) {
    if (finished_) return;
    finished_ = true;
    if (!enabled_) return;
    if (live_) std::cerr << "\r\033[K";
    const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
    std::string line =
        label_ + ": " + with_commas(done_) + " " + unit_ + " in " + format_seconds(elapsed);
    if (elapsed > 0 && done_ > 0) {
        line += " (" +
                with_commas(static_cast<std::uint64_t>(static_cast<double>(done_) / elapsed)) +
                "/s)";
    }
    if (!note.empty()) line += "; " + note;
    std::cerr << line << std::endl;
}

}  // namespace glassbox::cli
