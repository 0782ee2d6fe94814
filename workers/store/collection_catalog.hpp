// What the store tells about its collections as wholes: the counts `collections` lists and
// `collection-delete` reports, and whether a load into one is in progress (docs/collections.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "schema/messages.hpp"
#include "storage/sql.hpp"
#include "workers/store/knowledge_base.hpp"

namespace glassbox::store {

// Facts, entities (distinct subjects), documents and chunks with their tiers, vectors, bytes on
// disk, the last load, and the revalidation age with the sources past it at `now`. Skips facts
// per tier (a join over every fact: `stats` has it). The caller holds kb.lock().
base::Result<schema::CollectionSummary> summarize_collection(
    KnowledgeBase& kb,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// The newest loaded_at of any source or document; "" when there is none.
base::Result<std::string> last_loaded(storage::sql::Connection& db);

// A staged load (docs/knowledge.md §6) that staged a batch since `since` (unix seconds).
struct StagedLoadActivity {
    std::string load;
    std::int64_t last_staged = 0;  // unix seconds
};
base::Result<std::vector<StagedLoadActivity>> staged_loads_since(storage::sql::Connection& db,
                                                                 std::int64_t since);

// kInvalidRequest naming the collection and the load when a staged load staged a batch within
// `idle` before `now`: deleting then would leave the rest of that load to create the collection
// anew with part of its facts. An older staging was abandoned and goes with the file.
base::Result<void> refuse_if_loading(KnowledgeBase& kb, std::chrono::seconds idle,
                                     std::chrono::system_clock::time_point now);

}  // namespace glassbox::store
