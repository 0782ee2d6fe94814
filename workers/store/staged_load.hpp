// Staged (bulk) loads of the graph store: batches interned and parked in staging tables, then
// moved into the graph in one transaction, each index written in key order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/term.hpp"
#include "storage/sqlite_database.hpp"
#include "workers/store/graph_store.hpp"
#include "workers/store/term_dictionary.hpp"

namespace glassbox::store {

// The virtual table commit writes sorted runs through (storage::register_row_feed).
inline constexpr const char* kQuadFeedTable = "glassbox_quad_feed";

// GraphStore::stage, commit_staged and abort_staged (their contract is documented there), on
// the store's connection and dictionary. Holds no state of its own between calls.
class StagedLoads {
public:
    StagedLoads(storage::Database& db, TermDictionary& dictionary,
                std::size_t commit_group) noexcept
        : db_(db), dictionary_(dictionary), commit_group_(commit_group) {}

    base::Result<std::uint64_t> stage(std::string_view load, const SourceRecord& source,
                                      std::span<const schema::Triple> triples);
    base::Result<InsertCounts> commit(std::string_view load);
    base::Result<void> abort(std::string_view load);

private:
    // A staged quad with the id of the source it came from; read by the feed as 5 int64s.
    struct StagedQuad {
        std::int64_t s, p, o, g, src;
    };

    base::Result<void> drop_stale_staging();
    base::Result<void> commit_group(std::vector<StagedQuad>& group, InsertCounts& counts,
                                    bool fresh);

    storage::Database& db_;
    TermDictionary& dictionary_;
    std::size_t commit_group_;
};

}  // namespace glassbox::store
