// Trace stores for tests on SQLite and PostgreSQL (tests/support/trace_store_site.hpp).
#include "tests/support/trace_store_site.hpp"

#include <unistd.h>

#include <atomic>
#include <mutex>

#include "tests/support/shared_postgres.hpp"

namespace glassbox::trace::testing {

namespace {

std::filesystem::path fresh_site_dir(int n) {
    auto dir = std::filesystem::temp_directory_path() /
               ("glassbox-trace-" + std::to_string(getpid()) + "-site-" + std::to_string(n));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

}  // namespace

std::string backend_test_name(const ::testing::TestParamInfo<Backend>& info) {
    return info.param == Backend::kPostgres ? "postgres" : "sqlite";
}

StoreSite::StoreSite(Backend backend) : backend_(backend) {
    static std::atomic<int> counter{0};
    const int n = counter++;
    dir_ = fresh_site_dir(n);
    if (backend_ != Backend::kPostgres) return;
    auto* server = integration::shared_postgres(unavailable_);
    if (server == nullptr) return;
    schema_ = "t" + std::to_string(getpid()) + "_" + std::to_string(n);
    server->exec("CREATE SCHEMA " + schema_);
    dsn_ = server->dsn() + " options='-c search_path=" + schema_ + "'";
}

StoreSite::~StoreSite() {
    if (!schema_.empty()) {
        std::optional<std::string> ignored;
        if (auto* server = integration::shared_postgres(ignored)) {
            try {
                server->exec("SET client_min_messages = warning; DROP SCHEMA " + schema_ +
                             " CASCADE");
            } catch (const std::exception&) {
                // A test that stopped the server leaves its schema to the cluster's removal.
            }
        }
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

void StoreSite::exec(const std::string& sql) const {
    std::optional<std::string> ignored;
    auto* server = integration::shared_postgres(ignored);
    ASSERT_NE(server, nullptr) << "exec on a site without a PostgreSQL server";
    server->exec("SET search_path = " + schema_ + "; " + sql);
}

WritesFail::WritesFail(const StoreSite& site) : site_(site) {
    if (site_.backend() == Backend::kSqlite) {
        limit_ = std::make_unique<test_support::FileSizeLimit>(1);
    } else {
        site_.exec("ALTER TABLE events ADD CONSTRAINT writes_fail CHECK (seq < 0) NOT VALID");
    }
}

WritesFail::~WritesFail() {
    if (site_.backend() == Backend::kPostgres)
        site_.exec("ALTER TABLE events DROP CONSTRAINT writes_fail");
}

base::Result<std::unique_ptr<TraceStore>> StoreSite::open(OpenMode mode,
                                                          const StoreConfig& config) const {
    if (backend_ == Backend::kPostgres) return TraceStore::open_postgres(dsn_, mode, config);
    return TraceStore::open(dir_ / "traces.db", mode, config);
}

}  // namespace glassbox::trace::testing
