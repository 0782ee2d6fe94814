// Copying SQLite tables into PostgreSQL (storage/table_copy.hpp) against a real server: values of
// every type by column name, batches, what only SQLite has left out, identity sequences moved on,
// a failed copy leaving nothing, and the refusals.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/pg_connection.hpp"
#include "storage/sqlite_connection.hpp"
#include "storage/table_copy.hpp"
#include "tests/support/shared_postgres.hpp"

namespace glassbox::storage {
namespace {

using integration::FreshSchema;

class TableCopy : public ::testing::Test {
protected:
    void SetUp() override {
        if (schema_.unavailable()) GTEST_SKIP() << *schema_.unavailable();
        auto source = Database::open(":memory:");
        ASSERT_TRUE(source) << source.error().message;
        source_ = std::make_unique<SqliteConnection>(std::move(source).value());
        PgOptions options;
        options.dsn = schema_.server_dsn();
        options.search_path = schema_.name();
        options.label = "copy target";
        auto target = PgConnection::open(options);
        ASSERT_TRUE(target) << target.error().describe();
        target_ = std::move(target).value();
    }

    void on_source(const std::string& sql) {
        auto r = source_->exec(sql);
        ASSERT_TRUE(r) << r.error().message;
    }
    // `sqlite_ddl` in PostgreSQL's words (as the stores create their tables there).
    void on_target(const std::string& sqlite_ddl) {
        auto r = target_->exec(sql::ddl_for(sql::Dialect::kPostgres, sqlite_ddl));
        ASSERT_TRUE(r) << r.error().describe();
    }

    // copy_tables inside a write transaction, committed when it succeeds.
    base::Result<std::vector<TableCount>> copy(const std::vector<TableSpec>& tables,
                                               const CopyOptions& options = {}) {
        auto tx = sql::Transaction::begin(*target_, sql::TransactionKind::kWrite);
        if (!tx) return tx.error();
        auto counts = copy_tables(*source_, *target_, tables, options);
        if (!counts) return counts.error();
        if (auto r = tx->commit(); !r) return r.error();
        return counts;
    }

    std::int64_t target_int(const std::string& sql) {
        auto st = target_->prepare_once(sql);
        EXPECT_TRUE(st) << st.error().describe();
        if (!st) return -1;
        auto value = st->first([](const sql::Row& row) { return row.int64(0); });
        EXPECT_TRUE(value) << value.error().describe();
        return value && *value ? **value : -1;
    }

    FreshSchema schema_;
    std::unique_ptr<SqliteConnection> source_;
    std::unique_ptr<PgConnection> target_;
};

TEST_F(TableCopy, CopiesValuesOfEveryTypeByColumnNameInBatches) {
    on_source("CREATE TABLE t(id INTEGER PRIMARY KEY, i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)");
    // 11 rows, 4 to a statement: two full batches and a shorter last one.
    on_source(
        "INSERT INTO t VALUES(1, -9223372036854775808, 0.1, 'plain', x'00ff00', NULL),"
        "(2, 9223372036854775807, -1.5e300, 'Ünïcode ☃ \"q\" ''a''', x'', 'x'),"
        "(3, 0, 4.9406564584124654e-324, '', NULL, NULL)");
    on_source(
        "WITH RECURSIVE k(v) AS (SELECT 4 UNION ALL SELECT v + 1 FROM k WHERE v < 11) "
        "INSERT INTO t SELECT v, v * 7, v / 3.0, 'row ' || v, randomblob(v), NULL FROM k");
    // Other column order on the target, and columns only it has: a nullable one, a generated one.
    on_target(
        "CREATE TABLE t(extra TEXT, n TEXT, b BLOB, s TEXT, r REAL, i INTEGER, id INTEGER PRIMARY "
        "KEY)");
    ASSERT_TRUE(
        target_->exec("ALTER TABLE t ADD COLUMN twice BIGINT GENERATED ALWAYS AS (id * 2) "
                      "STORED"));

    CopyOptions options;
    options.rows_per_statement = 4;
    auto counts = copy({{"t"}}, options);
    ASSERT_TRUE(counts) << counts.error().describe();
    ASSERT_EQ(counts->size(), 1u);
    EXPECT_EQ((*counts)[0].source_rows, 11);
    EXPECT_EQ((*counts)[0].copied, 11);
    EXPECT_EQ((*counts)[0].target_rows, 11);

    // Every value read back from both sides, in the same form.
    const auto rows_of = [](sql::Connection& db, const std::string& sql) {
        auto st = db.prepare_once(sql);
        EXPECT_TRUE(st);
        auto rows = st->collect([](const sql::Row& row) {
            std::vector<std::string> out;
            out.push_back(std::to_string(row.int64(0)));
            out.push_back(row.is_null(1) ? "null" : std::to_string(row.int64(1)));
            char real[40];
            std::snprintf(real, sizeof real, "%.17g", row.real(2));
            out.push_back(real);
            out.push_back(row.is_null(3) ? "null" : std::string(row.text(3)));
            const auto blob = row.blob(4);
            out.push_back(row.is_null(4) ? "null"
                                         : std::string(reinterpret_cast<const char*>(blob.data()),
                                                       blob.size()));
            out.push_back(row.is_null(5) ? "null" : std::string(row.text(5)));
            return out;
        });
        EXPECT_TRUE(rows);
        return rows ? *rows : std::vector<std::vector<std::string>>{};
    };
    const std::string select = "SELECT id, i, r, s, b, n FROM t ORDER BY id";
    const auto expected = rows_of(*source_, select);
    ASSERT_EQ(expected.size(), 11u);
    EXPECT_EQ(rows_of(*target_, select), expected);
    EXPECT_EQ(target_int("SELECT twice FROM t WHERE id = 5"), 10) << "generated by the target";
    EXPECT_EQ(target_int("SELECT COUNT(*) FROM t WHERE extra IS NULL"), 11);
}

TEST_F(TableCopy, ListsTablesWithoutWhatOnlySqliteHasParentsFirst) {
    // The child is created before its parent; FTS5 brings a virtual table and shadow tables,
    // AUTOINCREMENT sqlite_sequence.
    on_source(
        "CREATE TABLE child(id INTEGER PRIMARY KEY AUTOINCREMENT, parent INTEGER REFERENCES "
        "parent(id), text TEXT);"
        "CREATE TABLE parent(id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE VIRTUAL TABLE child_fts USING fts5(text, content='child', content_rowid='id');"
        "CREATE TABLE plain(k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID;"
        "INSERT INTO parent VALUES(1, 'p');"
        "INSERT INTO child(parent, text) VALUES(1, 'a'), (1, 'b');");
    auto tables = sqlite_tables(*source_);
    ASSERT_TRUE(tables) << tables.error().message;
    EXPECT_EQ(*tables, (std::vector<std::string>{"parent", "child", "plain"}));

    // The foreign key holds on the target: the child copies only after its parent.
    on_target(
        "CREATE TABLE parent(id INTEGER PRIMARY KEY, name TEXT);"
        "CREATE TABLE child(id INTEGER PRIMARY KEY AUTOINCREMENT, parent INTEGER REFERENCES "
        "parent(id), text TEXT);"
        "CREATE TABLE plain(k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID;");
    std::vector<TableSpec> specs;
    for (const auto& table : *tables) specs.push_back({table});
    auto counts = copy(specs);
    ASSERT_TRUE(counts) << counts.error().describe();
    EXPECT_EQ(target_int("SELECT COUNT(*) FROM child"), 2);
}

TEST_F(TableCopy, AdvancesIdentitySequencesPastTheCopiedIds) {
    on_source("CREATE TABLE c(id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)");
    on_source(
        "WITH RECURSIVE k(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM k WHERE v < 40) "
        "INSERT INTO c(id, v) SELECT v * 3, 'v' || v FROM k");
    on_target("CREATE TABLE c(id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)");
    // A serial column and an identity GENERATED ALWAYS one (written with OVERRIDING SYSTEM VALUE).
    on_source("CREATE TABLE s(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO s VALUES(7, 'x')");
    ASSERT_TRUE(target_->exec("CREATE TABLE s(id BIGSERIAL PRIMARY KEY, v TEXT)"));
    on_source("CREATE TABLE g(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO g VALUES(9, 'y')");
    ASSERT_TRUE(target_->exec(
        "CREATE TABLE g(id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v TEXT)"));
    auto counts = copy({{"c"}, {"s"}, {"g"}});
    ASSERT_TRUE(counts) << counts.error().describe();

    for (const auto& [table, next] : {std::pair{"c", 121}, {"s", 8}, {"g", 10}}) {
        auto insert = target_->prepare_once(std::string("INSERT INTO ") + table +
                                            "(v) VALUES('new') RETURNING id");
        ASSERT_TRUE(insert);
        auto id = insert->first([](const sql::Row& row) { return row.int64(0); });
        ASSERT_TRUE(id) << table << ": " << id.error().describe();
        EXPECT_EQ(id->value_or(0), next) << table;
    }
}

TEST_F(TableCopy, AFailedCopyLeavesNothingOnTheTarget) {
    on_source("CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT)");
    on_source(
        "WITH RECURSIVE k(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM k WHERE v < 2500) "
        "INSERT INTO a SELECT v, 'v' || v FROM k");
    // The second table's last row holds text PostgreSQL cannot store (a NUL byte).
    on_source("CREATE TABLE b(id INTEGER PRIMARY KEY, v TEXT)");
    on_source("INSERT INTO b VALUES(1, 'fine'), (2, 'bad' || char(0) || 'text')");
    on_target(
        "CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b(id INTEGER PRIMARY "
        "KEY, v TEXT)");
    auto counts = copy({{"a"}, {"b"}});
    ASSERT_FALSE(counts);
    EXPECT_NE(counts.error().message.find("NUL"), std::string::npos) << counts.error().describe();
    EXPECT_FALSE(target_->in_transaction());
    EXPECT_EQ(target_int("SELECT COUNT(*) FROM a"), 0) << "the first table's rows were kept";
    EXPECT_EQ(target_int("SELECT COUNT(*) FROM b"), 0);

    // Fixed, the same copy goes through on the same connection.
    on_source("UPDATE b SET v = 'good' WHERE id = 2");
    auto again = copy({{"a"}, {"b"}});
    ASSERT_TRUE(again) << again.error().describe();
    EXPECT_EQ(target_int("SELECT COUNT(*) FROM a"), 2500);
}

TEST_F(TableCopy, RefusesATargetTableWithRowsUnlessTheyAreReplaced) {
    on_source(
        "CREATE TABLE meta(kind TEXT PRIMARY KEY, seq INTEGER); INSERT INTO meta "
        "VALUES('entity', 42)");
    on_target("CREATE TABLE meta(kind TEXT PRIMARY KEY, seq INTEGER)");
    ASSERT_TRUE(target_->exec("INSERT INTO meta VALUES('entity', 0), ('chunk', 0)"));
    auto refused = copy({{"meta"}});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(refused.error().message.find("already holds 2 rows"), std::string::npos)
        << refused.error().describe();

    auto replaced = copy({{.name = "meta", .replace_target_rows = true}});
    ASSERT_TRUE(replaced) << replaced.error().describe();
    EXPECT_EQ(target_int("SELECT COUNT(*) FROM meta"), 1);
    EXPECT_EQ(target_int("SELECT seq FROM meta WHERE kind = 'entity'"), 42);
}

TEST_F(TableCopy, FillsATargetOnlyColumnFromADerivedExpressionAndRunsTheHookFirst) {
    on_source("CREATE TABLE e(id INTEGER PRIMARY KEY, at INTEGER NOT NULL)");
    on_source("INSERT INTO e VALUES(1, 100), (2, 250), (3, 260)");
    on_target("CREATE TABLE e(id INTEGER NOT NULL, at INTEGER NOT NULL, part INTEGER NOT NULL)");

    // Without the expression: refused, naming the column.
    auto refused = copy({{"e"}});
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("part"), std::string::npos)
        << refused.error().describe();

    std::vector<std::string> hooked;
    CopyOptions options;
    options.before_table = [&](sql::Connection& target, const std::string& table) {
        hooked.push_back(table);
        return target.exec("INSERT INTO e VALUES(0, 0, 0)");  // counted: the copy must notice
    };
    const TableSpec spec{"e", {{"part", "src.at / 100"}, {"absent", "1"}}};
    auto miscounted = copy({spec}, options);
    ASSERT_FALSE(miscounted) << "a row the copy did not write went unnoticed";
    EXPECT_NE(miscounted.error().message.find("holds 4"), std::string::npos)
        << miscounted.error().describe();
    EXPECT_EQ(target_int("SELECT COUNT(*) FROM e"), 0);

    options.before_table = [&](sql::Connection&, const std::string& table) {
        hooked.push_back(table);
        return base::Result<void>{};
    };
    auto counts = copy({spec}, options);
    ASSERT_TRUE(counts) << counts.error().describe();
    EXPECT_EQ(hooked, (std::vector<std::string>{"e", "e"}));
    EXPECT_EQ(target_int("SELECT SUM(part) FROM e"), 1 + 2 + 2);
}

TEST_F(TableCopy, NamesAColumnTheTargetLacks) {
    on_source("CREATE TABLE t(a INTEGER, gone TEXT); INSERT INTO t VALUES(1, 'x')");
    on_target("CREATE TABLE t(a INTEGER)");
    auto refused = copy({{"t"}});
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("no column gone on the target"), std::string::npos)
        << refused.error().describe();
    auto missing = copy({{"nowhere"}});
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("nowhere"), std::string::npos);
}

}  // namespace
}  // namespace glassbox::storage
