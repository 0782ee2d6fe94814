// Staged (bulk) loads of the graph store: batches interned and parked in staging tables, then
// moved into the graph in one transaction, each index written in key order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "schema/term.hpp"
#include "storage/sql.hpp"
#include "workers/store/bulk_allocator.hpp"
#include "workers/store/graph_store.hpp"
#include "workers/store/knowledge_change.hpp"
#include "workers/store/term_batch.hpp"
#include "workers/store/term_dictionary.hpp"

namespace glassbox::store {

// The virtual table commit writes sorted runs through (storage::register_row_feed).
inline constexpr const char* kQuadFeedTable = "glassbox_quad_feed";

// GraphStore::stage, commit_staged and abort_staged (their contract is documented there), on
// the store's connection and dictionary. Holds no state of its own between calls.
class StagedLoads {
public:
    StagedLoads(storage::sql::Connection& db, TermDictionary& dictionary,
                std::size_t commit_group) noexcept
        : db_(db), dictionary_(dictionary), commit_group_(commit_group) {}

    base::Result<std::uint64_t> stage(std::string_view load, const SourceRecord& source,
                                      std::span<const schema::Triple> triples);
    // The same for a batch built (and so checked) before the write lock was taken.
    base::Result<std::uint64_t> stage(std::string_view load, const SourceRecord& source,
                                      const TermBatch& batch);
    // With `replace`: each source of the load first loses the facts it provided before that the
    // load no longer states (knowledge_change.hpp), in the same transaction; `replace` gets what
    // the change did.
    base::Result<InsertCounts> commit(std::string_view load, KnowledgeChange* replace = nullptr);
    base::Result<void> abort(std::string_view load);

    // A staged quad with the id of the source it came from; read by the feed as 5 int64s.
    struct StagedQuad {
        std::int64_t s, p, o, g, src;
    };
    // A commit group's quads (up to staged_commit_group of them, 40 bytes each).
    using StagedQuads = BulkVector<StagedQuad>;

    // Writes quads (any order, repeats allowed) into the graph, inside the caller's write
    // transaction: new ones to SPO, POS and OSP, every source of a fact other than its first as
    // a link; `counts.added` grows by the new ones. `fresh`: the graph holds no quad yet.
    base::Result<void> commit_group(StagedQuads& group, InsertCounts& counts, bool fresh);

private:
    base::Result<void> drop_stale_staging();
    // Whether the commit of `load` into an empty graph builds the quad orders' keys after their
    // rows, having dropped them (PostgreSQL; staged_load.cpp).
    base::Result<bool> drop_quad_keys_for(std::string_view load);
    // The load's number for `source` (its first batch registers it), inside stage()'s
    // transaction.
    base::Result<std::int64_t> register_source(std::string_view load, const SourceRecord& source);
    // The batch's quads as the graph_staged_quads blob: term ids interned, each with source n.
    base::Result<std::string> quads_blob(const TermBatch& batch, std::int64_t n);
    // Registers the load's staged sources as graph sources: the load's number -> source id.
    base::Result<std::unordered_map<std::int64_t, std::int64_t>> register_staged_sources(
        std::string_view load);
    // The load's staged statements: in all, and in its largest batch.
    base::Result<std::pair<std::int64_t, std::int64_t>> staged_sizes(std::string_view load);
    // The most quads a group of the load's commit holds (what to reserve for it).
    base::Result<std::size_t> largest_group(std::string_view load);
    // Reads the load's staged batches and commits them group by group; returns how many
    // statements the batches held.
    base::Result<std::uint64_t> commit_staged_quads(
        std::string_view load, const std::unordered_map<std::int64_t, std::int64_t>& source_ids,
        InsertCounts& counts, bool fresh);
    // The replacing part of commit(): the load's staged facts, each with its source id.
    base::Result<void> retract_replaced_sources(
        std::string_view load, const std::unordered_map<std::int64_t, std::int64_t>& source_ids,
        KnowledgeChange& change);
    // Appends one staged batch (a row: statements, quads blob) to `group`, its sources mapped to
    // source ids; returns the number of quads it held.
    static base::Result<std::uint64_t> append_staged_batch(
        const storage::sql::Row& row, std::string_view load,
        const std::unordered_map<std::int64_t, std::int64_t>& source_ids, StagedQuads& group);

    storage::sql::Connection& db_;
    TermDictionary& dictionary_;
    std::size_t commit_group_;
};

}  // namespace glassbox::store
