// Tests for the SQLite wrapper: statements, cached reuse, transactions, errors as values.
#include "storage/sqlite_database.hpp"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include <sqlite3.h>
#include "tests/support/scratch_dir.hpp"

namespace glassbox::storage {
namespace {

std::filesystem::path temp_path(const std::string& name) {
    auto dir = test_support::scratch_dir("gb-storage") / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir / "db.sqlite";
}

TEST(SqliteDatabase, BindsStepsAndReadsColumns) {
    auto db = Database::open(":memory:");
    ASSERT_TRUE(db) << db.error().message;
    ASSERT_TRUE((*db)->exec("CREATE TABLE t(a INTEGER, b TEXT, c REAL, d BLOB)"));
    {
        auto insert = (*db)->prepare("INSERT INTO t VALUES(?1, ?2, ?3, ?4)");
        ASSERT_TRUE(insert);
        insert->bind(1, std::int64_t{42})
            .bind(2, std::string_view{"h\xC3\xA9llo"})
            .bind(3, 0.5)
            .bind_blob(4, std::string_view{"\x00\x01", 2});
        ASSERT_TRUE(insert->run());
    }
    auto select = (*db)->prepare("SELECT a, b, c, d, NULL FROM t");
    ASSERT_TRUE(select);
    auto row = select->step();
    ASSERT_TRUE(row && *row);
    EXPECT_EQ(select->row().int64(0), 42);
    EXPECT_EQ(select->row().text(1), "h\xC3\xA9llo");
    EXPECT_DOUBLE_EQ(select->row().real(2), 0.5);
    EXPECT_EQ(select->row().blob(3).size(), 2u);
    EXPECT_TRUE(select->row().is_null(4));
    EXPECT_EQ(select->row().optional_text(4), std::nullopt);
    auto end = select->step();
    ASSERT_TRUE(end);
    EXPECT_FALSE(*end);
}

TEST(SqliteDatabase, CachedStatementIsResetWhenReleased) {
    auto db = Database::open(":memory:");
    ASSERT_TRUE(db);
    ASSERT_TRUE((*db)->exec("CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1),(2),(3)"));
    const std::string sql = "SELECT a FROM t ORDER BY a";
    {
        auto q = (*db)->prepare(sql);
        ASSERT_TRUE(q && *q->step());
        EXPECT_EQ(q->row().int64(0), 1);
    }  // released mid-iteration
    auto again = (*db)->prepare(sql);
    ASSERT_TRUE(again && *again->step());
    EXPECT_EQ(again->row().int64(0), 1) << "a reused statement must start from the first row";
}

std::int64_t page_size_of(Database& db) {
    auto st = db.prepare("PRAGMA page_size");
    EXPECT_TRUE(st);
    if (!st) return -1;
    auto row = st->step();
    EXPECT_TRUE(row && *row);
    return st->row().int64(0);
}

TEST(SqliteDatabase, PageSizeAppliesToANewFileOnly) {
    const auto path = temp_path("page-size");
    OpenOptions big;
    big.page_size = 16384;
    {
        auto db = Database::open(path, big);
        ASSERT_TRUE(db) << db.error().message;
        ASSERT_TRUE((*db)->exec("CREATE TABLE t(x)"));
        EXPECT_EQ(page_size_of(**db), 16384);
    }
    // Reopened with another setting: the file keeps the size it was made with.
    OpenOptions small;
    small.page_size = 4096;
    auto again = Database::open(path, small);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(page_size_of(**again), 16384);
    auto plain = Database::open(temp_path("page-size-default"));
    ASSERT_TRUE(plain) << plain.error().message;
    ASSERT_TRUE((*plain)->exec("CREATE TABLE t(x)"));
    EXPECT_EQ(page_size_of(**plain), 4096);
    std::filesystem::remove_all(path.parent_path());
    std::filesystem::remove_all(temp_path("page-size-default").parent_path());
}

TEST(SqliteDatabase, ErrorsAreValuesNamingTheLabel) {
    OpenOptions options;
    options.label = "knowledge store";
    auto db = Database::open(":memory:", options);
    ASSERT_TRUE(db);
    auto bad = (*db)->prepare("SELEKT 1");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("knowledge store"), std::string::npos);
    ASSERT_TRUE((*db)->exec("CREATE TABLE u(a INTEGER UNIQUE); INSERT INTO u VALUES (1)"));
    auto dup = (*db)->prepare("INSERT INTO u VALUES (1)");
    ASSERT_TRUE(dup);
    auto ran = dup->run();
    ASSERT_FALSE(ran);
    EXPECT_NE(ran.error().message.find("UNIQUE"), std::string::npos);
}

// A new in-memory database holding the empty table t(a INTEGER); null, and a test failure, when
// either step fails.
std::unique_ptr<Database> memory_db_with_table_t() {
    auto db = Database::open(":memory:");
    EXPECT_TRUE(db);
    if (!db) return nullptr;
    auto created = (*db)->exec("CREATE TABLE t(a INTEGER)");
    EXPECT_TRUE(created);
    if (!created) return nullptr;
    return std::move(*db);
}

TEST(SqliteDatabase, TransactionRollsBackUnlessCommitted) {
    auto db = memory_db_with_table_t();
    ASSERT_TRUE(db);
    // Row 1 in a transaction left uncommitted, then row 2 in one committed.
    for (const bool commit : {false, true}) {
        auto tx = Transaction::begin(*db);
        ASSERT_TRUE(tx);
        ASSERT_TRUE(db->exec(commit ? "INSERT INTO t VALUES (2)" : "INSERT INTO t VALUES (1)"));
        if (commit) {
            ASSERT_TRUE(tx->commit());
        }
    }
    auto q = db->prepare("SELECT group_concat(a) FROM t");
    ASSERT_TRUE(q && *q->step());
    EXPECT_EQ(q->row().text(0), "2");
}

std::string all_rows(Database& db) {
    auto q = db.prepare("SELECT coalesce(group_concat(a), '') FROM (SELECT a FROM t ORDER BY a)");
    if (!q) return "error: " + q.error().message;
    auto row = q->step();
    if (!row || !*row) return "error";
    return std::string(q->row().text(0));
}

TEST(SqliteDatabase, ReadScopeHoldsOneSnapshotAndEndsWithTheScope) {
    const auto path = temp_path("read-scope");
    auto reader = Database::open(path);
    ASSERT_TRUE(reader) << reader.error().message;
    ASSERT_TRUE((*reader)->exec("CREATE TABLE t(a INTEGER); INSERT INTO t VALUES (1)"));
    auto writer = Database::open(path);
    ASSERT_TRUE(writer) << writer.error().message;
    {
        ReadScope scope(**reader);
        EXPECT_EQ(sqlite3_get_autocommit((*reader)->handle()), 0);
        EXPECT_EQ(all_rows(**reader), "1");
        // Another connection commits meanwhile: the scope's statements still see their snapshot.
        ASSERT_TRUE((*writer)->exec("INSERT INTO t VALUES (2)"));
        EXPECT_EQ(all_rows(**reader), "1");
    }
    EXPECT_NE(sqlite3_get_autocommit((*reader)->handle()), 0);
    EXPECT_EQ(all_rows(**reader), "1,2");
}

TEST(SqliteDatabase, ReadScopeInsideATransactionLeavesItToItsOwner) {
    auto db = memory_db_with_table_t();
    ASSERT_TRUE(db);
    {
        auto tx = Transaction::begin(*db);
        ASSERT_TRUE(tx);
        ASSERT_TRUE(db->exec("INSERT INTO t VALUES (1)"));
        {
            ReadScope scope(*db);
            EXPECT_EQ(all_rows(*db), "1");
        }
        // The scope neither committed nor ended the caller's transaction.
        EXPECT_EQ(sqlite3_get_autocommit(db->handle()), 0);
    }  // rolled back
    EXPECT_EQ(all_rows(*db), "");
}

// Fills the WAL with `transactions` commits of about 64 KiB each.
void write_blobs(Database& db, int transactions) {
    ASSERT_TRUE(db.exec("CREATE TABLE IF NOT EXISTS blobs(id INTEGER PRIMARY KEY, data BLOB)"));
    const std::string data(64 * 1024, 'x');
    for (int i = 0; i < transactions; ++i) {
        auto tx = Transaction::begin(db);
        ASSERT_TRUE(tx);
        auto insert = db.prepare("INSERT INTO blobs(data) VALUES(?1)");
        ASSERT_TRUE(insert);
        insert->bind_blob(1, std::string_view{data});
        ASSERT_TRUE(insert->run());
        ASSERT_TRUE(tx->commit());
    }
}

TEST(SqliteDatabase, BackgroundCheckpointsCopyTheWalIntoTheFile) {
    const auto path = temp_path("checkpoint");
    OpenOptions options;
    options.background_checkpoint = true;
    options.checkpoint_pages = 20;
    auto db = Database::open(path, options);
    ASSERT_TRUE(db) << db.error().message;
    write_blobs(**db, 40);  // about 2.6 MB through the WAL
    // Only a checkpoint writes pages into the database file: it grows once the thread ran.
    bool copied = false;
    for (int i = 0; i < 500 && !copied; ++i) {
        copied = std::filesystem::file_size(path) > 2'000'000;
        if (!copied) std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    EXPECT_TRUE(copied) << "database file " << std::filesystem::file_size(path) << " bytes";
    {
        // Another connection reads everything; the writer's connection keeps working.
        auto reader = Database::open(path, OpenOptions{.read_only = true});
        ASSERT_TRUE(reader) << reader.error().message;
        auto count = (*reader)->prepare("SELECT count(*), sum(length(data)) FROM blobs");
        ASSERT_TRUE(count);
        auto row = count->step();
        ASSERT_TRUE(row && *row);
        EXPECT_EQ(count->row().int64(0), 40);
        EXPECT_EQ(count->row().int64(1), 40 * 64 * 1024);
    }
    write_blobs(**db, 1);
    db->reset();  // stops the thread; the last connection's close checkpoints and removes the WAL
    EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));
    std::filesystem::remove_all(path.parent_path());
}

TEST(SqliteDatabase, WithoutTheOptionTheCommitThatCrossesTheThresholdCheckpoints) {
    const auto path = temp_path("no-background");
    auto db = Database::open(path);
    ASSERT_TRUE(db) << db.error().message;
    ASSERT_TRUE((*db)->exec("PRAGMA wal_autocheckpoint=20"));
    write_blobs(**db, 40);
    EXPECT_GT(std::filesystem::file_size(path), 2'000'000u);  // at once, no waiting
    db->reset();
    std::filesystem::remove_all(path.parent_path());
}

TEST(SqliteDatabase, CreatesOwnerOnlyWalFile) {
    const auto path = temp_path("wal");
    auto db = Database::open(path);
    ASSERT_TRUE(db) << db.error().message;
    auto mode = (*db)->prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode && *mode->step());
    EXPECT_EQ(mode->row().text(0), "wal");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(SqliteDatabase, FileThatIsNotSqliteIsRefused) {
    const auto path = temp_path("corrupt");
    std::ofstream(path) << std::string(4096, 'x');
    auto db = Database::open(path);
    ASSERT_FALSE(db);
    EXPECT_NE(db.error().message.find(path.string()), std::string::npos);
}

TEST(SqliteDatabase, ReadOnlyOpenOfMissingFileFails) {
    OpenOptions options;
    options.read_only = true;
    auto db = Database::open(temp_path("missing").parent_path() / "nope.sqlite", options);
    EXPECT_FALSE(db);
}

}  // namespace
}  // namespace glassbox::storage
