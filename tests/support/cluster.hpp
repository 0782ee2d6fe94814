// A broker and its workers as real `glassbox` processes, on loopback, with a fresh home per test.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "tests/support/bus_peers.hpp"
#include "tests/support/process.hpp"

namespace glassbox::integration {

// Heartbeat used by every process a test starts.
inline constexpr int kHeartbeatMs = 200;
// Heartbeats missed before a peer counts as dead (2 s at kHeartbeatMs). Death detection is a
// hang guard here, not a timing: on a loaded 2-core machine a live worker holding a request can
// go unscheduled for more than the 3 intervals of the default, and was then declared dead.
inline constexpr int kLiveness = 10;

// The `glassbox` executable under test (a compile definition set by CMake).
std::string glassbox_binary();

struct BrokerOptions {
    std::string bind = "tcp://127.0.0.1:*";
    int heartbeat_ms = kHeartbeatMs;
    std::vector<std::string> extra;  // more `glassbox broker` options
    int liveness = kLiveness;
};

struct RunningBroker {
    ChildProcess* process = nullptr;
    std::string endpoint;
    std::string pub_endpoint;
    nlohmann::json ready;
};

// Base fixture: owns a temp dir (broker home and logs) and every process it starts; all are
// killed and reaped when the test ends. On failure the logs' tails are printed and kept.
class ClusterTest : public ::testing::Test {
protected:
    ClusterTest();
    ~ClusterTest() override;
    void TearDown() override;

    // Starts `glassbox broker`, waits for its ready file; fails the test if it does not come.
    RunningBroker start_broker(BrokerOptions options = {});
    // `glassbox worker echo --broker <endpoint>`.
    ChildProcess& start_echo_worker(const std::string& endpoint, int threads = 1,
                                    std::vector<std::string> extra = {});
    // start_broker() and an echo worker of `threads` threads, once echo is served (use with
    // ASSERT_NO_FATAL_FAILURE: a broker or a worker that does not come fails the test).
    void start_broker_with_echo(RunningBroker& broker, int threads = 1);
    // `glassbox up --home <home>` on loopback ports (the gateway on a free port too), named
    // "up", writing `ready_file` once it is up.
    ChildProcess& start_up(const std::filesystem::path& home,
                           const std::filesystem::path& ready_file);
    // integration_test_worker: a plain 7/MDP worker holding each request `delay_ms` first.
    ChildProcess& start_test_worker(const std::string& endpoint, const std::string& service,
                                    int delay_ms);
    // Waits until mmi.status shows `service` with `workers` workers, none of them idle.
    bool wait_until_busy(const std::string& endpoint, const std::string& service, int workers = 1,
                         std::chrono::milliseconds timeout = std::chrono::milliseconds{5000});
    // Waits until mmi.status shows exactly `workers` workers for `service`.
    bool wait_for_workers(const std::string& endpoint, const std::string& service, int workers,
                          std::chrono::milliseconds timeout = std::chrono::milliseconds{5000});
    // Any process, owned by the fixture.
    ChildProcess& start_process(const std::string& name, std::vector<std::string> argv);
    // Runs `glassbox <args>` to completion.
    CommandResult run_glassbox(std::vector<std::string> args,
                               std::chrono::milliseconds timeout = std::chrono::milliseconds{
                                   20'000});

    // Polls mmi.service until `service` has `workers` live workers per mmi.status (or 200).
    bool wait_for_service(const std::string& endpoint, const std::string& service,
                          std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000},
                          int workers = 1);
    // One `glassbox worker <name>` of a pipeline, with its own options after the common ones.
    struct WorkerSpec {
        std::string name;
        std::vector<std::string> extra{};
    };
    // Starts `glassbox worker <name> --broker <endpoint> --heartbeat-ms kHeartbeatMs <extra>` for
    // each (the process is named after the worker), then waits until each one's service is
    // served ("trace" for the trace-collector); a service that does not come fails the test.
    // The processes, in the order given.
    std::vector<ChildProcess*> start_workers(const std::string& endpoint,
                                             const std::vector<WorkerSpec>& workers);
    // `glassbox load rdf <sample>/orrin.ttl --tier 1` and, with `docs`, `glassbox load docs
    // <sample>/docs` through `endpoint`; a failed load fails the test.
    void load_sample(const std::string& endpoint, const std::filesystem::path& sample, bool docs);
    // Polls the trace service (`turns`) until conversation `session_id` holds `turns` turns (the
    // collector indexes a run's turn as it ingests its messages, shortly after the FINAL).
    bool wait_for_turns(const std::string& endpoint, const std::string& session_id,
                        std::size_t turns,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000});
    // `glassbox worker trace-collector --broker <endpoint> --home <home>` (by default the
    // test's collector-home), named trace-collector-<n>.
    ChildProcess& start_trace_collector(const std::string& endpoint,
                                        const std::filesystem::path& home = {});
    // The FINAL body of one `trace` request `ask` (e.g. {"op": "show", "session": ...}), or null
    // (an error, not a JSON object, or nothing within 10 s).
    nlohmann::json trace_answer(const std::string& endpoint, const nlohmann::json& ask);
    // Asks the trace service `ask` until `accept` holds of its FINAL body, kept in `answer` (the
    // last one that came, or untouched, when it never does within `timeout`): the collector stores
    // a run shortly after its FINAL, and a test waits for that instead of sleeping.
    bool wait_for_trace_answer(const std::string& endpoint, const nlohmann::json& ask,
                               const std::function<bool(const nlohmann::json&)>& accept,
                               nlohmann::json& answer,
                               std::chrono::milliseconds timeout = std::chrono::milliseconds{
                                   20'000});
    // mmi.status over GBC01; nullopt if no FINAL JSON object arrives.
    std::optional<nlohmann::json> status(const std::string& endpoint);
    // Waits until `service`'s entry in mmi.status satisfies `holds` (e.g. its queued count):
    // the event a test waits on instead of sleeping.
    bool wait_for_service_entry(const std::string& endpoint, const std::string& service,
                                const std::function<bool(const nlohmann::json&)>& holds,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds{
                                    120'000});
    // Waits until mmi.status counts at least `subscriptions` subscriptions on the explain topic:
    // a PUB/SUB subscriber misses whatever is published before its subscription reaches the
    // broker, so a test waits for this instead of sleeping.
    bool wait_for_subscriptions(const std::string& endpoint, int subscriptions,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds{
                                    120'000});
    // Sends one ordinary echo request and checks it is served: the broker still serves.
    void expect_echo_served(const std::string& endpoint,
                            const std::string& question = "still alive");

    // Whether any process's output or log file under dir() holds `text` (e.g. a password that
    // must be written nowhere).
    bool logs_hold(const std::string& text) const;

    // The port of a resolved tcp endpoint ("tcp://127.0.0.1:41234" -> "41234").
    static std::string port_of(const std::string& endpoint);

    const std::filesystem::path& dir() const { return tmp_.path(); }
    std::filesystem::path broker_home() const { return tmp_.path() / "broker-home"; }

    zmq::context_t context_{1};
    TempDir tmp_;
    std::vector<std::unique_ptr<ChildProcess>> processes_;
    int broker_count_ = 0;
};

// An echo request body (partials always given: the echo service's default is 1).
std::string echo_body(const std::string& question, int partials = 0, int delay_ms = 0,
                      const std::string& fail = {});

}  // namespace glassbox::integration
