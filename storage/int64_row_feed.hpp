// An eponymous SQLite virtual table whose rows are an in-memory array of int64 (and, optionally,
// two text columns), so a sorted run is written by one INSERT ... SELECT (SQLite appends row
// after row inside one statement) instead of one statement step per row.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "storage/sqlite_database.hpp"

namespace glassbox::storage {

// Columns of every row-feed table: c0 … c4, all INTEGER, then t0 and t1, TEXT.
inline constexpr std::size_t kRowFeedColumns = 5;
inline constexpr std::size_t kRowFeedTextColumns = 2;

// The rows a statement reads from the table: `count` rows of `stride` int64s each, column c<i>
// being element column_at[i] of a row. The memory must outlive the statement's run.
struct Int64RowFeed {
    const std::int64_t* rows = nullptr;
    std::size_t count = 0;
    std::size_t stride = 0;
    std::array<std::size_t, kRowFeedColumns> column_at{};
    // Optional: kRowFeedTextColumns views per row (t0, t1 of row i are texts[2 i], texts[2 i + 1]),
    // handed to SQLite without a copy (NULL when texts is null). Their memory must outlive the run.
    const std::string_view* texts = nullptr;
};

// Registers the table `name` on the connection (registering the same name again replaces it).
// A statement that reads it outside run_with_row_feed sees no rows.
base::Result<void> register_row_feed(Database& db, const std::string& name);

// Runs `sql` (e.g. INSERT INTO t SELECT c0, c1 FROM <name>) with `feed` as the table's rows on
// this thread; returns the number of rows it changed.
base::Result<std::int64_t> run_with_row_feed(Database& db, const std::string& sql,
                                             const Int64RowFeed& feed);

}  // namespace glassbox::storage
