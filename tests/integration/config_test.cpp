// The configuration as a user meets it: `glassbox config show` in a real process (a home with a
// config.toml, runtime state, environment variables, a flag), bad settings stopping a command
// before it starts, PostgreSQL connection strings never printed with their passwords (config show,
// status, errors), and --log-format json lines that name each request and its trace session.
#include <signal.h>

#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ConfigTest : public ClusterTest {
protected:
    void SetUp() override {
        home = dir() / "home";
        fs::create_directories(home / "run");
        fs::permissions(home, fs::perms::owner_all, fs::perm_options::replace);
    }

    // `env VAR=value... glassbox <args>` to completion.
    CommandResult run_with_env(const std::vector<std::string>& env,
                               const std::vector<std::string>& args) {
        std::vector<std::string> argv{"/usr/bin/env"};
        argv.insert(argv.end(), env.begin(), env.end());
        argv.push_back(glassbox_binary());
        argv.insert(argv.end(), args.begin(), args.end());
        return run_command(argv, dir(), 20'000ms);
    }

    void write_config(const std::string& text) { std::ofstream(home / "config.toml") << text; }

    // `config show --json`'s entry for `key`.
    static nlohmann::json entry_of(const nlohmann::json& shown, const std::string& key) {
        for (const auto& entry : shown["settings"]) {
            if (entry["key"] == key) return entry;
        }
        ADD_FAILURE() << "config show has no " << key;
        return nlohmann::json::object();
    }

    // A command that must stop on its configuration: exit 2, nothing on stdout, one stderr line.
    static void expect_config_error(const CommandResult& r, const std::string& line) {
        EXPECT_FALSE(r.timed_out) << "the command started";
        EXPECT_TRUE(r.status.exited && r.status.code == 2) << r.status.describe() << "\n" << r.err;
        EXPECT_EQ(r.out, "");
        EXPECT_EQ(r.err, line + "\n");
    }

    fs::path home;
};

TEST_F(ConfigTest, ShowGivesEveryValueAndWhereItCameFrom) {
    write_config(
        "# a test home\n"
        "[broker]\n"
        "heartbeat_ms = 400\n"
        "\n"
        "[llm]\n"
        "model = \"file-model\"\n"
        "base_url = \"http://127.0.0.1:9\"\n");
    std::ofstream(home / "run" / "endpoints.json")
        << R"({"broker.pub_endpoint": "tcp://127.0.0.1:6001", "pid": 1})";
    const auto r =
        run_with_env({"GLASSBOX_LLM_MODEL=env-model", "GLASSBOX_BROKER=tcp://127.0.0.1:6000",
                      "GLASSBOX_GRAPH_RAG_ENTITY_LIMIT=12", "GLASSBOX_LOG_LEVEL=error"},
                     {"--log-level", "warn", "config", "show", "--json", "--home", home.string()});
    ASSERT_EQ(r.status.code, 0) << r.err;
    const auto shown = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(shown.is_object()) << r.out;
    EXPECT_EQ(shown["home"], home.string());
    EXPECT_EQ(shown["file"], (home / "config.toml").string());
    EXPECT_TRUE(shown["file_exists"]);
    std::set<std::string> keys;
    for (const auto& entry : shown["settings"]) keys.insert(entry["key"].get<std::string>());
    EXPECT_EQ(keys.size(), shown["settings"].size()) << "each key once";
    EXPECT_GT(keys.size(), 60u);

    const auto file = (home / "config.toml").string();
    auto e = entry_of(shown, "broker.heartbeat_ms");
    EXPECT_EQ(e["value"], 400);
    EXPECT_EQ(e["source"], "file");
    EXPECT_EQ(e["origin"], file + ":3");
    EXPECT_EQ(e["env"], "GLASSBOX_BROKER_HEARTBEAT_MS");
    e = entry_of(shown, "llm.model");
    EXPECT_EQ(e["value"], "env-model") << "the environment beats the file";
    EXPECT_EQ(e["origin"], "env GLASSBOX_LLM_MODEL");
    e = entry_of(shown, "llm.base_url");
    EXPECT_EQ(e["value"], "http://127.0.0.1:9");
    EXPECT_EQ(e["origin"], file + ":7");
    e = entry_of(shown, "broker.endpoint");
    EXPECT_EQ(e["value"], "tcp://127.0.0.1:6000");
    EXPECT_EQ(e["origin"], "env GLASSBOX_BROKER") << "the older variable still works";
    e = entry_of(shown, "broker.pub_endpoint");
    EXPECT_EQ(e["value"], "tcp://127.0.0.1:6001");
    EXPECT_EQ(e["source"], "state");
    EXPECT_EQ(e["origin"], "state " + (home / "run" / "endpoints.json").string());
    e = entry_of(shown, "graph_rag.entity_limit");
    EXPECT_EQ(e["value"], 12);
    EXPECT_EQ(e["source"], "env");
    e = entry_of(shown, "log.level");
    EXPECT_EQ(e["value"], "warn") << "a flag beats the environment";
    EXPECT_EQ(e["origin"], "flag --log-level");
    e = entry_of(shown, "broker.liveness");
    EXPECT_EQ(e["value"], 3);
    EXPECT_EQ(e["origin"], "default");

    // The table for people: one line per setting, its value and source.
    const auto table = run_with_env({}, {"config", "show", "--home", home.string()});
    ASSERT_EQ(table.status.code, 0) << table.err;
    bool found = false;
    std::istringstream lines(table.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("broker.heartbeat_ms ", 0) != 0) continue;
        found = true;
        EXPECT_NE(line.find(" 400 "), std::string::npos) << line;
        EXPECT_NE(line.find(file + ":3"), std::string::npos) << line;
    }
    EXPECT_TRUE(found) << table.out;

    const auto path = run_with_env({}, {"config", "path", "--home", home.string()});
    EXPECT_TRUE(path.status.exited && path.status.code == 0) << path.status.describe() << "\n"
                                                             << path.err;
    EXPECT_EQ(path.out, file + "\n");
}

TEST_F(ConfigTest, ABadSettingStopsTheCommandBeforeItStarts) {
    const auto file = (home / "config.toml").string();
    write_config("[broker]\nhartbeat_ms = 100\n");
    expect_config_error(
        run_with_env({}, {"config", "show", "--home", home.string()}),
        "config error: " + file +
            ":2: unknown key broker.hartbeat_ms (did you mean broker.heartbeat_ms?)");
    // The broker neither binds nor writes its ready file.
    const auto ready = dir() / "broker.ready";
    expect_config_error(
        run_with_env({}, {"broker", "--home", home.string(), "--bind", "tcp://127.0.0.1:*", "--pub",
                          "tcp://127.0.0.1:*", "--ready-file", ready.string()}),
        "config error: " + file +
            ":2: unknown key broker.hartbeat_ms (did you mean broker.heartbeat_ms?)");
    EXPECT_FALSE(fs::exists(ready));

    write_config("[broker]\n\nheartbeat_ms = \"fast\"\n");
    expect_config_error(
        run_with_env({}, {"worker", "echo", "--home", home.string()}),
        "config error: " + file +
            ":3: broker.heartbeat_ms: expected an integer from 10 to 3600000, got \"fast\"");

    write_config("[broker]\nheartbeat_ms = 500\n");
    expect_config_error(
        run_with_env({"GLASSBOX_BROKER_OVERFLOW=sometimes"},
                     {"config", "show", "--home", home.string()}),
        "config error: env GLASSBOX_BROKER_OVERFLOW: broker.overflow: expected one of \"reject\", "
        "\"drop-oldest\", got \"sometimes\"");
    expect_config_error(
        run_with_env({}, {"worker", "echo", "--home", home.string(), "--heartbeat-ms", "fast"}),
        "config error: flag --heartbeat-ms: broker.heartbeat_ms: expected an integer from 10 to "
        "3600000, "
        "got \"fast\"");
}

// A password of a DSN appears nowhere a command prints: the table, the JSON, stderr.
constexpr const char* kDsnPassword = "pg-s3cret-Pw";

TEST_F(ConfigTest, ShowMasksTheStorageConnectionStrings) {
    write_config(
        "[storage]\n"
        "backend = \"postgres\"\n"
        "postgres_read_dsn = \"host=replica1 dbname=gb user=reader password='" +
        std::string(kDsnPassword) + " two'\"\n");
    const std::string pg_dsn = "postgresql://gb:" + std::string(kDsnPassword) + "@db1:5433/gb";
    const auto r = run_with_env({"GLASSBOX_PG_DSN=" + pg_dsn},
                                {"config", "show", "--json", "--home", home.string()});
    ASSERT_EQ(r.status.code, 0) << r.err;
    EXPECT_EQ(r.out.find(kDsnPassword), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
    const auto shown = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(shown.is_object()) << r.out;
    EXPECT_EQ(shown["problems"], nlohmann::json::array());
    auto e = entry_of(shown, "storage.postgres_dsn");
    EXPECT_EQ(e["value"], "user=gb password=*** dbname=gb host=db1 port=5433");
    EXPECT_EQ(e["origin"], "env GLASSBOX_PG_DSN");
    EXPECT_EQ(e["env"], "GLASSBOX_STORAGE_POSTGRES_DSN");
    EXPECT_EQ(e["secret"], true);
    e = entry_of(shown, "storage.postgres_read_dsn");
    EXPECT_EQ(e["value"], "user=reader password=*** dbname=gb host=replica1");
    EXPECT_EQ(e["origin"], (home / "config.toml").string() + ":3");
    e = entry_of(shown, "storage.backend");
    EXPECT_EQ(e["value"], "postgres");
    EXPECT_EQ(e["secret"], false);

    // The setting's own variable beats GLASSBOX_PG_DSN; the table shows it masked too.
    const auto table = run_with_env(
        {"GLASSBOX_PG_DSN=" + pg_dsn,
         "GLASSBOX_STORAGE_POSTGRES_DSN=host=db2 password=" + std::string(kDsnPassword)},
        {"config", "show", "--home", home.string()});
    ASSERT_EQ(table.status.code, 0) << table.err;
    EXPECT_EQ(table.out.find(kDsnPassword), std::string::npos) << table.out;
    bool found = false;
    std::istringstream lines(table.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("storage.postgres_dsn ", 0) != 0) continue;
        found = true;
        EXPECT_NE(line.find("\"password=*** host=db2\""), std::string::npos) << line;
        EXPECT_NE(line.find("env GLASSBOX_STORAGE_POSTGRES_DSN"), std::string::npos) << line;
    }
    EXPECT_TRUE(found) << table.out;
}

TEST_F(ConfigTest, ABadStorageConfigurationIsReportedWithoutItsPassword) {
    const auto file = (home / "config.toml").string();
    write_config("[storage]\nbackend = \"postgres\"\n");
    // Postgres without a DSN: the values are shown, then the problem, exit 2.
    const auto no_dsn = run_with_env({}, {"config", "show", "--home", home.string()});
    EXPECT_TRUE(no_dsn.status.exited && no_dsn.status.code == 2) << no_dsn.status.describe();
    EXPECT_NE(no_dsn.out.find("storage.backend "), std::string::npos) << no_dsn.out;
    EXPECT_EQ(no_dsn.err,
              "config error: storage.backend is \"postgres\" (" + file +
                  ":2) but storage.postgres_dsn is empty: set it in the [storage] table of the "
                  "config file, or in GLASSBOX_STORAGE_POSTGRES_DSN or GLASSBOX_PG_DSN\n");
    const auto no_dsn_json =
        run_with_env({}, {"config", "show", "--json", "--home", home.string()});
    EXPECT_EQ(no_dsn_json.status.code, 2);
    const auto shown = nlohmann::json::parse(no_dsn_json.out, nullptr, false);
    ASSERT_TRUE(shown.is_object()) << no_dsn_json.out;
    ASSERT_EQ(shown["problems"].size(), 1u) << shown["problems"];
    EXPECT_NE(shown["problems"][0].get<std::string>().find("storage.postgres_dsn is empty"),
              std::string::npos);

    // A DSN libpq cannot read stops every command, naming the variable, not the value.
    const std::string unreadable = "host=db1 password " + std::string(kDsnPassword);
    expect_config_error(
        run_with_env({"GLASSBOX_PG_DSN=" + unreadable},
                     {"config", "show", "--home", home.string()}),
        "config error: env GLASSBOX_PG_DSN: storage.postgres_dsn: libpq cannot read it as a "
        "connection string (key=value pairs such as \"host=db1 dbname=glassbox\", or a "
        "postgresql:// URI); not shown, as it may hold a password");
    expect_config_error(
        run_with_env({"GLASSBOX_STORAGE_BACKEND=mysql"},
                     {"config", "show", "--home", home.string()}),
        "config error: env GLASSBOX_STORAGE_BACKEND: storage.backend: expected one of \"sqlite\", "
        "\"postgres\", got \"mysql\"");
}

TEST_F(ConfigTest, StatusShowsTheStorageBackendAndItsServerWithoutThePassword) {
    const auto broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    const std::vector<std::string> postgres{
        "GLASSBOX_STORAGE_BACKEND=postgres",
        "GLASSBOX_PG_DSN=host=db1 port=5433 dbname=gb password=" + std::string(kDsnPassword),
        "GLASSBOX_STORAGE_POSTGRES_READ_DSN=postgresql://reader:" + std::string(kDsnPassword) +
            "@replica1/gb"};
    const auto as_json = run_with_env(
        postgres, {"status", "--broker", broker.endpoint, "--home", home.string(), "--json"});
    ASSERT_EQ(as_json.status.code, 0) << as_json.err;
    EXPECT_EQ(as_json.out.find(kDsnPassword), std::string::npos) << as_json.out;
    const auto status = nlohmann::json::parse(as_json.out, nullptr, false);
    ASSERT_TRUE(status.is_object()) << as_json.out;
    EXPECT_EQ(status["storage"],
              (nlohmann::json{{"backend", "postgres"},
                              {"server", "db1:5433"},
                              {"dsn", "password=*** dbname=gb host=db1 port=5433"},
                              {"read_server", "replica1:5432"},
                              {"read_dsn", "user=reader password=*** dbname=gb host=replica1"}}));

    const auto table =
        run_with_env(postgres, {"status", "--broker", broker.endpoint, "--home", home.string()});
    ASSERT_EQ(table.status.code, 0) << table.err;
    EXPECT_EQ(table.out.find(kDsnPassword), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("\nstorage  postgres at db1:5433, dsn \"password=*** dbname=gb "
                             "host=db1 port=5433\"\n         reads at replica1:5432, dsn "
                             "\"user=reader password=*** dbname=gb host=replica1\"\n"),
              std::string::npos)
        << table.out;

    const auto sqlite =
        run_with_env({}, {"status", "--broker", broker.endpoint, "--home", home.string()});
    ASSERT_EQ(sqlite.status.code, 0) << sqlite.err;
    EXPECT_NE(sqlite.out.find("\nstorage  sqlite, files in " + home.string() + "\n"),
              std::string::npos)
        << sqlite.out;
    // Postgres without a DSN: status still answers, and says what is wrong.
    const auto no_dsn =
        run_with_env({"GLASSBOX_STORAGE_BACKEND=postgres"},
                     {"status", "--broker", broker.endpoint, "--home", home.string()});
    ASSERT_EQ(no_dsn.status.code, 0) << no_dsn.err;
    EXPECT_NE(no_dsn.out.find("\nstorage  postgres: CONFIG ERROR: storage.backend is \"postgres\""),
              std::string::npos)
        << no_dsn.out;
}

TEST_F(ConfigTest, JsonLogLinesNameEachRequestAndItsSession) {
    const auto broker = start_broker(BrokerOptions{.extra = {"--log-format", "json"}});
    ASSERT_FALSE(broker.endpoint.empty());
    // --log-format and --log-level after the subcommand too.
    auto& worker = start_process(
        "echo-json", {glassbox_binary(), "worker", "echo", "--broker", broker.endpoint,
                      "--heartbeat-ms", std::to_string(kHeartbeatMs), "--home", home.string(),
                      "--log-format", "json", "--log-level", "debug"});
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));

    GbcClient client(context_, broker.endpoint);
    const auto session_of = [](const std::vector<GbcMessage>& messages) {
        for (const auto& m : messages) {
            if (m.is_partial("explain")) return m.json().value("session", std::string());
        }
        return std::string();
    };
    // One request served whole.
    const std::string served =
        client.request("echo", echo_body("logged", 2), 10'000, "json-log-served");
    const auto served_messages = client.collect(served, 15'000ms);
    ASSERT_FALSE(served_messages.empty());
    ASSERT_TRUE(served_messages.back().is_final()) << served_messages.back().describe();
    const std::string served_session = session_of(served_messages);
    ASSERT_FALSE(served_session.empty());
    // One the broker ends at its deadline while the worker holds it.
    const std::string late =
        client.request("echo", echo_body("too slow", 1, 3'000), 700, "json-log-late");
    const auto late_messages = client.collect(late, 15'000ms);
    ASSERT_FALSE(late_messages.empty());
    ASSERT_TRUE(late_messages.back().is_error()) << late_messages.back().describe();
    EXPECT_EQ(late_messages.back().error_type, "DeadlineExceeded");
    const std::string late_session = session_of(late_messages);
    ASSERT_FALSE(late_session.empty());
    expect_echo_served(broker.endpoint);

    worker.terminate();
    broker.process->terminate();
    const auto check = [this](const ChildProcess& process, const std::vector<std::string>& pairs) {
        std::vector<std::string> argv{"/usr/bin/python3", GLASSBOX_CHECK_JSON_LOG,
                                      process.stderr_path().string()};
        argv.insert(argv.end(), pairs.begin(), pairs.end());
        const auto checked = run_command(argv, dir(), 20'000ms);
        EXPECT_EQ(checked.status.code, 0) << checked.out << checked.err << "\n"
                                          << read_file(process.stderr_path());
        return checked.out;
    };
    // The worker: every line of both requests, on the handler's thread and the I/O thread.
    const auto worker_report =
        check(worker, {served + "=" + served_session, late + "=" + late_session});
    EXPECT_NE(worker_report.find("request " + served + ": "), std::string::npos) << worker_report;
    EXPECT_NE(worker_report.find("'request_end'"), std::string::npos) << worker_report;
    // No `cancel` line is required: the worker knows the deadline too, and may end the late
    // request on its own just before the broker's CANCEL comes (then CANCEL finds it idle). The
    // check above holds either way: every line of it names the request and its session.
    // The broker logs a request only when it fails: the late one.
    const auto broker_report = check(*broker.process, {late + "=" + late_session});
    EXPECT_NE(broker_report.find("'request_failed'"), std::string::npos) << broker_report;
}

}  // namespace
}  // namespace glassbox::integration
