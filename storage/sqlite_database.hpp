// The one SQLite wrapper: a connection with cached prepared statements, a statement cursor that
// resets itself, a backend-neutral row view with the loops that read rows, and a transaction
// guard. Every failure is a base::Error, never an exception.
//
// Where a second backend (PostgreSQL through libpq) plugs in: callers read results only through
// Row (int64/real/text/blob/is_null by 0-based column index) inside Statement::each / first /
// collect, never through sqlite3 types and never by stepping by hand. A libpq Row is a PGresult*
// and a row number behind the same readers; each/first/collect then walk PQntuples instead of
// sqlite3_step, and callers do not change. What stays SQLite-specific is the SQL text and the
// connection (Database::handle(), used by the row-feed virtual table and by tests).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "storage/row_loops.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace glassbox::storage {

struct OpenOptions {
    bool read_only = false;
    // Read-write opens create the file owner-only (0600) before SQLite sees it; SQLite gives its
    // -wal and -shm files the same permissions.
    bool create = true;
    bool wal = true;
    // locking_mode=EXCLUSIVE, set before the first read: the connection keeps its file lock, so
    // a second connection to the file fails ("database is locked") instead of sharing it, and
    // WAL then needs no -shm file.
    bool exclusive = false;
    // FULL: a commit survives power loss; NORMAL: it survives a process crash (WAL).
    bool synchronous_full = false;
    std::chrono::milliseconds busy_timeout{5000};
    // Negative: KiB (SQLite's convention); 0 keeps SQLite's default.
    std::int64_t cache_size = 0;
    // Page size in bytes (a power of two, 512-65536) for a database this open creates; 0 keeps
    // SQLite's default (4096). An existing file keeps the page size it was created with.
    std::int64_t page_size = 0;
    // auto_vacuum=INCREMENTAL for a database this open creates: pages freed by deletes can be
    // given back to the file system by `PRAGMA incremental_vacuum` without a full VACUUM. An
    // existing file keeps its mode (a VACUUM after the pragma converts it).
    bool auto_vacuum_incremental = false;
    // WAL checkpoints run on a thread of this Database with a connection of its own, woken when
    // a commit leaves the WAL at checkpoint_pages or more, instead of inside the commit that
    // crosses SQLite's threshold: writers' commits do not wait for pages to be copied into the
    // database file (the copy uses another core). Read-write WAL files only; not with `exclusive`.
    bool background_checkpoint = false;
    std::int64_t checkpoint_pages = 1000;  // SQLite's own automatic threshold
    // Named in every error message ("knowledge store", "trace store").
    std::string label = "sqlite";
};

class Database;

// The current row of a statement, read by 0-based column index: the backend-neutral view every
// caller reads results through (see the top of this file). Valid while the statement stands on
// that row; text and blob views until the next step or reset.
class Row {
public:
    bool is_null(int column) const noexcept;
    std::int64_t int64(int column) const noexcept;
    double real(int column) const noexcept;
    std::string_view text(int column) const noexcept;
    std::span<const std::byte> blob(int column) const noexcept;
    std::optional<std::string> optional_text(int column) const;

private:
    friend class Statement;
    explicit Row(sqlite3_stmt* statement) noexcept : statement_(statement) {}
    sqlite3_stmt* statement_;
};

// A prepared statement in use. A cached one (Database::prepare) is reset and unbound when this
// goes out of scope, so the next user of the same SQL starts clean; a one-use one
// (Database::prepare_once) is finalized. Bind indexes are 1-based, column indexes 0-based.
class Statement : public RowLoops<Statement, Row> {
public:
    ~Statement();
    Statement(Statement&& other) noexcept
        : db_(other.db_), statement_(other.statement_), owned_(other.owned_) {
        other.statement_ = nullptr;
    }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    Statement& operator=(Statement&&) = delete;

    Statement& bind(int index, std::string_view text);  // copied
    // `text` must stay alive until the statement is reset.
    Statement& bind_static(int index, std::string_view text);
    Statement& bind_blob(int index, std::span<const std::byte> bytes);  // copied
    Statement& bind_blob(int index, std::string_view bytes);            // copied
    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, double value);
    Statement& bind(int index, const std::optional<std::string>& text);
    Statement& bind(int index, const std::optional<std::int64_t>& value);
    Statement& bind_null(int index);

    // SQLITE_ROW: true; SQLITE_DONE: false; anything else: a kInternal Error with SQLite's message.
    base::Result<bool> step();
    // Steps to the end, ignoring rows.
    base::Result<void> run();
    // Resets for another execution with new bindings (bindings are kept until rebound).
    void reset() noexcept;

    // The row the last step() stopped on (after it returned true).
    Row row() const noexcept { return Row(statement_); }

private:
    friend class Database;  // the one maker of statements (prepare, prepare_once)
    Statement(Database& db, sqlite3_stmt* statement, bool owned = false) noexcept
        : db_(&db), statement_(statement), owned_(owned) {}

    Database* db_;
    sqlite3_stmt* statement_;
    bool owned_;  // finalized, not reset, on destruction
};

class Database {
public:
    // Opens (and for read-write, creates) the file; ":memory:" opens a private in-memory database.
    static base::Result<std::unique_ptr<Database>> open(const std::filesystem::path& path,
                                                        const OpenOptions& options = {});
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    // One or more statements, no results.
    base::Result<void> exec(std::string_view sql);
    // The statement for `sql`, prepared once and cached for the connection's life.
    base::Result<Statement> prepare(const std::string& sql);
    // A statement prepared for one use (not cached, finalized with the Statement), e.g. SQL
    // built from variable parts.
    base::Result<Statement> prepare_once(const std::string& sql);

    std::int64_t last_insert_rowid() const noexcept;
    std::int64_t changes() const noexcept;
    // Rows this connection has inserted, updated or deleted since it opened (rolled back ones
    // too): a cache of what it read can tell its own writes happened.
    std::int64_t total_changes() const noexcept;
    // True inside a transaction that has written (or holds the write lock): what it reads may
    // still be rolled back.
    bool in_write_transaction() const noexcept;
    // PRAGMA data_version: changes when another connection (or process) commits to the file.
    base::Result<std::int64_t> data_version();
    // sqlite3_errmsg of the connection.
    std::string message() const;
    // "<label>: <what>: <sqlite message>" as a typed error.
    base::Error error(std::string_view what) const;
    const OpenOptions& options() const noexcept { return options_; }
    const std::filesystem::path& path() const noexcept { return path_; }
    sqlite3* handle() const noexcept { return handle_; }

private:
    Database(std::filesystem::path path, OpenOptions options);

    struct Finalize {
        void operator()(sqlite3_stmt* statement) const noexcept;
    };
    class Checkpointer;
    static int on_wal_commit(void* self, sqlite3* handle, const char* schema, int pages);

    std::filesystem::path path_;
    OpenOptions options_;
    std::unique_ptr<Checkpointer> checkpointer_;  // with background_checkpoint
    sqlite3* handle_ = nullptr;
    std::unordered_map<std::string, std::unique_ptr<sqlite3_stmt, Finalize>> statements_;
};

// BEGIN (IMMEDIATE for writers, so a busy writer waits up front instead of failing at upgrade);
// rolls back on destruction unless commit() succeeded.
class Transaction {
public:
    enum class Kind { kDeferred, kImmediate };
    static base::Result<Transaction> begin(Database& db, Kind kind = Kind::kImmediate);
    ~Transaction();
    Transaction(Transaction&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    Transaction& operator=(Transaction&&) = delete;

    base::Result<void> commit();

private:
    explicit Transaction(Database& db) noexcept : db_(&db) {}
    Database* db_;
};

// One read transaction around a group of statements: they see one snapshot, and SQLite takes
// its read lock once (a file lock and the WAL read mark, system calls each) instead of once per
// statement. Inside a transaction already open it does nothing. Destroying it ends the read.
class ReadScope {
public:
    explicit ReadScope(Database& db);
    ~ReadScope();
    ReadScope(const ReadScope&) = delete;
    ReadScope& operator=(const ReadScope&) = delete;

private:
    Database* db_ = nullptr;  // null: nothing was begun here
};

}  // namespace glassbox::storage
