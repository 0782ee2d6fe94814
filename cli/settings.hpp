// glassbox's settings: the one table of every key (type, default, bounds, flags, environment
// variable, doc), and the configuration a command runs with — resolved once per process from
// defaults, <home>/run/endpoints.json, <home>/config.toml, GLASSBOX_* variables and flags.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/result.hpp"
#include "config/resolve.hpp"
#include "config/setting.hpp"

namespace glassbox::cli {

inline constexpr std::string_view kConfigFile = "config.toml";
// What `glassbox up` bound (runtime state, not configuration), under <home>/run/.
inline constexpr std::string_view kEndpointsStateFile = "endpoints.json";

// Every setting glassbox has; docs/configuration.md is generated from it (config show --defaults).
const config::Registry& settings_registry();

// What the table says of a text setting beyond config::Setting's kind and default: that its value
// may hold a secret, and what its text must be. config::Setting has no place for either yet, so
// they sit beside the table, by key (settings_table.cpp).
struct SettingRule {
    std::string key;
    // The value as it may be printed, its secret masked (a DSN's password as ***); null: printed
    // as it is. Everything that prints a setting's value goes through shown_value().
    std::string (*mask)(std::string_view text) = nullptr;
    // Why a non-empty value cannot be used, without quoting it (it may hold a secret); null: any
    // text. Checked when the configuration is resolved, like a value out of bounds.
    std::optional<std::string> (*problem)(std::string_view text) = nullptr;
    // The reference's "values" column, when more precise than the kind's ("a string").
    std::string values;
};
const std::vector<SettingRule>& settings_rules();
// The rule of `key`, or null when it has none.
const SettingRule* setting_rule(std::string_view key);
// True when `key`'s value is printed masked.
bool is_secret_setting(std::string_view key);
// A value as `config show`, `status` and messages print it: a secret masked, a string or choice
// in double quotes (an empty one stays visible), other values as TOML writes them.
std::string shown_value(const config::Setting& setting, const config::Value& value);
// The same without the quotes, for JSON output.
config::Value shown_raw_value(const config::Setting& setting, const config::Value& value);

std::filesystem::path config_file_path(const std::filesystem::path& home);
std::filesystem::path endpoints_state_path(const std::filesystem::path& home);

// Adds `flag` to `command` as a way to set `key` for this run; the setting's table entry must
// list the flag. The value is checked against the setting when the configuration is resolved
// (a bad one: "config error: flag --x: key: expected ..., got ...", exit 2).
CLI::Option* add_setting_option(CLI::App& command, std::string_view key, const std::string& flag);
// add_setting_option for each of `flags`, named after its key in `section`: `--base-url` sets
// `<section>.base_url`.
void add_section_options(CLI::App& command, std::string_view section,
                         std::initializer_list<const char*> flags);
// A flag without a value that sets the boolean `key` to `value` (`--no-gateway`: up.gateway false).
CLI::Option* add_setting_flag(CLI::App& command, std::string_view key, const std::string& flag,
                              bool value, const std::string& help);

// The layers below the flags for `home`, in precedence order: runtime state, config file,
// environment (process_env). InvalidRequest (a message with the file:line or variable) on error,
// also for a value its SettingRule refuses (never quoting that value).
base::Result<config::Resolved> resolve_settings_for(const std::filesystem::path& home,
                                                    const std::vector<config::FlagValue>& flags,
                                                    const config::EnvLookup& env);

// A configuration that cannot be used: prints "config error: <why>" (one line) on stderr and
// throws CLI::RuntimeError(2), as a bad file, variable or flag does.
[[noreturn]] void exit_config_error(const base::Error& error);

// Resolves this process's configuration for `home` with the flags parsed so far, and applies the
// log level and format. A bad file, variable or flag prints "config error: <why>" on stderr and
// throws CLI::RuntimeError(2): nothing has started yet.
void resolve_settings(const std::filesystem::path& home);
// The same, finding the home from the `--home` option of the chosen subcommands (else
// $GLASSBOX_HOME, else ~/.glassbox). main() calls it once the command line is parsed.
void resolve_settings(const CLI::App& app);
// The configuration resolved above; resolved on first use (default home) if it was not.
const config::Resolved& settings();
// The home the configuration was resolved for.
const std::filesystem::path& settings_home();
// The reference table of docs/configuration.md, one Markdown row per setting: key, default,
// accepted values, environment variable(s), flags, meaning (`glassbox config show --defaults`).
std::string settings_markdown_table(const config::Registry& registry);

// Forgets the flags parsed and the configuration resolved (tests parse several command lines).
void reset_settings();

}  // namespace glassbox::cli
