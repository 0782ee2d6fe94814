// The storage backend the settings choose, and the check of their connection strings.
#include "cli/storage_choice.hpp"

#include <libpq-fe.h>

#include <memory>

#include "cli/settings.hpp"

namespace glassbox::cli {

std::string_view to_string(StorageBackend backend) noexcept {
    return backend == StorageBackend::kPostgres ? "postgres" : "sqlite";
}

base::Result<StorageChoice> storage_choice(const config::Resolved& settings) {
    StorageChoice choice;
    if (settings.text("storage.backend") != "postgres") return choice;
    choice.backend = StorageBackend::kPostgres;
    choice.dsn = settings.text("storage.postgres_dsn");
    choice.read_dsn = settings.text("storage.postgres_read_dsn");
    if (choice.dsn.empty()) {
        const auto* dsn = settings.registry().find("storage.postgres_dsn");
        return base::make_error(
            base::ErrorType::kInvalidRequest,
            "storage.backend is \"postgres\" (" + settings.origin("storage.backend").describe() +
                ") but storage.postgres_dsn is empty: set it in the [storage] table of the "
                "config file, or in " +
                dsn->env_name() + " or " + dsn->env_aliases.front());
    }
    return choice;
}

StorageChoice required_storage_choice() {
    auto choice = storage_choice(settings());
    if (!choice) exit_config_error(choice.error());
    return std::move(choice).value();
}

std::optional<std::string> connection_string_problem(std::string_view dsn) {
    const std::string text(dsn);
    char* error = nullptr;
    // libpq's own reading of both forms. Its message is dropped: it may quote the password.
    const std::unique_ptr<PQconninfoOption, void (*)(PQconninfoOption*)> options(
        PQconninfoParse(text.c_str(), &error), PQconninfoFree);
    if (error != nullptr) PQfreemem(error);
    if (options) return std::nullopt;
    return "libpq cannot read it as a connection string (key=value pairs such as \"host=db1 "
           "dbname=glassbox\", or a postgresql:// URI); not shown, as it may hold a password";
}

}  // namespace glassbox::cli
