// SIGTERM/SIGINT, blocked and waited for (cli/stop_signals.hpp).
#include "cli/stop_signals.hpp"

#include <pthread.h>

namespace glassbox::cli {

sigset_t block_stop_signals() {
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    return stop_signals;
}

int wait_for_stop_signal(const sigset_t& stop_signals) {
    int signal = 0;
    while (sigwait(&stop_signals, &signal) != 0) {
    }
    return signal;
}

}  // namespace glassbox::cli
