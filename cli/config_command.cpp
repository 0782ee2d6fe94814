// `glassbox config show|path`: the effective configuration, each value with where it came from
// (secrets masked), and what makes it unusable.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/utf8.hpp"
#include "cli/commands.hpp"
#include "cli/home.hpp"
#include "cli/settings.hpp"
#include "cli/storage_choice.hpp"

namespace glassbox::cli {
namespace {

struct ConfigOptions {
    std::string home;
    bool json = false;
    bool defaults = false;
};

std::string_view source_name(config::Source source) {
    switch (source) {
        case config::Source::kDefault:
            return "default";
        case config::Source::kState:
            return "state";
        case config::Source::kFile:
            return "file";
        case config::Source::kEnv:
            return "env";
        case config::Source::kFlag:
            return "flag";
    }
    return "default";
}

nlohmann::json json_value(const config::Value& value) {
    return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

// What makes the configuration unusable though each value is valid on its own.
std::vector<base::Error> configuration_problems(const config::Resolved& s) {
    std::vector<base::Error> problems;
    if (auto storage = storage_choice(s); !storage) problems.push_back(storage.error());
    return problems;
}

void print_settings_json(const config::Resolved& s, const std::filesystem::path& home,
                         bool file_exists, const std::vector<base::Error>& problems) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& setting : settings_registry().settings()) {
        const auto& origin = s.origin(setting.key);
        list.push_back({{"key", setting.key},
                        {"value", json_value(shown_raw_value(setting, s.value(setting.key)))},
                        {"source", source_name(origin.source)},
                        {"origin", origin.describe()},
                        {"default", json_value(shown_raw_value(setting, setting.fallback))},
                        {"env", setting.env_name()},
                        {"flags", setting.flags},
                        {"secret", is_secret_setting(setting.key)},
                        {"doc", setting.doc}});
    }
    nlohmann::json problem_list = nlohmann::json::array();
    for (const auto& problem : problems) problem_list.push_back(problem.message);
    const nlohmann::json out{
        {"home", home.string()},      {"file", config_file_path(home).string()},
        {"file_exists", file_exists}, {"state", endpoints_state_path(home).string()},
        {"settings", list},           {"problems", problem_list}};
    std::cout << out.dump(2) << '\n';
}

void print_settings_table(const config::Resolved& s, const std::filesystem::path& home,
                          bool file_exists) {
    const auto& registry = settings_registry();
    std::cout << "# home " << home.string() << "; file " << config_file_path(home).string()
              << (file_exists ? "" : " (absent)") << '\n';
    std::size_t key_width = 3;
    std::size_t value_width = 5;
    for (const auto& setting : registry.settings()) {
        key_width = std::max(key_width, setting.key.size());
        value_width = std::max(value_width, shown_value(setting, s.value(setting.key)).size());
    }
    const auto pad = [](std::string text, std::size_t width) {
        text.resize(std::max(text.size(), width), ' ');
        return text;
    };
    std::cout << pad("KEY", key_width) << "  " << pad("VALUE", value_width) << "  SOURCE\n";
    for (const auto& setting : registry.settings()) {
        std::cout << pad(setting.key, key_width) << "  "
                  << pad(shown_value(setting, s.value(setting.key)), value_width) << "  "
                  << s.origin(setting.key).describe() << '\n';
    }
}

// Every value and its source; then, when the values cannot be used together (postgres without a
// DSN), each problem as a "config error" line on stderr and exit 2, as a bad value would.
void run_config_show(const ConfigOptions& options) {
    if (options.defaults) {
        std::cout << settings_markdown_table(settings_registry());
        return;
    }
    const auto& s = settings();
    const auto& home = settings_home();
    std::error_code ec;
    const bool file_exists = std::filesystem::exists(config_file_path(home), ec);
    const auto problems = configuration_problems(s);
    if (options.json) {
        print_settings_json(s, home, file_exists, problems);
    } else {
        print_settings_table(s, home, file_exists);
    }
    if (problems.empty()) return;
    std::cout.flush();
    for (std::size_t i = 0; i + 1 < problems.size(); ++i)
        std::cerr << "config error: " << base::printable_utf8(problems[i].message) << '\n';
    exit_config_error(problems.back());
}

}  // namespace

void add_config_command(CLI::App& app) {
    auto* command = app.add_subcommand(
        "config", "The configuration: every setting, its value and where it came from");
    command->require_subcommand(1);

    auto [show_cmd, show] = add_command<ConfigOptions>(
        *command, "show",
        "Every setting's effective value and its source: default, state, the file (path:line), "
        "env VARIABLE or flag, secrets masked (docs/configuration.md); exit 2 when the values "
        "cannot be used together",
        run_config_show);
    show_cmd->add_option("--home", show->home,
                         "Home folder (default $GLASSBOX_HOME, else ~/.glassbox)");
    show_cmd->add_flag("--json", show->json, "As one JSON object");
    show_cmd->add_flag(
        "--defaults", show->defaults,
        "Print the reference table of every setting (Markdown: key, default, values, environment, "
        "flags, meaning)");

    auto path = std::make_shared<ConfigOptions>();
    auto* path_cmd = command->add_subcommand(
        "path", "Print the path of the configuration file (<home>/config.toml)");
    path_cmd->add_option("--home", path->home,
                         "Home folder (default $GLASSBOX_HOME, else ~/.glassbox)");
    // The callback holds `path`: --home writes into it while the command line is parsed, after
    // this function has returned (without the capture it wrote into a freed object).
    path_cmd->callback([path] { std::cout << config_file_path(settings_home()).string() << '\n'; });
}

}  // namespace glassbox::cli
