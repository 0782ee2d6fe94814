// The storage.* settings (issue 34): the backend and its PostgreSQL connection strings from the
// file and the environment (GLASSBOX_PG_DSN too), refused values, and DSNs never shown with their
// passwords.
#include "cli/storage_choice.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "cli/settings.hpp"
#include "tests/unit/cli/settings_home.hpp"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPassword = "s3cret-pw";

using cli::testing::env_of;

class StorageChoiceTest : public cli::testing::SettingsHome {
protected:
    base::Result<config::Resolved> resolve(std::map<std::string, std::string> env = {}) {
        return resolve_settings_for(home, {}, env_of(std::move(env)));
    }
};

TEST_F(StorageChoiceTest, SqliteIsTheDefault) {
    auto resolved = resolve();
    ASSERT_TRUE(resolved) << resolved.error().message;
    EXPECT_EQ(resolved->text("storage.backend"), "sqlite");
    EXPECT_EQ(resolved->text("storage.postgres_dsn"), "");
    EXPECT_EQ(resolved->text("storage.postgres_read_dsn"), "");
    const auto choice = storage_choice(*resolved);
    ASSERT_TRUE(choice) << choice.error().message;
    EXPECT_EQ(choice->backend, StorageBackend::kSqlite);
    EXPECT_EQ(to_string(choice->backend), "sqlite");
    EXPECT_EQ(choice->dsn, "");
}

TEST_F(StorageChoiceTest, PostgresFromTheFileInBothForms) {
    write_config(
        std::string("[storage]\nbackend = \"postgres\"\npostgres_dsn = \"host=db1 port=5433 "
                    "dbname=gb user=gb password=") +
        kPassword + "\"\n");
    auto resolved = resolve();
    ASSERT_TRUE(resolved) << resolved.error().message;
    auto choice = storage_choice(*resolved);
    ASSERT_TRUE(choice) << choice.error().message;
    EXPECT_EQ(choice->backend, StorageBackend::kPostgres);
    EXPECT_EQ(to_string(choice->backend), "postgres");
    EXPECT_EQ(choice->dsn,
              std::string("host=db1 port=5433 dbname=gb user=gb password=") + kPassword)
        << "the accessor gives the DSN whole, to connect with";
    EXPECT_EQ(choice->read_dsn, "");
    EXPECT_EQ(choice->query_dsn(), choice->dsn) << "no replica: queries use the primary";

    write_config(
        "[storage]\nbackend = \"postgres\"\npostgres_dsn = \"postgresql://gb@db1:5433/gb\"\n"
        "postgres_read_dsn = \"postgresql://gb@replica1/gb?sslmode=require\"\n");
    resolved = resolve();
    ASSERT_TRUE(resolved) << resolved.error().message;
    choice = storage_choice(*resolved);
    ASSERT_TRUE(choice) << choice.error().message;
    EXPECT_EQ(choice->dsn, "postgresql://gb@db1:5433/gb");
    EXPECT_EQ(choice->read_dsn, "postgresql://gb@replica1/gb?sslmode=require");
    EXPECT_EQ(choice->query_dsn(), choice->read_dsn);
}

TEST_F(StorageChoiceTest, GlassboxPgDsnSetsTheDsnBelowTheSettingsOwnVariable) {
    write_config("[storage]\nbackend = \"postgres\"\npostgres_dsn = \"host=from-file\"\n");
    auto only_pg = resolve({{"GLASSBOX_PG_DSN", "host=from-pg-dsn"}});
    ASSERT_TRUE(only_pg) << only_pg.error().message;
    EXPECT_EQ(only_pg->text("storage.postgres_dsn"), "host=from-pg-dsn") << "env beats the file";
    EXPECT_EQ(only_pg->origin("storage.postgres_dsn").describe(), "env GLASSBOX_PG_DSN");

    auto both = resolve({{"GLASSBOX_PG_DSN", "host=from-pg-dsn"},
                         {"GLASSBOX_STORAGE_POSTGRES_DSN", "host=from-own-name"}});
    ASSERT_TRUE(both) << both.error().message;
    EXPECT_EQ(both->text("storage.postgres_dsn"), "host=from-own-name");
    EXPECT_EQ(both->origin("storage.postgres_dsn").describe(), "env GLASSBOX_STORAGE_POSTGRES_DSN");

    auto empty_own =
        resolve({{"GLASSBOX_PG_DSN", "host=from-pg-dsn"}, {"GLASSBOX_STORAGE_POSTGRES_DSN", ""}});
    ASSERT_TRUE(empty_own) << empty_own.error().message;
    EXPECT_EQ(empty_own->text("storage.postgres_dsn"), "host=from-pg-dsn")
        << "an empty variable counts as unset";

    auto backend = resolve({{"GLASSBOX_STORAGE_BACKEND", "sqlite"}});
    ASSERT_TRUE(backend);
    EXPECT_EQ(backend->text("storage.backend"), "sqlite");
    EXPECT_EQ(backend->origin("storage.backend").describe(), "env GLASSBOX_STORAGE_BACKEND");
}

TEST_F(StorageChoiceTest, AnUnknownBackendNamesTheAllowedValues) {
    auto bad_env = resolve({{"GLASSBOX_STORAGE_BACKEND", "mysql"}});
    ASSERT_FALSE(bad_env);
    EXPECT_EQ(bad_env.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_EQ(bad_env.error().message,
              "env GLASSBOX_STORAGE_BACKEND: storage.backend: expected one of \"sqlite\", "
              "\"postgres\", got \"mysql\"");
    write_config("[storage]\nbackend = \"PostgreSQL\"\n");
    auto bad_file = resolve();
    ASSERT_FALSE(bad_file);
    EXPECT_EQ(bad_file.error().message,
              config_file_path(home).string() +
                  ":2: storage.backend: expected one of \"sqlite\", \"postgres\", got "
                  "\"PostgreSQL\"");
}

TEST_F(StorageChoiceTest, ADsnLibpqCannotReadIsRefusedWithoutShowingIt) {
    // libpq's own messages would quote these: a word without "=", a URI it cannot read.
    const std::vector<std::string> unreadable{
        std::string("host=db1 password ") + kPassword,
        std::string("postgresql://gb:") + kPassword + "@[::1/gb",
        std::string("host=db1 password='") + kPassword,
        std::string("host=db1 pasword=") + kPassword,
    };
    for (const auto& dsn : unreadable) {
        EXPECT_TRUE(connection_string_problem(dsn)) << dsn;
        auto bad = resolve({{"GLASSBOX_PG_DSN", dsn}});
        ASSERT_FALSE(bad) << dsn;
        EXPECT_EQ(bad.error().message.rfind("env GLASSBOX_PG_DSN: storage.postgres_dsn: libpq "
                                            "cannot read it as a connection string",
                                            0),
                  0u)
            << bad.error().message;
        EXPECT_EQ(bad.error().message.find(kPassword), std::string::npos) << bad.error().message;
    }
    write_config(std::string("[storage]\n\npostgres_read_dsn = \"host=db2 password ") + kPassword +
                 "\"\n");
    auto bad_file = resolve();
    ASSERT_FALSE(bad_file);
    EXPECT_EQ(bad_file.error().message.rfind(
                  config_file_path(home).string() + ":3: storage.postgres_read_dsn: libpq", 0),
              0u)
        << bad_file.error().message;
    EXPECT_EQ(bad_file.error().message.find(kPassword), std::string::npos);

    EXPECT_FALSE(connection_string_problem("host=db1 dbname=gb"));
    EXPECT_FALSE(connection_string_problem("postgresql://gb:pw@db1:5432/gb?sslmode=require"));
    EXPECT_FALSE(connection_string_problem("postgres://db1"));
}

TEST_F(StorageChoiceTest, PostgresWithoutADsnIsAProblemThatSaysWhereToSetIt) {
    write_config("[storage]\nbackend = \"postgres\"\n");
    auto resolved = resolve();
    ASSERT_TRUE(resolved) << "each value is valid on its own: " << resolved.error().message;
    const auto choice = storage_choice(*resolved);
    ASSERT_FALSE(choice);
    EXPECT_EQ(choice.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_EQ(choice.error().message,
              "storage.backend is \"postgres\" (" + config_file_path(home).string() +
                  ":2) but storage.postgres_dsn is empty: set it in the [storage] table of the "
                  "config file, or in GLASSBOX_STORAGE_POSTGRES_DSN or GLASSBOX_PG_DSN");
    // A read DSN alone is not enough: writes need the primary.
    auto read_only = resolve({{"GLASSBOX_STORAGE_POSTGRES_READ_DSN", "host=replica"}});
    ASSERT_TRUE(read_only);
    EXPECT_FALSE(storage_choice(*read_only));
}

TEST_F(StorageChoiceTest, ACommandThatNeedsStorageStopsWithConfigErrorAndExitTwo) {
    for (const char* name : {"GLASSBOX_STORAGE_POSTGRES_DSN", "GLASSBOX_PG_DSN"}) {
        if (std::getenv(name) != nullptr) GTEST_SKIP() << name << " is set in this environment";
    }
    write_config("[storage]\nbackend = \"postgres\"\n");
    resolve_settings(home);
    ::testing::internal::CaptureStderr();
    try {
        required_storage_choice();
        FAIL() << "a postgres backend without a DSN was accepted";
    } catch (const CLI::RuntimeError& e) {
        EXPECT_EQ(e.get_exit_code(), 2);
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.rfind("config error: storage.backend is \"postgres\"", 0), 0u) << err;

    reset_settings();
    write_config("[storage]\nbackend = \"postgres\"\npostgres_dsn = \"host=db1\"\n");
    resolve_settings(home);
    const auto choice = required_storage_choice();
    EXPECT_EQ(choice.backend, StorageBackend::kPostgres);
    EXPECT_EQ(choice.dsn, "host=db1");
}

TEST(StorageSettingsTest, ConnectionStringsAreSecretsShownMasked) {
    const auto& registry = settings_registry();
    for (const auto& rule : settings_rules()) {
        const config::Setting* setting = registry.find(rule.key);
        ASSERT_NE(setting, nullptr) << rule.key << " has a rule but no setting";
        EXPECT_EQ(setting->kind, config::Kind::kText) << rule.key;
    }
    const config::Setting& dsn = *registry.find("storage.postgres_dsn");
    const config::Setting& read_dsn = *registry.find("storage.postgres_read_dsn");
    EXPECT_TRUE(is_secret_setting(dsn.key));
    EXPECT_TRUE(is_secret_setting(read_dsn.key));
    EXPECT_FALSE(is_secret_setting("storage.backend"));
    EXPECT_FALSE(is_secret_setting("broker.endpoint"));

    const std::string keyword = std::string("host=db1 user=gb password=") + kPassword;
    const std::string uri = std::string("postgresql://gb:") + kPassword + "@db1:5433/gb";
    for (const auto& value : {keyword, uri}) {
        const std::string shown = shown_value(dsn, config::Value{value});
        EXPECT_EQ(shown.find(kPassword), std::string::npos) << shown;
        EXPECT_NE(shown.find("password=***"), std::string::npos) << shown;
        EXPECT_EQ(shown.front(), '"');
        const auto raw = std::get<std::string>(shown_raw_value(read_dsn, config::Value{value}));
        EXPECT_EQ(raw.find(kPassword), std::string::npos) << raw;
    }
    EXPECT_EQ(shown_value(dsn, config::Value{std::string("host=db1 dbname=gb")}),
              "\"host=db1 dbname=gb\"")
        << "a DSN without a password is shown as written";
    EXPECT_EQ(shown_value(dsn, dsn.fallback), "\"\"");
    const config::Setting& endpoint = *registry.find("broker.endpoint");
    EXPECT_EQ(shown_value(endpoint, config::Value{std::string("tcp://a:1")}), "\"tcp://a:1\"");
    EXPECT_EQ(shown_value(*registry.find("broker.liveness"), config::Value{std::int64_t{3}}), "3");
}

TEST(StorageSettingsTest, TheReferenceListsBothVariablesAndTheConnectionStringForm) {
    const std::string table = settings_markdown_table(settings_registry());
    EXPECT_NE(table.find("| `storage.backend` | `\"sqlite\"` | one of \"sqlite\", \"postgres\" | "
                         "`GLASSBOX_STORAGE_BACKEND` |  |"),
              std::string::npos)
        << table;
    EXPECT_NE(
        table.find("| `storage.postgres_dsn` | `\"\"` | " + std::string(kConnectionStringValues) +
                   " | `GLASSBOX_STORAGE_POSTGRES_DSN`, `GLASSBOX_PG_DSN` |  |"),
        std::string::npos)
        << table;
    EXPECT_NE(table.find("| `storage.postgres_read_dsn` | `\"\"` | " +
                         std::string(kConnectionStringValues) +
                         " | `GLASSBOX_STORAGE_POSTGRES_READ_DSN` |  |"),
              std::string::npos)
        << table;
}

}  // namespace
}  // namespace glassbox::cli
