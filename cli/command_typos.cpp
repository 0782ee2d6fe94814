// Walks the command line down the subcommand tree to the first word that names no subcommand.
#include "cli/command_typos.hpp"

#include <vector>

#include "base/spelling.hpp"

namespace glassbox::cli {
namespace {

// The option `flag` ("--limit", "-q", "--limit=5") of `app` or of an app above it (options fall
// through), or nullptr.
const CLI::Option* option_of(const CLI::App* app, const std::string& flag) {
    const std::string name = flag.substr(0, flag.find('='));
    for (; app != nullptr; app = app->get_parent()) {
        for (const CLI::Option* option : app->get_options()) {
            if (option->check_name(name)) return option;
        }
    }
    return nullptr;
}

const CLI::App* subcommand_of(const CLI::App& app, const std::string& word) {
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->check_name(word)) return sub;
    }
    return nullptr;
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (!sub->get_name().empty()) names.push_back(sub->get_name());
    }
    return names;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

// `unknown command "lsit" (did you mean list?); the commands are: ...`; `where` is "command" or
// "<level> command".
std::string unknown_word_message(const std::string& where, const std::string& word,
                                 const std::vector<std::string>& names) {
    return "unknown " + where + " \"" + word + "\"" + base::did_you_mean(word, names) + "; the " +
           where + "s are: " + joined(names);
}

}  // namespace

std::optional<std::string> unknown_command_message(const CLI::App& app, int argc,
                                                   const char* const* argv) {
    const CLI::App* level = &app;
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (word == "--") return std::nullopt;
        if (word.size() > 1 && word.front() == '-') {
            const CLI::Option* option = option_of(level, word);
            // A value follows unless it was joined with '=' or the option is a flag.
            if (option != nullptr && word.find('=') == std::string::npos &&
                option->get_items_expected_max() > 0)
                ++i;
            continue;
        }
        if (const CLI::App* sub = subcommand_of(*level, word); sub != nullptr) {
            level = sub;
            continue;
        }
        const auto names = subcommand_names(*level);
        // A level without subcommands takes positional words (a worker's service name, an id).
        if (names.empty()) return std::nullopt;
        return unknown_word_message(level == &app ? "command" : level->get_name() + " command",
                                    word, names);
    }
    return std::nullopt;
}

}  // namespace glassbox::cli
