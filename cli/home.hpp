// The glassbox home directory and its config file: where the CLI finds the broker by default.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace glassbox::cli {

inline constexpr std::string_view kDefaultBrokerEndpoint = "tcp://127.0.0.1:5555";
inline constexpr std::string_view kDefaultPubEndpoint = "tcp://127.0.0.1:5556";
inline constexpr std::string_view kHomeEnvVar = "GLASSBOX_HOME";
inline constexpr std::string_view kHomeConfigFile = "config.json";

// `cli_home` if not empty, else $GLASSBOX_HOME if set and not empty, else $HOME/.glassbox,
// else ./.glassbox (no HOME: a service account). The directory need not exist.
std::filesystem::path resolve_home(std::string_view cli_home);

// <home>/config.json: {"broker": "tcp://...", "pub": "tcp://..."}; other keys are ignored (other
// components keep their settings there too).
struct HomeConfig {
    std::optional<std::string> broker;  // the broker's request endpoint
    std::optional<std::string> pub;     // the broker's explain (XPUB) endpoint
};

// A missing file is an empty config. A file that is not JSON: InvalidJson; not an object, or
// "broker"/"pub" not non-empty strings: DecodeError. Unreadable: Internal.
base::Result<HomeConfig> load_home_config(const std::filesystem::path& home);

// Writes `config` into <home>/config.json (creating home owner-only, replacing the file
// atomically, 0600), keeping keys it does not know. The Result says why it could not (an
// existing home others can write is refused: base::ensure_home_folder).
base::Result<void> save_home_config(const std::filesystem::path& home, const HomeConfig& config);
// The same for callers that go on regardless (`glassbox up`): false, and a logged warning, on failure.
bool write_home_config(const std::filesystem::path& home, const HomeConfig& config);

// The endpoint to use: `cli_value` if not empty, else the home config's "broker", else
// tcp://127.0.0.1:5555. Fails only if the config file exists and is invalid.
base::Result<std::string> resolve_broker_endpoint(std::string_view cli_value,
                                                    const std::filesystem::path& home);
// Same rule for the explain endpoint ("pub", default tcp://127.0.0.1:5556).
base::Result<std::string> resolve_pub_endpoint(std::string_view cli_value,
                                                 const std::filesystem::path& home);

}  // namespace glassbox::cli
