// base/periodic_thread.hpp.
#include "base/periodic_thread.hpp"

#include <utility>

namespace glassbox::base {

PeriodicThread::~PeriodicThread() { stop(); }

void PeriodicThread::start(std::chrono::milliseconds interval, Pass pass) {
    if (thread_.joinable()) return;
    interval_ = interval;
    pass_ = std::move(pass);
    {
        std::lock_guard lock(mutex_);
        stopping_ = false;
    }
    thread_ = std::thread([this] { run(); });
}

void PeriodicThread::wake() {
    {
        std::lock_guard lock(mutex_);
        woken_ = true;
    }
    wake_.notify_all();
}

void PeriodicThread::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

bool PeriodicThread::stopping() const {
    std::lock_guard lock(mutex_);
    return stopping_;
}

void PeriodicThread::run() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        woken_ = false;
        lock.unlock();
        const bool again = pass_();
        lock.lock();
        if (!again) wake_.wait_for(lock, interval_, [this] { return stopping_ || woken_; });
    }
}

}  // namespace glassbox::base
