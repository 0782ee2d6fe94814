// storage::Database behind sql::Connection: each statement is the wrapper's own Statement.
#include "storage/sqlite_connection.hpp"

#include <sqlite3.h>

namespace glassbox::storage {

using base::Result;

class SqliteConnection::Impl final : public sql::StatementImpl {
public:
    explicit Impl(Statement statement) noexcept : statement_(std::move(statement)) {}

    void bind_text(int index, std::string_view text) override { statement_.bind(index, text); }
    void bind_text_static(int index, std::string_view text) override {
        statement_.bind_static(index, text);
    }
    void bind_blob(int index, std::span<const std::byte> bytes) override {
        statement_.bind_blob(index, bytes);
    }
    void bind_int64(int index, std::int64_t value) override { statement_.bind(index, value); }
    void bind_real(int index, double value) override { statement_.bind(index, value); }
    void bind_null(int index) override { statement_.bind_null(index); }
    Result<bool> step() override { return statement_.step(); }
    void reset() noexcept override { statement_.reset(); }

    bool is_null(int column) const noexcept override { return statement_.row().is_null(column); }
    std::int64_t int64(int column) const noexcept override {
        return statement_.row().int64(column);
    }
    double real(int column) const noexcept override { return statement_.row().real(column); }
    std::string_view text(int column) const noexcept override {
        return statement_.row().text(column);
    }
    std::span<const std::byte> blob(int column) const noexcept override {
        return statement_.row().blob(column);
    }

private:
    Statement statement_;
};

SqliteConnection::SqliteConnection(std::unique_ptr<Database> db) : db_(std::move(db)) {}

// The cached statements go before the connection that made them.
SqliteConnection::~SqliteConnection() { cached_.clear(); }

Result<sql::Statement> SqliteConnection::prepare(const std::string& sql) {
    if (auto it = cached_.find(sql); it != cached_.end()) return sql::Statement(*it->second);
    auto prepared = db_->prepare(sql);
    if (!prepared) return prepared.error();
    auto& impl = cached_[sql] = std::make_unique<Impl>(std::move(*prepared));
    return sql::Statement(*impl);
}

Result<sql::Statement> SqliteConnection::prepare_once(const std::string& sql) {
    auto prepared = db_->prepare_once(sql);
    if (!prepared) return prepared.error();
    return sql::Statement(std::make_unique<Impl>(std::move(*prepared)));
}

namespace {

// BEGIN, COMMIT and ROLLBACK run once per request on the store's read path: cached statements,
// not a parse each time.
Result<void> run_cached(Database& db, const char* sql) {
    auto statement = db.prepare(sql);
    if (!statement) return statement.error();
    return statement->run();
}

}  // namespace

Result<void> SqliteConnection::begin(sql::TransactionKind kind) {
    return run_cached(*db_, kind == sql::TransactionKind::kWrite ? "BEGIN IMMEDIATE" : "BEGIN");
}

Result<void> SqliteConnection::commit() { return run_cached(*db_, "COMMIT"); }

void SqliteConnection::rollback() noexcept {
    if (in_transaction() && !run_cached(*db_, "ROLLBACK")) (void)db_->exec("ROLLBACK");
}

SqliteConnection* SqliteConnection::of(sql::Connection& connection) noexcept {
    if (connection.dialect() != sql::Dialect::kSqlite) return nullptr;
    return static_cast<SqliteConnection*>(&connection);
}

bool SqliteConnection::in_transaction() const noexcept {
    return sqlite3_get_autocommit(db_->handle()) == 0;
}

}  // namespace glassbox::storage
