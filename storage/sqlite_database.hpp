// The one SQLite wrapper: a connection with cached prepared statements, a statement cursor that
// resets itself, and a transaction guard. Every failure is a base::Error, never an exception.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/result.hpp"

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

// A cached prepared statement in use; reset and unbound when this goes out of scope, so the
// next user of the same SQL starts clean. Bind indexes are 1-based, column indexes 0-based.
class Statement {
public:
    Statement(Database& db, sqlite3_stmt* statement) noexcept : db_(&db), statement_(statement) {}
    ~Statement();
    Statement(Statement&& other) noexcept : db_(other.db_), statement_(other.statement_) {
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

    bool is_null(int column) const noexcept;
    std::int64_t int64(int column) const noexcept;
    double real(int column) const noexcept;
    // Valid until the next step/reset.
    std::string_view text(int column) const noexcept;
    std::span<const std::byte> blob(int column) const noexcept;
    std::optional<std::string> optional_text(int column) const;

    sqlite3_stmt* handle() const noexcept { return statement_; }

private:
    Database* db_;
    sqlite3_stmt* statement_;
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
    // A statement prepared for one use (not cached), e.g. SQL built from variable parts.
    base::Result<std::unique_ptr<sqlite3_stmt, void (*)(sqlite3_stmt*)>> prepare_once(
        const std::string& sql);

    std::int64_t last_insert_rowid() const noexcept;
    std::int64_t changes() const noexcept;
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
