// Many rows written by one statement, on either engine: the statement reads them as a table
// (`INSERT INTO t(a, b) SELECT c0, c1 FROM <feed>`), which on SQLite is the row-feed virtual
// table (storage/int64_row_feed.hpp) and on PostgreSQL an unnest() of arrays bound as parameters,
// with the same column names (c0 … c4 INTEGER, t0 and t1 TEXT).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/result.hpp"
#include "storage/int64_row_feed.hpp"
#include "storage/sql.hpp"

namespace glassbox::storage::sql {

// Makes `feed_name` readable on the connection (SQLite registers the virtual table; PostgreSQL
// needs nothing). Registering again is harmless.
base::Result<void> register_row_feed(Connection& connection, const std::string& feed_name);

// Runs `sql`, which reads `feed_name` once (`FROM <feed_name>`), with `feed` as that table's
// rows; returns the rows it changed. PostgreSQL runs it once per slice of at most
// `postgres_slice` rows (one bound array per column the SQL names), so `sql` must give the same
// result fed in slices (INSERT ... SELECT does). There a statement that only appends the rows
// (`INSERT INTO t(a, b) SELECT c0, t0 FROM <feed_name>`, nothing more) is run as a binary COPY
// of each slice instead, with the same result.
base::Result<std::int64_t> run_with_row_feed(Connection& connection, const std::string& feed_name,
                                             const std::string& sql, const Int64RowFeed& feed,
                                             std::size_t postgres_slice = 50'000);

// `{"a","b\"c"}`: a PostgreSQL array literal of texts, each quoted and escaped.
void append_text_array_element(std::string& out, std::string_view text);

}  // namespace glassbox::storage::sql
