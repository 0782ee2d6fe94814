// The test binary's shared PostgreSQL server and fresh schemas in it (shared_postgres.hpp).
#include "tests/support/shared_postgres.hpp"

#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>

namespace glassbox::integration {

PostgresServer* shared_postgres(std::optional<std::string>& unavailable) {
    static std::mutex mutex;
    static std::unique_ptr<PostgresServer> server;
    static std::optional<std::string> why;
    std::lock_guard lock(mutex);
    if (!server && !why) {
        why = PostgresServer::unavailable();
        if (!why) server = std::make_unique<PostgresServer>();
    }
    unavailable = why;
    return server.get();
}

FreshSchema::FreshSchema() {
    static std::atomic<int> counter{0};
    server_ = shared_postgres(unavailable_);
    if (server_ == nullptr) return;
    name_ = "s" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    server_->exec("CREATE SCHEMA " + name_);
    server_dsn_ = server_->dsn();
    dsn_ = server_dsn_ + " options='-c search_path=" + name_ + "'";
}

FreshSchema::~FreshSchema() {
    if (server_ == nullptr) return;
    try {
        server_->exec("SET client_min_messages = warning; DROP SCHEMA " + name_ + " CASCADE");
    } catch (const std::exception&) {
        // A test that stopped the server leaves its schema to the cluster's removal.
    }
}

void FreshSchema::exec(const std::string& sql) const {
    server_->exec("SET search_path = " + name_ + "; " + sql);
}

}  // namespace glassbox::integration
