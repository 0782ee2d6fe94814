// Home resolution (--home, $GLASSBOX_HOME, $HOME/.glassbox) and <home>/run/endpoints.json.
#include "cli/home.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "base/owner_only.hpp"
#include "cli/settings.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;
using base::Result;

}  // namespace

std::filesystem::path resolve_home(std::string_view cli_home) {
    if (!cli_home.empty()) return std::filesystem::path(std::string(cli_home));
    const std::string env_name(kHomeEnvVar);
    if (const char* env = std::getenv(env_name.c_str()); env != nullptr && *env != '\0') {
        return std::filesystem::path(env);
    }
    if (const char* user_home = std::getenv("HOME"); user_home != nullptr && *user_home != '\0') {
        return std::filesystem::path(user_home) / ".glassbox";
    }
    return std::filesystem::path(".glassbox");
}

Result<void> save_endpoints_state(const std::filesystem::path& home, const BoundEndpoints& bound,
                                  const StateSettings& more) {
    if (auto made = base::ensure_home_folder(home); !made) return made;
    if (auto made = base::ensure_owner_only_folder(home / "run"); !made) return made;
    nlohmann::json state{{"broker.endpoint", bound.broker},
                         {"broker.pub_endpoint", bound.pub},
                         {"pid", static_cast<long>(::getpid())}};
    for (const auto& [key, text] : more) state[key] = text;
    // Owner-only (0600), through a sibling and a rename: a reader never sees half a file.
    return base::write_owner_only_file(endpoints_state_path(home), state.dump(2) + "\n");
}

bool write_endpoints_state(const std::filesystem::path& home, const BoundEndpoints& bound,
                           const StateSettings& more) {
    auto saved = save_endpoints_state(home, bound, more);
    if (!saved) {
        base::component_logger("up")->warn("event=endpoints_state_not_written error=\"{}\"",
                                           saved.error().describe());
    }
    return saved.ok();
}

Result<config::Layer> load_endpoints_state(const std::filesystem::path& home) {
    const auto path = endpoints_state_path(home);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return config::Layer{};
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(ErrorType::kInvalidRequest, path.string() + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    const auto object = nlohmann::json::parse(text.str(), nullptr, false);
    if (!object.is_object()) {
        return make_error(
            ErrorType::kInvalidRequest,
            path.string() + ": not a JSON object (runtime state `glassbox up` writes; delete it)");
    }
    config::Layer layer;
    for (const auto& [key, value] : object.items()) {
        const config::Setting* setting = settings_registry().find(key);
        if (setting == nullptr) continue;
        if (!value.is_string()) {
            return make_error(ErrorType::kInvalidRequest,
                              path.string() + ": " + key + ": expected a string");
        }
        auto parsed = setting->parse_text(value.get<std::string>());
        if (!parsed)
            return make_error(ErrorType::kInvalidRequest,
                              path.string() + ": " + parsed.error().message);
        layer.set(key, std::move(parsed).value(),
                  config::Origin{config::Source::kState, path.string()});
    }
    return layer;
}

}  // namespace glassbox::cli
