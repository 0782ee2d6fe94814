// Where one test's knowledge base lives, on either backend: a SQLite file in a fresh folder, or a
// fresh schema of the test binary's one PostgreSQL server. The knowledge-store suites run their
// tests on both (TEST_P over Backend; GLASSBOX_KNOWLEDGE_BACKENDS instantiates them).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "base/result.hpp"
#include "storage/sql.hpp"
#include "storage/sqlite_database.hpp"
#include "tests/support/shared_postgres.hpp"

namespace glassbox::store_testing {

enum class Backend { kSqlite, kPostgres };

inline void PrintTo(Backend backend, std::ostream* out) {  // NOLINT(readability-identifier-naming)
    *out << (backend == Backend::kPostgres ? "postgres" : "sqlite");
}

// A SQLite database (":memory:" or a file) as a backend-neutral connection.
base::Result<std::unique_ptr<storage::sql::Connection>> open_sqlite(
    const std::filesystem::path& path, const storage::OpenOptions& options = {});

class KnowledgeSite {
public:
    explicit KnowledgeSite(Backend backend);
    ~KnowledgeSite();
    KnowledgeSite(const KnowledgeSite&) = delete;
    KnowledgeSite& operator=(const KnowledgeSite&) = delete;

    // Why this backend cannot run here (PostgreSQL's binaries absent), or nullopt.
    const std::optional<std::string>& unavailable() const noexcept { return unavailable_; }
    Backend backend() const noexcept { return backend_; }
    bool postgres() const noexcept { return backend_ == Backend::kPostgres; }
    // A new connection to this site's one knowledge base (SQLite: <dir>/kb.db opened as the store
    // opens a collection's file): the same data every time.
    base::Result<std::unique_ptr<storage::sql::Connection>> connect() const;
    // A fresh folder of the test's own (a home: SQLite's files, vector index caches).
    const std::filesystem::path& dir() const noexcept { return dir_; }
    // PostgreSQL only: the DSN a store is configured with (its catalog in this site's schema).
    const std::string& dsn() const;
    // PostgreSQL only: runs SQL in the site's schema as the superuser; throws on error.
    void exec(const std::string& sql) const;

private:
    Backend backend_;
    std::filesystem::path dir_;
    std::unique_ptr<integration::FreshSchema> schema_;
    std::optional<std::string> unavailable_;
};

// A suite's fixture base: a fresh site per test, skipped with the reason when its backend cannot
// run here.
class KnowledgeTest : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override {
        site_ = std::make_unique<KnowledgeSite>(GetParam());
        if (const auto& why = site_->unavailable()) GTEST_SKIP() << *why;
    }
    void TearDown() override { site_.reset(); }
    bool on_postgres() const { return GetParam() == Backend::kPostgres; }

    std::unique_ptr<KnowledgeSite> site_;
};

}  // namespace glassbox::store_testing

// Runs every TEST_P of `fixture` on SQLite (OnSqlite/…) and on PostgreSQL (OnPostgres/…, which
// tests/CMakeLists labels integration: each test starts from a fresh schema).
#define GLASSBOX_KNOWLEDGE_BACKENDS(fixture)                                                  \
    INSTANTIATE_TEST_SUITE_P(OnSqlite, fixture,                                               \
                             ::testing::Values(::glassbox::store_testing::Backend::kSqlite)); \
    INSTANTIATE_TEST_SUITE_P(OnPostgres, fixture,                                             \
                             ::testing::Values(::glassbox::store_testing::Backend::kPostgres))
