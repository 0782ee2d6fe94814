// `glassbox up`: starts broker, workers and collector, restarts a crashed child, stops all on
// SIGTERM;
// `--role broker` and `--role workers` (docs/deployment.md) on one machine make one pipeline.
#include <signal.h>

#include <cerrno>
#include <regex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

using namespace std::chrono_literals;

// Pids of every "event=started child=<name> pid=N" line the supervisor logged, in order.
std::vector<pid_t> started_pids(const std::string& log, const std::string& name) {
    std::vector<pid_t> pids;
    const std::regex line("event=started child=" + name + " pid=([0-9]+)");
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator();
         ++it) {
        pids.push_back(static_cast<pid_t>(std::stol((*it)[1].str())));
    }
    return pids;
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

class FaultUpTest : public ClusterTest {};

TEST_F(FaultUpTest, RestartsACrashedWorkerAndStopsEverythingOnSigterm) {
    const auto home = dir() / "up-home";
    const auto ready_file = dir() / "up.ready";
    auto& up = start_up(home, ready_file);
    const auto ready = wait_for_ready_file(ready_file, up, 20'000ms);
    ASSERT_TRUE(ready) << up.stderr_text();
    const std::string endpoint = (*ready)["endpoint"].get<std::string>();
    use_curve_for(endpoint,
                  home_curve_keys(home.string()));  // up runs CURVE: its keys are in the home
    ASSERT_TRUE(wait_for_service(endpoint, "echo", 10'000ms, 2));
    ASSERT_TRUE(wait_for_service(endpoint, "trace", 10'000ms, 1));

    // Client commands find the broker through what up bound (<home>/run/endpoints.json), no
    // --broker.
    const auto via_home =
        run_glassbox({"call", "echo", echo_body("via home"), "--home", home.string()});
    EXPECT_EQ(via_home.status.code, 0) << via_home.err;

    const auto first = started_pids(up.stderr_text(), "echo");
    ASSERT_EQ(first.size(), 1u) << up.stderr_text();
    ASSERT_EQ(::kill(first[0], SIGKILL), 0);

    // The supervisor notices, waits its backoff (0.5 s) and starts a new echo worker.
    std::vector<pid_t> now;
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    while ((now = started_pids(up.stderr_text(), "echo")).size() < 2 &&
           std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(50ms);
    }
    ASSERT_EQ(now.size(), 2u) << up.stderr_text();
    EXPECT_NE(now[1], first[0]);
    EXPECT_NE(up.stderr_text().find("event=exited child=echo"), std::string::npos);
    EXPECT_TRUE(wait_for_workers(endpoint, "echo", 2, 10'000ms))
        << "dead workers expire, new ones register";
    expect_echo_served(endpoint, "served by the restarted worker");

    // SIGTERM: every child stopped (workers first, the broker last), exit 0.
    std::set<pid_t> children;
    for (const auto& name : {"broker", "echo", "trace-collector"}) {
        const auto pids = started_pids(up.stderr_text(), name);
        ASSERT_FALSE(pids.empty()) << name;
        children.insert(pids.back());
    }
    up.send_signal(SIGTERM);
    const auto status = up.wait_exit(20'000ms);
    ASSERT_TRUE(status) << "glassbox up did not stop";
    EXPECT_TRUE(status->exited && status->code == 0) << status->describe();
    for (const pid_t pid : children)
        EXPECT_FALSE(process_exists(pid)) << "child " << pid << " still runs";
    const std::string log = up.stderr_text();
    EXPECT_LT(log.find("event=stopped child=echo"), log.find("event=stopped child=broker"));
}

class UpRoleTest : public ClusterTest {
protected:
    // `glassbox up` with a home and a ready file of its own; the ready file's JSON (null if none
    // came).
    nlohmann::json start_up(const std::string& name, std::vector<std::string> args,
                            ChildProcess** process = nullptr) {
        const auto ready_file = dir() / (name + ".ready");
        std::vector<std::string> argv = {glassbox_binary(), "up",
                                         "--home",          (dir() / (name + "-home")).string(),
                                         "--heartbeat-ms",  std::to_string(kHeartbeatMs),
                                         "--threads",       "1",
                                         "--ready-file",    ready_file.string()};
        argv.insert(argv.end(), args.begin(), args.end());
        auto& up = start_process(name, argv);
        if (process != nullptr) *process = &up;
        const auto ready = wait_for_ready_file(ready_file, up, 20'000ms);
        if (!ready) {
            ADD_FAILURE() << name << " wrote no ready file: " << up.stderr_text();
            return nlohmann::json();
        }
        return *ready;
    }
};

TEST_F(UpRoleTest, AWorkersHostStartedBeforeItsBrokerJoinsItAndLeavesIt) {
    // A free port for the broker host: a broker started on `*` and stopped again.
    ChildProcess* first = nullptr;
    const auto probe = start_up("probe",
                                {"--role", "broker", "--bind", "tcp://127.0.0.1:*", "--pub",
                                 "tcp://127.0.0.1:*", "--services", "none", "--no-gateway"},
                                &first);
    ASSERT_TRUE(probe.is_object());
    const std::string endpoint = probe.value("endpoint", "");
    ASSERT_EQ(probe["services"], nlohmann::json::array());
    first->send_signal(SIGTERM);
    ASSERT_TRUE(first->wait_exit(20'000ms));

    // Keys as docs/deployment.md sets them up: the broker host's own set, a `worker` and a
    // `client` pair on the workers host, allowed on the broker host under names of their own, and
    // the broker's public key copied to the workers host.
    const auto broker_home = dir() / "broker-home";
    const auto workers_home = dir() / "workers-home";
    const auto keys = [&](std::vector<std::string> args) {
        const auto done = run_glassbox(std::move(args), 10'000ms);
        ASSERT_EQ(done.status.code, 0) << done.err;
    };
    keys({"keys", "init", "--home", broker_home.string()});
    keys({"keys", "new", "worker", "--role", "worker:*", "--role", "client", "--home",
          workers_home.string()});
    keys({"keys", "new", "client", "--role", "client", "--home", workers_home.string()});
    for (const char* name : {"worker", "client"}) {
        keys({"keys", "allow", (workers_home / "keys" / (std::string{name} + ".key")).string(),
              "--as", std::string{"workers-host-"} + name, "--home", broker_home.string()});
    }
    std::filesystem::copy_file(broker_home / "keys" / "broker.key",
                               workers_home / "keys" / "broker.key");
    use_curve_for(endpoint, home_curve_keys(broker_home.string()));

    // The workers host first: nothing answers on the endpoint yet.
    ChildProcess* workers = nullptr;
    // An engine (graph-rag) runs --engine-threads slots, a service (echo) --threads.
    const auto joined = start_up("workers",
                                 {"--role", "workers", "--broker", endpoint, "--services",
                                  "echo=2,graph-rag", "--engine-threads", "3"},
                                 &workers);
    ASSERT_TRUE(joined.is_object());
    EXPECT_EQ(joined.value("role", ""), "workers");
    EXPECT_EQ(joined.value("endpoint", ""), endpoint);
    EXPECT_EQ(joined["services"], nlohmann::json({"echo", "echo-2", "graph-rag"}));
    EXPECT_FALSE(joined.contains("pub_endpoint")) << joined.dump();
    EXPECT_FALSE(joined.contains("gateway"))
        << "the gateway runs with the broker: " << joined.dump();
    // They wait for the broker: still running now, and registering with it once it comes.
    ASSERT_TRUE(workers->running()) << workers->stderr_text();

    // The broker host, on that endpoint: the two echo processes register with it on their own.
    const auto broker = start_up("broker", {"--role", "broker", "--bind", endpoint, "--pub",
                                            "tcp://127.0.0.1:*", "--no-gateway"});
    ASSERT_TRUE(broker.is_object());
    EXPECT_EQ(broker.value("endpoint", ""), endpoint);
    EXPECT_EQ(broker["services"], nlohmann::json({"trace-collector"}));
    ASSERT_TRUE(wait_for_workers(endpoint, "echo", 2, 20'000ms));
    EXPECT_TRUE(wait_for_workers(endpoint, "graph-rag", 3, 20'000ms));
    EXPECT_TRUE(wait_for_workers(endpoint, "trace", 1, 10'000ms));
    expect_echo_served(endpoint, "answered on the workers host");
    EXPECT_NE(workers->stdout_text().find("glassbox is up (workers): broker " + endpoint),
              std::string::npos)
        << workers->stdout_text();
    EXPECT_NE(workers->stdout_text().find("echo x2"), std::string::npos) << workers->stdout_text();

    // Client commands on the workers host find the broker (and its keys) through their home.
    const auto status =
        run_glassbox({"status", "--json", "--home", (dir() / "workers-home").string()});
    ASSERT_EQ(status.status.code, 0) << status.err;
    const auto shown = nlohmann::json::parse(status.out, nullptr, false);
    ASSERT_TRUE(shown.is_object()) << status.out;
    EXPECT_EQ(shown["broker"].value("endpoint", ""), endpoint);

    // The workers host leaves: its workers say DISCONNECT, the broker counts none.
    workers->send_signal(SIGTERM);
    const auto stopped = workers->wait_exit(20'000ms);
    ASSERT_TRUE(stopped);
    EXPECT_TRUE(stopped->exited && stopped->code == 0) << stopped->describe();
    EXPECT_TRUE(wait_for_workers(endpoint, "echo", 0, 10'000ms));
    EXPECT_TRUE(wait_for_workers(endpoint, "graph-rag", 0, 10'000ms));
}

TEST_F(UpRoleTest, OptionsThatDoNotFitTheRoleAreRefused) {
    const std::string home = (dir() / "refused-home").string();
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--role", "workers", "--bind", "tcp://127.0.0.1:*"}, "--bind sets up this host's broker"},
        {{"--role", "workers", "--gateway-listen", "127.0.0.1:0"},
         "--gateway-listen sets up this host's broker"},
        {{"--role", "broker", "--broker", "tcp://127.0.0.1:5555"},
         "--broker names another host's broker"},
        {{"--broker", "tcp://127.0.0.1:5555"}, "--broker names another host's broker"},
        {{"--role", "workers", "--services", "none"}, "a workers host with no workers"},
        {{"--services", "graph-rag=3,graph-rag"}, "\"graph-rag\" is named twice"},
        {{"--services", "graph-rag,oracle"}, "unknown service \"oracle\""},
    };
    for (const auto& [args, message] : cases) {
        std::vector<std::string> argv = {"up", "--home", home};
        argv.insert(argv.end(), args.begin(), args.end());
        const auto result = run_glassbox(argv, 10'000ms);
        EXPECT_TRUE(result.status.exited && result.status.code == 2)
            << args[1] << ": " << result.status.describe();
        EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    }
    EXPECT_FALSE(std::filesystem::exists(home)) << "a refused command line starts nothing";
}

}  // namespace
}  // namespace glassbox::integration
