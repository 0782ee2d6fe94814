// Copying a SQLite database's tables into PostgreSQL's (moving a home, issue 34): rows matched by
// the source's column names, many to an INSERT, the target's identity sequences moved past the
// copied ids, and both sides counted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "storage/sql.hpp"

namespace glassbox::storage {

// A column the target's table has and the source's lacks, computed on the source by an SQLite
// expression over the source row (its table is named `src` there). Used only when the target's
// table has the column, so a caller may name one a newer target schema adds.
struct DerivedColumn {
    std::string name;
    std::string sqlite_expression;
};

struct TableSpec {
    std::string name;
    std::vector<DerivedColumn> derived{};
    // The target's rows of this table are deleted first (rows its own set-up wrote, such as a
    // metadata row, which the source's replace). Otherwise the table must be empty on the target.
    bool replace_target_rows = false;
};

struct TableCount {
    std::string table;
    std::int64_t source_rows = 0;  // COUNT(*) in the source's snapshot
    std::int64_t copied = 0;       // rows the target's INSERTs reported
    std::int64_t target_rows = 0;  // COUNT(*) on the target after the copy, in its transaction
};

struct CopyOptions {
    // Rows per INSERT (fewer when the columns times this pass PostgreSQL's 65,535 parameters).
    std::size_t rows_per_statement = 1000;
    // Runs on the target before `table`'s rows go in (e.g. to create the partitions they need).
    std::function<base::Result<void>(sql::Connection& target, const std::string& table)>
        before_table{};
};

// The tables of a SQLite database worth copying, in an order where each comes after the tables
// its foreign keys name: ordinary tables, without what only SQLite has (sqlite_* tables, virtual
// tables such as FTS5 and their shadow tables).
base::Result<std::vector<std::string>> sqlite_tables(sql::Connection& source);

// Copies `tables` from `source` (SQLite, read in one snapshot) into `target` (PostgreSQL) inside
// the write transaction the caller holds on the target, so that the caller's rollback leaves
// nothing of it: each source column goes to the target's column of that name (kInternal naming
// it when there is none, or when a target column the source does not fill is NOT NULL without a
// default; generated columns are left to the target), values bound as the source stores them
// (integer, real, text, blob, null). Then every identity or serial column's sequence is set to
// the column's largest value, and every table counted on the target. kInvalidRequest naming the
// table when one not marked replace_target_rows already holds rows; kInternal when a count
// differs from the source's (the caller must then roll back).
base::Result<std::vector<TableCount>> copy_tables(sql::Connection& source, sql::Connection& target,
                                                  const std::vector<TableSpec>& tables,
                                                  const CopyOptions& options = {});

// `name` as a quoted SQL identifier ("a""b"), the same on both engines.
std::string quoted_identifier(std::string_view name);

}  // namespace glassbox::storage
