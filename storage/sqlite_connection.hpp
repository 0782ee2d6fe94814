// A SQLite database (storage::Database) as a backend-neutral sql::Connection.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "storage/sql.hpp"
#include "storage/sqlite_database.hpp"

namespace glassbox::storage {

class SqliteConnection final : public sql::Connection {
public:
    explicit SqliteConnection(std::unique_ptr<Database> db);
    ~SqliteConnection() override;

    sql::Dialect dialect() const noexcept override { return sql::Dialect::kSqlite; }
    base::Result<void> exec(std::string_view sql) override { return db_->exec(sql); }
    base::Result<sql::Statement> prepare(const std::string& sql) override;
    base::Result<sql::Statement> prepare_once(const std::string& sql) override;
    std::int64_t changes() const noexcept override { return db_->changes(); }

    base::Result<void> begin(sql::TransactionKind kind) override;
    base::Result<void> commit() override;
    void rollback() noexcept override;
    bool in_transaction() const noexcept override;

    const std::string& label() const noexcept override { return db_->options().label; }
    std::string where() const override { return db_->path().string(); }

    // The SQLite connection itself, for what only SQLite has (pragmas, file sizes, migrations).
    Database& database() noexcept { return *db_; }
    // The SQLite connection behind `connection`, or null when it is another engine's.
    static SqliteConnection* of(sql::Connection& connection) noexcept;

private:
    class Impl;
    std::unique_ptr<Database> db_;
    std::unordered_map<std::string, std::unique_ptr<Impl>> cached_;
};

}  // namespace glassbox::storage
