// The SPARQL engine the settings name (sparql.*, docs/sparql.md), as the client's configuration.
#pragma once

#include <optional>

#include "config/resolve.hpp"
#include "http/sparql_client.hpp"

namespace glassbox::cli {

// The engine `resolved` names: nullopt when sparql.endpoint is empty (no engine configured),
// else its query URL, graph store URL, user, password and query timeout (sparql.timeout_ms).
std::optional<http::SparqlConfig> sparql_config_from(const config::Resolved& resolved);

// The same for this process's settings (cli/settings.hpp).
std::optional<http::SparqlConfig> sparql_config_from_settings();

}  // namespace glassbox::cli
