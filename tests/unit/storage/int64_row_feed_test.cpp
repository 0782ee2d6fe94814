// Tests for the in-memory int64 row-feed virtual table: column mapping, row counts, no rows
// outside a run.
#include "storage/int64_row_feed.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

namespace glassbox::storage {
namespace {

TEST(Int64RowFeed, WritesRowsThroughTheColumnMap) {
    auto db = Database::open(":memory:");
    ASSERT_TRUE(db) << db.error().message;
    ASSERT_TRUE(register_row_feed(**db, "test_feed"));
    ASSERT_TRUE((*db)->exec("CREATE TABLE t(a INTEGER, b INTEGER)"));
    // Three rows of stride 3; c0 reads element 2, c1 element 0.
    const std::vector<std::int64_t> rows = {1, 10, 100, 2, 20, 200, 3, 30, 300};
    const Int64RowFeed feed{rows.data(), 3, 3, {2, 0, 1, 1, 1}};
    auto changed =
        run_with_row_feed(**db, "INSERT INTO t(a, b) SELECT c0, c1 FROM test_feed", feed);
    ASSERT_TRUE(changed) << changed.error().message;
    EXPECT_EQ(*changed, 3);
    auto st = (*db)->prepare("SELECT a, b FROM t ORDER BY a");
    ASSERT_TRUE(st);
    auto got = st->collect([](const Row& row) { return std::pair{row.int64(0), row.int64(1)}; });
    ASSERT_TRUE(got);
    const std::vector<std::pair<std::int64_t, std::int64_t>> want = {{100, 1}, {200, 2}, {300, 3}};
    EXPECT_EQ(*got, want);
}

TEST(Int64RowFeed, WritesTextColumnsWithoutMakingAnEmptyOneNull) {
    auto db = Database::open(":memory:");
    ASSERT_TRUE(db) << db.error().message;
    ASSERT_TRUE(register_row_feed(**db, "test_feed"));
    ASSERT_TRUE((*db)->exec("CREATE TABLE t(a INTEGER, v TEXT NOT NULL, q TEXT NOT NULL)"));
    const std::vector<std::int64_t> rows = {1, 2};
    const std::string backing("first\0with a NUL", 16);  // a view into it may hold a NUL
    const std::vector<std::string_view> texts = {std::string_view(backing.data(), 5),
                                                 std::string_view{},
                                                 {},
                                                 std::string_view(backing.data(), backing.size())};
    const Int64RowFeed feed{rows.data(), 2, 1, {0, 0, 0, 0, 0}, texts.data()};
    auto changed =
        run_with_row_feed(**db, "INSERT INTO t(a, v, q) SELECT c0, t0, t1 FROM test_feed", feed);
    ASSERT_TRUE(changed) << changed.error().message;
    EXPECT_EQ(*changed, 2);
    auto st = (*db)->prepare("SELECT a, v, q, length(CAST(q AS BLOB)) FROM t ORDER BY a");
    ASSERT_TRUE(st);
    auto got = st->collect([](const Row& row) {
        return std::tuple{row.int64(0), std::string(row.text(1)), std::string(row.text(2)),
                          row.int64(3)};
    });
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_EQ(got->size(), 2u);
    EXPECT_EQ((*got)[0], std::tuple(std::int64_t{1}, std::string("first"), std::string(), 0));
    EXPECT_EQ(std::get<1>((*got)[1]), "");
    EXPECT_EQ(std::get<3>((*got)[1]), static_cast<std::int64_t>(backing.size()));
}

TEST(Int64RowFeed, TextColumnsAreNullWithoutTexts) {
    auto db = Database::open(":memory:");
    ASSERT_TRUE(db) << db.error().message;
    ASSERT_TRUE(register_row_feed(**db, "test_feed"));
    const std::vector<std::int64_t> rows = {7};
    const Int64RowFeed feed{rows.data(), 1, 1, {0, 0, 0, 0, 0}};
    ASSERT_TRUE((*db)->exec("CREATE TABLE t(a INTEGER, v TEXT)"));
    auto changed =
        run_with_row_feed(**db, "INSERT INTO t(a, v) SELECT c0, t0 FROM test_feed", feed);
    ASSERT_TRUE(changed) << changed.error().message;
    auto st = (*db)->prepare("SELECT count(*) FROM t WHERE a = 7 AND v IS NULL");
    ASSERT_TRUE(st);
    auto count = st->first([](const Row& row) { return row.int64(0); });
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, std::optional<std::int64_t>(1));
}

TEST(Int64RowFeed, HasNoRowsOutsideARun) {
    auto db = Database::open(":memory:");
    ASSERT_TRUE(db) << db.error().message;
    ASSERT_TRUE(register_row_feed(**db, "test_feed"));
    auto st = (*db)->prepare("SELECT count(*) FROM test_feed");
    ASSERT_TRUE(st);
    auto count = st->first([](const Row& row) { return row.int64(0); });
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, std::optional<std::int64_t>(0));
}

TEST(Int64RowFeed, AnEmptyFeedWritesNothing) {
    auto db = Database::open(":memory:");
    ASSERT_TRUE(db) << db.error().message;
    ASSERT_TRUE(register_row_feed(**db, "test_feed"));
    ASSERT_TRUE((*db)->exec("CREATE TABLE t(a INTEGER)"));
    auto changed =
        run_with_row_feed(**db, "INSERT INTO t(a) SELECT c0 FROM test_feed", Int64RowFeed{});
    ASSERT_TRUE(changed) << changed.error().message;
    EXPECT_EQ(*changed, 0);
}

}  // namespace
}  // namespace glassbox::storage
