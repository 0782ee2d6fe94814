// Internals the trace store's files share (schema and open, ingest, reads).
#pragma once

#include <chrono>
#include <cstdint>

#include "base/result.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace::detail {

// Indexes session `session` as a turn of its conversation when it is an ended top-level run
// with gb:conversation (and not indexed yet), then drops the conversation's turns beyond the
// bounds. Runs inside the ingest transaction (conversation_index.cpp).
base::Result<void> index_turn(storage::Database& db, const StoreConfig& config,
                              std::int64_t session);

inline std::int64_t to_ms(WallClock::time_point time) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

}  // namespace glassbox::trace::detail
