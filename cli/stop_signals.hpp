// How a long-running glassbox process (a worker, the gateway) waits for SIGTERM/SIGINT.
#pragma once

#include <signal.h>

namespace glassbox::cli {

// Blocks SIGTERM/SIGINT before any thread starts, so every thread inherits the mask and only
// wait_for_stop_signal sees them.
sigset_t block_stop_signals();
int wait_for_stop_signal(const sigset_t& stop_signals);

}  // namespace glassbox::cli
