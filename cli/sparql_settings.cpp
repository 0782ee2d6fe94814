// sparql.* settings -> http::SparqlConfig.
#include "cli/sparql_settings.hpp"

#include "cli/settings.hpp"

namespace glassbox::cli {

std::optional<http::SparqlConfig> sparql_config_from(const config::Resolved& resolved) {
    if (resolved.text("sparql.endpoint").empty()) return std::nullopt;
    http::SparqlConfig config;
    config.query_url = resolved.text("sparql.endpoint");
    config.graph_store_url = resolved.text("sparql.graph_store");
    config.user = resolved.text("sparql.user");
    config.password = resolved.text("sparql.password");
    config.timeout = std::chrono::milliseconds{resolved.integer("sparql.timeout_ms")};
    return config;
}

std::optional<http::SparqlConfig> sparql_config_from_settings() {
    return sparql_config_from(settings());
}

}  // namespace glassbox::cli
