// Resolving glassbox's configuration: flags bound to settings, the layers in precedence order,
// one resolution per process.
#include "cli/settings.hpp"

#include <algorithm>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "base/log.hpp"
#include "base/utf8.hpp"
#include "cli/home.hpp"
#include "config/toml_layer.hpp"

namespace glassbox::cli {
namespace {

struct SettingsState {
    std::vector<config::FlagValue> flags;  // as parsed, in order
    std::optional<config::Resolved> resolved;
    std::filesystem::path home;
};

SettingsState& settings_state() {
    static SettingsState instance;
    return instance;
}

const config::Setting& setting_with_flag(std::string_view key, const std::string& flag) {
    const config::Setting* setting = settings_registry().find(key);
    if (setting == nullptr) throw std::logic_error("no setting " + std::string(key));
    if (std::find(setting->flags.begin(), setting->flags.end(), flag) == setting->flags.end()) {
        throw std::logic_error("setting " + std::string(key) + " does not list flag " + flag);
    }
    return *setting;
}

std::string help_of(const config::Setting& setting) {
    std::string fallback = config::to_text(shown_raw_value(setting, setting.fallback));
    if (fallback.empty()) fallback = "\"\"";
    return setting.doc + " [" + setting.key + ", default " + fallback + "]";
}

// The first effective value a SettingRule refuses, named by where it came from
// ("env GLASSBOX_PG_DSN: storage.postgres_dsn: ...") like a value out of bounds.
base::Result<void> check_rules(const config::Resolved& resolved) {
    for (const auto& rule : settings_rules()) {
        if (rule.problem == nullptr) continue;
        const auto& text = resolved.text(rule.key);
        if (text.empty()) continue;
        if (auto why = rule.problem(text)) {
            return base::make_error(
                base::ErrorType::kInvalidRequest,
                resolved.origin(rule.key).describe() + ": " + rule.key + ": " + *why);
        }
    }
    return {};
}

// The chosen subcommands, outermost first.
std::vector<const CLI::App*> chosen_commands(const CLI::App& app) {
    std::vector<const CLI::App*> chain{&app};
    for (const CLI::App* at = &app;;) {
        const auto subs = at->get_subcommands();
        if (subs.empty()) break;
        at = subs.front();
        chain.push_back(at);
    }
    return chain;
}

// One row of a Markdown table: `| a | b |` and a newline.
std::string markdown_row(std::initializer_list<std::string_view> cells) {
    std::string row = "|";
    for (const std::string_view cell : cells) row.append(" ").append(cell).append(" |");
    return row + "\n";
}

}  // namespace

std::filesystem::path config_file_path(const std::filesystem::path& home) {
    return home / std::string(kConfigFile);
}

std::filesystem::path endpoints_state_path(const std::filesystem::path& home) {
    return home / "run" / std::string(kEndpointsStateFile);
}

CLI::Option* add_setting_option(CLI::App& command, std::string_view key, const std::string& flag) {
    const auto& setting = setting_with_flag(key, flag);
    return command.add_option_function<std::string>(
        flag,
        [key = setting.key, flag](const std::string& text) {
            settings_state().flags.push_back(config::FlagValue{key, flag, text});
        },
        help_of(setting));
}

void add_section_options(CLI::App& command, std::string_view section,
                         std::initializer_list<const char*> flags) {
    for (const char* flag : flags) {
        std::string key = std::string(section) + "." + (flag + 2);
        for (char& c : key) c = c == '-' ? '_' : c;
        add_setting_option(command, key, flag);
    }
}

CLI::Option* add_setting_flag(CLI::App& command, std::string_view key, const std::string& flag,
                              bool value, const std::string& help) {
    const auto& setting = setting_with_flag(key, flag);
    return command.add_flag_callback(
        flag,
        [key = setting.key, flag, value] {
            settings_state().flags.push_back(
                config::FlagValue{key, flag, value ? "true" : "false"});
        },
        help + " [" + setting.key + "]");
}

base::Result<config::Resolved> resolve_settings_for(const std::filesystem::path& home,
                                                    const std::vector<config::FlagValue>& flags,
                                                    const config::EnvLookup& env) {
    const auto& registry = settings_registry();
    auto runtime = load_endpoints_state(home);
    if (!runtime) return std::move(runtime).error();
    auto file = config::load_toml_file(registry, config_file_path(home));
    if (!file) return std::move(file).error();
    auto environment = config::read_env(registry, env);
    if (!environment) return std::move(environment).error();
    auto given = config::read_flags(registry, flags);
    if (!given) return std::move(given).error();
    config::Resolved resolved(
        registry, {&runtime.value(), &file.value(), &environment.value(), &given.value()});
    if (auto checked = check_rules(resolved); !checked) return std::move(checked).error();
    return resolved;
}

[[noreturn]] void exit_config_error(const base::Error& error) {
    std::string line = error.message;
    for (char& c : line) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    std::cerr << "config error: " << base::printable_utf8(line) << std::endl;
    throw CLI::RuntimeError(2);
}

void resolve_settings(const std::filesystem::path& home) {
    auto& s = settings_state();
    auto resolved = resolve_settings_for(home, s.flags, config::process_env);
    if (!resolved) exit_config_error(resolved.error());
    s.resolved.emplace(std::move(resolved).value());
    s.home = home;
    // Checked choices: both are accepted by construction.
    base::set_log_level(s.resolved->text("log.level"));
    base::set_log_format(s.resolved->text("log.format"));
}

void resolve_settings(const CLI::App& app) {
    std::string home_flag;
    for (const CLI::App* command : chosen_commands(app)) {
        const CLI::Option* home = command->get_option_no_throw("--home");
        if (home != nullptr && home->count() > 0) home_flag = home->as<std::string>();
    }
    resolve_settings(resolve_home(home_flag));
}

const config::Resolved& settings() {
    if (!settings_state().resolved) resolve_settings(resolve_home(""));
    return *settings_state().resolved;
}

const std::filesystem::path& settings_home() {
    settings();
    return settings_state().home;
}

const SettingRule* setting_rule(std::string_view key) {
    for (const auto& rule : settings_rules()) {
        if (rule.key == key) return &rule;
    }
    return nullptr;
}

bool is_secret_setting(std::string_view key) {
    const SettingRule* rule = setting_rule(key);
    return rule != nullptr && rule->mask != nullptr;
}

config::Value shown_raw_value(const config::Setting& setting, const config::Value& value) {
    const SettingRule* rule = setting_rule(setting.key);
    const auto* text = std::get_if<std::string>(&value);
    if (rule == nullptr || rule->mask == nullptr || text == nullptr) return value;
    return rule->mask(*text);
}

std::string shown_value(const config::Setting& setting, const config::Value& value) {
    std::string text = config::to_text(shown_raw_value(setting, value));
    if (setting.kind == config::Kind::kText || setting.kind == config::Kind::kChoice)
        return "\"" + text + "\"";
    return text;
}

std::string settings_markdown_table(const config::Registry& registry) {
    const auto code = [](const std::string& text) { return "`" + text + "`"; };
    std::string out =
        "| key | default | values | environment | flags | meaning |\n|---|---|---|---|---|---|\n";
    for (const auto& setting : registry.settings()) {
        const std::string fallback = shown_value(setting, setting.fallback);
        const SettingRule* rule = setting_rule(setting.key);
        const std::string values =
            rule != nullptr && !rule->values.empty() ? rule->values : setting.expectation();
        std::string env = code(setting.env_name());
        for (const auto& alias : setting.env_aliases) env += ", " + code(alias);
        std::string flags;
        for (const auto& flag : setting.flags) flags += (flags.empty() ? "" : ", ") + code(flag);
        out += markdown_row({code(setting.key), code(fallback), values, env, flags, setting.doc});
    }
    return out;
}

void reset_settings() {
    settings_state().flags.clear();
    settings_state().resolved.reset();
    settings_state().home.clear();
}

}  // namespace glassbox::cli
