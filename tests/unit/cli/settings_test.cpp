// glassbox's settings: the table agrees with each component's defaults and with
// docs/configuration.md; a home's state, file, environment and flags resolve in order; bad input
// is a "config error" with exit 2.
#include "cli/settings.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "base/log.hpp"
#include "broker/broker_config.hpp"
#include "cli/home.hpp"
#include "gateway/gateway_config.hpp"
#include "schema/explain_builder.hpp"
#include "tests/unit/cli/settings_home.hpp"
#include "workers/agent/agent_config.hpp"
#include "workers/embeddings/embeddings_config.hpp"
#include "workers/llm/llm_config.hpp"
#include "workers/query/query_config.hpp"
#include "workers/rag/rag_config.hpp"
#include "workers/runtime/worker_config.hpp"
#include "workers/trace_collector/collector.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::cli {
namespace {

namespace fs = std::filesystem;

using cli::testing::env_of;

using SettingsTest = cli::testing::SettingsHome;

std::int64_t ms(std::chrono::milliseconds d) { return d.count(); }

TEST(SettingsTableTest, DefaultsAreTheComponentsOwn) {
    const auto& r = settings_registry();
    const auto integer = [&r](const char* key) {
        return std::get<std::int64_t>(r.find(key)->fallback);
    };
    const auto text = [&r](const char* key) {
        return std::get<std::string>(r.find(key)->fallback);
    };
    const auto number = [&r](const char* key) { return std::get<double>(r.find(key)->fallback); };

    const broker::BrokerConfig b;
    EXPECT_EQ(text("broker.endpoint"), b.endpoint);
    EXPECT_EQ(text("broker.pub_endpoint"), b.pub_endpoint);
    EXPECT_EQ(integer("broker.heartbeat_ms"), ms(b.heartbeat));
    EXPECT_EQ(integer("broker.liveness"), b.liveness);
    EXPECT_EQ(integer("broker.max_retries"), b.max_retries);
    EXPECT_EQ(integer("broker.default_deadline_ms"), ms(b.default_deadline));
    EXPECT_EQ(integer("broker.max_deadline_ms"), ms(b.max_deadline));
    EXPECT_EQ(integer("broker.unknown_service_wait_ms"), ms(b.unknown_service_wait));
    EXPECT_EQ(integer("broker.restart_grace_ms"), ms(b.restart_grace));
    EXPECT_EQ(integer("broker.max_queue"), static_cast<std::int64_t>(b.max_queue));
    EXPECT_EQ(text("broker.overflow"), broker::to_string(b.overflow));
    EXPECT_EQ(integer("broker.max_message_bytes"), static_cast<std::int64_t>(b.max_message_bytes));
    EXPECT_EQ(integer("broker.max_subscription_bytes"),
              static_cast<std::int64_t>(b.max_subscription_bytes));
    EXPECT_EQ(integer("broker.max_subscriptions_per_subscriber"),
              static_cast<std::int64_t>(b.max_subscriptions_per_subscriber));
    EXPECT_EQ(integer("broker.max_subscribed_bytes_per_subscriber"),
              static_cast<std::int64_t>(b.max_subscribed_bytes_per_subscriber));
    EXPECT_EQ(integer("broker.max_subscriptions"), static_cast<std::int64_t>(b.max_subscriptions));
    EXPECT_EQ(integer("broker.max_subscribed_bytes"),
              static_cast<std::int64_t>(b.max_subscribed_bytes));
    EXPECT_EQ(integer("broker.max_subscriber_inbound_bytes"),
              static_cast<std::int64_t>(b.max_subscriber_inbound_bytes));
    EXPECT_EQ(integer("broker.spool_max_messages"),
              static_cast<std::int64_t>(b.spool_max_messages));
    EXPECT_EQ(integer("broker.spool_max_bytes"), static_cast<std::int64_t>(b.spool_max_bytes));
    EXPECT_EQ(text("broker.spool_policy"), broker::to_string(b.spool_policy));
    EXPECT_EQ(integer("broker.delivery_interval_ms"), ms(b.delivery_interval));

    const runtime::WorkerConfig w;
    EXPECT_EQ(integer("broker.heartbeat_ms"), ms(w.heartbeat));
    EXPECT_EQ(integer("broker.liveness"), w.liveness);
    EXPECT_EQ(integer("worker.drain_timeout_ms"), ms(w.drain_timeout));

    EXPECT_EQ(integer("collector.window"),
              static_cast<std::int64_t>(trace::CollectorConfig{}.window));
    EXPECT_EQ(integer("collector.incomplete_after_s"),
              trace::StoreConfig{}.incomplete_after.count());

    const gateway::GatewayConfig g;
    EXPECT_EQ(integer("gateway.threads"), static_cast<std::int64_t>(g.threads));
    EXPECT_EQ(integer("gateway.max_streams"), static_cast<std::int64_t>(g.max_streams));
    EXPECT_EQ(integer("gateway.max_body_bytes"), static_cast<std::int64_t>(g.max_body_bytes));
    EXPECT_EQ(integer("gateway.max_upload_bytes"), static_cast<std::int64_t>(g.max_upload_bytes));
    EXPECT_DOUBLE_EQ(number("gateway.rate_limit"), g.rate_limit);
    EXPECT_DOUBLE_EQ(number("gateway.rate_burst"), g.rate_burst);
    EXPECT_EQ(integer("gateway.call_timeout_ms"), ms(g.call_timeout));
    EXPECT_EQ(integer("gateway.query_timeout_ms"), ms(g.query_timeout));
    EXPECT_EQ(integer("gateway.read_timeout_ms"), ms(g.read_timeout));
    EXPECT_EQ(integer("gateway.write_timeout_ms"), ms(g.write_timeout));
    EXPECT_EQ(integer("gateway.header_timeout_ms"), ms(g.header_timeout));
    EXPECT_EQ(integer("gateway.body_timeout_ms"), ms(g.body_timeout));
    EXPECT_EQ(integer("gateway.body_min_rate"), static_cast<std::int64_t>(g.body_min_rate));
    EXPECT_EQ(integer("gateway.max_connections"), static_cast<std::int64_t>(g.max_connections));
    EXPECT_EQ(integer("gateway.max_connections_per_client"),
              static_cast<std::int64_t>(g.max_connections_per_client));
    EXPECT_EQ(integer("gateway.max_queued_requests"),
              static_cast<std::int64_t>(g.max_queued_requests));
    EXPECT_EQ(integer("gateway.max_buffered_bytes"),
              static_cast<std::int64_t>(g.max_buffered_bytes));
    EXPECT_EQ(integer("gateway.max_head_bytes"), static_cast<std::int64_t>(g.max_head_bytes));
    EXPECT_EQ(integer("gateway.max_header_fields"), static_cast<std::int64_t>(g.max_header_fields));
    EXPECT_EQ(integer("gateway.mcp_session_idle_ms"), ms(g.mcp.session_idle));
    EXPECT_EQ(integer("gateway.mcp_max_sessions"), static_cast<std::int64_t>(g.mcp.max_sessions));
    EXPECT_EQ(integer("gateway.mcp_max_sessions_per_client"),
              static_cast<std::int64_t>(g.mcp.max_sessions_per_client));

    const llm::LlmConfig l;
    EXPECT_EQ(text("llm.base_url"), l.base_url);
    EXPECT_EQ(text("llm.model"), l.model);
    EXPECT_EQ(text("llm.api_key_env"), l.api_key_env);
    EXPECT_EQ(integer("llm.timeout_ms"), ms(l.timeout));
    EXPECT_EQ(integer("llm.connect_timeout_ms"), ms(l.connect_timeout));
    EXPECT_EQ(integer("llm.max_retries"), l.max_retries);
    EXPECT_DOUBLE_EQ(number("llm.temperature"), l.temperature);

    const embeddings::EmbeddingsConfig e;
    EXPECT_EQ(text("embeddings.provider"), embeddings::to_string(e.provider));
    EXPECT_EQ(integer("embeddings.dim"), e.dim);
    EXPECT_EQ(text("embeddings.base_url"), e.base_url);
    EXPECT_EQ(text("embeddings.model"), e.model);
    EXPECT_EQ(integer("embeddings.batch_size"), static_cast<std::int64_t>(e.batch_size));
    EXPECT_EQ(integer("embeddings.timeout_ms"), ms(e.timeout));
    EXPECT_EQ(integer("embeddings.max_retries"), e.max_retries);
    EXPECT_EQ(integer("embeddings.max_texts"), static_cast<std::int64_t>(e.limits.max_texts));
    EXPECT_EQ(integer("embeddings.max_text_bytes"),
              static_cast<std::int64_t>(e.limits.max_text_bytes));

    const rag::RagConfig g_rag;
    EXPECT_EQ(integer("graph_rag.entity_limit"), g_rag.entity_limit);
    EXPECT_EQ(integer("graph_rag.triple_limit"), g_rag.triple_limit);
    EXPECT_EQ(integer("graph_rag.max_subgraph_size"), g_rag.subgraph_size);
    EXPECT_EQ(integer("graph_rag.max_path_length"), g_rag.path_length);
    EXPECT_EQ(integer("graph_rag.edge_score_limit"), g_rag.edge_score_limit);
    EXPECT_EQ(integer("graph_rag.edge_limit"), g_rag.edge_limit);
    EXPECT_EQ(integer("graph_rag.explored_edges_recorded"), g_rag.explored_edges_recorded);
    EXPECT_EQ(r.find("graph_rag.explored_edges_recorded")->max,
              static_cast<std::int64_t>(schema::explain::kMaxExploredEdges));
    EXPECT_EQ(integer("document_rag.doc_limit"), g_rag.doc_limit);
    EXPECT_EQ(integer("document_rag.fetch_limit"), g_rag.fetch_limit);
    EXPECT_EQ(r.find("graph_rag.entity_limit")->max, g_rag.max_entity_limit)
        << "the worker's bound";
    EXPECT_EQ(r.find("graph_rag.max_path_length")->max, g_rag.max_path_length);
    EXPECT_EQ(r.find("document_rag.doc_limit")->max, g_rag.max_doc_limit);
    EXPECT_EQ(integer("rag.call_timeout_ms"), ms(g_rag.call_timeout));

    EXPECT_EQ(integer("agent.max_iterations"), agent::AgentConfig{}.max_iterations);
    const query::QueryConfig q;
    EXPECT_EQ(text("query.reflection"), q.reflection);
    EXPECT_DOUBLE_EQ(number("query.relevance_threshold"), q.relevance_threshold);
    EXPECT_DOUBLE_EQ(number("query.min_confidence"), q.min_confidence);
    EXPECT_DOUBLE_EQ(number("query.min_confidence"), number("rag.min_confidence"))
        << "the router abstains where the engines do";
    EXPECT_EQ(integer("query.max_escalations"), static_cast<std::int64_t>(q.max_escalations));
    EXPECT_EQ(integer("query.reflection_timeout_ms"), ms(q.reflection_timeout));
}

TEST(SettingsTableTest, TheReferenceDocumentListsExactlyTheTable) {
    std::ifstream in(std::string(GLASSBOX_SOURCE_DIR) + "/docs/configuration.md");
    ASSERT_TRUE(in) << "docs/configuration.md";
    std::stringstream doc;
    doc << in.rdbuf();
    const std::string table = settings_markdown_table(settings_registry());
    EXPECT_NE(doc.str().find(table), std::string::npos)
        << "docs/configuration.md is out of date: paste the output of `glassbox config show "
           "--defaults`:\n"
        << table;
    // ... and no row for a key the table does not have.
    std::set<std::string> documented;
    std::istringstream lines(doc.str());
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("| `", 0) == 0) documented.insert(line.substr(3, line.find('`', 3) - 3));
    }
    std::set<std::string> keys;
    for (const auto& setting : settings_registry().settings()) keys.insert(setting.key);
    EXPECT_EQ(documented, keys);
}

// Redaction (docs/security.md): the settings are checked by the parser every worker runs.
TEST(SettingsTableTest, RedactionSettingsAreCheckedByTheWorkersParser) {
    const auto* rules = setting_rule("redaction.rules");
    const auto* patterns = setting_rule("redaction.patterns");
    ASSERT_TRUE(rules != nullptr && rules->problem != nullptr);
    ASSERT_TRUE(patterns != nullptr && patterns->problem != nullptr);
    EXPECT_FALSE(rules->problem(R"(["email","card"])"));
    EXPECT_FALSE(rules->problem("email, iban"));
    const auto unknown = rules->problem(R"(["email","ssn"])");
    ASSERT_TRUE(unknown);
    EXPECT_NE(unknown->find("unknown rule \"ssn\""), std::string::npos) << *unknown;
    EXPECT_FALSE(
        patterns->problem(R"([{"name":"account","regex":"ACC-[0-9]{8}","scope":"answer"}])"));
    EXPECT_TRUE(patterns->problem(R"([{"name":"x","regex":"(["}])"));
    EXPECT_TRUE(patterns->problem(R"([{"name":"x","regex":"a","scope":"body"}])"));
}

TEST(SettingsTableTest, EveryKnownEnvironmentVariableStillWorks) {
    const auto& r = settings_registry();
    const std::map<std::string, std::string> expected = {
        {"GLASSBOX_BROKER", "broker.endpoint"},
        {"GLASSBOX_LLM_BASE_URL", "llm.base_url"},
        {"GLASSBOX_LLM_MODEL", "llm.model"},
        {"GLASSBOX_LLM_PROVIDER", "llm.provider"},
        {"GLASSBOX_LLM_CONFIG", "llm.config"},
        {"GLASSBOX_EMBEDDINGS_PROVIDER", "embeddings.provider"},
        {"GLASSBOX_EMBEDDINGS_BASE_URL", "embeddings.base_url"},
        {"GLASSBOX_EMBEDDINGS_MODEL", "embeddings.model"},
        {"GLASSBOX_EMBEDDINGS_CONFIG", "embeddings.config"},
        {"GLASSBOX_COLLECTION", "client.collection"},
        {"GLASSBOX_LOG_LEVEL", "log.level"},
    };
    for (const auto& [variable, key] : expected) {
        auto layer = config::read_env(
            r, env_of({{variable, key == "log.level"                          ? "debug"
                                  : key.find("provider") != std::string::npos ? "openai"
                                                                              : "x"}}));
        ASSERT_TRUE(layer) << variable << ": " << layer.error().message;
        ASSERT_EQ(layer->entries.size(), 1u) << variable;
        EXPECT_EQ(layer->entries[0].key, key) << variable;
    }
}

TEST_F(SettingsTest, StateFileEnvironmentAndFlagsResolveInOrder) {
    ASSERT_TRUE(save_endpoints_state(
        home, BoundEndpoints{"tcp://127.0.0.1:41000", "tcp://127.0.0.1:41001"}));
    write_config("[broker]\nheartbeat_ms = 400\nliveness = 5\n\n[llm]\nmodel = \"from-file\"\n");
    auto resolved = resolve_settings_for(home, {{"broker.liveness", "--liveness", "7"}},
                                         env_of({{"GLASSBOX_BROKER_HEARTBEAT_MS", "600"},
                                                 {"GLASSBOX_LLM_BASE_URL", "http://127.0.0.1:9"}}));
    ASSERT_TRUE(resolved) << resolved.error().message;
    const auto& s = *resolved;
    EXPECT_EQ(s.text("broker.endpoint"), "tcp://127.0.0.1:41000");
    EXPECT_EQ(s.origin("broker.endpoint").describe(),
              "state " + endpoints_state_path(home).string());
    EXPECT_EQ(s.text("broker.pub_endpoint"), "tcp://127.0.0.1:41001");
    EXPECT_EQ(s.integer("broker.heartbeat_ms"), 600);
    EXPECT_EQ(s.origin("broker.heartbeat_ms").describe(), "env GLASSBOX_BROKER_HEARTBEAT_MS");
    EXPECT_EQ(s.integer("broker.liveness"), 7);
    EXPECT_EQ(s.origin("broker.liveness").describe(), "flag --liveness");
    EXPECT_EQ(s.text("llm.model"), "from-file");
    EXPECT_EQ(s.origin("llm.model").describe(), config_file_path(home).string() + ":6");
    EXPECT_EQ(s.text("llm.base_url"), "http://127.0.0.1:9");
    EXPECT_EQ(s.text("log.format"), "human");

    write_config("[broker]\nendpoint = \"tcp://127.0.0.1:42000\"\n");
    auto file_wins = resolve_settings_for(home, {}, env_of({}));
    ASSERT_TRUE(file_wins);
    EXPECT_EQ(file_wins->text("broker.endpoint"), "tcp://127.0.0.1:42000")
        << "the file beats what up bound";
}

TEST_F(SettingsTest, ErrorsNameTheFileLineVariableOrFlag) {
    write_config("[broker]\nheartbeat_ms = \"fast\"\n");
    auto bad_file = resolve_settings_for(home, {}, env_of({}));
    ASSERT_FALSE(bad_file);
    EXPECT_EQ(bad_file.error().message,
              config_file_path(home).string() +
                  ":2: broker.heartbeat_ms: expected an integer from 10 to 3600000, got \"fast\"");
    write_config("");
    auto bad_env = resolve_settings_for(home, {}, env_of({{"GLASSBOX_LOG_FORMAT", "xml"}}));
    ASSERT_FALSE(bad_env);
    EXPECT_EQ(
        bad_env.error().message,
        "env GLASSBOX_LOG_FORMAT: log.format: expected one of \"human\", \"json\", got \"xml\"");
    auto bad_flag = resolve_settings_for(home, {{"up.threads", "--threads", "0"}}, env_of({}));
    ASSERT_FALSE(bad_flag);
    EXPECT_EQ(bad_flag.error().message,
              "flag --threads: up.threads: expected an integer from 1 to 256, got 0");
    std::ofstream(endpoints_state_path(home)) << "[1]";
    auto bad_state = resolve_settings_for(home, {}, env_of({}));
    ASSERT_FALSE(bad_state);
    EXPECT_NE(bad_state.error().message.find(endpoints_state_path(home).string()),
              std::string::npos);
}

TEST_F(SettingsTest, FlagsBoundOnACommandLineReachTheConfiguration) {
    CLI::App app;
    add_setting_option(app, "log.level", "--log-level");
    auto* command = app.add_subcommand("broker");
    std::string home_flag;
    command->add_option("--home", home_flag);
    add_setting_option(*command, "broker.endpoint", "--bind");
    add_setting_option(*command, "broker.heartbeat_ms", "--heartbeat-ms");
    add_setting_flag(*command, "up.gateway", "--no-gateway", false, "no gateway");
    write_config("[broker]\nheartbeat_ms = 300\n");
    app.parse(
        "--log-level warn broker --no-gateway --bind tcp://127.0.0.1:7 --home " + home.string(),
        false);
    resolve_settings(app);
    EXPECT_EQ(settings_home(), home);
    EXPECT_EQ(settings().text("broker.endpoint"), "tcp://127.0.0.1:7");
    EXPECT_EQ(settings().origin("broker.endpoint").describe(), "flag --bind");
    EXPECT_EQ(settings().integer("broker.heartbeat_ms"), 300) << "from the --home's file";
    EXPECT_FALSE(settings().boolean("up.gateway"));
    EXPECT_EQ(settings().text("log.level"), "warn");
    base::set_log_level("info");
}

TEST_F(SettingsTest, AFlagTheTableDoesNotListIsAProgrammerError) {
    CLI::App app;
    EXPECT_THROW(add_setting_option(app, "broker.heartbeat_ms", "--heartbeat"), std::logic_error);
    EXPECT_THROW(add_setting_option(app, "no.such", "--x"), std::logic_error);
}

TEST_F(SettingsTest, ABadFileStopsWithConfigErrorAndExitTwo) {
    write_config("[broker]\nhartbeat_ms = 100\n");
    ::testing::internal::CaptureStderr();
    try {
        resolve_settings(home);
        FAIL() << "resolved a bad file";
    } catch (const CLI::RuntimeError& e) {
        EXPECT_EQ(e.get_exit_code(), 2);
    }
    EXPECT_EQ(::testing::internal::GetCapturedStderr(),
              "config error: " + config_file_path(home).string() +
                  ":2: unknown key broker.hartbeat_ms (did you mean broker.heartbeat_ms?)\n");
}

}  // namespace
}  // namespace glassbox::cli
