// Knowledge bases for tests on SQLite and PostgreSQL (tests/support/knowledge_site.hpp).
#include "tests/support/knowledge_site.hpp"

#include <unistd.h>

#include <atomic>
#include <stdexcept>

#include "storage/pg_connection.hpp"
#include "storage/sqlite_connection.hpp"
#include "storage/sqlite_database.hpp"
#include "workers/store/knowledge_base.hpp"

namespace glassbox::store_testing {

base::Result<std::unique_ptr<storage::sql::Connection>> open_sqlite(
    const std::filesystem::path& path, const storage::OpenOptions& options) {
    auto db = storage::Database::open(path, options);
    if (!db) return std::move(db).error();
    return std::unique_ptr<storage::sql::Connection>(
        std::make_unique<storage::SqliteConnection>(std::move(db).value()));
}

KnowledgeSite::KnowledgeSite(Backend backend) : backend_(backend) {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("glassbox-kb-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    if (backend_ != Backend::kPostgres) return;
    schema_ = std::make_unique<integration::FreshSchema>();
    unavailable_ = schema_->unavailable();
}

KnowledgeSite::~KnowledgeSite() {
    if (schema_ && !unavailable_) {
        // Collections a store made beside the site's schema (<schema>_kb_<id>) go with it.
        try {
            schema_->exec(
                "DO $$DECLARE s text; BEGIN FOR s IN SELECT nspname FROM pg_namespace WHERE "
                "starts_with(nspname, '" +
                schema_->name() +
                "_kb_') LOOP EXECUTE 'DROP SCHEMA ' || s || ' CASCADE'; END LOOP; END$$");
        } catch (const std::exception&) {
            // A test that stopped the server leaves them to the cluster's removal.
        }
    }
    schema_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

base::Result<std::unique_ptr<storage::sql::Connection>> KnowledgeSite::connect() const {
    if (backend_ == Backend::kPostgres) {
        storage::PgOptions options;
        options.dsn = schema_->server_dsn();
        options.label = "knowledge store";
        options.search_path = schema_->name();
        auto connection = storage::PgConnection::open(options);
        if (!connection) return std::move(connection).error();
        return std::unique_ptr<storage::sql::Connection>(std::move(connection).value());
    }
    auto options = store::KnowledgeBase::open_options("test");
    options.create = true;
    return open_sqlite(dir_ / "kb.db", options);
}

const std::string& KnowledgeSite::dsn() const {
    if (!schema_) throw std::logic_error("KnowledgeSite::dsn on SQLite");
    return schema_->dsn();
}

void KnowledgeSite::exec(const std::string& sql) const {
    if (!schema_) throw std::logic_error("KnowledgeSite::exec on SQLite");
    schema_->exec(sql);
}

}  // namespace glassbox::store_testing
