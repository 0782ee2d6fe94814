// glassbox's settings: the one table of every key (type, default, bounds, flags, environment
// variable, doc), and the configuration a command runs with — resolved once per process from
// defaults, <home>/run/endpoints.json, <home>/config.toml, GLASSBOX_* variables and flags.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

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
// environment (process_env). InvalidRequest (a message with the file:line or variable) on error.
base::Result<config::Resolved> resolve_settings_for(const std::filesystem::path& home,
                                                    const std::vector<config::FlagValue>& flags,
                                                    const config::EnvLookup& env);

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
