// base::PeriodicThread: a pass at once, the next after the interval or a wake(), at once when a
// pass asks for it, none after stop().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "base/periodic_thread.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::base {
namespace {

using std::chrono::hours;

TEST(PeriodicThread, RunsAPassAtOnceAndTheNextOnWakeNotBeforeTheInterval) {
    std::atomic<int> passes{0};
    PeriodicThread thread;
    thread.start(hours{1}, [&] {
        ++passes;
        return false;
    });
    ASSERT_TRUE(test_support::wait_until([&] { return passes.load() == 1; }));
    EXPECT_FALSE(thread.stopping());
    thread.wake();
    ASSERT_TRUE(test_support::wait_until([&] { return passes.load() == 2; }));
    thread.stop();
    EXPECT_TRUE(thread.stopping());
    EXPECT_EQ(passes.load(), 2);  // an hour's interval: no pass but the woken one
}

TEST(PeriodicThread, APassThatAsksForMoreRunsAgainAtOnceAndStopEndsTheLoop) {
    std::atomic<int> passes{0};
    PeriodicThread thread;
    thread.start(hours{1}, [&] { return ++passes < 5; });
    ASSERT_TRUE(test_support::wait_until([&] { return passes.load() == 5; }));
    thread.stop();
    thread.stop();  // twice is harmless
    EXPECT_EQ(passes.load(), 5);
}

}  // namespace
}  // namespace glassbox::base
