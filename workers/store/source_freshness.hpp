// Freshness in a collection's database (docs/knowledge.md §3): the source_date columns a
// knowledge base made before them gains, the collection's revalidation age (`max_age`, kept in
// kb_settings), and the sources past it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "schema/messages.hpp"
#include "storage/sql.hpp"

namespace glassbox::store {

// Adds source_date to graph_sources, graph_staged_sources and documents where a database made
// before it lacks the column, and creates kb_settings; once, under the writer lock.
base::Result<void> migrate_freshness(storage::sql::Connection& db);

// The collection's revalidation age; nullopt when it declares none.
base::Result<std::optional<std::chrono::seconds>> read_max_age(storage::sql::Connection& db);

// Declares (or, with nullopt, removes) the collection's revalidation age.
base::Result<void> write_max_age(storage::sql::Connection& db,
                                 std::optional<std::chrono::seconds> max_age);

// What a collection's summary says of its freshness: its max_age ("" when none) and how many of
// its sources (files and documents, each uri once; chunks count through their document) are past
// it at `now`.
struct FreshnessSummary {
    std::string max_age;
    std::uint64_t stale_sources = 0;
};
base::Result<FreshnessSummary> summarize_freshness(storage::sql::Connection& db,
                                                   std::chrono::system_clock::time_point now);

// Gives each source its collection's max_age and whether it is past it at `now` (nothing when
// the collection declares no max_age).
void mark_freshness(std::vector<schema::FactSource>& sources,
                    std::optional<std::chrono::seconds> max_age,
                    std::chrono::system_clock::time_point now);
void mark_freshness(schema::Chunk& chunk, std::optional<std::chrono::seconds> max_age,
                    std::chrono::system_clock::time_point now);

}  // namespace glassbox::store
