// One SQL connection, whichever engine holds the state: SQLite (the embedded default) or
// PostgreSQL (libpq). The trace store and what else must run on both talk through this; what is
// engine-specific stays behind Connection (placeholders, transactions, errors, types).
//
// The SQL a caller writes is the common part of both dialects: numbered placeholders `?1`, `?2`
// (a PostgreSQL connection rewrites them as `$1`, `$2`), `INSERT ... ON CONFLICT ... DO
// NOTHING/UPDATE`, `RETURNING`, `WITH RECURSIVE`, CAST(x AS BIGINT) around sums (PostgreSQL's
// SUM of a BIGINT is NUMERIC). What differs (DDL, case-insensitive matching, sizes) is chosen by
// dialect(). Results are read through Row inside Statement::each / first / collect.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "storage/row_loops.hpp"

namespace glassbox::storage::sql {

enum class Dialect { kSqlite, kPostgres };

// "sqlite" or "postgres" (the configuration's storage.backend values).
std::string_view dialect_name(Dialect dialect) noexcept;

// One statement's engine side: bindings, execution and the current row's columns. Bind
// indexes are 1-based, column indexes 0-based (as in SQLite).
class StatementImpl {
public:
    virtual ~StatementImpl() = default;

    virtual void bind_text(int index, std::string_view text) = 0;  // copied
    // `text` stays alive until the statement is reset (an engine may then skip the copy).
    virtual void bind_text_static(int index, std::string_view text) { bind_text(index, text); }
    virtual void bind_blob(int index, std::span<const std::byte> bytes) = 0;  // copied
    virtual void bind_int64(int index, std::int64_t value) = 0;
    virtual void bind_real(int index, double value) = 0;
    virtual void bind_null(int index) = 0;

    // Executes on the first call after a reset; true while a row is ready.
    virtual base::Result<bool> step() = 0;
    // Ready to execute again; the bindings are kept until rebound.
    virtual void reset() noexcept = 0;

    virtual bool is_null(int column) const noexcept = 0;
    virtual std::int64_t int64(int column) const noexcept = 0;  // 0 for NULL
    virtual double real(int column) const noexcept = 0;
    // Views valid until the next step or reset.
    virtual std::string_view text(int column) const noexcept = 0;
    virtual std::span<const std::byte> blob(int column) const noexcept = 0;
};

// The current row of a statement (after step() returned true).
class Row {
public:
    explicit Row(const StatementImpl& impl) noexcept : impl_(&impl) {}
    bool is_null(int column) const noexcept { return impl_->is_null(column); }
    std::int64_t int64(int column) const noexcept { return impl_->int64(column); }
    double real(int column) const noexcept { return impl_->real(column); }
    std::string_view text(int column) const noexcept { return impl_->text(column); }
    std::span<const std::byte> blob(int column) const noexcept { return impl_->blob(column); }
    std::optional<std::string> optional_text(int column) const;

private:
    const StatementImpl* impl_;
};

// A prepared statement in use: a cached one (Connection::prepare) is reset when this goes out of
// scope, a one-use one (prepare_once) is destroyed with it.
class Statement : public RowLoops<Statement, Row> {
public:
    Statement(StatementImpl& cached) noexcept : impl_(&cached) {}
    explicit Statement(std::unique_ptr<StatementImpl> owned) noexcept
        : impl_(owned.get()), owned_(std::move(owned)) {}
    ~Statement();
    Statement(Statement&& other) noexcept : impl_(other.impl_), owned_(std::move(other.owned_)) {
        other.impl_ = nullptr;
    }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    Statement& operator=(Statement&&) = delete;

    Statement& bind(int index, std::string_view text);
    Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
    Statement& bind(int index, const std::string& text) {
        return bind(index, std::string_view(text));
    }
    // `text` must stay alive until the statement is reset.
    Statement& bind_static(int index, std::string_view text);
    Statement& bind_blob(int index, std::span<const std::byte> bytes);
    Statement& bind_blob(int index, std::string_view bytes);
    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, double value);
    Statement& bind(int index, const std::optional<std::string>& text);
    Statement& bind(int index, const std::optional<std::int64_t>& value);
    Statement& bind_null(int index);

    base::Result<bool> step() { return impl_->step(); }
    // Steps to the end, ignoring rows.
    base::Result<void> run();
    void reset() noexcept { impl_->reset(); }
    Row row() const noexcept { return Row(*impl_); }

private:
    StatementImpl* impl_;
    std::unique_ptr<StatementImpl> owned_;
};

enum class TransactionKind {
    // Reads that see one snapshot (SQLite: BEGIN DEFERRED; PostgreSQL: REPEATABLE READ, READ
    // ONLY).
    kRead,
    // A writer that excludes every other writer of the same store for its whole length (SQLite:
    // BEGIN IMMEDIATE; PostgreSQL: READ COMMITTED holding a transaction-level advisory lock
    // that every writer of the store takes), so read-then-write logic written for one writer
    // stays right with many processes on one PostgreSQL database.
    kWrite,
};

class Connection {
public:
    virtual ~Connection() = default;

    virtual Dialect dialect() const noexcept = 0;
    // One or more statements, no results, no parameters.
    virtual base::Result<void> exec(std::string_view sql) = 0;
    // Prepared once per connection and cached (the SQL is the key).
    virtual base::Result<Statement> prepare(const std::string& sql) = 0;
    // Prepared for one use (SQL built from variable parts).
    virtual base::Result<Statement> prepare_once(const std::string& sql) = 0;
    // Rows the last INSERT, UPDATE or DELETE of this connection changed.
    virtual std::int64_t changes() const noexcept = 0;

    virtual base::Result<void> begin(TransactionKind kind) = 0;
    virtual base::Result<void> commit() = 0;
    virtual void rollback() noexcept = 0;
    virtual bool in_transaction() const noexcept = 0;

    // Named in every error ("trace store"), and where: a file path, or "host:port" of a server
    // (never a password).
    virtual const std::string& label() const noexcept = 0;
    virtual std::string where() const = 0;
};

// BEGIN on creation; rolled back on destruction unless commit() succeeded.
class Transaction {
public:
    static base::Result<Transaction> begin(Connection& connection, TransactionKind kind);
    ~Transaction();
    Transaction(Transaction&& other) noexcept : connection_(other.connection_) {
        other.connection_ = nullptr;
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    Transaction& operator=(Transaction&&) = delete;

    base::Result<void> commit();

private:
    explicit Transaction(Connection& connection) noexcept : connection_(&connection) {}
    Connection* connection_;
};

// Table DDL written once in SQLite's words, for `dialect`: on PostgreSQL INTEGER becomes BIGINT,
// REAL DOUBLE PRECISION, BLOB BYTEA, TEXT `TEXT COLLATE "C"` (bytewise order and comparison, as
// on SQLite), `INTEGER PRIMARY KEY AUTOINCREMENT` an identity column, and `WITHOUT ROWID` goes.
// Types and keywords are recognised in uppercase only (a column called `text` stays a name);
// names, literals and anything else pass unchanged. Virtual tables and triggers are not
// translated.
std::string ddl_for(Dialect dialect, std::string_view sqlite_ddl);

// One read transaction around a group of statements, so they see one snapshot (and SQLite takes
// its read lock once instead of once per statement). Inside a transaction already open it does
// nothing; a failed BEGIN leaves each statement its own snapshot. Destroying it ends the read.
class ReadScope {
public:
    explicit ReadScope(Connection& connection);
    ~ReadScope();
    ReadScope(const ReadScope&) = delete;
    ReadScope& operator=(const ReadScope&) = delete;

private:
    Connection* connection_ = nullptr;  // null: nothing was begun here
};

}  // namespace glassbox::storage::sql
