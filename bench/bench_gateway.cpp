// bench_gateway: what the HTTP gateway adds. The same questions (ops/sample) asked in the same
// run through the bus directly (what `glassbox invoke` does, in process), through
// POST /api/v1/query as JSON and as SSE (to `done`), and by `glassbox invoke` itself (a process
// per question); p50/p99 of each and the gateway's added p50. Then requests per second with 64
// concurrent keep-alive clients for GET /api/v1/health and a trace's GET /api/v1/traces/{id}.
// With --slow N (issue 30): p50 of a normal client's GET /api/v1/health (a new connection each)
// and JSON POST /api/v1/query, first alone, then while N slow clients (a third idle, a third
// dripping a head, a third dripping a body, each re-opened when the gateway drops it) hold
// connections from ten loopback addresses; the ratio of the two (target <= 1.5).
//
//   bench_gateway [--rounds 5] [--clients 64] [--seconds 3] [--slow 500] [--glassbox PATH]
//
// --glassbox runs another build's glassbox (and the glassbox-gateway beside it), for an A/B.
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "bench/bench_util.hpp"
#include "bus/bus_client.hpp"
#include "tests/support/loopback_socket.hpp"
#include "tests/support/process.hpp"

namespace {

using namespace glassbox;
using namespace glassbox::bench;
using nlohmann::json;
using std::chrono::milliseconds;
namespace fs = std::filesystem;
constexpr std::string_view kProgram = "bench_gateway";

const std::vector<std::string> kQuestions = {
    "Who designed Greyhollow Light?",
    "Which shipyard built the MV Curlew?",
    "Who founded the shipyard that built the MV Curlew?",
    "Where was the designer of Saltspire Light born?",
    "What happened to Saltspire Light in the Great Gale?",
    "Why was Westfall chosen for the observatory?",
};

std::string ready_value(const fs::path& ready, integration::ChildProcess& process,
                        const char* key) {
    auto info = integration::wait_for_ready_file(ready, process, milliseconds{15'000});
    if (!info) bench::fail(kProgram, process.name() + " did not start: " + process.stderr_text());
    return info->value(key, "");
}

void run_or_fail(const std::vector<std::string>& argv, const fs::path& dir) {
    const auto done = integration::run_command(argv, dir, milliseconds{180'000});
    if (!done.status.exited || done.status.code != 0)
        bench::fail(kProgram, argv[1] + " failed: " + done.err);
}

void line(const std::string& name, const std::vector<double>& ms) {
    std::cout << "| " << name << " | " << ms.size() << " | " << fmt(percentile(ms, 0.5), 2) << " | "
              << fmt(percentile(ms, 0.99), 2) << " |\n";
}

// Requests per second of `path` from `clients` keep-alive clients for `seconds`.
double throughput(int port, const std::string& path, int clients, int seconds,
                  std::size_t& failures) {
    std::atomic<std::uint64_t> done{0}, failed{0};
    const auto until = Clock::now() + std::chrono::seconds{seconds};
    std::vector<std::thread> threads;
    const auto started = Clock::now();
    for (int c = 0; c < clients; ++c) {
        threads.emplace_back([&] {
            httplib::Client client("127.0.0.1", port);
            client.set_keep_alive(true);
            client.set_tcp_nodelay(true);
            while (Clock::now() < until) {
                auto res = client.Get(path.c_str());
                if (res && res->status == 200)
                    ++done;
                else
                    ++failed;
            }
        });
    }
    for (auto& t : threads) t.join();
    failures = failed.load();
    return static_cast<double>(done.load()) /
           std::chrono::duration<double>(Clock::now() - started).count();
}

// Connections that hold the gateway as slow clients do, kept at `count` until destroyed: every
// 200 ms each sends one byte of its head or body (a third send nothing), and one the gateway
// closed (its deadline) is opened again.
class SlowClients {
public:
    SlowClients(int port, std::size_t count) : port_(port), fds_(count, -1) {
        for (std::size_t i = 0; i < count; ++i) fds_[i] = open(i);
        thread_ = std::thread([this] { drip(); });
    }
    ~SlowClients() {
        stop_ = true;
        thread_.join();
        for (int fd : fds_)
            if (fd >= 0) ::close(fd);
    }
    std::size_t reopened() const { return reopened_.load(); }

private:
    int open(std::size_t i) const {
        const std::string source = "127.0.0." + std::to_string(2 + i % 10);
        const int fd = integration::connect_loopback(port_, source.c_str());
        if (fd < 0) return -1;
        const std::string start =
            i % 3 == 1 ? "GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Drip: "
            : i % 3 == 2
                ? "POST /api/v1/search HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
                : "";
        if (!start.empty()) ::send(fd, start.data(), start.size(), MSG_NOSIGNAL);
        return fd;
    }
    void drip() {
        while (!stop_) {
            for (std::size_t i = 0; i < fds_.size() && !stop_; ++i) {
                char byte = 'a';
                const bool idle = i % 3 == 0;
                const bool gone = fds_[i] < 0 ||
                                  (!idle && ::send(fds_[i], &byte, 1, MSG_NOSIGNAL) != 1) ||
                                  ::recv(fds_[i], &byte, 1, MSG_DONTWAIT) == 0;
                if (gone) {
                    if (fds_[i] >= 0) ::close(fds_[i]);
                    fds_[i] = open(i);
                    ++reopened_;
                }
            }
            std::this_thread::sleep_for(milliseconds{200});
        }
    }

    int port_;
    std::vector<int> fds_;
    std::atomic<bool> stop_{false};
    std::atomic<std::size_t> reopened_{0};
    std::thread thread_;
};

// A normal client beside the slow ones: p50 of its health check (a new connection each) and of
// its JSON question, `rounds` times over; a request that fails counts with the time it took.
struct NormalClient {
    double health_p50 = 0;
    double query_p50 = 0;
    std::size_t failures = 0;
};

NormalClient normal_client(int port, std::size_t rounds) {
    std::vector<double> health, query;
    NormalClient out;
    for (std::size_t r = 0; r < rounds; ++r) {
        for (const auto& q : kQuestions) {
            httplib::Client once("127.0.0.1", port);
            once.set_tcp_nodelay(true);
            once.set_read_timeout(std::chrono::seconds{60});
            auto t = Clock::now();
            auto res = once.Get("/api/v1/health");
            if (!res || res->status != 200) ++out.failures;
            health.push_back(ms_since(t));
            httplib::Client asker("127.0.0.1", port);
            asker.set_read_timeout(std::chrono::seconds{120});
            t = Clock::now();
            res = asker.Post("/api/v1/query", json{{"query", q}}.dump(), "application/json");
            if (!res || res->status != 200) ++out.failures;
            query.push_back(ms_since(t));
        }
    }
    out.health_p50 = percentile(health, 0.5);
    out.query_p50 = percentile(query, 0.5);
    return out;
}

void slow_clients_section(int port, std::size_t slow, std::size_t rounds) {
    const auto alone = normal_client(port, rounds);
    NormalClient beside;
    std::size_t reopened = 0;
    {
        SlowClients clients(port, slow);
        std::this_thread::sleep_for(milliseconds{500});
        beside = normal_client(port, rounds);
        reopened = clients.reopened();
    }
    std::cout << "\n## slow clients: " << slow
              << " connections (idle, dripping heads, dripping bodies; " << reopened
              << " re-opened after the gateway dropped them)\n\n"
              << "| normal client | p50 ms alone | p50 ms beside " << slow
              << " slow | ratio | target <= 1.5 |\n"
              << "|---|---|---|---|---|\n";
    for (const auto& [name, a, b] :
         {std::tuple{"GET /api/v1/health (new connection)", alone.health_p50, beside.health_p50},
          std::tuple{"POST /api/v1/query (JSON)", alone.query_p50, beside.query_p50}}) {
        const double ratio = b / a;
        std::cout << "| " << name << " | " << fmt(a, 2) << " | " << fmt(b, 2) << " | "
                  << fmt(ratio, 2) << " | " << (ratio <= 1.5 ? "met" : "NOT met") << " |\n";
    }
    std::cout << "\nfailed requests: " << alone.failures << " alone, " << beside.failures
              << " beside the slow clients\n";
}

}  // namespace

int main(int argc, char** argv) {
    std::size_t rounds = 5, clients = 64, seconds = 3, slow = 0;
    std::string glassbox = GLASSBOX_BINARY;
    bench::Args args(argc, argv, kProgram);
    while (args.next()) {
        if (args.arg() == "--rounds")
            rounds = args.number();
        else if (args.arg() == "--clients")
            clients = args.number();
        else if (args.arg() == "--seconds")
            seconds = args.number();
        else if (args.arg() == "--slow")
            slow = args.number();
        else if (args.arg() == "--glassbox")
            glassbox = args.value();
        else
            bench::fail(kProgram, "unknown option " + args.arg());
    }
    integration::TempDir tmp("glassbox-bench-gateway");
    const fs::path dir = tmp.path();
    const std::string gb = glassbox;
    std::vector<std::unique_ptr<integration::ChildProcess>> processes;
    const auto start = [&](const std::string& name,
                           std::vector<std::string> argv) -> integration::ChildProcess& {
        processes.push_back(
            std::make_unique<integration::ChildProcess>(name, std::move(argv), dir));
        return *processes.back();
    };
    auto& broker = start("broker", {gb, "broker", "--bind", "tcp://127.0.0.1:*", "--pub",
                                    "tcp://127.0.0.1:*", "--home", (dir / "broker").string(),
                                    "--ready-file", (dir / "broker.ready").string()});
    const std::string endpoint = ready_value(dir / "broker.ready", broker, "endpoint");
    for (const auto& [name, extra] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"trace-collector", {"--home", (dir / "collector").string()}},
             {"embeddings", {}},
             {"store", {"--home", (dir / "store").string()}},
             {"llm", {}},
             {"graph-rag", {"--threads", "2"}},
             {"document-rag", {"--threads", "2"}},
             {"query", {"--threads", "2"}}}) {
        std::vector<std::string> worker = {gb, "worker", name, "--broker", endpoint};
        worker.insert(worker.end(), extra.begin(), extra.end());
        start(name, worker);
    }
    const fs::path sample = GLASSBOX_SAMPLE_DIR;
    run_or_fail(
        {gb, "load", "rdf", (sample / "orrin.ttl").string(), "--tier", "1", "--broker", endpoint},
        dir);
    run_or_fail({gb, "load", "docs", (sample / "docs").string(), "--broker", endpoint}, dir);
    // The bench's own clients are more than one address's default bound; set by the environment
    // so that a build from before the bound (--glassbox) starts with the same command line.
    ::setenv("GLASSBOX_GATEWAY_MAX_CONNECTIONS", "4096", 1);
    ::setenv("GLASSBOX_GATEWAY_MAX_CONNECTIONS_PER_CLIENT", "1024", 1);
    auto& gateway = start(
        "gateway", {gb, "gateway", "--listen", "127.0.0.1:0", "--broker", endpoint, "--rate-limit",
                    "0", "--threads", "72", "--ready-file", (dir / "gateway.ready").string()});
    const std::string url = ready_value(dir / "gateway.ready", gateway, "url");
    const int port = std::stoi(url.substr(url.rfind(':') + 1));

    bus::BusClientConfig config;
    config.endpoint = endpoint;
    bus::BusClient bus(config);
    httplib::Client http("127.0.0.1", port);
    http.set_keep_alive(true);
    http.set_tcp_nodelay(true);
    http.set_read_timeout(std::chrono::seconds{120});
    std::map<std::string, std::vector<double>> ms;
    std::string trace;
    const auto ask_bus = [&](const std::string& q) {
        const auto t = Clock::now();
        auto replies =
            bus.call("query", json{{"query", q}, {"streaming", true}}, milliseconds{120'000});
        if (!replies) bench::fail(kProgram, "bus: " + replies.error().describe());
        ms["bus (invoke's request, in process)"].push_back(ms_since(t));
    };
    const auto ask_json = [&](const std::string& q) {
        const auto t = Clock::now();
        auto res = http.Post("/api/v1/query", json{{"query", q}}.dump(), "application/json");
        if (!res || res->status != 200) bench::fail(kProgram, "POST /api/v1/query failed");
        ms["gateway JSON"].push_back(ms_since(t));
        trace = json::parse(res->body).value("trace_id", trace);
    };
    const auto ask_sse = [&](const std::string& q) {
        const auto t = Clock::now();
        httplib::Headers headers{{"Accept", "text/event-stream"}};
        auto res =
            http.Post("/api/v1/query", headers, json{{"query", q}}.dump(), "application/json");
        if (!res || res->status != 200 || res->body.find("event: done") == std::string::npos)
            bench::fail(kProgram, "SSE /api/v1/query failed");
        ms["gateway SSE (to done)"].push_back(ms_since(t));
    };
    const auto ask_invoke = [&](const std::string& q) {
        const auto t = Clock::now();
        run_or_fail({gb, "invoke", "-q", q, "--broker", endpoint}, dir);
        ms["glassbox invoke (a process)"].push_back(ms_since(t));
    };
    for (const auto& q : kQuestions) {  // warm-up: caches, connections
        ask_bus(q);
        ask_json(q);
    }
    ms.clear();
    for (std::size_t r = 0; r < rounds; ++r) {
        for (const auto& q : kQuestions) {
            // The order turns each round, so no path always runs first after a pause.
            const std::vector<std::function<void(const std::string&)>> paths = {
                ask_bus, ask_json, ask_sse, ask_invoke};
            for (std::size_t i = 0; i < paths.size(); ++i) paths[(i + r) % paths.size()](q);
        }
    }
    std::cout << "## bench_gateway: " << kQuestions.size() << " questions x " << rounds
              << " rounds (ops/sample, extractive llm)\n\n"
              << "| path | n | p50 ms | p99 ms |\n|---|---|---|---|\n";
    for (const auto& [name, values] : ms) line(name, values);
    const double base = percentile(ms["bus (invoke's request, in process)"], 0.5);
    std::cout << "\nadded p50 over the bus: JSON "
              << fmt(percentile(ms["gateway JSON"], 0.5) - base, 2) << " ms, SSE "
              << fmt(percentile(ms["gateway SSE (to done)"], 0.5) - base, 2)
              << " ms (target <= 1 ms)\n\n";

    std::cout << "| route | clients | requests/s | failures |\n|---|---|---|---|\n";
    std::string encoded;  // the session URI in a path segment
    for (const char c : trace) encoded += c == ':' ? std::string("%3A") : std::string(1, c);
    for (const std::string& path : {std::string("/api/v1/health"), "/api/v1/traces/" + encoded}) {
        std::size_t failures = 0;
        const double rps =
            throughput(port, path, static_cast<int>(clients), static_cast<int>(seconds), failures);
        std::cout << "| GET "
                  << (path == "/api/v1/health" ? path : std::string("/api/v1/traces/{id}")) << " | "
                  << clients << " | " << fmt(rps, 0) << " | " << failures << " |\n";
    }
    if (slow > 0) slow_clients_section(port, slow, rounds);
    return 0;
}
