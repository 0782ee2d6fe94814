// `glassbox config show|path`: the effective configuration, each value with where it came from.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/home.hpp"
#include "cli/settings.hpp"

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

// Strings in double quotes (an empty one stays visible), other values as TOML writes them.
std::string shown_value(const config::Setting& setting, const config::Value& value) {
    std::string text = config::to_text(value);
    if (setting.kind == config::Kind::kText || setting.kind == config::Kind::kChoice)
        return "\"" + text + "\"";
    return text;
}

void run_config_show(const ConfigOptions& options) {
    const auto& registry = settings_registry();
    if (options.defaults) {
        std::cout << settings_markdown_table(registry);
        return;
    }
    const auto& s = settings();
    const auto& home = settings_home();
    const auto file = config_file_path(home);
    std::error_code ec;
    const bool file_exists = std::filesystem::exists(file, ec);
    if (options.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& setting : registry.settings()) {
            const auto& origin = s.origin(setting.key);
            list.push_back({{"key", setting.key},
                            {"value", json_value(s.value(setting.key))},
                            {"source", source_name(origin.source)},
                            {"origin", origin.describe()},
                            {"default", json_value(setting.fallback)},
                            {"env", setting.env_name()},
                            {"flags", setting.flags},
                            {"doc", setting.doc}});
        }
        const nlohmann::json out{{"home", home.string()},
                                 {"file", file.string()},
                                 {"file_exists", file_exists},
                                 {"state", endpoints_state_path(home).string()},
                                 {"settings", list}};
        std::cout << out.dump(2) << '\n';
        return;
    }
    std::cout << "# home " << home.string() << "; file " << file.string()
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

}  // namespace

void add_config_command(CLI::App& app) {
    auto* command = app.add_subcommand(
        "config", "The configuration: every setting, its value and where it came from");
    command->require_subcommand(1);

    auto [show_cmd, show] = add_command<ConfigOptions>(
        *command, "show",
        "Every setting's effective value and its source: default, state, the file (path:line), "
        "env VARIABLE or flag (docs/configuration.md)",
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
