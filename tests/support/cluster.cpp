// A broker and its workers as real `glassbox` processes for integration tests.
#include "tests/support/cluster.hpp"

#include <signal.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <thread>

#include "tests/support/wait_until.hpp"

namespace glassbox::integration {

namespace {

using Clock = std::chrono::steady_clock;

std::string tail(const std::string& text, std::size_t n = 4000) {
    return text.size() <= n ? text : "..." + text.substr(text.size() - n);
}

}  // namespace

std::string glassbox_binary() { return GLASSBOX_BINARY; }

std::string echo_body(const std::string& question, int partials, int delay_ms,
                      const std::string& fail) {
    nlohmann::json body{{"question", question}, {"partials", partials}};
    if (delay_ms > 0) {
        body["delay_ms"] = delay_ms;
    }
    if (!fail.empty()) {
        body["fail"] = fail;
    }
    return body.dump();
}

ClusterTest::ClusterTest() : tmp_("glassbox-it") {}

ClusterTest::~ClusterTest() = default;

void ClusterTest::TearDown() {
    // Stop workers before brokers so their logs end cleanly; everything is reaped regardless.
    for (auto it = processes_.rbegin(); it != processes_.rend(); ++it) {
        (*it)->terminate(std::chrono::milliseconds{2000});
    }
    if (HasFailure()) {
        tmp_.keep();
        std::cerr << "[ logs kept in " << tmp_.path().string() << " ]\n";
        for (auto& p : processes_) {
            const auto err = p->stderr_text();
            if (!err.empty()) {
                std::cerr << "----- " << p->name() << " stderr -----\n" << tail(err) << "\n";
            }
        }
    }
}

ChildProcess& ClusterTest::start_process(const std::string& name, std::vector<std::string> argv) {
    processes_.push_back(std::make_unique<ChildProcess>(name, std::move(argv), tmp_.path()));
    return *processes_.back();
}

RunningBroker ClusterTest::start_broker(BrokerOptions options) {
    const int n = broker_count_++;
    const auto ready = tmp_.path() / ("broker-" + std::to_string(n) + ".ready.json");
    std::vector<std::string> argv{glassbox_binary(), "broker",
                                  "--bind",          options.bind,
                                  "--pub",           "tcp://127.0.0.1:*",
                                  "--home",          broker_home().string(),
                                  "--heartbeat-ms",  std::to_string(options.heartbeat_ms),
                                  "--liveness",      std::to_string(options.liveness),
                                  "--ready-file",    ready.string()};
    argv.insert(argv.end(), options.extra.begin(), options.extra.end());
    auto& process = start_process("broker-" + std::to_string(n), std::move(argv));
    RunningBroker broker;
    broker.process = &process;
    auto info = wait_for_ready_file(ready, process, std::chrono::milliseconds{10'000});
    if (!info) {
        ADD_FAILURE() << "broker wrote no ready file; stderr:\n" << tail(process.stderr_text());
        return broker;
    }
    broker.ready = *info;
    broker.endpoint = info->value("endpoint", "");
    broker.pub_endpoint = info->value("pub_endpoint", "");
    EXPECT_EQ(info->value("pid", -1), process.pid()) << "ready file: " << info->dump();
    EXPECT_EQ(broker.endpoint.rfind("tcp://127.0.0.1:", 0), 0u) << info->dump();
    EXPECT_EQ(broker.endpoint.find('*'), std::string::npos)
        << "endpoint not resolved: " << info->dump();
    return broker;
}

void ClusterTest::start_broker_with_echo(RunningBroker& broker, int threads) {
    broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    start_echo_worker(broker.endpoint, threads);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
}

ChildProcess& ClusterTest::start_up(const std::filesystem::path& home,
                                    const std::filesystem::path& ready_file) {
    return start_process(
        "up", {glassbox_binary(), "up", "--home", home.string(), "--bind", "tcp://127.0.0.1:*",
               "--pub", "tcp://127.0.0.1:*", "--heartbeat-ms", std::to_string(kHeartbeatMs),
               "--gateway-listen", "127.0.0.1:0", "--ready-file", ready_file.string()});
}

ChildProcess& ClusterTest::start_echo_worker(const std::string& endpoint, int threads,
                                             std::vector<std::string> extra) {
    std::vector<std::string> argv{glassbox_binary(),
                                  "worker",
                                  "echo",
                                  "--broker",
                                  endpoint,
                                  "--threads",
                                  std::to_string(threads),
                                  "--heartbeat-ms",
                                  std::to_string(kHeartbeatMs),
                                  "--liveness",
                                  std::to_string(kLiveness)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return start_process("echo-worker-" + std::to_string(processes_.size()), std::move(argv));
}

ChildProcess& ClusterTest::start_test_worker(const std::string& endpoint,
                                             const std::string& service, int delay_ms) {
    return start_process(
        "test-worker-" + std::to_string(processes_.size()),
        {GLASSBOX_TEST_WORKER, "--broker", endpoint, "--service", service, "--delay-ms",
         std::to_string(delay_ms), "--heartbeat-ms", std::to_string(kHeartbeatMs)});
}

bool ClusterTest::wait_until_busy(const std::string& endpoint, const std::string& service,
                                  int workers, std::chrono::milliseconds timeout) {
    const auto stop = Clock::now() + timeout;
    while (Clock::now() < stop) {
        if (auto s = status(endpoint)) {
            for (const auto& svc : s->value("services", nlohmann::json::array())) {
                if (svc.value("name", "") == service && svc.value("workers", -1) == workers &&
                    svc.value("idle", -1) == 0) {
                    return true;
                }
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    return false;
}

bool ClusterTest::wait_for_workers(const std::string& endpoint, const std::string& service,
                                   int workers, std::chrono::milliseconds timeout) {
    const auto stop = Clock::now() + timeout;
    while (Clock::now() < stop) {
        if (auto s = status(endpoint)) {
            int found = 0;
            for (const auto& svc : s->value("services", nlohmann::json::array())) {
                if (svc.value("name", "") == service) {
                    found = svc.value("workers", -1);
                }
            }
            if (found == workers) {
                return true;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    return false;
}

CommandResult ClusterTest::run_glassbox(std::vector<std::string> args,
                                        std::chrono::milliseconds timeout) {
    args.insert(args.begin(), glassbox_binary());
    return run_command(std::move(args), tmp_.path(), timeout);
}

std::optional<nlohmann::json> ClusterTest::status(const std::string& endpoint) {
    GbcClient client(context_, endpoint);
    auto replies = client.call("mmi.status", "{}", 5000, std::chrono::milliseconds{5000});
    if (replies.empty() || !replies.back().is_final()) {
        return std::nullopt;
    }
    auto value = replies.back().json();
    if (value.is_discarded() || !value.is_object()) {
        return std::nullopt;
    }
    return value;
}

bool ClusterTest::wait_for_service_entry(const std::string& endpoint, const std::string& service,
                                         const std::function<bool(const nlohmann::json&)>& holds,
                                         std::chrono::milliseconds timeout) {
    return test_support::wait_until(
        [&] {
            const auto shown = status(endpoint);
            if (!shown) return false;
            for (const auto& entry : shown->value("services", nlohmann::json::array())) {
                if (entry.value("name", "") == service) return holds(entry);
            }
            return false;
        },
        timeout, std::chrono::milliseconds{20});
}

bool ClusterTest::wait_for_subscriptions(const std::string& endpoint, int subscriptions,
                                         std::chrono::milliseconds timeout) {
    return test_support::wait_until(
        [&] {
            const auto shown = status(endpoint);
            return shown && (*shown)["topic"].value("subscriptions", 0) >= subscriptions;
        },
        timeout, std::chrono::milliseconds{20});
}

std::vector<ChildProcess*> ClusterTest::start_workers(const std::string& endpoint,
                                                      const std::vector<WorkerSpec>& workers) {
    std::vector<ChildProcess*> started;
    for (const auto& w : workers) {
        std::vector<std::string> argv = {glassbox_binary(),
                                         "worker",
                                         w.name,
                                         "--broker",
                                         endpoint,
                                         "--heartbeat-ms",
                                         std::to_string(kHeartbeatMs),
                                         "--liveness",
                                         std::to_string(kLiveness)};
        argv.insert(argv.end(), w.extra.begin(), w.extra.end());
        started.push_back(&start_process(w.name, argv));
    }
    for (const auto& w : workers) {
        const std::string service = w.name == "trace-collector" ? "trace" : w.name;
        EXPECT_TRUE(wait_for_service(endpoint, service)) << service << " did not register";
    }
    return started;
}

void ClusterTest::load_sample(const std::string& endpoint, const std::filesystem::path& sample,
                              bool docs) {
    std::vector<std::vector<std::string>> loads = {
        {"load", "rdf", (sample / "orrin.ttl").string(), "--tier", "1"}};
    if (docs) loads.push_back({"load", "docs", (sample / "docs").string()});
    for (auto& load : loads) {
        load.push_back("--broker");
        load.push_back(endpoint);
        const auto loaded = run_glassbox(load, std::chrono::milliseconds{120'000});
        EXPECT_TRUE(loaded.status.exited && loaded.status.code == 0)
            << load[1] << ": " << loaded.err;
    }
}

bool ClusterTest::wait_for_turns(const std::string& endpoint, const std::string& session_id,
                                 std::size_t turns, std::chrono::milliseconds timeout) {
    nlohmann::json answer;
    return wait_for_trace_answer(
        endpoint, {{"op", "turns"}, {"session_id", session_id}, {"limit", turns}},
        [&](const nlohmann::json& body) {
            return body.contains("turns") && body["turns"].is_array() &&
                   body["turns"].size() >= turns;
        },
        answer, timeout);
}

ChildProcess& ClusterTest::start_trace_collector(const std::string& endpoint,
                                                 const std::filesystem::path& home) {
    return start_process("trace-collector-" + std::to_string(processes_.size()),
                         {glassbox_binary(), "worker", "trace-collector", "--broker", endpoint,
                          "--home", (home.empty() ? dir() / "collector-home" : home).string(),
                          "--heartbeat-ms", std::to_string(kHeartbeatMs)});
}

nlohmann::json ClusterTest::trace_answer(const std::string& endpoint, const nlohmann::json& ask) {
    GbcClient client(context_, endpoint);
    const auto messages =
        client.call("trace", ask.dump(), 10'000, std::chrono::milliseconds{10'000});
    if (messages.empty() || !messages.back().is_final()) return nullptr;
    const auto reply = messages.back().json();
    return reply.is_object() ? reply : nlohmann::json(nullptr);
}

bool ClusterTest::wait_for_trace_answer(const std::string& endpoint, const nlohmann::json& ask,
                                        const std::function<bool(const nlohmann::json&)>& accept,
                                        nlohmann::json& answer, std::chrono::milliseconds timeout) {
    return test_support::wait_until(
        [&] {
            auto got = trace_answer(endpoint, ask);
            if (!got.is_object()) return false;
            answer = std::move(got);
            return accept(answer);
        },
        timeout, std::chrono::milliseconds{100});
}

bool ClusterTest::wait_for_service(const std::string& endpoint, const std::string& service,
                                   std::chrono::milliseconds timeout, int workers) {
    const auto stop = Clock::now() + timeout;
    while (Clock::now() < stop) {
        if (workers <= 1) {
            MdpClient client(context_, endpoint);
            auto reply = client.call("mmi.service", {service}, std::chrono::milliseconds{1000});
            if (reply && reply->size() == 1 && (*reply)[0] == "200") {
                return true;
            }
        } else if (auto s = status(endpoint)) {
            for (const auto& svc : s->value("services", nlohmann::json::array())) {
                if (svc.value("name", "") == service && svc.value("workers", 0) >= workers) {
                    return true;
                }
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
    return false;
}

bool ClusterTest::logs_hold(const std::string& text) const {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir())) {
        if (!entry.is_regular_file()) continue;
        const auto ext = entry.path().extension();
        if (ext != ".out" && ext != ".err" && ext != ".log") continue;
        std::ifstream in(entry.path());
        const std::string body{std::istreambuf_iterator<char>(in), {}};
        if (body.find(text) != std::string::npos) return true;
    }
    return false;
}

void ClusterTest::expect_echo_served(const std::string& endpoint, const std::string& question) {
    GbcClient client(context_, endpoint);
    auto replies =
        client.call("echo", echo_body(question), 10'000, std::chrono::milliseconds{10'000});
    ASSERT_FALSE(replies.empty()) << "no reply to a normal echo request";
    const auto& last = replies.back();
    ASSERT_TRUE(last.is_final()) << last.describe();
    auto body = last.json();
    ASSERT_TRUE(body.is_object()) << last.describe();
    EXPECT_EQ(body["echo"]["question"], question) << last.describe();
}

std::string ClusterTest::port_of(const std::string& endpoint) {
    const auto colon = endpoint.rfind(':');
    return colon == std::string::npos ? std::string{} : endpoint.substr(colon + 1);
}

}  // namespace glassbox::integration
