// The sparql.* settings as the SPARQL client's configuration: none without an endpoint; from the
// runtime state `glassbox up` writes, below config.toml and the environment; the password masked.
#include "cli/sparql_settings.hpp"

#include <gtest/gtest.h>

#include "tests/unit/cli/settings_home.hpp"

namespace glassbox::cli {
namespace {

using testing::env_of;

class SparqlSettingsTest : public testing::SettingsHome {};

TEST_F(SparqlSettingsTest, NoEndpointMeansNoEngine) {
    write_config("[sparql]\nuser = \"u\"\n");
    auto resolved = resolve_settings_for(home, {}, env_of({}));
    ASSERT_TRUE(resolved) << resolved.error().message;
    EXPECT_FALSE(sparql_config_from(*resolved));
    EXPECT_EQ(resolved->text("sparql.engine"), "");
    EXPECT_EQ(resolved->integer("sparql.timeout_ms"), 30'000);
    EXPECT_EQ(resolved->integer("sparql.port"), 0);
    EXPECT_EQ(resolved->integer("sparql.mirror_interval_ms"), 1'000);
}

TEST_F(SparqlSettingsTest, TheStateUpWroteIsReadBelowTheFileAndTheEnvironment) {
    ASSERT_TRUE(
        save_endpoints_state(home, BoundEndpoints{"tcp://127.0.0.1:41000", "tcp://127.0.0.1:41001"},
                             {{"sparql.endpoint", "http://127.0.0.1:9001/sparql"},
                              {"sparql.graph_store", "http://127.0.0.1:9001/crud"},
                              {"sparql.user", "dba"},
                              {"sparql.password", "s3cret"}}));
    write_config("[sparql]\nengine = \"virtuoso\"\ntimeout_ms = 1500\n");
    auto resolved = resolve_settings_for(home, {}, env_of({{"GLASSBOX_SPARQL_USER", "other"}}));
    ASSERT_TRUE(resolved) << resolved.error().message;
    const auto config = sparql_config_from(*resolved);
    ASSERT_TRUE(config);
    EXPECT_EQ(config->query_url, "http://127.0.0.1:9001/sparql");
    EXPECT_EQ(config->graph_store_url, "http://127.0.0.1:9001/crud");
    EXPECT_EQ(config->user, "other") << "the environment beats the state";
    EXPECT_EQ(config->password, "s3cret");
    EXPECT_EQ(config->timeout, std::chrono::milliseconds{1'500});
    EXPECT_EQ(resolved->origin("sparql.endpoint").describe(),
              "state " + endpoints_state_path(home).string());

    const auto* password = settings_registry().find("sparql.password");
    ASSERT_NE(password, nullptr);
    EXPECT_TRUE(is_secret_setting("sparql.password"));
    EXPECT_EQ(shown_value(*password, resolved->value("sparql.password")), "\"***\"");
    EXPECT_EQ(shown_value(*password, password->fallback), "\"\"") << "nothing set stays visible";
}

TEST_F(SparqlSettingsTest, AnUnknownEngineIsAConfigError) {
    write_config("[sparql]\nengine = \"fuseki\"\n");
    auto resolved = resolve_settings_for(home, {}, env_of({}));
    ASSERT_FALSE(resolved);
    EXPECT_NE(resolved.error().message.find("sparql.engine"), std::string::npos)
        << resolved.error().message;
}

}  // namespace
}  // namespace glassbox::cli
