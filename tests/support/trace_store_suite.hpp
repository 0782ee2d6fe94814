// The trace-store suites' fixture: every test on each backend (TEST_P; instantiate with
// GLASSBOX_TRACE_BACKENDS), a fresh store per test, deliveries stored through store_batch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/sqlite_database.hpp"
#include "tests/support/trace_fixture.hpp"
#include "tests/support/trace_store_site.hpp"

namespace glassbox::trace::testing {

class StoreTest : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override {
        site_ = std::make_unique<StoreSite>(GetParam());
        if (const auto& why = site_->unavailable()) GTEST_SKIP() << *why;
        dir_ = site_->dir();
        auto opened = site_->open(OpenMode::kReadWrite, config_);
        ASSERT_TRUE(opened.ok()) << opened.error().describe();
        store_ = std::move(opened).value();
    }
    void TearDown() override {
        store_.reset();
        site_.reset();
    }
    bool on_postgres() const { return GetParam() == Backend::kPostgres; }
    // The same store opened again (another connection), in `mode`.
    std::unique_ptr<TraceStore> reopen(OpenMode mode) {
        auto opened = site_->open(mode, config_);
        EXPECT_TRUE(opened.ok()) << opened.error().describe();
        return opened.ok() ? std::move(opened).value() : nullptr;
    }
    // Runs `sql` on the closed store's database (SQLite file or PostgreSQL schema): how the
    // migration tests turn a store back into an older version.
    void downgrade(const std::string& sql) {
        store_.reset();
        if (on_postgres()) {
            site_->exec(sql);
            return;
        }
        auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
        ASSERT_TRUE(db.ok()) << db.error().describe();
        ASSERT_TRUE((*db)->exec(sql).ok());
    }
    // Every stored triple as N-Quads, the way `traces export` writes them.
    std::string exported() {
        std::string nquads;
        auto counts = store_->export_nquads(std::nullopt, std::nullopt, [&](std::string_view l) {
            nquads += l;
            return true;
        });
        EXPECT_TRUE(counts.ok()) << counts.error().describe();
        return nquads;
    }
    BatchOutcome store(const std::vector<schema::ExplainMessage>& messages,
                       std::int64_t received_ms) {
        std::vector<Delivery> batch;
        batch.reserve(messages.size());
        for (const auto& m : messages) batch.push_back(delivery_of(m, next_id_++));
        auto outcome = store_->store_batch(batch, at(received_ms));
        EXPECT_TRUE(outcome.ok()) << outcome.error().describe();
        return outcome.ok() ? *outcome : BatchOutcome{};
    }

    StoreConfig config_;
    std::unique_ptr<StoreSite> site_;
    std::filesystem::path dir_;
    std::unique_ptr<TraceStore> store_;
    std::uint64_t next_id_ = 1;
};

}  // namespace glassbox::trace::testing

// Runs every TEST_P of `fixture` on SQLite (OnSqlite/…) and on PostgreSQL (OnPostgres/…, labelled
// integration: each starts from a fresh schema of the binary's one server).
#define GLASSBOX_TRACE_BACKENDS(fixture)                                                        \
    INSTANTIATE_TEST_SUITE_P(OnSqlite, fixture,                                                 \
                             ::testing::Values(::glassbox::trace::testing::Backend::kSqlite),   \
                             ::glassbox::trace::testing::backend_test_name);                    \
    INSTANTIATE_TEST_SUITE_P(OnPostgres, fixture,                                               \
                             ::testing::Values(::glassbox::trace::testing::Backend::kPostgres), \
                             ::glassbox::trace::testing::backend_test_name)

// Runs every TEST_P of `fixture` on SQLite only (what reads or damages SQLite's file itself).
#define GLASSBOX_TRACE_SQLITE_ONLY(fixture)                                                   \
    INSTANTIATE_TEST_SUITE_P(OnSqlite, fixture,                                               \
                             ::testing::Values(::glassbox::trace::testing::Backend::kSqlite), \
                             ::glassbox::trace::testing::backend_test_name)
