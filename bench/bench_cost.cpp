// bench_cost: the CPU cost of an explained graph-RAG answer in every process of the pipeline
// (issue 33, "measure first"), against in-process baselines measured in the same run.
//
// `glassbox up` (its defaults: CURVE, the gateway, up.threads) runs in a home of its own, with a
// fresh trace store each time it starts; the PathQuestion KB (kb.nt + labels.nt of
// <data>/kg-pathquestion) is loaded once through `glassbox load rdf` into the collection
// `pathquestion` (kept and reused with --dir). C client threads, each with its own BusClient on
// the CLI's client key, send graph-rag requests (question + collection, no streaming: what
// `glassbox invoke graph-rag --no-stream` sends), cycling through questions-dev.jsonl, each
// waiting for its FINAL. Like `glassbox invoke` without -x, the clients ask the broker for no
// explain messages (explain=none, docs/protocol.md §4.1: the traces are spooled, published and
// stored as always) except in e, whose clients take the explain stream as `invoke -x` does (and
// every client did before the option existed). Five configurations:
//   a  2 clients, graph_rag.explored_edges_recorded at its default (500)
//   b  2 clients, explored_edges_recorded = 0 (the trace records the count only)
//   c  8 clients, the defaults (the issue's target configuration)
//   d  8 clients, explored_edges_recorded = 0
//   e  8 clients, the defaults, each client taking the explain stream (c as it ran before)
// (the setting goes to `up` as GLASSBOX_GRAPH_RAG_EXPLORED_EDGES_RECORDED: a/c/e on one start of
// the pipeline, c and e back to back, b/d on a second).
//
// Per configuration, after a warm-up: utime+stime (/proc/<pid>/stat) of every process `up`
// started (its children, found in /proc by parent pid and named by their command line, and `up`
// itself), read when the processes are quiet before the timed questions and again once the
// trace collector has stored every trace of them (the processes quiet, then the `trace`
// service's stats count every session, none running, nothing pending): the collector's CPU
// includes storing. Reported per process: ms CPU per question; throughput (questions / wall
// time from the first send to the last FINAL); p50/p99 latency (send to FINAL); bytes stored per
// trace: growth of the trace store's live pages ((page_count − freelist_count) × page_size, read
// with SQLite: WAL contents included, the WAL file's reused space not) over the traces stored;
// the trace files' growth (traces.db + WAL, as `trace` stats report it) and the explain bytes a
// client received per question beside it (0 under explain=none; e's is what the stream costs).
//
// Baselines, same run, same pipeline:
//   direct handler  rag::handle_graph_rag called in this process, one question at a time, on a
//                   RequestContext whose replies go to an inproc PAIR drained here (no worker
//                   runtime I/O loop, no broker hop for the request, its explain messages never
//                   reach the broker or the collector); its calls to embeddings, store and llm
//                   go over the real bus. Its CPU is this process's (handler thread and the
//                   call client's zmq I/O thread), the others' from /proc as above.
//   store batch     the `triples-batch` requests of each question's topic entities (edges out
//                   of and into each, limit 30 per pattern, graph-rag's defaults) through the
//                   bus to the store worker, against GraphStore::match_batch of the same
//                   patterns on the same file in this process (both answers must agree).
// RDF load through the bus against `rapper -c` is bench_load's (issue 33's fourth target).
//
// Usage: bench_cost [--quick] [--queries N] [--warmup N] [--baseline-queries N]
//                   [--store-requests N] [--stream] [--data DIR] [--dir DIR] [--json FILE]
//                   [--glassbox PATH]
//   --glassbox  run the pipeline with another build's binary (an A/B: the commit before a
//               change, run back to back with this build's)
//   --queries   timed questions per configuration (default 1,000; --quick 40)
//   --baseline-queries  questions through the direct handler (default 300; --quick 20)
//   --store-requests    store batches, each way (default 2,000; --quick 200)
//   --stream    the clients ask graph-rag to stream its answer (PARTIAL chunks), as `glassbox
//               invoke` does by default (the direct handler does not stream)
//   --data      the shared data folder (default <source>/../shared/data); without its
//               kg-pathquestion files the benchmark says so and exits 0
//   --dir       keep the home (the loaded collection is reused) and the logs there
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "bench/bench_util.hpp"
#include "bench/run_facts.hpp"
#include "bus/bus_client.hpp"
#include "bus/curve_keys.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"
#include "storage/sqlite_connection.hpp"
#include "storage/sqlite_database.hpp"
#include "tests/support/process.hpp"
#include "workers/rag/graph_rag_service.hpp"
#include "workers/rag/rag_config.hpp"
#include "workers/runtime/detail/slot_channel.hpp"
#include "workers/runtime/request_context.hpp"
#include "workers/store/graph_store.hpp"

#ifndef GLASSBOX_BINARY
#define GLASSBOX_BINARY "glassbox"
#endif
#ifndef GLASSBOX_SOURCE_DIR
#define GLASSBOX_SOURCE_DIR "."
#endif

namespace {

using namespace glassbox;
using namespace glassbox::bench;
namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr std::string_view kProgram = "bench_cost";
const std::string kCollection = "pathquestion";
const std::string kEntity = "http://example.org/pathquestion/e/";
const char* const kExploredEdgesEnv = "GLASSBOX_GRAPH_RAG_EXPLORED_EDGES_RECORDED";
// The processes with a row of their own; every other one `up` started is an idle worker.
const std::vector<std::string> kBusyProcesses = {"broker",          "graph-rag", "store",
                                                 "trace-collector", "llm",       "embeddings"};

[[noreturn]] void die(const std::string& what) { bench::fail(kProgram, what); }

// The glassbox that runs the pipeline: the build's own, or --glassbox PATH (an A/B against
// another build, e.g. the commit before a change).
std::string g_glassbox = GLASSBOX_BINARY;
// --explain-stream: every configuration's clients take the explain stream (for a --glassbox
// binary from before explain=none, whose broker refuses the options frame).
bool g_explain_stream_everywhere = false;

struct Options {
    std::size_t queries = 1000;
    std::size_t warmup = 20;
    std::size_t baseline_queries = 300;
    // Store requests take ~0.4 ms: many, so the store's CPU spans enough clock ticks.
    std::size_t store_requests = 2000;
    fs::path data = fs::path(GLASSBOX_SOURCE_DIR) / ".." / "shared" / "data";
    fs::path dir;
    std::string json_path;
    bool streaming = false;  // --stream: graph-rag streams its answer (`glassbox invoke`'s default)
};

struct RunConfig {
    std::string id;
    std::size_t clients = 2;
    std::optional<std::uint32_t> explored_edges;  // none: the default
    // The clients take the explain stream (`glassbox invoke -x`); otherwise they ask for
    // explain=none, as `glassbox invoke` does.
    bool explain_stream = false;
    bool takes_stream() const { return explain_stream || g_explain_stream_everywhere; }
    std::string describe() const {
        return std::to_string(clients) + " clients, explored edges " +
               (explored_edges ? std::to_string(*explored_edges) : std::string("500 (default)")) +
               (takes_stream() ? ", explain stream (invoke -x)" : ", explain=none (invoke)");
    }
    bus::BusClientConfig client_config(bus::BusClientConfig config) const {
        config.request_options.explain =
            takes_stream() ? bus::ExplainDelivery::kStream : bus::ExplainDelivery::kNone;
        return config;
    }
};

struct Question {
    std::string text;
    std::vector<std::string> topics;  // entity local names
};

std::vector<Question> read_questions(const fs::path& path) {
    std::ifstream in(path);
    std::vector<Question> out;
    std::string line;
    while (std::getline(in, line)) {
        const auto j = json::parse(line, nullptr, false);
        if (!j.is_object() || !j.contains("question") || !j["question"].is_string()) continue;
        Question q{j["question"].get<std::string>(), {}};
        for (const auto& t : j.value("topic_entities", json::array()))
            if (t.is_string()) q.topics.push_back(t.get<std::string>());
        out.push_back(std::move(q));
    }
    return out;
}

// ---- machine and run facts -------------------------------------------------------------------

double process_cpu_ms() {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1000.0 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double thread_cpu_ms() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1000.0 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// ---- /proc -----------------------------------------------------------------------------------

struct ProcStat {
    pid_t ppid = 0;
    double cpu_ms = 0;  // utime + stime
    std::uint64_t start_time = 0;
};

std::optional<ProcStat> read_proc_stat(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');  // the command name may hold spaces
    if (close == std::string::npos || close + 2 > text.size()) return std::nullopt;
    std::istringstream rest(text.substr(close + 2));
    std::vector<std::string> fields;  // fields[0] is stat field 3 (state)
    for (std::string field; rest >> field;) fields.push_back(field);
    if (fields.size() < 20) return std::nullopt;
    static const double tick_ms = 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
    ProcStat s;
    s.ppid = static_cast<pid_t>(std::strtol(fields[1].c_str(), nullptr, 10));
    s.cpu_ms =
        (std::strtod(fields[11].c_str(), nullptr) + std::strtod(fields[12].c_str(), nullptr)) *
        tick_ms;
    s.start_time = std::strtoull(fields[19].c_str(), nullptr, 10);
    return s;
}

// What a child of `up` is, from its command line: "broker", "gateway" or the worker's service.
std::string process_name(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::vector<std::string> args;
    for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (args[i] == "worker" && i + 1 < args.size()) return args[i + 1];
        if (args[i] == "broker" || args[i] == "gateway") return args[i];
    }
    return args.empty() ? "pid " + std::to_string(pid) : fs::path(args[0]).filename().string();
}

struct PipelineProcess {
    std::string name;
    pid_t pid = 0;
    std::uint64_t start_time = 0;
};

// `parent` and its children (two processes of one service are named service, service#2, ...).
std::vector<PipelineProcess> process_tree(pid_t parent) {
    std::vector<PipelineProcess> out;
    if (const auto self = read_proc_stat(parent))
        out.push_back({"up (supervisor)", parent, self->start_time});
    std::map<std::string, int> seen;
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        const auto pid = static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10));
        const auto stat = read_proc_stat(pid);
        if (!stat || stat->ppid != parent) continue;
        std::string process = process_name(pid);
        if (const int n = ++seen[process]; n > 1) process += "#" + std::to_string(n);
        out.push_back({process, pid, stat->start_time});
    }
    return out;
}

// ---- the pipeline ----------------------------------------------------------------------------

// `glassbox up` in `dir`/home, and the clients that reach it.
class Pipeline {
public:
    explicit Pipeline(fs::path dir) : dir_(std::move(dir)), home_(dir_ / "home") {}
    ~Pipeline() { stop(); }
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    void start(std::optional<std::uint32_t> explored_edges);
    void stop() {
        admin_.reset();
        if (up_) up_->terminate(milliseconds{30'000});
        up_.reset();
    }

    const fs::path& home() const { return home_; }
    const std::vector<PipelineProcess>& processes() const { return processes_; }
    // A client on the CLI's key (the one `glassbox invoke` uses), bodies as text only.
    bus::BusClientConfig client_config() const {
        bus::BusClientConfig config;
        config.endpoint = endpoint_;
        config.curve = curve_;
        config.parse_bodies = false;
        return config;
    }

    // CPU ms so far of each process; a process gone or restarted ends the benchmark.
    std::map<std::string, double> cpu_ms() const {
        std::map<std::string, double> out;
        for (const auto& p : processes_) {
            const auto stat = read_proc_stat(p.pid);
            if (!stat || stat->start_time != p.start_time)
                die(p.name + " (pid " + std::to_string(p.pid) + ") exited or was restarted");
            out[p.name] = stat->cpu_ms;
        }
        return out;
    }

    json call(const std::string& service, const json& body) {
        auto replies = admin_->call(service, body, milliseconds{60'000});
        if (!replies) die(service + ": " + replies.error().message);
        return replies->back().body;
    }

    void load_knowledge(const fs::path& kg_dir);

private:
    void read_keys();
    void wait_for_services();

    fs::path dir_;
    fs::path home_;
    int starts_ = 0;
    std::unique_ptr<integration::ChildProcess> up_;
    std::string endpoint_;
    std::optional<bus::CurveClientKeys> curve_;
    std::unique_ptr<bus::BusClient> admin_;
    std::vector<PipelineProcess> processes_;
};

void Pipeline::start(std::optional<std::uint32_t> explored_edges) {
    stop();
    // A fresh trace store per start: the collector's cost must not depend on earlier runs.
    for (const char* suffix : {"", "-wal", "-shm"})
        fs::remove(home_ / (std::string("traces.db") + suffix));
    if (explored_edges) {
        ::setenv(kExploredEdgesEnv, std::to_string(*explored_edges).c_str(), 1);
    } else {
        ::unsetenv(kExploredEdgesEnv);
    }
    const auto ready = dir_ / "up.ready.json";
    fs::remove(ready);
    up_ = std::make_unique<integration::ChildProcess>(
        "up-" + std::to_string(++starts_),
        std::vector<std::string>{g_glassbox, "up", "--home", home_.string(), "--bind",
                                 "tcp://127.0.0.1:*", "--pub", "tcp://127.0.0.1:*",
                                 "--gateway-listen", "127.0.0.1:0", "--ready-file", ready.string()},
        dir_);
    ::unsetenv(kExploredEdgesEnv);  // `up` and its children have it from the fork
    const auto info = integration::wait_for_ready_file(ready, *up_, milliseconds{120'000});
    if (!info) die("glassbox up did not start: " + up_->stderr_text());
    endpoint_ = info->value("endpoint", "");
    read_keys();
    bus::BusClientConfig config = client_config();
    config.parse_bodies = true;
    admin_ = std::make_unique<bus::BusClient>(config);
    wait_for_services();
    processes_ = process_tree(up_->pid());
}

void Pipeline::read_keys() {
    const auto keys = home_ / "keys";
    auto server = bus::read_public_certificate(keys / "broker.key");
    auto own = bus::read_secret_certificate(keys / "client.key_secret");
    if (!server || !own) {
        die("the CURVE keys `up` makes in " + keys.string() + ": " +
            (server ? own.error().message : server.error().message));
    }
    curve_ = bus::CurveClientKeys{server->public_key, own->public_key, own->secret_key};
}

void Pipeline::wait_for_services() {
    for (const char* service : {"trace", "embeddings", "store", "llm", "graph-rag"}) {
        const auto until = Clock::now() + milliseconds{60'000};
        for (;;) {
            auto r = admin_->call("mmi.service", json(service), milliseconds{2000});
            if (r && r->back().body == json(200)) break;
            if (!up_->running() || Clock::now() > until)
                die(std::string("service ") + service + " never came up; see " +
                    (home_ / "logs").string());
            std::this_thread::sleep_for(milliseconds{100});
        }
    }
}

// Loads kb.nt and labels.nt unless the collection already holds as many quads as they have
// statements (a --dir reused).
void Pipeline::load_knowledge(const fs::path& kg_dir) {
    const std::vector<fs::path> files = {kg_dir / "kb.nt", kg_dir / "labels.nt"};
    std::uint64_t statements = 0;
    for (const auto& file : files) {
        std::ifstream in(file);
        for (std::string line; std::getline(in, line);)
            if (!line.empty() && line[0] != '#') ++statements;
    }
    // An error (a collection with nothing loaded yet) counts as no quads.
    const auto stats = admin_->call("store", json{{"op", "stats"}, {"collection", kCollection}},
                                    milliseconds{60'000});
    if (stats && stats->back().body.value("quads", std::uint64_t{0}) == statements) {
        std::cerr << "bench_cost: collection " << kCollection << " reused (" << statements
                  << " quads)\n";
        return;
    }
    const auto start = Clock::now();
    auto r =
        integration::run_command({g_glassbox, "load", "rdf", files[0].string(), files[1].string(),
                                  "--collection", kCollection, "--home", home_.string(), "--json"},
                                 dir_, std::chrono::minutes{30});
    if (r.timed_out || !integration::exited_with(r, 0))
        die("glassbox load rdf failed (" + r.status.describe() + "): " + r.err);
    std::cerr << "bench_cost: loaded " << statements << " statements into " << kCollection << " in "
              << fmt(ms_since(start) / 1000.0, 1) << " s\n";
}

// ---- the trace store -------------------------------------------------------------------------

// Live bytes of the trace store: (page_count - freelist_count) * page_size as a reader sees it
// (committed WAL frames included). nullopt when it cannot be read.
std::optional<double> trace_store_live_bytes(const fs::path& home) {
    storage::OpenOptions options;
    options.read_only = true;
    options.create = false;
    options.label = "trace store (bench)";
    auto db = storage::Database::open(home / "traces.db", options);
    if (!db) return std::nullopt;
    std::map<std::string, double> value;
    for (const char* pragma : {"page_size", "page_count", "freelist_count"}) {
        auto statement = (*db)->prepare_once(std::string("PRAGMA ") + pragma);
        if (!statement) return std::nullopt;
        auto n = statement->first([](const storage::Row& row) { return row.int64(0); });
        if (!n || !*n) return std::nullopt;
        value[pragma] = static_cast<double>(**n);
    }
    return (value["page_count"] - value["freelist_count"]) * value["page_size"];
}

// What the trace store holds at one moment, with every process's CPU read just before it.
struct Snapshot {
    std::map<std::string, double> cpu_ms;
    std::int64_t sessions = 0;
    std::int64_t running = 0;
    double live_bytes = 0;
    double file_bytes = 0;  // traces.db + WAL
    bool settled = false;   // every expected session stored, none running, nothing pending
    int stats_calls = 0;
    double wait_s = 0;
};

// Waits until no process of the pipeline has used more than 20 ms CPU in 300 ms (10 s at most).
void wait_quiet(const Pipeline& pipeline) {
    const auto total = [&pipeline] {
        double sum = 0;
        for (const auto& [name, ms] : pipeline.cpu_ms()) sum += ms;
        return sum;
    };
    std::vector<double> samples = {total()};
    const auto until = Clock::now() + milliseconds{10'000};
    while (Clock::now() < until) {
        std::this_thread::sleep_for(milliseconds{100});
        samples.push_back(total());
        if (samples.size() >= 4 && samples.back() - samples[samples.size() - 4] <= 20.0) return;
    }
}

// Reads the CPU of every process once the pipeline is quiet and the trace service counts
// `sessions` sessions (less `tolerance`: failed requests may leave none), none running, every
// delivery stored; waits and reads again otherwise (60 s at most, then `settled` is false). A
// stats call made before the last read is in that read's CPU (stats_calls says how many).
Snapshot settle(Pipeline& pipeline, std::int64_t sessions, std::int64_t tolerance) {
    const auto start = Clock::now();
    Snapshot s;
    for (;;) {
        wait_quiet(pipeline);
        s.cpu_ms = pipeline.cpu_ms();
        const json stats = pipeline.call("trace", json{{"op", "stats"}});
        ++s.stats_calls;
        s.sessions = stats.value("sessions", std::int64_t{0});
        s.running = stats.value("by_status", json::object()).value("running", std::int64_t{0});
        s.file_bytes = stats.value("db_bytes", 0.0);
        const json collector = stats.value("collector", json::object());
        const bool drained = collector.value("pending", std::uint64_t{1}) == 0 &&
                             collector.value("acked", std::uint64_t{0}) ==
                                 collector.value("deliveries", std::uint64_t{1});
        s.settled = s.sessions >= sessions - tolerance && s.running == 0 && drained;
        s.wait_s = ms_since(start) / 1000.0;
        if (s.settled || s.wait_s > 60.0) break;
        std::this_thread::sleep_for(milliseconds{200});
    }
    s.live_bytes = trace_store_live_bytes(pipeline.home()).value_or(0.0);
    return s;
}

// ---- the clients -----------------------------------------------------------------------------

struct ClientRun {
    std::vector<double> latency_ms;
    std::size_t errors = 0;
    std::vector<std::string> error_samples;
    std::uint64_t explain_bytes = 0;  // explain message bodies received
    double wall_s = 0;                // first send to last FINAL
    double client_cpu_ms = 0;         // this process meanwhile
};

struct Answer {
    bool ok = false;
    double ms = 0;
    std::uint64_t explain_bytes = 0;
    std::string error;
};

Answer ask(bus::BusClient& client, const std::string& question, bool streaming) {
    schema::GraphRagQuery query;
    query.query = question;
    query.collection = kCollection;
    query.streaming = streaming;
    Answer a;
    const auto start = Clock::now();
    auto sent = client.send("graph-rag", schema::encode(query), milliseconds{60'000});
    if (!sent) {
        a.error = sent.error().message;
        return a;
    }
    for (;;) {
        auto reply = client.next(*sent, milliseconds{70'000});
        if (!reply) {
            a.error = reply.error().message;
            return a;
        }
        if (reply->kind == bus::ReplyKind::kExplain) a.explain_bytes += reply->text.size();
        if (!reply->terminal()) continue;
        a.ms = ms_since(start);
        a.ok = reply->kind == bus::ReplyKind::kFinal;
        if (!a.ok && reply->error)
            a.error =
                std::string(base::to_string(reply->error->type)) + ": " + reply->error->message;
        return a;
    }
}

// `count` questions (questions[i % size], i from 0) from `clients` threads, each with its own
// connection, established before the clock starts.
ClientRun run_clients(const bus::BusClientConfig& config, const std::vector<Question>& questions,
                      std::size_t clients, std::size_t count, bool streaming) {
    ClientRun run;
    std::mutex mutex;
    std::atomic<std::size_t> next{0};
    std::latch connected(static_cast<std::ptrdiff_t>(clients) + 1);
    std::latch go(1);
    std::vector<std::jthread> threads;
    for (std::size_t c = 0; c < clients; ++c) {
        threads.emplace_back([&] {
            bus::BusClient client(config);
            (void)client.call("mmi.service", json("graph-rag"), milliseconds{10'000});
            connected.count_down();
            go.wait();
            for (std::size_t i = next++; i < count; i = next++) {
                const Answer a = ask(client, questions[i % questions.size()].text, streaming);
                std::lock_guard lock(mutex);
                run.explain_bytes += a.explain_bytes;
                if (a.ok) {
                    run.latency_ms.push_back(a.ms);
                } else if (++run.errors <= 3) {
                    run.error_samples.push_back(a.error);
                }
            }
        });
    }
    connected.arrive_and_wait();
    const double cpu_start = process_cpu_ms();
    const auto start = Clock::now();
    go.count_down();
    for (auto& t : threads) t.join();
    run.wall_s = ms_since(start) / 1000.0;
    run.client_cpu_ms = process_cpu_ms() - cpu_start;
    return run;
}

// ---- one configuration -----------------------------------------------------------------------

struct ConfigFigures {
    RunConfig config;
    std::size_t queries = 0;
    ClientRun run;
    std::map<std::string, double> cpu_ms;  // per process, over the timed phase and its storing
    Snapshot before, after;
    std::string load_at_start;
};

ConfigFigures measure_config(Pipeline& pipeline, const RunConfig& config, const Options& o,
                             const std::vector<Question>& questions, std::int64_t& traces) {
    ConfigFigures f;
    f.config = config;
    f.queries = o.queries;
    f.load_at_start = load_average();
    const bus::BusClientConfig clients = config.client_config(pipeline.client_config());
    const auto warm = run_clients(clients, questions, config.clients, o.warmup, o.streaming);
    traces += static_cast<std::int64_t>(o.warmup);
    f.before = settle(pipeline, traces, static_cast<std::int64_t>(warm.errors));
    f.run = run_clients(clients, questions, config.clients, o.queries, o.streaming);
    traces += static_cast<std::int64_t>(o.queries);
    f.after = settle(pipeline, traces, static_cast<std::int64_t>(f.run.errors + warm.errors));
    for (const auto& [name, ms] : f.after.cpu_ms) f.cpu_ms[name] = ms - f.before.cpu_ms[name];
    std::cerr << "bench_cost: " << config.id << " (" << config.describe()
              << "): " << fmt(static_cast<double>(o.queries) / f.run.wall_s, 1)
              << " questions/s, p50 " << fmt(percentile(f.run.latency_ms, 0.5), 1) << " ms, "
              << f.run.errors << " errors" << (f.after.settled ? "" : ", traces NOT all stored")
              << "\n";
    return f;
}

// ---- baseline: graph-rag's handler called directly -------------------------------------------

struct HandlerBaseline {
    std::size_t queries = 0;
    std::vector<double> latency_ms;
    std::size_t errors = 0;
    double handler_thread_cpu_ms = 0;  // the handler's own thread
    double process_cpu_ms = 0;         // this process: the handler and its call client's I/O
    double wall_s = 0;
    std::uint64_t explain_bytes = 0;  // the explain bodies it handed to its channel
    std::map<std::string, double> pipeline_cpu_ms;
};

// Takes everything the handler sent on its channel: explain bodies counted; true when a FINAL
// ([R]) was among them.
bool drain_channel(zmq::socket_t& io, std::uint64_t& explain_bytes) {
    namespace channel = runtime::detail::channel;
    bool final_seen = false;
    for (;;) {
        std::vector<zmq::message_t> frames;
        const auto got =
            zmq::recv_multipart(io, std::back_inserter(frames), zmq::recv_flags::dontwait);
        if (!got) return final_seen;
        if (frames.empty() || frames[0].size() != 1) continue;
        const char kind = *static_cast<const char*>(frames[0].data());
        if (kind == channel::kExplain) explain_bytes += frames.back().size();
        if (kind == channel::kReply) final_seen = true;
    }
}

// One question through handle_graph_rag on this thread; false when it did not end in a FINAL.
bool handle_directly(const rag::RagConfig& config, const std::string& question, std::size_t n,
                     runtime::detail::HandlerChannel& channel, bus::BusClient& calls,
                     zmq::socket_t& io, std::uint64_t& explain_bytes) {
    schema::GraphRagQuery query;
    query.query = question;
    query.collection = kCollection;
    runtime::RequestMeta meta;
    meta.request_id = "bench-cost-" + std::to_string(n);
    meta.service = "graph-rag";
    meta.deadline_ms = milliseconds{60'000};
    meta.deadline = Clock::now() + milliseconds{60'000};
    meta.client = "GBC01";
    runtime::RequestContext context(std::move(meta), schema::encode(query), "bench-cost-handler",
                                    channel, [&calls]() -> bus::BusClient& { return calls; });
    rag::handle_graph_rag(context, config);
    context.finish_if_open(base::make_error(base::ErrorType::kInternal, "no reply"));
    return drain_channel(io, explain_bytes);
}

HandlerBaseline handler_baseline(Pipeline& pipeline, const std::vector<Question>& questions,
                                 std::size_t queries, std::size_t warmup) {
    zmq::context_t context{1};
    zmq::socket_t io(context, zmq::socket_type::pair);
    zmq::socket_t handler_end(context, zmq::socket_type::pair);
    io.set(zmq::sockopt::rcvhwm, 0);
    handler_end.set(zmq::sockopt::sndhwm, 0);
    io.bind("inproc://bench-cost-handler");
    handler_end.connect("inproc://bench-cost-handler");
    runtime::detail::HandlerChannel channel{handler_end};
    bus::BusClient calls(context, pipeline.client_config());  // as the worker's handler has
    const rag::RagConfig config;                              // the worker's defaults
    HandlerBaseline b;
    b.queries = queries;
    std::uint64_t ignored = 0;
    for (std::size_t i = 0; i < warmup; ++i)
        handle_directly(config, questions[i % questions.size()].text, i, channel, calls, io,
                        ignored);
    wait_quiet(pipeline);
    const auto before = pipeline.cpu_ms();
    const double process_start = process_cpu_ms();
    const auto start = Clock::now();
    for (std::size_t i = 0; i < queries; ++i) {
        const double cpu = thread_cpu_ms();
        const auto t0 = Clock::now();
        const bool ok = handle_directly(config, questions[i % questions.size()].text, warmup + i,
                                        channel, calls, io, b.explain_bytes);
        b.handler_thread_cpu_ms += thread_cpu_ms() - cpu;
        if (ok) b.latency_ms.push_back(ms_since(t0));
        b.errors += ok ? 0 : 1;
    }
    b.wall_s = ms_since(start) / 1000.0;
    b.process_cpu_ms = process_cpu_ms() - process_start;
    wait_quiet(pipeline);
    for (const auto& [name, ms] : pipeline.cpu_ms()) b.pipeline_cpu_ms[name] = ms - before.at(name);
    std::cerr << "bench_cost: direct handler: p50 " << fmt(percentile(b.latency_ms, 0.5), 1)
              << " ms, " << b.errors << " errors\n";
    return b;
}

// ---- baseline: the store's batched query called directly ------------------------------------

struct StoreBaseline {
    std::size_t requests = 0;
    std::size_t patterns = 0;
    std::uint64_t rows = 0;
    std::vector<double> bus_ms, local_ms;
    double store_cpu_ms = 0;  // the store process over the bus phase
    double local_cpu_ms = 0;  // this thread over the in-process calls
    bool agree = true;
};

// Per question, the edges out of and into each topic entity (graph-rag's first exploration hop
// from them), in the default graph.
std::vector<std::vector<schema::TriplePattern>> topic_patterns(
    const std::vector<Question>& questions, std::size_t requests) {
    std::vector<std::vector<schema::TriplePattern>> out;
    for (std::size_t i = 0; out.size() < requests && i < requests * 4; ++i) {
        const auto& q = questions[i % questions.size()];
        std::vector<schema::TriplePattern> patterns;
        for (const auto& topic : q.topics) {
            const auto node = schema::iri(kEntity + topic);
            patterns.push_back({node, std::nullopt, std::nullopt, std::string()});
            patterns.push_back({std::nullopt, std::nullopt, node, std::string()});
        }
        if (!patterns.empty()) out.push_back(std::move(patterns));
    }
    return out;
}

using Batches = std::vector<std::vector<schema::TriplePattern>>;
using BatchAnswer = std::vector<std::vector<schema::Triple>>;

// The batches as `triples-batch` requests to the store worker (after 10 to warm up); their
// answers, for the in-process run to agree with.
std::vector<BatchAnswer> store_through_bus(Pipeline& pipeline, const Batches& batches,
                                           StoreBaseline& b) {
    bus::BusClient client(pipeline.client_config());
    const auto once = [&](const std::vector<schema::TriplePattern>& patterns) {
        json body = schema::encode(
            schema::TriplesQueryBatch{patterns, schema::kDefaultTripleLimit, kCollection});
        body["op"] = "triples-batch";
        auto replies = client.call("store", body, milliseconds{30'000});
        if (!replies) die("triples-batch: " + replies.error().message);
        auto answer = schema::decode_text<schema::TriplesBatchResponse>(replies->back().text);
        if (!answer) die("triples-batch reply: " + answer.error().message);
        return std::move(answer->results);
    };
    for (std::size_t i = 0; i < std::min<std::size_t>(10, batches.size()); ++i) once(batches[i]);
    wait_quiet(pipeline);
    const double before = pipeline.cpu_ms().at("store");
    std::vector<BatchAnswer> answers;
    for (const auto& patterns : batches) {
        const auto t0 = Clock::now();
        answers.push_back(once(patterns));
        b.bus_ms.push_back(ms_since(t0));
    }
    wait_quiet(pipeline);
    b.store_cpu_ms = pipeline.cpu_ms().at("store") - before;
    return answers;
}

// The same batches through GraphStore::match_batch on the collection's file, in this thread.
void store_in_process(Pipeline& pipeline, const Batches& batches,
                      const std::vector<BatchAnswer>& answers, StoreBaseline& b) {
    storage::OpenOptions options;
    options.cache_size = -65'536;  // as the store worker opens it
    options.create = false;
    auto db =
        storage::Database::open(pipeline.home() / "knowledge" / (kCollection + ".db"), options);
    if (!db) die("open the collection: " + db.error().message);
    storage::SqliteConnection connection(std::move(db).value());
    auto graph = store::GraphStore::open(connection);
    if (!graph) die("graph store: " + graph.error().message);
    for (std::size_t i = 0; i < std::min<std::size_t>(10, batches.size()); ++i)
        (void)(*graph)->match_batch(batches[i], schema::kDefaultTripleLimit);
    for (std::size_t i = 0; i < batches.size(); ++i) {
        const double cpu = thread_cpu_ms();
        const auto t0 = Clock::now();
        auto local = (*graph)->match_batch(batches[i], schema::kDefaultTripleLimit);
        b.local_ms.push_back(ms_since(t0));
        b.local_cpu_ms += thread_cpu_ms() - cpu;
        if (!local) die("match_batch: " + local.error().message);
        for (const auto& r : *local) b.rows += r.size();
        if (*local != answers[i]) b.agree = false;
    }
}

StoreBaseline store_baseline(Pipeline& pipeline, const std::vector<Question>& questions,
                             std::size_t requests) {
    const Batches batches = topic_patterns(questions, requests);
    StoreBaseline b;
    b.requests = batches.size();
    for (const auto& patterns : batches) b.patterns += patterns.size();
    if (batches.empty()) return b;
    const auto answers = store_through_bus(pipeline, batches, b);
    store_in_process(pipeline, batches, answers, b);
    std::cerr << "bench_cost: store batch: bus p50 " << fmt(percentile(b.bus_ms, 0.5), 3)
              << " ms, in-process p50 " << fmt(percentile(b.local_ms, 0.5), 3) << " ms\n";
    return b;
}

// ---- the report ------------------------------------------------------------------------------

struct Results {
    std::string started, ended, commit, load_at_start, load_at_end;
    std::vector<ConfigFigures> configs;
    HandlerBaseline handler;
    StoreBaseline store;
    std::vector<std::string> idle;  // the processes in the idle row
    bool streaming = false;
};

double sum_of(const std::map<std::string, double>& cpu) {
    double sum = 0;
    for (const auto& [name, ms] : cpu) sum += ms;
    return sum;
}

double idle_of(const std::map<std::string, double>& cpu) {
    double sum = 0;
    for (const auto& [name, ms] : cpu)
        if (std::find(kBusyProcesses.begin(), kBusyProcesses.end(), name) == kBusyProcesses.end())
            sum += ms;
    return sum;
}

double per_question(double ms, std::size_t questions) {
    return questions ? ms / static_cast<double>(questions) : 0.0;
}

double total_per_question(const ConfigFigures& f) {
    return per_question(sum_of(f.cpu_ms), f.queries);
}

double stored_kb_per_trace(const ConfigFigures& f) {
    const auto traces =
        static_cast<double>(std::max<std::int64_t>(1, f.after.sessions - f.before.sessions));
    return (f.after.live_bytes - f.before.live_bytes) / traces / 1000.0;
}

double file_kb_per_trace(const ConfigFigures& f) {
    const auto traces =
        static_cast<double>(std::max<std::int64_t>(1, f.after.sessions - f.before.sessions));
    return (f.after.file_bytes - f.before.file_bytes) / traces / 1000.0;
}

// The direct handler's CPU by row: graph-rag is this process (the worker sat idle: its ticks go
// to the idle row).
std::map<std::string, double> handler_rows(const HandlerBaseline& h) {
    std::map<std::string, double> rows = h.pipeline_cpu_ms;
    rows["graph-rag worker (idle)"] = rows["graph-rag"];
    rows["graph-rag"] = h.process_cpu_ms;
    return rows;
}

void print_cpu_table(const Results& r, std::ostream& out) {
    out << "### CPU per question (ms; utime+stime from /proc over the timed questions and the "
           "storing of their traces)\n\n| process |";
    for (const auto& f : r.configs)
        out << ' ' << f.config.id << ": " << f.config.describe() << " |";
    out << " direct handler, 1 in flight |\n|---|";
    for (std::size_t i = 0; i <= r.configs.size(); ++i) out << "---:|";
    out << '\n';
    const auto handler = handler_rows(r.handler);
    const auto row = [&](const std::string& label, auto value) {
        out << "| " << label << " |";
        for (const auto& f : r.configs)
            out << ' ' << fmt(per_question(value(f.cpu_ms), f.queries), 2) << " |";
        out << ' ' << fmt(per_question(value(handler), r.handler.queries), 2) << " |\n";
    };
    for (const auto& name : kBusyProcesses)
        row(name == "graph-rag" ? "graph-rag (direct: this process)" : name,
            [&name](const std::map<std::string, double>& cpu) {
                const auto it = cpu.find(name);
                return it == cpu.end() ? 0.0 : it->second;
            });
    std::string idle;
    for (const auto& name : r.idle) idle += (idle.empty() ? "" : ", ") + name;
    row("idle workers (" + idle + ")", idle_of);
    row("**all**", sum_of);
    out << "| bench clients (this process; not in all) |";
    for (const auto& f : r.configs)
        out << ' ' << fmt(per_question(f.run.client_cpu_ms, f.queries), 2) << " |";
    out << " – |\n\nDirect handler, graph-rag's own thread only: "
        << fmt(per_question(r.handler.handler_thread_cpu_ms, r.handler.queries), 2)
        << " ms per question (the rest of its row is the call client's zmq I/O thread; the "
           "graph-rag worker, idle then, is in its idle row).\n\n";
}

void print_run_table(const Results& r, std::ostream& out) {
    out << "### Throughput, latency, trace size\n\n| |";
    for (const auto& f : r.configs) out << ' ' << f.config.id << " |";
    out << " direct handler |\n|---|";
    for (std::size_t i = 0; i <= r.configs.size(); ++i) out << "---:|";
    out << '\n';
    const auto& h = r.handler;
    const auto row = [&](const std::string& label, auto value, const std::string& direct) {
        out << "| " << label << " |";
        for (const auto& f : r.configs) out << ' ' << value(f) << " |";
        out << ' ' << direct << " |\n";
    };
    row(
        "questions (errors)",
        [](const ConfigFigures& f) {
            return std::to_string(f.queries) + " (" + std::to_string(f.run.errors) + ")";
        },
        std::to_string(h.queries) + " (" + std::to_string(h.errors) + ")");
    row(
        "throughput, questions/s",
        [](const ConfigFigures& f) {
            return fmt(static_cast<double>(f.queries) / f.run.wall_s, 1);
        },
        fmt(static_cast<double>(h.queries) / h.wall_s, 1));
    row(
        "p50 ms", [](const ConfigFigures& f) { return fmt(percentile(f.run.latency_ms, 0.5), 1); },
        fmt(percentile(h.latency_ms, 0.5), 1));
    row(
        "p99 ms", [](const ConfigFigures& f) { return fmt(percentile(f.run.latency_ms, 0.99), 1); },
        fmt(percentile(h.latency_ms, 0.99), 1));
    row(
        "stored KB per trace (live pages)",
        [](const ConfigFigures& f) { return fmt(stored_kb_per_trace(f), 1); }, "–");
    row(
        "trace files' growth, KB per trace (db + WAL)",
        [](const ConfigFigures& f) { return fmt(file_kb_per_trace(f), 1); }, "–");
    row(
        "explain KB per question received (0: explain=none)",
        [](const ConfigFigures& f) {
            return fmt(
                static_cast<double>(f.run.explain_bytes) / static_cast<double>(f.queries) / 1000.0,
                1);
        },
        fmt(static_cast<double>(h.explain_bytes) /
                static_cast<double>(std::max<std::size_t>(1, h.queries)) / 1000.0,
            1) +
            " (sent)");
    row(
        "traces stored / sent; stats calls",
        [](const ConfigFigures& f) {
            return std::to_string(f.after.sessions - f.before.sessions) + " / " +
                   std::to_string(f.queries) + (f.after.settled ? "" : " NOT SETTLED") + "; " +
                   std::to_string(f.after.stats_calls);
        },
        "–");
    row(
        "load average at its start", [](const ConfigFigures& f) { return f.load_at_start; }, "–");
    out << '\n';
}

void print_store(const StoreBaseline& s, std::ostream& out) {
    const double n = static_cast<double>(std::max<std::size_t>(1, s.requests));
    out << "### The store's batched query (" << s.requests << " `triples-batch` requests, "
        << fmt(static_cast<double>(s.patterns) / n, 1) << " patterns and "
        << fmt(static_cast<double>(s.rows) / n, 1)
        << " triples each: the edges out of and into each question's topic entities, limit "
        << schema::kDefaultTripleLimit << ")\n\n| | p50 ms | p99 ms | CPU ms per request |\n"
        << "|---|---:|---:|---:|\n| through the bus (store worker's CPU) | "
        << fmt(percentile(s.bus_ms, 0.5), 3) << " | " << fmt(percentile(s.bus_ms, 0.99), 3) << " | "
        << fmt(s.store_cpu_ms / n, 3) << " |\n| in-process match_batch (thread CPU) | "
        << fmt(percentile(s.local_ms, 0.5), 3) << " | " << fmt(percentile(s.local_ms, 0.99), 3)
        << " | " << fmt(s.local_cpu_ms / n, 3) << " |\n\nratio bus/in-process: p50 "
        << fmt(percentile(s.bus_ms, 0.5) / std::max(percentile(s.local_ms, 0.5), 1e-6), 2)
        << ", CPU " << fmt(s.store_cpu_ms / std::max(s.local_cpu_ms, 1e-6), 2)
        << (s.agree ? "; the answers agree" : "; **the answers differ**") << "\n\n";
}

const ConfigFigures* find_config(const Results& r, const std::string& id) {
    for (const auto& f : r.configs)
        if (f.config.id == id) return &f;
    return nullptr;
}

double process_per_question(const ConfigFigures& f, const std::string& name) {
    const auto it = f.cpu_ms.find(name);
    return per_question(it == f.cpu_ms.end() ? 0.0 : it->second, f.queries);
}

// c and e differ only in the explain option of their clients, measured back to back on one start
// of the pipeline: what sending every explain message to every client costs.
void print_explain_option(const Results& r, std::ostream& out) {
    const auto* c = find_config(r, "c");
    const auto* e = find_config(r, "e");
    if (c == nullptr || e == nullptr) return;
    const auto change = [](double before, double after) {
        return before > 0 ? fmt((after - before) / before * 100.0, 0) + " %" : std::string("–");
    };
    const auto line = [&](const std::string& label, double stream, double none) {
        out << "| " << label << " | " << fmt(stream, 2) << " | " << fmt(none, 2) << " | "
            << change(stream, none) << " |\n";
    };
    const auto kb = [](const ConfigFigures& f) {
        return fmt(
            static_cast<double>(f.run.explain_bytes) / static_cast<double>(f.queries) / 1000.0, 1);
    };
    const auto qps = [](const ConfigFigures& f) {
        return fmt(static_cast<double>(f.queries) / f.run.wall_s, 1);
    };
    out << "### explain=none against the explain stream (e against c: 8 clients, the defaults)\n\n"
           "| ms CPU per question | e: explain stream (invoke -x; every client before "
           "explain=none) | c: explain=none (invoke) | change |\n|---|---:|---:|---:|\n";
    line("broker", process_per_question(*e, "broker"), process_per_question(*c, "broker"));
    line("all processes", total_per_question(*e), total_per_question(*c));
    line("bench clients (this process)", per_question(e->run.client_cpu_ms, e->queries),
         per_question(c->run.client_cpu_ms, c->queries));
    out << "\nexplain KB per question received: " << kb(*e) << " (e), " << kb(*c)
        << " (c); stored KB per trace " << fmt(stored_kb_per_trace(*e), 1) << " (e), "
        << fmt(stored_kb_per_trace(*c), 1) << " (c); throughput " << qps(*e) << " (e), " << qps(*c)
        << " (c) questions/s.\n\n";
}

void print_targets(const Results& r, std::ostream& out) {
    const auto verdict = [](bool met) { return met ? std::string("met") : std::string("NOT met"); };
    out << "### Targets (issue 33)\n\n";
    if (const auto* c = find_config(r, "c")) {
        const double total = total_per_question(*c);
        const double kb = stored_kb_per_trace(*c);
        out << "- target: total CPU/question at 8 clients ≤ 10 ms (c, the defaults, explain=none "
               "as `glassbox invoke`): "
            << verdict(total <= 10.0) << " (" << fmt(total, 2) << " ms)\n"
            << "- target: stored per trace ≤ 80 KB (c, the defaults): " << verdict(kb <= 80.0)
            << " (" << fmt(kb, 1) << " KB)\n"
            << "- throughput at 8 clients (c): "
            << fmt(static_cast<double>(c->queries) / c->run.wall_s, 1)
            << " questions/s: the \"before\" figure of the ≥ 3× target\n";
    }
    out << "- RDF load through the bus ≥ 0.5× `rapper -c`: measured by bench_load "
           "(bench/RESULTS.md, "
           "knowledge layer)\n";
}

void report(const Results& r, std::ostream& out) {
    out << "## bench_cost\n\nRun " << r.started << " – " << r.ended << ", commit `" << r.commit
        << "`, load average (1/5/15 min) " << r.load_at_start << " at the start, " << r.load_at_end
        << " at the end on " << std::thread::hardware_concurrency()
        << " CPUs. `glassbox up` with its defaults (CURVE, extractive llm), the PathQuestion KB, "
        << r.configs.front().queries << " timed questions per configuration after warm-up, "
        << (r.streaming ? "graph-rag streaming its answer (--stream).\n"
                        : "graph-rag without streaming.\n");
    if (std::strtod(r.load_at_start.c_str(), nullptr) > 0.5)
        out << "\nWARNING: machine not quiet (load average " << r.load_at_start
            << " at the start): the figures are noisy.\n";
    out << '\n';
    print_cpu_table(r, out);
    print_run_table(r, out);
    print_store(r.store, out);
    print_explain_option(r, out);
    print_targets(r, out);
    for (const auto& f : r.configs)
        for (const auto& e : f.run.error_samples) out << "\n- " << f.config.id << " error: " << e;
    out << std::endl;
}

json to_json(const ConfigFigures& f) {
    json cpu = json::object();
    for (const auto& [name, ms] : f.cpu_ms) cpu[name] = per_question(ms, f.queries);
    return {{"id", f.config.id},
            {"clients", f.config.clients},
            {"explored_edges_recorded", f.config.explored_edges.value_or(500)},
            {"explain", f.config.takes_stream() ? "stream" : "none"},
            {"queries", f.queries},
            {"errors", f.run.errors},
            {"cpu_ms_per_question", cpu},
            {"cpu_ms_per_question_all", total_per_question(f)},
            {"bench_client_cpu_ms_per_question", per_question(f.run.client_cpu_ms, f.queries)},
            {"throughput_qps", static_cast<double>(f.queries) / f.run.wall_s},
            {"p50_ms", percentile(f.run.latency_ms, 0.5)},
            {"p99_ms", percentile(f.run.latency_ms, 0.99)},
            {"stored_kb_per_trace", stored_kb_per_trace(f)},
            {"trace_files_kb_per_trace", file_kb_per_trace(f)},
            {"explain_bytes_received", f.run.explain_bytes},
            {"traces_stored", f.after.sessions - f.before.sessions},
            {"settled", f.after.settled},
            {"load_at_start", f.load_at_start},
            {"latency_ms", f.run.latency_ms}};
}

json to_json(const Results& r) {
    json configs = json::array();
    for (const auto& f : r.configs) configs.push_back(to_json(f));
    json handler_cpu = json::object();
    for (const auto& [name, ms] : handler_rows(r.handler))
        handler_cpu[name] = per_question(ms, r.handler.queries);
    const auto& h = r.handler;
    const auto& s = r.store;
    return {
        {"started", r.started},
        {"ended", r.ended},
        {"commit", r.commit},
        {"streaming", r.streaming},
        {"load_at_start", r.load_at_start},
        {"load_at_end", r.load_at_end},
        {"configs", configs},
        {"direct_handler",
         {{"queries", h.queries},
          {"errors", h.errors},
          {"cpu_ms_per_question", handler_cpu},
          {"handler_thread_cpu_ms_per_question", per_question(h.handler_thread_cpu_ms, h.queries)},
          {"throughput_qps", static_cast<double>(h.queries) / h.wall_s},
          {"p50_ms", percentile(h.latency_ms, 0.5)},
          {"p99_ms", percentile(h.latency_ms, 0.99)},
          {"explain_bytes_sent", h.explain_bytes}}},
        {"store_batch",
         {{"requests", s.requests},
          {"patterns", s.patterns},
          {"rows", s.rows},
          {"bus_p50_ms", percentile(s.bus_ms, 0.5)},
          {"local_p50_ms", percentile(s.local_ms, 0.5)},
          {"store_cpu_ms", s.store_cpu_ms},
          {"local_cpu_ms", s.local_cpu_ms},
          {"agree", s.agree}}}};
}

// ---- main ------------------------------------------------------------------------------------

void usage() {
    std::cerr << "usage: bench_cost [--quick] [--queries N] [--warmup N] [--baseline-queries N]\n"
                 "                  [--store-requests N] [--stream] [--data DIR] [--dir DIR] "
                 "[--json FILE]\n"
                 "                  [--glassbox PATH] [--explain-stream]\n";
}

std::optional<int> read_options(int argc, char** argv, Options& o) {
    bench::Args args(argc, argv, kProgram);
    bool queries_given = false;
    while (args.next()) {
        const std::string& arg = args.arg();
        if (arg == "--quick") {
            if (!queries_given) o.queries = 40;
            o.warmup = 4;
            o.baseline_queries = 20;
            o.store_requests = 200;
        } else if (arg == "--queries") {
            o.queries = args.number();
            queries_given = true;
        } else if (arg == "--warmup") {
            o.warmup = args.number();
        } else if (arg == "--baseline-queries") {
            o.baseline_queries = args.number();
        } else if (arg == "--store-requests") {
            o.store_requests = args.number();
        } else if (arg == "--stream") {
            o.streaming = true;
        } else if (arg == "--data") {
            o.data = args.value();
        } else if (arg == "--dir") {
            o.dir = args.value();
        } else if (arg == "--json") {
            o.json_path = args.value();
        } else if (arg == "--glassbox") {
            g_glassbox = args.value();
        } else if (arg == "--explain-stream") {
            g_explain_stream_everywhere = true;
        } else {
            usage();
            return arg == "--help" ? 0 : 2;
        }
    }
    return std::nullopt;
}

// Every configuration, the pipeline started once per explored-edges setting, and the baselines
// on the first start.
Results run(const Options& o, const std::vector<Question>& questions, const fs::path& dir) {
    Results r;
    r.started = utc_now();
    r.load_at_start = load_average();
    r.commit = git_commit(GLASSBOX_SOURCE_DIR);
    r.streaming = o.streaming;
    const std::vector<RunConfig> configs = {{"a", 2, std::nullopt},
                                            {"c", 8, std::nullopt},
                                            {"e", 8, std::nullopt, true},
                                            {"b", 2, 0u},
                                            {"d", 8, 0u}};
    Pipeline pipeline(dir);
    std::optional<std::optional<std::uint32_t>> running;
    std::int64_t traces = 0;
    for (const auto& config : configs) {
        if (!running || *running != config.explored_edges) {
            pipeline.start(config.explored_edges);
            running = config.explored_edges;
            traces =
                pipeline.call("trace", json{{"op", "stats"}}).value("sessions", std::int64_t{0});
            if (config.id == "a") {
                pipeline.load_knowledge(o.data / "kg-pathquestion");
                r.handler = handler_baseline(pipeline, questions, o.baseline_queries, o.warmup);
                r.store = store_baseline(pipeline, questions, o.store_requests);
                for (const auto& p : pipeline.processes())
                    if (std::find(kBusyProcesses.begin(), kBusyProcesses.end(), p.name) ==
                        kBusyProcesses.end())
                        r.idle.push_back(p.name);
            }
        }
        r.configs.push_back(measure_config(pipeline, config, o, questions, traces));
    }
    pipeline.stop();
    std::sort(
        r.configs.begin(), r.configs.end(),
        [](const ConfigFigures& x, const ConfigFigures& y) { return x.config.id < y.config.id; });
    r.ended = utc_now();
    r.load_at_end = load_average();
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    if (const auto status = read_options(argc, argv, o)) return *status;
    const fs::path kg = o.data / "kg-pathquestion";
    for (const char* file : {"kb.nt", "labels.nt", "questions-dev.jsonl"}) {
        if (!fs::exists(kg / file)) {
            std::cout << "bench_cost: skipped: no PathQuestion data (" << (kg / file).string()
                      << "; --data DIR names the shared data folder)\n";
            return 0;
        }
    }
    const auto questions = read_questions(kg / "questions-dev.jsonl");
    if (questions.empty()) die("no questions in " + (kg / "questions-dev.jsonl").string());
    std::optional<integration::TempDir> tmp;
    fs::path dir = o.dir;
    if (dir.empty()) dir = tmp.emplace("bench-cost").path();
    fs::create_directories(dir);
    std::cout << "# bench_cost (dir " << dir.string() << ", " << questions.size()
              << " questions)\n\n";
    if (load_average_1() > 0.5)
        std::cerr << "bench_cost: machine not quiet: load average " << load_average() << "\n";
    const Results results = run(o, questions, dir);
    report(results, std::cout);
    if (!o.json_path.empty()) std::ofstream(o.json_path) << to_json(results).dump(1) << '\n';
    return 0;
}
