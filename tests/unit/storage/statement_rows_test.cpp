// Tests for reading rows through Statement::each / first / collect and the Row view.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/sqlite_database.hpp"

namespace glassbox::storage {
namespace {

std::unique_ptr<Database> numbers(int count) {
    auto db = Database::open(":memory:");
    EXPECT_TRUE(db) << db.error().message;
    EXPECT_TRUE((*db)->exec("CREATE TABLE t(a INTEGER, b TEXT, c REAL, d BLOB)"));
    for (int i = 1; i <= count; ++i) {
        EXPECT_TRUE((*db)->exec("INSERT INTO t VALUES(" + std::to_string(i) + ", 'n" +
                                std::to_string(i) + "', " + std::to_string(i) + ".5, x'0102')"));
    }
    return std::move(db).value();
}

// A statement that fails on its second step: json() of malformed text is an error SQLite
// reports from sqlite3_step on the row that evaluates it, not from prepare (no ORDER BY: a sort
// would evaluate every row before the first comes out).
const std::string kFailsOnSecondRow =
    "SELECT CASE WHEN a < 2 THEN a ELSE json('{' || a) END FROM t";

TEST(StatementRows, EachVisitsZeroOneAndManyRowsInOrder) {
    for (const int count : {0, 1, 5}) {
        auto db = numbers(count);
        auto st = db->prepare("SELECT a, b FROM t ORDER BY a");
        ASSERT_TRUE(st);
        std::vector<std::int64_t> seen;
        auto r = st->each([&](const Row& row) {
            seen.push_back(row.int64(0));
            EXPECT_EQ(row.text(1), "n" + std::to_string(row.int64(0)));
        });
        ASSERT_TRUE(r) << r.error().message;
        std::vector<std::int64_t> expected;
        for (int i = 1; i <= count; ++i) expected.push_back(i);
        EXPECT_EQ(seen, expected) << count << " rows";
    }
}

TEST(StatementRows, EachStopsWhenTheCallbackSaysFalse) {
    auto db = numbers(5);
    auto st = db->prepare("SELECT a FROM t ORDER BY a");
    ASSERT_TRUE(st);
    std::vector<std::int64_t> seen;
    ASSERT_TRUE(st->each([&](const Row& row) {
        seen.push_back(row.int64(0));
        return seen.size() < 2;
    }));
    EXPECT_EQ(seen, (std::vector<std::int64_t>{1, 2}));
}

TEST(StatementRows, EachReturnsTheCallbacksErrorAndStops) {
    auto db = numbers(5);
    auto st = db->prepare("SELECT a FROM t ORDER BY a");
    ASSERT_TRUE(st);
    int calls = 0;
    auto r = st->each([&](const Row& row) -> base::Result<void> {
        ++calls;
        if (row.int64(0) == 3) return base::make_error(base::ErrorType::kNotFound, "three");
        return {};
    });
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().type, base::ErrorType::kNotFound);
    EXPECT_EQ(r.error().message, "three");
    EXPECT_EQ(calls, 3);
}

TEST(StatementRows, EachWithAResultOfBoolStopsOnFalseAndOnAnError) {
    auto db = numbers(5);
    auto st = db->prepare("SELECT a FROM t ORDER BY a");
    ASSERT_TRUE(st);
    std::vector<std::int64_t> seen;
    ASSERT_TRUE(st->each([&](const Row& row) -> base::Result<bool> {
        seen.push_back(row.int64(0));
        return row.int64(0) < 3;
    }));
    EXPECT_EQ(seen, (std::vector<std::int64_t>{1, 2, 3}));
    st->reset();
    auto failed = st->each([&](const Row& row) -> base::Result<bool> {
        if (row.int64(0) == 2) return base::make_error(base::ErrorType::kInternal, "two");
        return true;
    });
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().message, "two");
}

TEST(StatementRows, StepErrorsPropagateFromEachFirstAndCollect) {
    auto db = numbers(3);
    {
        auto st = db->prepare(kFailsOnSecondRow);
        ASSERT_TRUE(st);
        int calls = 0;
        auto r = st->each([&](const Row&) { ++calls; });
        ASSERT_FALSE(r);
        EXPECT_NE(r.error().message.find("malformed JSON"), std::string::npos) << r.error().message;
        EXPECT_EQ(calls, 1);
    }
    {
        auto st = db->prepare(kFailsOnSecondRow);
        ASSERT_TRUE(st);
        auto r = st->collect([](const Row& row) { return row.int64(0); });
        EXPECT_FALSE(r);
    }
    {
        auto st = db->prepare("SELECT json('{' || a) FROM t");
        ASSERT_TRUE(st);
        auto r = st->first([](const Row& row) { return row.int64(0); });
        ASSERT_FALSE(r);
        EXPECT_NE(r.error().message.find("malformed JSON"), std::string::npos);
    }
}

TEST(StatementRows, FirstReadsOneRowOrNone) {
    auto db = numbers(3);
    auto st = db->prepare("SELECT a, c, d, NULL, b FROM t WHERE a >= ?1 ORDER BY a");
    ASSERT_TRUE(st);
    st->bind(1, std::int64_t{2});
    auto found = st->first([](const Row& row) {
        EXPECT_DOUBLE_EQ(row.real(1), 2.5);
        EXPECT_EQ(row.blob(2).size(), 2u);
        EXPECT_TRUE(row.is_null(3));
        EXPECT_EQ(row.optional_text(3), std::nullopt);
        EXPECT_EQ(row.optional_text(4), std::optional<std::string>("n2"));
        return row.int64(0);
    });
    ASSERT_TRUE(found);
    EXPECT_EQ(*found, std::optional<std::int64_t>(2));
    st->reset();
    st->bind(1, std::int64_t{9});
    auto none = st->first([](const Row& row) { return row.int64(0); });
    ASSERT_TRUE(none);
    EXPECT_EQ(*none, std::nullopt);
}

TEST(StatementRows, FirstFlattensACallbackResult) {
    auto db = numbers(1);
    auto st = db->prepare("SELECT a FROM t");
    ASSERT_TRUE(st);
    auto ok = st->first(
        [](const Row& row) -> base::Result<std::string> { return std::to_string(row.int64(0)); });
    ASSERT_TRUE(ok);
    EXPECT_EQ(*ok, std::optional<std::string>("1"));
    st->reset();
    auto failed = st->first([](const Row&) -> base::Result<std::string> {
        return base::make_error(base::ErrorType::kDecodeError, "bad row");
    });
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().type, base::ErrorType::kDecodeError);
}

TEST(StatementRows, CollectGathersEveryRow) {
    auto db = numbers(4);
    auto st = db->prepare("SELECT b FROM t ORDER BY a DESC");
    ASSERT_TRUE(st);
    auto names = st->collect([](const Row& row) { return std::string(row.text(0)); });
    ASSERT_TRUE(names);
    EXPECT_EQ(*names, (std::vector<std::string>{"n4", "n3", "n2", "n1"}));
    auto empty = db->prepare("SELECT b FROM t WHERE a > 10");
    ASSERT_TRUE(empty);
    auto none = empty->collect([](const Row& row) { return std::string(row.text(0)); });
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

TEST(StatementRows, OneUseStatementsAreFinalizedAndReadTheSameWay) {
    auto db = numbers(3);
    for (int round = 0; round < 3; ++round) {
        auto st = db->prepare_once("SELECT count(*) FROM t");
        ASSERT_TRUE(st);
        auto count = st->first([](const Row& row) { return row.int64(0); });
        ASSERT_TRUE(count);
        EXPECT_EQ(*count, std::optional<std::int64_t>(3));
    }
    auto bad = db->prepare_once("SELECT nothing FROM nowhere");
    EXPECT_FALSE(bad);
}

}  // namespace
}  // namespace glassbox::storage
