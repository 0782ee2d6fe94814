// A background loop on a thread of its own: one pass at once, then one per interval (or sooner,
// on wake()), until stopped. What the trace store's retention and the SPARQL mirrors run on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace glassbox::base {

class PeriodicThread {
public:
    // A pass; true asks for the next one at once (more work is waiting), false for the interval.
    using Pass = std::function<bool()>;

    PeriodicThread() = default;
    ~PeriodicThread();
    PeriodicThread(const PeriodicThread&) = delete;
    PeriodicThread& operator=(const PeriodicThread&) = delete;

    // Starts the loop (nothing when it runs already). `pass` must not throw.
    void start(std::chrono::milliseconds interval, Pass pass);
    // The next pass starts now rather than at the end of the interval.
    void wake();
    // Ends the loop and joins the thread; a pass in progress finishes first.
    void stop();
    // True once stop() was called: a long pass checks it between its items.
    bool stopping() const;

private:
    void run();

    std::chrono::milliseconds interval_{0};
    Pass pass_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool woken_ = false;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace glassbox::base
