// The glassbox home directory, and the runtime state `glassbox up` leaves in it: the endpoints
// the broker really bound (<home>/run/endpoints.json).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "config/resolve.hpp"

namespace glassbox::cli {

inline constexpr std::string_view kHomeEnvVar = "GLASSBOX_HOME";

// `cli_home` if not empty, else $GLASSBOX_HOME if set and not empty, else $HOME/.glassbox,
// else ./.glassbox (no HOME: a service account). The directory need not exist.
std::filesystem::path resolve_home(std::string_view cli_home);

// What a running broker bound (ports chosen with `*` resolved).
struct BoundEndpoints {
    std::string broker;  // broker.endpoint
    std::string pub;     // broker.pub_endpoint
};

// More settings `up` sets for the processes it starts, as key and text: the SPARQL engine it
// runs (sparql.endpoint, sparql.graph_store, sparql.user, sparql.password).
using StateSettings = std::vector<std::pair<std::string, std::string>>;

// Writes <home>/run/endpoints.json: {"broker.endpoint", "broker.pub_endpoint", the `more`
// settings, "pid"} (creating the home and run/ owner-only, replacing the file atomically, 0600).
// It is state, not configuration: the settings it names sit between their defaults and
// <home>/config.toml.
base::Result<void> save_endpoints_state(const std::filesystem::path& home,
                                        const BoundEndpoints& bound,
                                        const StateSettings& more = {});
// The same for callers that go on regardless (`glassbox up`): false, and a logged warning, on
// failure.
bool write_endpoints_state(const std::filesystem::path& home, const BoundEndpoints& bound,
                           const StateSettings& more = {});

// The settings in <home>/run/endpoints.json as a layer (origin "state <path>"); members that are
// not settings (pid) are ignored. A missing file is an empty layer; one that is not a JSON object
// of valid values is InvalidRequest naming the file.
base::Result<config::Layer> load_endpoints_state(const std::filesystem::path& home);

}  // namespace glassbox::cli
