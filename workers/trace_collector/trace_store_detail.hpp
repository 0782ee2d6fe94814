// Internals the trace store's files share (schema and open, ingest, reads).
#pragma once

#include <chrono>
#include <cstdint>

#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace::detail {

inline std::int64_t to_ms(WallClock::time_point time) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

}  // namespace glassbox::trace::detail
