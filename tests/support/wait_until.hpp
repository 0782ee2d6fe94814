// Waiting in tests on the condition a test asserts, never on the clock (docs: STYLE.md, Tests).
#pragma once

#include <chrono>
#include <thread>

namespace glassbox::test_support {

// A hang guard, not a timing: generous enough that a loaded 2-core machine never reaches it
// while the condition is on its way, short enough that a real hang ends the test.
inline constexpr std::chrono::milliseconds kHangGuard{120'000};

// Polls `predicate` every `poll` until it holds (true) or `hang_guard` passes (false).
// The poll interval only bounds how late the test notices; it orders nothing.
template <typename Predicate>
bool wait_until(Predicate&& predicate, std::chrono::milliseconds hang_guard = kHangGuard,
                std::chrono::milliseconds poll = std::chrono::milliseconds{5}) {
    const auto deadline = std::chrono::steady_clock::now() + hang_guard;
    while (true) {
        if (predicate()) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(poll);
    }
}

}  // namespace glassbox::test_support
