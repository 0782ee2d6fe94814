// storage::PgConnection (storage/pg_connection.hpp) against a real PostgreSQL server of the test's
// own: placeholders, every type both ways, cached statements, transactions and the writers'
// advisory lock, typed errors, and a server stopped and started under a live connection.
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <future>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "storage/feed_rows.hpp"
#include "storage/pg_connection.hpp"
#include "tests/support/closed_port.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::storage {
namespace {

using base::ErrorType;
using integration::PostgresServer;
using sql::TransactionKind;

using Opened = base::Result<std::unique_ptr<PgConnection>>;

Opened open_dsn(const std::string& dsn) {
    return PgConnection::open(PgOptions{.dsn = dsn, .label = "test store"});
}

// The first column of the first row of `sql` as an int64; -1 (and a failure) when there is none.
std::int64_t scalar(sql::Connection& connection, const std::string& sql) {
    auto statement = connection.prepare_once(sql);
    if (!statement) {
        ADD_FAILURE() << statement.error().message;
        return -1;
    }
    auto value = statement->first([](const sql::Row& row) { return row.int64(0); });
    if (!value || !*value) {
        ADD_FAILURE() << sql << ": " << (value ? "no row" : value.error().message);
        return -1;
    }
    return **value;
}

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
    if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "\"" << text << "\" lacks \"" << part << "\"";
}

::testing::AssertionResult lacks(const std::string& text, const std::string& part) {
    if (text.find(part) == std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "\"" << text << "\" contains \"" << part << "\"";
}

std::vector<std::byte> bytes_of(std::span<const std::byte> span) {
    return std::vector<std::byte>(span.begin(), span.end());
}

// ---- Placeholders (no server) ------------------------------------------------------------------

TEST(PgPlaceholdersTest, NumberedAndBareMarksBecomeDollarNumbers) {
    EXPECT_EQ(postgres_placeholders("SELECT ?1, ?2").text, "SELECT $1, $2");
    const PgSql twelve = postgres_placeholders("SELECT ?12, ?3");
    EXPECT_EQ(twelve.text, "SELECT $12, $3");
    EXPECT_EQ(twelve.parameters, 12);
    EXPECT_EQ(postgres_placeholders("VALUES (?, ?, ?)").text, "VALUES ($1, $2, $3)");
    // SQLite's rule: a bare `?` is one more than the largest number so far.
    const PgSql mixed = postgres_placeholders("?5, ?, ?2, ?");
    EXPECT_EQ(mixed.text, "$5, $6, $2, $7");
    EXPECT_EQ(mixed.parameters, 7);
    EXPECT_EQ(postgres_placeholders("WHERE n = ?1::bigint").text, "WHERE n = $1::bigint");
    EXPECT_EQ(postgres_placeholders("SELECT 1").parameters, 0);
    // Past the protocol's 65535 parameters: left for the server to refuse, never allocated.
    const PgSql huge = postgres_placeholders("SELECT ?70000, ?99999999999999");
    EXPECT_EQ(huge.text, "SELECT $70000, $99999999999999");
    EXPECT_EQ(huge.parameters, 0);
}

TEST(PgPlaceholdersTest, MarksInsideLiteralsIdentifiersAndCommentsStayText) {
    EXPECT_EQ(postgres_placeholders("SELECT '?1', ?1, 'it''s ?', ?").text,
              "SELECT '?1', $1, 'it''s ?', $2");
    EXPECT_EQ(postgres_placeholders(R"(SELECT "a?1""?" FROM t WHERE x = ?1)").text,
              R"(SELECT "a?1""?" FROM t WHERE x = $1)");
    EXPECT_EQ(postgres_placeholders("SELECT ?1 -- why ?2\n, ?2").text, "SELECT $1 -- why ?2\n, $2");
    EXPECT_EQ(postgres_placeholders("SELECT ?1 /* ?3 /* nested ?4 */ ?5 */ , ?").text,
              "SELECT $1 /* ?3 /* nested ?4 */ ?5 */ , $2");
    EXPECT_EQ(postgres_placeholders(R"(SELECT E'\' ?1', ?1, 'a\', ?)").text,
              R"(SELECT E'\' ?1', $1, 'a\', $2)");
    EXPECT_EQ(postgres_placeholders("SELECT $$ ?1 $$, $tag$ ? $$ $tag$, $1, ?2").text,
              "SELECT $$ ?1 $$, $tag$ ? $$ $tag$, $1, $2");
    const PgSql open_literal = postgres_placeholders("SELECT 'never closed ?1");
    EXPECT_EQ(open_literal.text, "SELECT 'never closed ?1");
    EXPECT_EQ(open_literal.parameters, 0);
}

// ---- One server for the suite, a database per test ---------------------------------------------

class PgConnectionTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (!PostgresServer::unavailable()) server_ = std::make_unique<PostgresServer>();
    }
    static void TearDownTestSuite() { server_.reset(); }

    void SetUp() override {
        if (auto why = PostgresServer::unavailable()) GTEST_SKIP() << *why;
        ASSERT_TRUE(server_);
        database_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
        for (char& c : database_)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        server_->create_database(database_);
        auto opened = open();
        ASSERT_TRUE(opened) << opened.error().message;
        db_ = std::move(*opened);
    }

    Opened open() const { return open_dsn(server_->dsn(database_)); }

    static std::unique_ptr<PostgresServer> server_;
    std::string database_;
    std::unique_ptr<PgConnection> db_;
};

std::unique_ptr<PostgresServer> PgConnectionTest::server_;

TEST_F(PgConnectionTest, ConnectsAsGlassboxInUtf8AndSaysWhere) {
    EXPECT_EQ(db_->dialect(), sql::Dialect::kPostgres);
    EXPECT_EQ(db_->label(), "test store");
    EXPECT_EQ(db_->where(), "127.0.0.1:" + std::to_string(server_->port()));
    auto settings = db_->prepare_once(
        "SELECT current_setting('application_name'), current_setting('client_encoding')");
    ASSERT_TRUE(settings) << settings.error().message;
    auto names = settings->first([](const sql::Row& row) {
        return std::string(row.text(0)) + " " + std::string(row.text(1));
    });
    ASSERT_TRUE(names && *names);
    EXPECT_EQ(**names, "glassbox UTF8");
}

struct Values {
    std::int64_t i = 0;
    double r = 0;
    std::optional<std::string> t;
    std::vector<std::byte> b;
    bool b_null = false;
};

TEST_F(PgConnectionTest, EveryTypeRoundTripsWithItsExtremesAndNulls) {
    ASSERT_TRUE(
        db_->exec("CREATE TABLE v(id bigint PRIMARY KEY, i bigint, r double precision, "
                  "t text, b bytea)"));
    std::vector<std::byte> all(256);
    for (std::size_t k = 0; k < all.size(); ++k) all[k] = static_cast<std::byte>(k);
    const std::string utf8 = "h\xC3\xA9llo, \xE4\xB8\x96\xE7\x95\x8C \xE2\x9C\x93";
    auto insert = db_->prepare("INSERT INTO v(id, i, r, t, b) VALUES (?1, ?2, ?3, ?4, ?5)");
    ASSERT_TRUE(insert) << insert.error().message;
    const auto max = std::numeric_limits<std::int64_t>::max();
    const auto min = std::numeric_limits<std::int64_t>::min();
    EXPECT_TRUE(insert->bind(1, std::int64_t{1})
                    .bind(2, max)
                    .bind(3, 0.1)
                    .bind(4, utf8)
                    .bind_blob(5, std::span<const std::byte>(all))
                    .run());
    EXPECT_TRUE(insert->bind(1, std::int64_t{2})
                    .bind(2, min)
                    .bind(3, -1e300)
                    .bind(4, "")
                    .bind_blob(5, std::string_view())
                    .run());
    EXPECT_TRUE(
        insert->bind(1, std::int64_t{3}).bind_null(2).bind_null(3).bind_null(4).bind_null(5).run());
    auto select = db_->prepare("SELECT i, r, t, b FROM v ORDER BY id");
    ASSERT_TRUE(select) << select.error().message;
    auto rows = select->collect([](const sql::Row& row) {
        return Values{row.int64(0), row.real(1), row.optional_text(2), bytes_of(row.blob(3)),
                      row.is_null(3)};
    });
    ASSERT_TRUE(rows) << rows.error().message;
    ASSERT_EQ(rows->size(), 3u);
    EXPECT_EQ((*rows)[0].i, max);
    EXPECT_EQ((*rows)[0].r, 0.1);
    EXPECT_EQ((*rows)[0].t, utf8);
    EXPECT_EQ((*rows)[0].b, all);
    EXPECT_EQ((*rows)[1].i, min);
    EXPECT_EQ((*rows)[1].r, -1e300);
    EXPECT_EQ((*rows)[1].t, "");
    EXPECT_TRUE((*rows)[1].b.empty());
    EXPECT_FALSE((*rows)[1].b_null);
    EXPECT_EQ((*rows)[2].i, 0);
    EXPECT_EQ((*rows)[2].t, std::nullopt);
    EXPECT_TRUE((*rows)[2].b_null);
}

TEST_F(PgConnectionTest, InfinitiesAndNotANumberRoundTrip) {
    auto echo = db_->prepare("SELECT CAST(?1 AS DOUBLE PRECISION)");
    ASSERT_TRUE(echo) << echo.error().message;
    const auto read = [&](double value) {
        auto got = echo->bind(1, value).first([](const sql::Row& row) { return row.real(0); });
        echo->reset();
        return got && *got ? **got : 0.0;
    };
    EXPECT_EQ(read(std::numeric_limits<double>::infinity()),
              std::numeric_limits<double>::infinity());
    EXPECT_EQ(read(-std::numeric_limits<double>::infinity()),
              -std::numeric_limits<double>::infinity());
    EXPECT_TRUE(std::isnan(read(std::nan(""))));
    EXPECT_EQ(read(5e-324), 5e-324);
}

TEST_F(PgConnectionTest, ExistsReadsAsOneOrZero) {
    ASSERT_TRUE(db_->exec("CREATE TABLE t(id bigint); INSERT INTO t VALUES (7)"));
    auto exists = db_->prepare("SELECT EXISTS (SELECT 1 FROM t WHERE id = ?1)");
    ASSERT_TRUE(exists) << exists.error().message;
    for (const auto& [id, expected] : {std::pair<std::int64_t, std::int64_t>{7, 1}, {8, 0}}) {
        auto got = exists->bind(1, id).first([](const sql::Row& row) { return row.int64(0); });
        exists->reset();
        ASSERT_TRUE(got && *got);
        EXPECT_EQ(**got, expected) << id;
    }
}

TEST_F(PgConnectionTest, SumsOfBigintsReadAsInt64CastOrNumeric) {
    ASSERT_TRUE(
        db_->exec("CREATE TABLE t(n bigint); "
                  "INSERT INTO t VALUES (1), (2), (9000000000000000000)"));
    EXPECT_EQ(scalar(*db_, "SELECT CAST(SUM(n) AS BIGINT) FROM t"), 9000000000000000003);
    // SUM of a BIGINT is NUMERIC (text "9000000000000000003"); AVG has a fraction.
    EXPECT_EQ(scalar(*db_, "SELECT SUM(n) FROM t"), 9000000000000000003);
    EXPECT_EQ(scalar(*db_, "SELECT AVG(n) FROM t"), 3000000000000000001);
    EXPECT_EQ(scalar(*db_, "SELECT SUM(n) + SUM(n) FROM t"),
              std::numeric_limits<std::int64_t>::max());
}

TEST_F(PgConnectionTest, ACachedStatementTakesNewBindingsEveryTime) {
    ASSERT_TRUE(db_->exec("CREATE TABLE t(id bigint PRIMARY KEY, name text)"));
    const std::string insert_sql = "INSERT INTO t(id, name) VALUES (?, ?)";
    for (std::int64_t id = 1; id <= 300; ++id) {
        auto insert = db_->prepare(insert_sql);
        ASSERT_TRUE(insert) << insert.error().message;
        ASSERT_TRUE(insert->bind(1, id).bind(2, "name " + std::to_string(id)).run());
    }
    auto lookup = db_->prepare("SELECT name FROM t WHERE id = ?1");
    ASSERT_TRUE(lookup) << lookup.error().message;
    for (std::int64_t id : {300, 1, 150}) {
        auto name =
            lookup->bind(1, id).first([](const sql::Row& row) { return std::string(row.text(0)); });
        lookup->reset();
        ASSERT_TRUE(name && *name);
        EXPECT_EQ(**name, "name " + std::to_string(id));
    }
    // One server-side statement per SQL text, however often it was prepared.
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM pg_prepared_statements"), 2);
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t"), 300);
}

TEST_F(PgConnectionTest, ChangesCountsTheLastCommandAndReturningGivesRows) {
    ASSERT_TRUE(
        db_->exec("CREATE TABLE t(id bigserial PRIMARY KEY, n bigint); "
                  "INSERT INTO t(n) SELECT generate_series(1, 5)"));
    EXPECT_EQ(db_->changes(), 5);
    auto update = db_->prepare("UPDATE t SET n = n + 1 WHERE id <= ?1");
    ASSERT_TRUE(update && update->bind(1, std::int64_t{3}).run());
    EXPECT_EQ(db_->changes(), 3);
    auto deleted = db_->prepare("DELETE FROM t WHERE id > ?1 RETURNING id");
    ASSERT_TRUE(deleted) << deleted.error().message;
    auto ids =
        deleted->bind(1, std::int64_t{3}).collect([](const sql::Row& row) { return row.int64(0); });
    ASSERT_TRUE(ids) << ids.error().message;
    EXPECT_EQ(*ids, (std::vector<std::int64_t>{4, 5}));
    EXPECT_EQ(db_->changes(), 2);
    // A query leaves changes() as the last command set it.
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t"), 3);
    EXPECT_EQ(db_->changes(), 2);
    auto inserted = db_->prepare("INSERT INTO t(n) VALUES (?1) RETURNING id, n");
    ASSERT_TRUE(inserted) << inserted.error().message;
    auto row = inserted->bind(1, std::int64_t{42}).first([](const sql::Row& r) {
        return std::pair(r.int64(0), r.int64(1));
    });
    ASSERT_TRUE(row && *row);
    EXPECT_EQ(**row, std::pair(std::int64_t{6}, std::int64_t{42}));
    EXPECT_EQ(db_->changes(), 1);
}

TEST_F(PgConnectionTest, EachFirstAndCollectWalkTheRows) {
    auto series = db_->prepare("SELECT n, 'row ' || n FROM generate_series(1, ?1) AS n");
    ASSERT_TRUE(series) << series.error().message;
    std::vector<std::int64_t> seen;
    ASSERT_TRUE(series->bind(1, std::int64_t{10}).each([&](const sql::Row& row) {
        seen.push_back(row.int64(0));
        return seen.size() < 4;  // stops after the fourth
    }));
    EXPECT_EQ(seen, (std::vector<std::int64_t>{1, 2, 3, 4}));
    series->reset();
    auto texts = series->bind(1, std::int64_t{3}).collect([](const sql::Row& row) {
        return std::string(row.text(1));
    });
    ASSERT_TRUE(texts);
    EXPECT_EQ(*texts, (std::vector<std::string>{"row 1", "row 2", "row 3"}));
    series->reset();
    auto none =
        series->bind(1, std::int64_t{0}).first([](const sql::Row& row) { return row.int64(0); });
    ASSERT_TRUE(none);
    EXPECT_EQ(*none, std::nullopt);
}

TEST_F(PgConnectionTest, ColumnsOutOfRangeReadAsNull) {
    auto one = db_->prepare_once("SELECT 1, '\\x01'::bytea");
    ASSERT_TRUE(one) << one.error().message;
    auto step = one->step();
    ASSERT_TRUE(step && *step);
    const sql::Row row = one->row();
    for (const int column : {-1, 2, 1000}) {
        EXPECT_TRUE(row.is_null(column));
        EXPECT_EQ(row.int64(column), 0);
        EXPECT_EQ(row.real(column), 0.0);
        EXPECT_TRUE(row.text(column).empty());
        EXPECT_TRUE(row.blob(column).empty());
    }
    EXPECT_EQ(row.int64(0), 1);
    EXPECT_EQ(bytes_of(row.blob(1)), std::vector<std::byte>{std::byte{1}});
}

TEST_F(PgConnectionTest, ATransactionIsRolledBackWhenDroppedAndKeptByCommit) {
    ASSERT_TRUE(db_->exec("CREATE TABLE t(n bigint)"));
    {
        auto dropped = sql::Transaction::begin(*db_, TransactionKind::kWrite);
        ASSERT_TRUE(dropped) << dropped.error().message;
        EXPECT_TRUE(db_->in_transaction());
        ASSERT_TRUE(db_->exec("INSERT INTO t VALUES (1)"));
        // One transaction at a time, as on SQLite.
        EXPECT_FALSE(db_->begin(TransactionKind::kRead));
    }
    EXPECT_FALSE(db_->in_transaction());
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t"), 0);
    {
        auto kept = sql::Transaction::begin(*db_, TransactionKind::kWrite);
        ASSERT_TRUE(kept) << kept.error().message;
        ASSERT_TRUE(db_->exec("INSERT INTO t VALUES (2)"));
        ASSERT_TRUE(kept->commit());
        EXPECT_FALSE(db_->in_transaction());
    }
    EXPECT_EQ(scalar(*db_, "SELECT CAST(SUM(n) AS BIGINT) FROM t"), 2);
    EXPECT_FALSE(db_->commit());  // no transaction open
}

TEST_F(PgConnectionTest, AFailedStatementMakesCommitAnErrorAndKeepsNothing) {
    ASSERT_TRUE(db_->exec("CREATE TABLE t(id bigint PRIMARY KEY)"));
    {
        auto tx = sql::Transaction::begin(*db_, TransactionKind::kWrite);
        ASSERT_TRUE(tx) << tx.error().message;
        auto insert = db_->prepare("INSERT INTO t VALUES (?1)");
        ASSERT_TRUE(insert && insert->bind(1, std::int64_t{1}).run());
        auto duplicate = insert->bind(1, std::int64_t{1}).run();
        ASSERT_FALSE(duplicate);
        EXPECT_EQ(duplicate.error().type, ErrorType::kInternal);
        EXPECT_TRUE(contains(duplicate.error().message, "23505"));
        EXPECT_TRUE(contains(duplicate.error().message, "test store"));
        auto committed = tx->commit();
        ASSERT_FALSE(committed);
        EXPECT_TRUE(contains(committed.error().message, "rolled back"));
        EXPECT_FALSE(db_->in_transaction());
    }
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t"), 0);
}

TEST_F(PgConnectionTest, CopyInWritesIntegersTextsAndNullsAndCountsThem) {
    ASSERT_TRUE(db_->exec("CREATE TABLE t(id bigint PRIMARY KEY, v text, n bigint)"));
    PgCopyRows rows;
    const std::int64_t ids[] = {std::numeric_limits<std::int64_t>::min(), -1, 0, 1 << 20,
                                std::numeric_limits<std::int64_t>::max()};
    for (const auto id : ids) {
        rows.begin_row(3);
        rows.add_int64(id);
        ASSERT_TRUE(rows.add_text(id == 0 ? "" : "é \"\\,{}\t" + std::to_string(id)));
        rows.add_null();
    }
    EXPECT_EQ(rows.rows(), 5U);
    auto copied = db_->copy_in("t(id, v, n)", rows);
    ASSERT_TRUE(copied) << copied.error().message;
    EXPECT_EQ(*copied, 5);
    EXPECT_EQ(db_->changes(), 5);
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t WHERE n IS NULL"), 5);
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t WHERE v = ''"), 1);
    EXPECT_EQ(
        scalar(*db_, "SELECT count(*) FROM t WHERE id = -1 AND v = 'é \"\\,{}' || chr(9) || '-1'"),
        1);
    EXPECT_EQ(scalar(*db_,
                     "SELECT min(id) = -9223372036854775808 AND max(id) = "
                     "9223372036854775807 FROM t"),
              1);
    PgCopyRows nul;
    nul.begin_row(1);
    EXPECT_FALSE(nul.add_text(std::string_view("a\0b", 3)));
}

TEST_F(PgConnectionTest, AFailedCopyFailsItsTransactionAndKeepsNothing) {
    ASSERT_TRUE(db_->exec("CREATE TABLE t(id bigint PRIMARY KEY)"));
    {
        auto tx = sql::Transaction::begin(*db_, TransactionKind::kWrite);
        ASSERT_TRUE(tx) << tx.error().message;
        PgCopyRows rows;
        for (const std::int64_t id : {1, 2, 1}) {
            rows.begin_row(1);
            rows.add_int64(id);
        }
        auto copied = db_->copy_in("t(id)", rows);
        ASSERT_FALSE(copied);
        EXPECT_TRUE(contains(copied.error().message, "23505"));
        EXPECT_TRUE(contains(copied.error().message, "test store"));
        auto committed = tx->commit();
        ASSERT_FALSE(committed);
        EXPECT_TRUE(contains(committed.error().message, "rolled back"));
    }
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t"), 0);
    // The connection serves on: a copy into a table that does not exist fails alone.
    PgCopyRows rows;
    rows.begin_row(1);
    rows.add_int64(7);
    EXPECT_FALSE(db_->copy_in("missing(id)", rows));
    auto copied = db_->copy_in("t(id)", rows);
    ASSERT_TRUE(copied) << copied.error().message;
    EXPECT_EQ(scalar(*db_, "SELECT sum(id) FROM t"), 7);
}

// A plain INSERT ... SELECT from a row feed is run as a COPY (feed_rows.cpp) and any other
// statement from unnested arrays: both give the rows and the count, slice by slice.
TEST_F(PgConnectionTest, RowFeedsWriteByCopyOrByUnnestAlike) {
    ASSERT_TRUE(db_->exec(
        "CREATE TABLE t(a bigint PRIMARY KEY, b bigint NOT NULL, v text, q text NOT NULL)"));
    const std::vector<std::int64_t> values = {1, 10, 2, 20, 3, 30, 4, 40, 5, 50};
    const std::vector<std::string_view> texts = {"x", "",  "y",  "b\"q", "z",
                                                 "{", "w", "\\", "v",    "é"};
    const Int64RowFeed feed{values.data(), 5, 2, {1, 0, 0, 0, 0}, texts.data()};
    // Columns in another order than the table's, and sliced by two rows.
    auto copied = sql::run_with_row_feed(
        *db_, "test_feed", "INSERT INTO t(b, a, q, v) SELECT c1, c0, t1, t0 FROM test_feed", feed,
        2);
    ASSERT_TRUE(copied) << copied.error().message;
    EXPECT_EQ(*copied, 5);
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t WHERE b * 10 = a"), 5);
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t WHERE a = 40 AND v = 'w' AND q = '\\'"), 1);
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t WHERE a = 20 AND v = 'y' AND q = 'b\"q'"), 1);
    const std::vector<std::int64_t> more = {5, 6, 7};
    const Int64RowFeed conflicting{more.data(), 3, 1, {0, 0, 0, 0, 0}};
    auto inserted = sql::run_with_row_feed(
        *db_, "test_feed",
        "INSERT INTO t(a, b, q) SELECT c0 * 10, c0, 'n' FROM test_feed ON CONFLICT DO NOTHING",
        conflicting);
    ASSERT_TRUE(inserted) << inserted.error().message;
    EXPECT_EQ(*inserted, 2);  // 50 was there
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t WHERE v IS NULL"), 2);
}

TEST_F(PgConnectionTest, AReadTransactionIsReadOnly) {
    ASSERT_TRUE(db_->exec("CREATE TABLE t(n bigint)"));
    auto tx = sql::Transaction::begin(*db_, TransactionKind::kRead);
    ASSERT_TRUE(tx) << tx.error().message;
    auto write = db_->exec("INSERT INTO t VALUES (1)");
    ASSERT_FALSE(write);
    EXPECT_TRUE(contains(write.error().message, "25006"));  // read_only_sql_transaction
}

// A read's BEGIN goes with its first statement and its ROLLBACK is not waited for: neither may
// change what a read sees or what comes after it.
TEST_F(PgConnectionTest, AReadSeesOneSnapshotAndWhatCommittedBeforeTheNextRead) {
    ASSERT_TRUE(db_->exec("CREATE TABLE t(n bigint)"));
    auto writer = open();
    ASSERT_TRUE(writer) << writer.error().message;
    const auto count = [this]() -> std::int64_t {
        auto st = db_->prepare("SELECT count(*) FROM t");
        if (!st) return -1;
        auto n = st->first([](const sql::Row& row) { return row.int64(0); });
        return n && *n ? **n : -1;
    };
    {
        sql::ReadScope read(*db_);
        EXPECT_TRUE(db_->in_transaction());
        EXPECT_EQ(count(), 0);  // the BEGIN and this statement in one round trip
        ASSERT_TRUE((*writer)->exec("INSERT INTO t VALUES (1)"));
        EXPECT_EQ(count(), 0) << "one snapshot for the whole read";
        // A prepared write inside the read transaction is refused, as exec's is.
        auto insert = db_->prepare("INSERT INTO t VALUES (?1)");
        ASSERT_TRUE(insert) << insert.error().message;
        auto refused = insert->bind(1, std::int64_t{2}).run();
        ASSERT_FALSE(refused);
        EXPECT_TRUE(contains(refused.error().message, "25006"));
    }
    // The ROLLBACK is in flight: the connection is out of the transaction at once, and the next
    // read sees the insert.
    EXPECT_FALSE(db_->in_transaction());
    {
        sql::ReadScope read(*db_);
        EXPECT_EQ(count(), 1);
    }
    // A read that reads nothing, rolled back or committed, sends nothing and ends.
    {
        sql::ReadScope idle(*db_);
        EXPECT_TRUE(db_->in_transaction());
    }
    EXPECT_FALSE(db_->in_transaction());
    auto empty = sql::Transaction::begin(*db_, TransactionKind::kRead);
    ASSERT_TRUE(empty) << empty.error().message;
    EXPECT_TRUE(empty->commit());
    EXPECT_FALSE(db_->in_transaction());
    // A write transaction right after a read's ROLLBACK, then a read's COMMIT after a statement.
    {
        sql::ReadScope read(*db_);
        EXPECT_EQ(count(), 1);
    }
    {
        auto tx = sql::Transaction::begin(*db_, TransactionKind::kWrite);
        ASSERT_TRUE(tx) << tx.error().message;
        ASSERT_TRUE(db_->exec("INSERT INTO t VALUES (3)"));
        ASSERT_TRUE(tx->commit());
    }
    auto read = sql::Transaction::begin(*db_, TransactionKind::kRead);
    ASSERT_TRUE(read) << read.error().message;
    EXPECT_EQ(count(), 2);
    EXPECT_TRUE(read->commit());
    EXPECT_FALSE(db_->in_transaction());
    EXPECT_EQ(scalar(*db_, "SELECT CAST(SUM(n) AS BIGINT) FROM t"), 4);
}

TEST_F(PgConnectionTest, AReadsFailedFirstStatementIsItsErrorAndTheConnectionGoesOn) {
    ASSERT_TRUE(db_->exec("CREATE TABLE t(n bigint)"));
    {
        sql::ReadScope read(*db_);
        auto missing = db_->prepare_once("SELECT n FROM no_such_table");
        ASSERT_TRUE(missing) << missing.error().message;
        auto failed = missing->run();
        ASSERT_FALSE(failed);
        EXPECT_EQ(failed.error().type, ErrorType::kInternal);
        EXPECT_TRUE(contains(failed.error().message, "42P01")) << failed.error().message;
        EXPECT_TRUE(contains(failed.error().message, "no_such_table"));
        // The transaction is failed, as any other after a failed statement.
        auto after = db_->exec("SELECT 1");
        ASSERT_FALSE(after);
        EXPECT_TRUE(contains(after.error().message, "25P02")) << after.error().message;
    }
    EXPECT_FALSE(db_->in_transaction());
    ASSERT_TRUE(db_->exec("INSERT INTO t VALUES (5)"));
    sql::ReadScope read(*db_);
    EXPECT_EQ(scalar(*db_, "SELECT CAST(SUM(n) AS BIGINT) FROM t"), 5);
}

TEST_F(PgConnectionTest, ASecondWriterWaitsUntilTheFirstCommits) {
    ASSERT_TRUE(db_->exec("CREATE TABLE t(n bigint)"));
    auto second = open();
    auto observer = open();
    ASSERT_TRUE(second && observer);
    auto first = sql::Transaction::begin(*db_, TransactionKind::kWrite);
    ASSERT_TRUE(first) << first.error().message;
    ASSERT_TRUE(db_->exec("INSERT INTO t VALUES (1)"));

    std::atomic<bool> began{false};
    std::promise<std::int64_t> seen;
    auto seen_later = seen.get_future();
    std::thread writer([&] {
        auto tx = sql::Transaction::begin(**second, TransactionKind::kWrite);
        began = true;
        seen.set_value(tx ? scalar(**second, "SELECT count(*) FROM t") : -1);
    });
    // The second writer's lock request is seen waiting by a third connection.
    const bool waiting = test_support::wait_until([&] {
        return began ||
               scalar(**observer,
                      "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                      "AND database = (SELECT oid FROM pg_database "
                      "WHERE datname = current_database())") == 1;
    });
    const bool began_while_held = began;
    auto committed = first->commit();
    writer.join();
    EXPECT_TRUE(waiting);
    EXPECT_FALSE(began_while_held);
    EXPECT_TRUE(committed);
    // It began after the commit and sees the first writer's row.
    EXPECT_EQ(seen_later.get(), 1);
}

TEST_F(PgConnectionTest, AWriterCannotTakeTheLockWhileAnotherHoldsIt) {
    auto second = open();
    ASSERT_TRUE(second) << second.error().message;
    ASSERT_TRUE((*second)->exec("SET lock_timeout = '100ms'"));
    auto first = sql::Transaction::begin(*db_, TransactionKind::kWrite);
    ASSERT_TRUE(first) << first.error().message;
    {
        auto refused = sql::Transaction::begin(**second, TransactionKind::kWrite);
        ASSERT_FALSE(refused);
        EXPECT_TRUE(contains(refused.error().message, "55P03"));  // lock_not_available
        EXPECT_FALSE((*second)->in_transaction());
        // Readers take no lock.
        auto reader = sql::Transaction::begin(**second, TransactionKind::kRead);
        EXPECT_TRUE(reader);
    }
    ASSERT_TRUE(first->commit());
    auto granted = sql::Transaction::begin(**second, TransactionKind::kWrite);
    EXPECT_TRUE(granted);
}

TEST_F(PgConnectionTest, StatementErrorsNameTheStoreSqlstateAndStatement) {
    auto missing = db_->exec("SELECT * FROM no_such_table");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().type, ErrorType::kInternal);
    EXPECT_TRUE(contains(missing.error().message, "test store"));
    EXPECT_TRUE(contains(missing.error().message, "42P01"));
    EXPECT_TRUE(contains(missing.error().message, "no_such_table"));
    // A parameter nothing gives a type: the caller writes CAST(?1 AS ...).
    auto untyped = db_->prepare("SELECT ?1 IS NULL");
    ASSERT_FALSE(untyped);
    EXPECT_TRUE(contains(untyped.error().message, "42P18"));
    EXPECT_TRUE(contains(untyped.error().message, "CAST(?N AS"));
    auto typed = db_->prepare("SELECT CAST(?1 AS BIGINT) IS NULL");
    ASSERT_TRUE(typed) << typed.error().message;
    auto is_null = typed->bind_null(1).first([](const sql::Row& row) { return row.int64(0); });
    ASSERT_TRUE(is_null && *is_null);
    EXPECT_EQ(**is_null, 1);
    typed->reset();
    auto no_such_parameter = typed->bind(3, std::int64_t{1}).run();
    ASSERT_FALSE(no_such_parameter);
    EXPECT_TRUE(contains(no_such_parameter.error().message, "?3"));
}

TEST_F(PgConnectionTest, TextHoldingNulIsAnInvalidRequestNamingTheParameter) {
    ASSERT_TRUE(db_->exec("CREATE TABLE t(a text, b text)"));
    auto insert = db_->prepare("INSERT INTO t VALUES (?1, ?2)");
    ASSERT_TRUE(insert) << insert.error().message;
    const std::string with_nul("a\0b", 3);
    auto refused = insert->bind(1, "fine").bind(2, with_nul).run();
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().type, ErrorType::kInvalidRequest);
    EXPECT_TRUE(contains(refused.error().message, "?2"));
    EXPECT_TRUE(contains(refused.error().message, "NUL"));
    insert->reset();
    // Rebound, the same statement goes on.
    EXPECT_TRUE(insert->bind(2, "ab").run());
    EXPECT_EQ(scalar(*db_, "SELECT count(*) FROM t"), 1);
}

TEST_F(PgConnectionTest, AMissingDatabaseIsStoreUnavailable) {
    auto opened = open_dsn(server_->dsn("no_such_database"));
    ASSERT_FALSE(opened);
    EXPECT_EQ(opened.error().type, ErrorType::kStoreUnavailable);
    EXPECT_TRUE(contains(opened.error().message, "no_such_database"));
    EXPECT_TRUE(lacks(opened.error().message, "\n"));
}

// ---- Connecting, no server ---------------------------------------------------------------------

TEST(PgConnectTest, AClosedPortIsStoreUnavailableAndNeverShowsThePassword) {
    const int port = test_support::closed_loopback_port();
    ASSERT_GT(port, 0);
    const std::string where = "127.0.0.1:" + std::to_string(port);
    for (const std::string& dsn :
         {"host=127.0.0.1 port=" + std::to_string(port) + " user=u password=s3cret-pw dbname=x",
          "postgresql://u:s3cret-pw@127.0.0.1:" + std::to_string(port) + "/x"}) {
        auto opened = open_dsn(dsn);
        ASSERT_FALSE(opened) << dsn;
        EXPECT_EQ(opened.error().type, ErrorType::kStoreUnavailable);
        EXPECT_TRUE(contains(opened.error().message,
                             "test store: PostgreSQL at " + where + " unavailable: "));
        EXPECT_TRUE(lacks(opened.error().message, "s3cret-pw"));
        EXPECT_TRUE(lacks(opened.error().message, "\n"));
    }
    // libpq quotes what it cannot read: here, the password.
    auto unreadable = open_dsn("host=127.0.0.1 password s3cret-pw");
    ASSERT_FALSE(unreadable);
    EXPECT_EQ(unreadable.error().type, ErrorType::kInvalidRequest);
    EXPECT_TRUE(lacks(unreadable.error().message, "s3cret-pw"));
}

// ---- A server of the test's own, stopped and started -------------------------------------------

class PgConnectionLossTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (auto why = PostgresServer::unavailable()) GTEST_SKIP() << *why;
        server_ = std::make_unique<PostgresServer>();
        server_->exec("CREATE TABLE t(n bigint)");
        auto opened = open_dsn(server_->dsn());
        ASSERT_TRUE(opened) << opened.error().message;
        db_ = std::move(*opened);
    }
    void TearDown() override {
        db_.reset();
        server_.reset();
    }

    void expect_unavailable(const base::Result<void>& result) const {
        ASSERT_FALSE(result);
        EXPECT_EQ(result.error().type, ErrorType::kStoreUnavailable) << result.error().message;
        EXPECT_TRUE(contains(result.error().message,
                             "PostgreSQL at 127.0.0.1:" + std::to_string(server_->port())));
    }

    std::unique_ptr<PostgresServer> server_;
    std::unique_ptr<PgConnection> db_;
};

TEST_F(PgConnectionLossTest, AStoppedServerIsUnavailableAndTheSameConnectionServesItRestarted) {
    auto insert = db_->prepare("INSERT INTO t VALUES (?1)");
    ASSERT_TRUE(insert) << insert.error().message;
    ASSERT_TRUE(insert->bind(1, std::int64_t{1}).run());
    server_->stop();
    expect_unavailable(insert->bind(1, std::int64_t{2}).run());
    // Still down: calls fail at once while the connection waits before its next attempt (a
    // backoff from 100 ms to 5 s), and say so.
    expect_unavailable(db_->exec("SELECT 1"));
    const auto soon = db_->begin(TransactionKind::kWrite);
    expect_unavailable(soon);
    EXPECT_TRUE(contains(soon.error().message, "retrying shortly")) << soon.error().message;
    server_->start();
    // The statement held across the restart is prepared again on the new session, once the
    // backoff lets the connection try again.
    insert->reset();
    EXPECT_TRUE(test_support::wait_until(
        [&] {
            auto ran = insert->bind(1, std::int64_t{3}).run();
            insert->reset();
            return ran.ok();
        },
        std::chrono::milliseconds{15'000}, std::chrono::milliseconds{50}));
    auto again = db_->prepare("INSERT INTO t VALUES (?1)");
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_TRUE(again->bind(1, std::int64_t{4}).run());
    EXPECT_EQ(scalar(*db_, "SELECT CAST(SUM(n) AS BIGINT) FROM t"), 8);
}

TEST_F(PgConnectionLossTest, AReadOnAStoppedServerIsUnavailableAndTheNextOneServesItRestarted) {
    ASSERT_TRUE(db_->exec("INSERT INTO t VALUES (7)"));
    {
        sql::ReadScope read(*db_);  // a read's BEGIN waits for its first statement
        server_->stop();
        auto st = db_->prepare_once("SELECT count(*) FROM t");
        ASSERT_TRUE(st) << st.error().message;
        expect_unavailable(st->run());
    }
    EXPECT_FALSE(db_->in_transaction());
    server_->start();
    EXPECT_TRUE(test_support::wait_until(
        [&] {
            sql::ReadScope read(*db_);
            auto st = db_->prepare("SELECT CAST(SUM(n) AS BIGINT) FROM t");
            if (!st) return false;
            auto sum = st->first([](const sql::Row& row) { return row.int64(0); });
            return sum && *sum && **sum == 7;
        },
        std::chrono::milliseconds{15'000}, std::chrono::milliseconds{50}));
}

TEST_F(PgConnectionLossTest, AConnectionLostInsideATransactionIsNeverSilentlyReplaced) {
    {
        auto tx = sql::Transaction::begin(*db_, TransactionKind::kWrite);
        ASSERT_TRUE(tx) << tx.error().message;
        ASSERT_TRUE(db_->exec("INSERT INTO t VALUES (1)"));
        server_->stop();
        server_->start();
        expect_unavailable(db_->exec("INSERT INTO t VALUES (2)"));
        // The server is back, but this transaction's work is gone: no fresh session under it.
        expect_unavailable(db_->exec("INSERT INTO t VALUES (4)"));
        EXPECT_FALSE(tx->commit());
        EXPECT_TRUE(db_->in_transaction());
    }
    EXPECT_FALSE(db_->in_transaction());
    ASSERT_TRUE(db_->exec("INSERT INTO t VALUES (8)"));
    EXPECT_EQ(scalar(*db_, "SELECT CAST(SUM(n) AS BIGINT) FROM t"), 8);
}

}  // namespace
}  // namespace glassbox::storage
