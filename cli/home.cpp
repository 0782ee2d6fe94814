// Home resolution (--home, $GLASSBOX_HOME, $HOME/.glassbox) and <home>/config.json.
#include "cli/home.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "base/owner_only.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;
using base::Result;

std::filesystem::path config_path(const std::filesystem::path& home) { return home / kHomeConfigFile; }

// Reads the file as a JSON object; a missing file is an empty object.
Result<nlohmann::json> read_config_object(const std::filesystem::path& home) {
    const auto path = config_path(home);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return nlohmann::json::object();
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error(ErrorType::kInternal, "cannot read " + path.string());
    std::ostringstream text;
    text << in.rdbuf();
    auto value = nlohmann::json::parse(text.str(), nullptr, false);
    if (value.is_discarded()) return make_error(ErrorType::kInvalidJson, path.string() + " is not valid JSON");
    if (!value.is_object()) return make_error(ErrorType::kDecodeError, path.string() + " is not a JSON object");
    return value;
}

Result<std::optional<std::string>> endpoint_field(const nlohmann::json& object, const char* key,
                                                  const std::filesystem::path& home) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::optional<std::string>{};
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
        return make_error(ErrorType::kDecodeError, config_path(home).string() + ": \"" + key +
                                                       "\" must be a non-empty string");
    }
    return std::optional<std::string>{it->get<std::string>()};
}

Result<std::string> resolve_endpoint(std::string_view cli_value, const std::filesystem::path& home,
                                     bool broker) {
    if (!cli_value.empty()) return std::string(cli_value);
    auto config = load_home_config(home);
    if (!config) return std::move(config).error();
    const auto& chosen = broker ? config->broker : config->pub;
    if (chosen) return *chosen;
    return std::string(broker ? kDefaultBrokerEndpoint : kDefaultPubEndpoint);
}

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

Result<HomeConfig> load_home_config(const std::filesystem::path& home) {
    auto object = read_config_object(home);
    if (!object) return std::move(object).error();
    HomeConfig config;
    auto broker = endpoint_field(*object, "broker", home);
    if (!broker) return std::move(broker).error();
    auto pub = endpoint_field(*object, "pub", home);
    if (!pub) return std::move(pub).error();
    config.broker = std::move(broker).value();
    config.pub = std::move(pub).value();
    return config;
}

Result<void> save_home_config(const std::filesystem::path& home, const HomeConfig& config) {
    auto object = read_config_object(home);
    if (!object) return std::move(object).error();
    if (config.broker) (*object)["broker"] = *config.broker;
    if (config.pub) (*object)["pub"] = *config.pub;
    if (auto made = base::ensure_home_folder(home); !made) return made;
    // Owner-only (0600), through a sibling and a rename: a reader never sees half a file.
    return base::write_owner_only_file(config_path(home), object->dump(2) + "\n");
}

bool write_home_config(const std::filesystem::path& home, const HomeConfig& config) {
    auto saved = save_home_config(home, config);
    if (!saved) {
        base::component_logger("client")->warn("event=home_config_not_written error=\"{}\"",
                                                 saved.error().describe());
    }
    return saved.ok();
}

Result<std::string> resolve_broker_endpoint(std::string_view cli_value, const std::filesystem::path& home) {
    return resolve_endpoint(cli_value, home, true);
}

Result<std::string> resolve_pub_endpoint(std::string_view cli_value, const std::filesystem::path& home) {
    return resolve_endpoint(cli_value, home, false);
}

}  // namespace glassbox::cli
