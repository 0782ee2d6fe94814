// Trace reliability with real processes: thousands of echo traces reach the store exactly once
// while the collector is SIGKILLed and restarted, and while the broker restarts on its spool.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <iostream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/cluster.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::integration {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using std::chrono::milliseconds;

// What a load of echo requests ended with, over all its client threads.
struct EchoLoadResult {
    std::set<std::string> final_sessions;  // the `session` of every FINAL body
    std::map<std::string, int> errors;     // error type -> count (each attempt retried)
    int attempts = 0;
    int unfinished = 0;        // requests that never got a FINAL
    int duplicate_finals = 0;  // a session URI seen in two FINALs (must not happen)
};

// `total` echo requests from `clients` threads, each keeping up to `window` in flight and
// paced so the whole load takes about `pace` (so faults injected meanwhile land mid-stream).
// An attempt that ends in an ERROR is retried (a new request, a new session) up to 5 times.
class EchoLoad {
public:
    EchoLoad(zmq::context_t& context, std::string endpoint, int total, int clients, int window,
             milliseconds pace)
        : context_(context),
          endpoint_(std::move(endpoint)),
          total_(total),
          clients_(clients),
          window_(window),
          pace_(pace) {}
    ~EchoLoad() { join(); }

    // Each request streams one partial after `delay` (between its two explain messages), so a
    // fault is likely to land inside some request; by default it answers at once.
    void set_delay(milliseconds delay) { delay_ = delay; }

    void start() {
        start_ = Clock::now();
        for (int c = 0; c < clients_; ++c) {
            threads_.emplace_back([this, c] { run_client(c); });
        }
    }
    void join() {
        for (auto& t : threads_) {
            if (t.joinable()) t.join();
        }
    }
    // Requests that have their FINAL so far.
    int finals() const { return finals_.load(); }
    EchoLoadResult result() {
        join();
        std::lock_guard lock(mutex_);
        return result_;
    }

private:
    void run_client(int c) {
        GbcClient client(context_, endpoint_);
        // This client's share: requests c, c + clients, c + 2 * clients, ...
        std::vector<int> todo;
        for (int i = c; i < total_; i += clients_) todo.push_back(i);
        std::map<std::string, std::pair<int, int>> in_flight;  // request id -> (index, attempt)
        std::vector<std::pair<int, int>> retry;                // (index, attempt)
        std::size_t next = 0;
        EchoLoadResult mine;
        const auto send = [&](int index, int attempt) {
            const auto body = echo_body(
                "reliability " + std::to_string(index) + " attempt " + std::to_string(attempt),
                delay_.count() > 0 ? 1 : 0, static_cast<int>(delay_.count()));
            in_flight[client.request("echo", body, 20'000)] = {index, attempt};
            ++mine.attempts;
        };
        const auto give_up_at = start_ + pace_ + milliseconds{60'000};
        while ((next < todo.size() || !in_flight.empty() || !retry.empty()) &&
               Clock::now() < give_up_at) {
            while (static_cast<int>(in_flight.size()) < window_ && !retry.empty()) {
                send(retry.back().first, retry.back().second);
                retry.pop_back();
            }
            while (static_cast<int>(in_flight.size()) < window_ && next < todo.size() &&
                   Clock::now() >= start_ + pace_ * todo[next] / total_) {
                send(todo[next++], 0);
            }
            auto m = client.recv(milliseconds{20});
            if (!m || !m->terminal()) continue;
            const auto found = in_flight.find(m->request_id);
            if (found == in_flight.end()) continue;
            const auto [index, attempt] = found->second;
            in_flight.erase(found);
            if (m->is_final()) {
                const auto body = m->json();
                const std::string session = body.is_object() ? body.value("session", "") : "";
                if (session.empty() || !mine.final_sessions.insert(session).second)
                    ++mine.duplicate_finals;
                ++finals_;
            } else {
                ++mine.errors[m->is_error() ? m->error_type : "malformed"];
                if (attempt < 5) {
                    retry.emplace_back(index, attempt + 1);
                } else {
                    ++mine.unfinished;
                }
            }
        }
        mine.unfinished += static_cast<int>(todo.size() - next + in_flight.size() + retry.size());
        std::lock_guard lock(mutex_);
        for (const auto& s : mine.final_sessions) {
            if (!result_.final_sessions.insert(s).second) ++result_.duplicate_finals;
        }
        for (const auto& [type, n] : mine.errors) result_.errors[type] += n;
        result_.attempts += mine.attempts;
        result_.unfinished += mine.unfinished;
        result_.duplicate_finals += mine.duplicate_finals;
    }

    zmq::context_t& context_;
    std::string endpoint_;
    int total_;
    int clients_;
    int window_;
    milliseconds pace_;
    milliseconds delay_{0};
    Clock::time_point start_{};
    std::vector<std::thread> threads_;
    std::atomic<int> finals_{0};
    std::mutex mutex_;
    EchoLoadResult result_;
};

std::string describe(const EchoLoadResult& r) {
    std::string out = "finals=" + std::to_string(r.final_sessions.size()) +
                      " attempts=" + std::to_string(r.attempts) +
                      " unfinished=" + std::to_string(r.unfinished) +
                      " duplicate_finals=" + std::to_string(r.duplicate_finals) + " errors={";
    for (const auto& [type, n] : r.errors) out += " " + type + ":" + std::to_string(n);
    return out + " }";
}

// Fault* suites carry the `slow` label (tests/integration/CMakeLists.txt).
class FaultTraceReliability : public ClusterTest {
protected:
    // Waits until the spool is drained (nothing stored there, nothing in flight to a collector)
    // and `stats` shows `sessions` sessions, `events` events; the last stats seen otherwise.
    json wait_until_stored(const std::string& endpoint, int sessions, int events,
                           milliseconds timeout = milliseconds{30'000}) {
        const auto until = Clock::now() + timeout;
        json stats;
        while (Clock::now() < until) {
            const auto s = status(endpoint);
            const bool drained = s && (*s)["spool"].value("messages", -1) == 0 &&
                                 (*s)["spool"].value("in_flight", -1) == 0;
            stats = trace_answer(endpoint, {{"op", "stats"}});
            if (drained && stats.is_object() && stats.value("sessions", -1) == sessions &&
                stats.value("events", -1) == events) {
                return stats;
            }
            std::this_thread::sleep_for(milliseconds{100});
        }
        return stats;
    }

    // Every session of the store, sub-traces included (the store holds at most 10,000 here).
    json list_all(const std::string& endpoint) {
        return trace_answer(endpoint,
                            {{"op", "list"}, {"include_subtraces", true}, {"limit", 10'000}});
    }

    // `show` for each session, pipelined: each must have exactly its echo events, seq 0 (open)
    // and seq 1 (complete). Counted for all of them, not sampled.
    void expect_each_shows_two_events(const std::string& endpoint,
                                      const std::set<std::string>& sessions) {
        GbcClient client(context_, endpoint);
        std::map<std::string, std::string> in_flight;  // request id -> session
        auto next = sessions.begin();
        int checked = 0;
        int failures = 0;
        const auto until = Clock::now() + milliseconds{60'000};
        while ((next != sessions.end() || !in_flight.empty()) && Clock::now() < until) {
            while (in_flight.size() < 32 && next != sessions.end()) {
                in_flight[client.request("trace", json{{"op", "show"}, {"session", *next}}.dump(),
                                         10'000)] = *next;
                ++next;
            }
            auto m = client.recv(milliseconds{100});
            if (!m || !m->terminal()) continue;
            const auto found = in_flight.find(m->request_id);
            if (found == in_flight.end()) continue;
            const std::string session = found->second;
            in_flight.erase(found);
            ++checked;
            const auto shown = m->json();
            const bool ok =
                m->is_final() && shown.is_object() && shown["session"]["session"] == session &&
                shown["session"]["status"] == "complete" && shown["events"].size() == 2 &&
                shown["events"][0]["seq"] == 0 && shown["events"][0]["state"] == "open" &&
                shown["events"][1]["seq"] == 1 && shown["events"][1]["state"] == "complete" &&
                !shown["events"][0]["triples"].empty() && !shown["events"][1]["triples"].empty();
            if (!ok && ++failures <= 5) ADD_FAILURE() << session << ": " << m->describe();
        }
        EXPECT_EQ(checked, static_cast<int>(sessions.size()));
        EXPECT_EQ(failures, 0);
    }

    // The store holds exactly `expected`: each once, complete, with 2 events; nothing else, and
    // nothing quarantined.
    void expect_store_is_exactly(const std::string& endpoint,
                                 const std::set<std::string>& expected) {
        const int n = static_cast<int>(expected.size());
        const auto stats = wait_until_stored(endpoint, n, 2 * n);
        ASSERT_TRUE(stats.is_object()) << "no stats";
        EXPECT_EQ(stats.value("sessions", -1), n) << stats.dump();
        EXPECT_EQ(stats.value("events", -1), 2 * n) << stats.dump();
        EXPECT_EQ(stats.value("quarantined", -1), 0) << stats.dump();
        EXPECT_EQ(stats["by_status"].value("complete", -1), n) << stats.dump();

        const auto listed = list_all(endpoint);
        ASSERT_TRUE(listed.is_object()) << "no list";
        EXPECT_EQ(listed.value("total", -1), n);
        std::set<std::string> stored;
        int bad = 0;
        for (const auto& s : listed["sessions"]) {
            const std::string uri = s.value("session", "");
            EXPECT_TRUE(stored.insert(uri).second) << "listed twice: " << uri;
            if ((s["events"] != 2 || s["status"] != "complete" || s["kind"] != "echo") &&
                ++bad <= 5) {
                ADD_FAILURE() << s.dump();
            }
        }
        EXPECT_EQ(bad, 0);
        std::vector<std::string> missing, extra;
        std::set_difference(expected.begin(), expected.end(), stored.begin(), stored.end(),
                            std::back_inserter(missing));
        std::set_difference(stored.begin(), stored.end(), expected.begin(), expected.end(),
                            std::back_inserter(extra));
        EXPECT_TRUE(missing.empty())
            << missing.size() << " FINAL sessions not stored, e.g. " << missing.front();
        EXPECT_TRUE(extra.empty())
            << extra.size() << " stored sessions without a FINAL, e.g. " << extra.front();
        expect_each_shows_two_events(endpoint, expected);
    }

    // The collector's own count of redelivered messages it ignored, from its stop log line.
    static std::string stop_line(ChildProcess& collector) {
        const auto how = collector.terminate();
        const auto text = collector.stderr_text();
        const auto at = text.rfind("event=stopped");
        return how.describe() + ": " +
               (at == std::string::npos ? std::string("no stop line")
                                        : text.substr(at, text.find('\n', at) - at));
    }

    int spooled(const std::string& endpoint) {
        const auto s = status(endpoint);
        return s ? (*s)["spool"].value("messages", -1) : -1;
    }
};

TEST_F(FaultTraceReliability, CollectorKilledTwiceDuring2000EchoesStoresEachSessionOnce) {
    const auto broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    start_echo_worker(broker.endpoint, 2);
    start_trace_collector(broker.endpoint);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    ASSERT_TRUE(wait_for_service(broker.endpoint, "trace"));

    constexpr int kRequests = 2000;
    EchoLoad load(context_, broker.endpoint, kRequests, 4, 8, milliseconds{9000});
    load.start();
    int kills = 0;
    for (const int at : {kRequests / 3, 2 * kRequests / 3}) {
        ASSERT_TRUE(test_support::wait_until([&] { return load.finals() >= at; }))
            << "the load stalled";
        // Kill the live collector (the most recent one): mid-batch, deliveries unacknowledged.
        for (auto it = processes_.rbegin(); it != processes_.rend(); ++it) {
            if ((*it)->name().rfind("trace-collector", 0) == 0 && (*it)->running()) {
                const auto how = (*it)->kill();
                EXPECT_EQ(how.signal, SIGKILL) << how.describe();
                ++kills;
                break;
            }
        }
        // Requests go on while it is down: some more end before a new collector starts.
        const int down_at = load.finals();
        ASSERT_TRUE(test_support::wait_until([&] {
            return load.finals() >= std::min(kRequests, down_at + 50);
        })) << "the load stalled while the collector was down";
        start_trace_collector(broker.endpoint);
    }
    EXPECT_EQ(kills, 2);
    const auto result = load.result();
    ASSERT_EQ(result.final_sessions.size(), static_cast<std::size_t>(kRequests))
        << describe(result);
    EXPECT_EQ(result.unfinished, 0) << describe(result);
    EXPECT_EQ(result.duplicate_finals, 0) << describe(result);
    // Only the collector died: no request of the load may fail.
    EXPECT_TRUE(result.errors.empty()) << describe(result);

    expect_store_is_exactly(broker.endpoint, result.final_sessions);
    std::cout << "[ collector killed twice: " << describe(result) << "; last collector "
              << stop_line(*processes_.back()) << " ]\n";
}

TEST_F(FaultTraceReliability, BrokerRestartedWithSpooledExplainsAndWhileIngesting) {
    auto broker = start_broker();
    ASSERT_FALSE(broker.endpoint.empty());
    const std::string port = port_of(broker.endpoint);
    start_echo_worker(broker.endpoint, 4);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));

    // 1. No collector: 500 answered requests leave 1,000 explain messages in the spool; the
    // broker is SIGKILLed and restarted on the same port, home and spool.
    constexpr int kSpooled = 500;
    EchoLoad first(context_, broker.endpoint, kSpooled, 4, 16, milliseconds{0});
    first.start();
    const auto spooled_result = first.result();
    ASSERT_EQ(spooled_result.final_sessions.size(), static_cast<std::size_t>(kSpooled))
        << describe(spooled_result);
    ASSERT_TRUE(spooled_result.errors.empty()) << describe(spooled_result);
    EXPECT_EQ(spooled(broker.endpoint), 2 * kSpooled);
    broker.process->kill();
    broker = start_broker(
        {.bind = "tcp://127.0.0.1:" + port, .heartbeat_ms = kHeartbeatMs, .extra = {}});
    ASSERT_EQ(port_of(broker.endpoint), port);
    EXPECT_EQ(spooled(broker.endpoint), 2 * kSpooled) << "the spool did not survive SIGKILL";
    auto& collector = start_trace_collector(broker.endpoint);
    ASSERT_TRUE(wait_for_service(broker.endpoint, "trace"));
    expect_store_is_exactly(broker.endpoint, spooled_result.final_sessions);
    if (HasFailure()) return;

    // 2. The collector attached and ingesting: the broker is SIGKILLed halfway through a load
    // and restarted. Requests in flight end (BrokerRestarted) and are retried as new sessions;
    // ACKs sent to the dead broker are lost, so stored messages come again (duplicates).
    constexpr int kIngesting = 600;
    ASSERT_TRUE(wait_for_service(broker.endpoint, "echo"));
    EchoLoad second(context_, broker.endpoint, kIngesting, 4, 8, milliseconds{4000});
    second.set_delay(milliseconds{10});
    second.start();
    ASSERT_TRUE(test_support::wait_until([&] { return second.finals() >= kIngesting / 2; }))
        << "the load stalled";
    broker.process->kill();  // returns once the process is reaped: its port is free
    broker = start_broker(
        {.bind = "tcp://127.0.0.1:" + port, .heartbeat_ms = kHeartbeatMs, .extra = {}});
    ASSERT_EQ(port_of(broker.endpoint), port);
    const auto ingest_result = second.result();
    ASSERT_EQ(ingest_result.final_sessions.size(), static_cast<std::size_t>(kIngesting))
        << describe(ingest_result);
    EXPECT_EQ(ingest_result.duplicate_finals, 0) << describe(ingest_result);

    // Every answered session is stored complete with both events. A request cut off by the
    // restart may have left a session too (an open event spooled before the kill, perhaps its
    // end): at most one per failed attempt, never a duplicate event.
    std::set<std::string> answered = spooled_result.final_sessions;
    answered.insert(ingest_result.final_sessions.begin(), ingest_result.final_sessions.end());
    int failed_attempts = 0;
    for (const auto& [type, n] : ingest_result.errors) failed_attempts += n;
    json listed;
    std::set<std::string> complete;
    const auto until = Clock::now() + milliseconds{30'000};
    while (Clock::now() < until) {
        listed = list_all(broker.endpoint);
        complete.clear();
        if (listed.is_object()) {
            for (const auto& s : listed["sessions"]) {
                if (s["status"] == "complete") complete.insert(s.value("session", ""));
            }
        }
        if (std::includes(complete.begin(), complete.end(), answered.begin(), answered.end()) &&
            spooled(broker.endpoint) == 0) {
            break;
        }
        std::this_thread::sleep_for(milliseconds{200});
    }
    ASSERT_TRUE(listed.is_object());
    ASSERT_TRUE(std::includes(complete.begin(), complete.end(), answered.begin(), answered.end()))
        << complete.size() << " complete of " << answered.size() << " answered; "
        << describe(ingest_result);
    EXPECT_EQ(spooled(broker.endpoint), 0);
    std::set<std::string> stored;
    std::int64_t listed_events = 0;
    for (const auto& s : listed["sessions"]) {
        EXPECT_TRUE(stored.insert(s.value("session", "")).second) << "listed twice: " << s.dump();
        listed_events += s.value("events", 0);
        if (answered.count(s.value("session", "")) != 0) {
            EXPECT_EQ(s["events"], 2) << s.dump();
        } else {
            EXPECT_LE(s.value("events", 0), 2) << s.dump();
        }
    }
    EXPECT_LE(stored.size(), answered.size() + static_cast<std::size_t>(failed_attempts))
        << describe(ingest_result);
    const auto stats = trace_answer(broker.endpoint, {{"op", "stats"}});
    ASSERT_TRUE(stats.is_object());
    EXPECT_EQ(stats.value("sessions", -1), static_cast<int>(stored.size())) << stats.dump();
    EXPECT_EQ(stats.value("events", -1), listed_events) << stats.dump();
    EXPECT_EQ(stats.value("quarantined", -1), 0) << stats.dump();
    expect_each_shows_two_events(broker.endpoint, ingest_result.final_sessions);
    std::cout << "[ broker restart while ingesting: " << describe(ingest_result) << "; stored "
              << stored.size() << " sessions, " << listed_events << " events; collector "
              << stop_line(collector) << " ]\n";
}

}  // namespace
}  // namespace glassbox::integration
