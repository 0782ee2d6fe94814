// `glassbox up`: starts broker, workers and collector, restarts a crashed child, stops all on SIGTERM.
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
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
        pids.push_back(static_cast<pid_t>(std::stol((*it)[1].str())));
    }
    return pids;
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

class FaultUpTest : public ClusterTest {};

TEST_F(FaultUpTest, RestartsACrashedWorkerAndStopsEverythingOnSigterm) {
    const auto home = dir() / "up-home";
    const auto ready_file = dir() / "up.ready";
    auto& up = start_process("up", {glassbox_binary(), "up", "--home", home.string(), "--bind",
                                    "tcp://127.0.0.1:*", "--pub", "tcp://127.0.0.1:*", "--heartbeat-ms",
                                    std::to_string(kHeartbeatMs), "--gateway-listen", "127.0.0.1:0",
                                    "--ready-file", ready_file.string()});
    const auto ready = wait_for_ready_file(ready_file, up, 20'000ms);
    ASSERT_TRUE(ready) << up.stderr_text();
    const std::string endpoint = (*ready)["endpoint"].get<std::string>();
    ASSERT_TRUE(wait_for_service(endpoint, "echo", 10'000ms, 2));
    ASSERT_TRUE(wait_for_service(endpoint, "trace", 10'000ms, 1));

    // Client commands find the broker through what up bound (<home>/run/endpoints.json), no --broker.
    const auto via_home = run_glassbox({"call", "echo", echo_body("via home"), "--home", home.string()});
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
    EXPECT_TRUE(wait_for_workers(endpoint, "echo", 2, 10'000ms)) << "dead workers expire, new ones register";
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
    for (const pid_t pid : children) EXPECT_FALSE(process_exists(pid)) << "child " << pid << " still runs";
    const std::string log = up.stderr_text();
    EXPECT_LT(log.find("event=stopped child=echo"), log.find("event=stopped child=broker"));
}

}  // namespace
}  // namespace glassbox::integration
