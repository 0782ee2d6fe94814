// A PostgreSQL database (libpq) as a backend-neutral sql::Connection: placeholders rewritten,
// statements prepared server-side and cached, writers serialised by an advisory lock, a lost
// connection reported as kStoreUnavailable and re-established on the next call.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/result.hpp"
#include "storage/sql.hpp"

struct pg_conn;
struct pg_result;

namespace glassbox::storage {

struct PgOptions {
    std::string dsn;                 // libpq keyword/value or postgresql:// URI
    std::string label = "postgres";  // named in every error ("trace store")
    // Bounds each connection attempt (the first and every re-connection); libpq raises values
    // below 2 s to 2 s.
    std::chrono::seconds connect_timeout{10};
    // Every kWrite transaction takes pg_advisory_xact_lock(writer_lock_key) after BEGIN, so
    // writers of one store (processes on many hosts) run one at a time, as on SQLite.
    std::int64_t writer_lock_key = 0x676c617373626f78;  // "glassbox"
    // When set, the session's search_path (unquoted names resolve there first), kept across
    // re-connections; it replaces any `options` the DSN gives. A schema name of [a-z0-9_] only.
    std::string search_path = {};
};

// SQL as callers write it for both engines, with PostgreSQL's placeholders: `?N` becomes `$N`
// and a bare `?` the next number after the largest so far (SQLite's rule), except inside string
// literals ('...', E'...', $tag$...$tag$), quoted identifiers and comments.
struct PgSql {
    std::string text;
    int parameters = 0;  // the largest placeholder number
};
PgSql postgres_placeholders(std::string_view sql);

// Rows for PgConnection::copy_in in COPY's binary format (PostgreSQL docs, COPY, "Binary
// Format"): a header, then per row its field count and each field as a length (-1: NULL) and
// its bytes, integers big-endian. The server parses it with no text conversion and appends the
// rows a heap page at a time (one WAL record per page of rows, not one per row).
class PgCopyRows {
public:
    PgCopyRows();
    void begin_row(std::int16_t fields);
    void add_int64(std::int64_t value);
    // False, and nothing added, when `text` holds a NUL (which PostgreSQL text cannot store).
    bool add_text(std::string_view text);
    void add_null();
    std::size_t rows() const noexcept { return rows_; }
    // The rows with the trailer; no row can be added afterwards.
    std::string_view finish();

private:
    std::string bytes_;
    std::size_t rows_ = 0;
    bool finished_ = false;
};

class PgConnection final : public sql::Connection {
    // Only open() constructs (explicit: `{}` cannot make one outside).
    struct Token {
        explicit Token() = default;
    };

public:
    // Connects (application_name=glassbox unless the DSN names one; client_encoding=UTF8).
    // kStoreUnavailable when the server cannot be reached or refuses the connection;
    // kInvalidRequest when libpq cannot read the DSN. Messages never hold the password.
    static base::Result<std::unique_ptr<PgConnection>> open(const PgOptions& options);

    PgConnection(Token, PgOptions options, pg_conn* connection);
    ~PgConnection() override;
    PgConnection(const PgConnection&) = delete;
    PgConnection& operator=(const PgConnection&) = delete;

    sql::Dialect dialect() const noexcept override { return sql::Dialect::kPostgres; }
    base::Result<void> exec(std::string_view sql) override;
    base::Result<sql::Statement> prepare(const std::string& sql) override;
    base::Result<sql::Statement> prepare_once(const std::string& sql) override;
    std::int64_t changes() const noexcept override { return changes_; }

    base::Result<void> begin(sql::TransactionKind kind) override;
    base::Result<void> commit() override;
    void rollback() noexcept override;
    bool in_transaction() const noexcept override;

    const std::string& label() const noexcept override { return options_.label; }
    std::string where() const override { return server_; }

    // The connection as a PgConnection, or nullptr when it is another engine's.
    static PgConnection* of(sql::Connection& connection) noexcept;
    // COPY <target> FROM STDIN (FORMAT binary): `target` names a table and its columns
    // ("t(a, b)", trusted SQL), `rows` holds them in that order. Returns the rows copied. A failed
    // COPY fails the transaction it runs in, as a failed INSERT does.
    base::Result<std::int64_t> copy_in(std::string_view target, PgCopyRows& rows);

private:
    class Impl;
    struct Closer {
        void operator()(pg_conn* connection) const noexcept;
    };
    struct ResultClear {
        void operator()(pg_result* result) const noexcept;
    };
    using PgResult = std::unique_ptr<pg_result, ResultClear>;

    // Ready for a call: reads the answer of a ROLLBACK sent without waiting (settle), then
    // re-connects once (PQreset) when the connection was lost, unless a transaction was open on
    // it (its work is gone: the caller must roll back first).
    base::Result<void> usable();
    // Reads and drops the answer of the ROLLBACK rollback() sent without waiting, if any.
    void settle() noexcept;
    // The deferred BEGIN of a read transaction and the statement `send` sends (one
    // PQsendQuery* call), in one pipeline: one round trip for both. The statement's result, or
    // the error of the BEGIN or the statement.
    base::Result<PgResult> run_after_begin(const std::function<int(pg_conn*)>& send,
                                           std::string_view sql);
    // `raw` (owned from here) as a result, or the error it or the connection holds.
    base::Result<PgResult> checked(pg_result* raw, std::string_view sql);
    void note_changes(pg_result* result) noexcept;
    base::Error unavailable(std::string_view why) const;
    base::Error failed(const pg_result* result, std::string_view sql) const;
    // libpq's last message on one line, without the password.
    std::string libpq_message() const;

    PgOptions options_;
    std::string server_;  // "host:port"
    std::unique_ptr<pg_conn, Closer> connection_;
    std::unordered_map<std::string, std::unique_ptr<Impl>> cached_;
    // Bumped by every re-connection: cached statements prepared under an older generation are
    // prepared again on their next step (the server forgot them).
    std::uint64_t generation_ = 1;
    int statements_named_ = 0;
    std::int64_t changes_ = 0;
    // A transaction this connection began and has not ended (kept across a lost connection).
    bool transaction_open_ = false;
    // The open transaction is a kRead one.
    bool read_only_ = false;
    // A kRead transaction's BEGIN is not sent until its first statement, which carries it (one
    // round trip for both): a REPEATABLE READ snapshot is taken at the first statement anyway.
    bool begin_deferred_ = false;
    // A read transaction's ROLLBACK was sent and its answer not read yet: the server ends the
    // transaction before anything sent after it, so nobody needs to wait for the answer.
    bool rollback_in_flight_ = false;
    // After a failed re-connection, calls fail at once until `retry_at_` (the wait doubling from
    // kMinRetry to kMaxRetry while the server stays away), so a server that is down costs its
    // callers a quick StoreUnavailable, not a connection attempt (up to connect_timeout) each.
    std::chrono::steady_clock::time_point retry_at_{};
    std::chrono::milliseconds retry_wait_{0};
    std::string last_failure_;
};

}  // namespace glassbox::storage
