// Where one test's trace store lives, on either backend: a fresh folder for a SQLite file, or a
// fresh schema in the one PostgreSQL server of the test binary (started on first use, stopped at
// exit). The trace-store suites run every test on both (TEST_P over Backend).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "base/result.hpp"
#include "tests/support/file_size_limit.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace::testing {

enum class Backend { kSqlite, kPostgres };

// "sqlite" / "postgres": the suffix of a parameterised test's name.
std::string backend_test_name(const ::testing::TestParamInfo<Backend>& info);
// How gtest prints the parameter (in ctest's list and failure messages); gtest looks for this name.
inline void PrintTo(Backend backend, std::ostream* out) {  // NOLINT(readability-identifier-naming)
    *out << (backend == Backend::kPostgres ? "postgres" : "sqlite");
}

class StoreSite {
public:
    explicit StoreSite(Backend backend);
    ~StoreSite();
    StoreSite(const StoreSite&) = delete;
    StoreSite& operator=(const StoreSite&) = delete;

    // Why this backend cannot run here (PostgreSQL's binaries absent), or nullopt.
    const std::optional<std::string>& unavailable() const noexcept { return unavailable_; }
    Backend backend() const noexcept { return backend_; }
    // The store of this site, opened (again) in `mode`: the same data every time.
    base::Result<std::unique_ptr<TraceStore>> open(OpenMode mode,
                                                   const StoreConfig& config = {}) const;
    // A folder of the test's own (SQLite's file is in it; any backend may put files there).
    const std::filesystem::path& dir() const noexcept { return dir_; }
    // The DSN of this site's schema (PostgreSQL only).
    const std::string& dsn() const noexcept { return dsn_; }
    // Runs SQL in this site's schema as the server's superuser (PostgreSQL only; throws on
    // error).
    void exec(const std::string& sql) const;

private:
    Backend backend_;
    std::filesystem::path dir_;
    std::string schema_;
    std::string dsn_;
    std::optional<std::string> unavailable_;
};

// Every write to the site's store fails while this lives, the way a full disk fails it: a
// file-size limit on this process (SQLite writes its file here) or, on PostgreSQL (whose server
// writes its own files), a constraint no new event meets. Reads still work.
class WritesFail {
public:
    explicit WritesFail(const StoreSite& site);
    ~WritesFail();
    WritesFail(const WritesFail&) = delete;
    WritesFail& operator=(const WritesFail&) = delete;

private:
    const StoreSite& site_;
    std::unique_ptr<test_support::FileSizeLimit> limit_;
};

}  // namespace glassbox::trace::testing
