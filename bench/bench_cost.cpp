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
// includes storing. The stats calls the bench makes while it waits are its own probing, not the
// pipeline's work: each is read as every process's CPU just before and just after it, and those
// in the window come off (a stats answer on a store of a few thousand runs is ~10 ms of the
// collector's CPU, and a settle that waits longer calls more). Reported per process: ms CPU per
// question; throughput (questions / wall time from the first send to the last FINAL); p50/p99
// latency (send to FINAL); bytes stored per trace: growth of the trace store's live pages
// ((page_count − freelist_count) × page_size, read with SQLite: WAL contents included, the WAL
// file's reused space not) over the traces stored; the trace files' growth (traces.db + WAL, as
// `trace` stats report it) and the explain bytes a client received per question beside it (0 under
// explain=none; e's is what the stream costs).
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
// --otel (issue 37: "export adds ≤ 5 % to the trace collector's CPU per run and nothing to
// request latency") runs, instead of the five configurations and the baselines, configuration c
// with the OpenTelemetry exporter off and on: --pairs pairs (default 3) of fresh starts of the
// pipeline, off then on, after one start that loads (or finds) the knowledge. On, `up` gets
// OTEL_EXPORTER_OTLP_ENDPOINT naming an OTLP/HTTP sink in this process (127.0.0.1, port 0,
// HTTP/1.1 keep-alive, a thread per connection; it reads each request and answers 200, counting
// requests and body bytes, decoding nothing: its CPU is this process's), the other otel.* settings
// at their defaults (the settle below waits until every run was sent); off, no endpoint.
// Every OTEL_* and GLASSBOX_OTEL_* variable of the bench's own environment is unset for `up`
// either way, and the `trace` service's stats must show the exporter configured exactly when on.
// Every run uses one copy of the glassbox binary, made at the start (the build's may be relinked
// meanwhile). Before each start (but with --quick) the bench waits (120 s at most) for the 1-min
// load average to fall below 1.5. On, each settle also waits until the stats' `otel` object has
// pending 0 and exported_runs covering every question sent (120 s at most; a run that never
// drains is reported FAILED and the exit status is 1). Beside the processes' CPU, the
// collector's exporter thread (/proc/<pid>/task/<tid>/comm "otel-export"; n/a without one) is
// read at the same two moments. Reported per run: the collector's, the exporter thread's and all
// processes' ms CPU per question, throughput, p50/p99, the load average at its start; then
// medians over the pairs (collector CPU off, on and the change against the ≤ +5 % target; the
// exporter thread's ms per run and its share of the off collector CPU, the same target read with
// less noise; the collector less that thread; p50 off against on) and what the sink received
// (requests, bytes, bytes per run).
//
// Usage: bench_cost [--quick] [--queries N] [--warmup N] [--baseline-queries N]
//                   [--store-requests N] [--stream] [--data DIR] [--dir DIR] [--json FILE]
//                   [--glassbox PATH] [--otel [--pairs N]]
//   --otel      the exporter off against on, configuration c only (above); --quick: 2 pairs,
//               no wait for the load average
//   --pairs     off/on pairs under --otel (default 3)
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
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
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
#include <set>
#include <sstream>
#include <string>
#include <string_view>
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
    bool otel = false;       // --otel: configuration c with the exporter off and on, in pairs
    std::size_t pairs = 3;   // --pairs N (--otel)
    bool wait_for_load = true;  // --otel: before each start, for the load average (not --quick)
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

// A process's /proc/<pid>/stat or a thread's /proc/<pid>/task/<tid>/stat (the same fields).
std::optional<ProcStat> read_stat(const fs::path& path) {
    std::ifstream in(path);
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

std::optional<ProcStat> read_proc_stat(pid_t pid) {
    return read_stat("/proc/" + std::to_string(pid) + "/stat");
}

struct ThreadCpu {
    pid_t tid = 0;
    double cpu_ms = 0;  // utime + stime
};

// The CPU so far of the thread of `pid` named `comm` (/proc/<pid>/task/<tid>/comm); none when the
// process has no such thread.
std::optional<ThreadCpu> thread_cpu(pid_t pid, std::string_view comm) {
    std::error_code ec;
    const fs::path tasks = "/proc/" + std::to_string(pid) + "/task";
    for (auto it = fs::directory_iterator(tasks, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
        std::ifstream in(it->path() / "comm");
        std::string name;
        std::getline(in, name);
        if (name != comm) continue;
        const auto stat = read_stat(it->path() / "stat");
        if (!stat) continue;
        const auto tid =
            static_cast<pid_t>(std::strtol(it->path().filename().string().c_str(), nullptr, 10));
        return ThreadCpu{tid, stat->cpu_ms};
    }
    return std::nullopt;
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

// ---- the OTLP/HTTP sink (--otel) ------------------------------------------------------------

// The receiver the exporter sends to under --otel: 127.0.0.1, a port of its own, HTTP/1.1 with
// keep-alive, one thread per connection. It reads each request's headers and Content-Length bytes
// of body and answers 200 with an empty protobuf body (a full success in OTLP), decoding nothing;
// it counts requests and body bytes. Its CPU is this process's, not the pipeline's.
class OtlpSink {
public:
    struct Counts {
        std::uint64_t requests = 0;
        std::uint64_t bytes = 0;    // request bodies
        std::uint64_t refused = 0;  // chunked bodies (answered 411 and closed)
    };

    OtlpSink();
    ~OtlpSink();
    OtlpSink(const OtlpSink&) = delete;
    OtlpSink& operator=(const OtlpSink&) = delete;

    std::uint16_t port() const { return port_; }
    Counts counts() const { return {requests_.load(), bytes_.load(), refused_.load()}; }

private:
    void accept_loop();
    void serve(int fd);
    bool serve_one(int fd, std::string& buffer);

    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<std::uint64_t> requests_{0}, bytes_{0}, refused_{0};
    std::mutex mutex_;
    std::set<int> open_;  // connections not closed yet: shut down by the destructor
    std::vector<std::thread> connections_;
    std::thread acceptor_;
};

OtlpSink::OtlpSink() {
    // CLOEXEC: `glassbox up`, forked while the sink runs, must not hold its sockets.
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener_ < 0) die("OTLP sink: socket");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0)
        die("OTLP sink: bind 127.0.0.1:0");
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
}

OtlpSink::~OtlpSink() {
    stopping_ = true;
    acceptor_.join();  // no connection is added after this
    {
        std::lock_guard lock(mutex_);
        for (const int fd : open_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : connections_) t.join();
    ::close(listener_);
}

void OtlpSink::accept_loop() {
    while (!stopping_) {
        pollfd p{listener_, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        std::lock_guard lock(mutex_);
        open_.insert(fd);
        connections_.emplace_back([this, fd] { serve(fd); });
    }
}

void OtlpSink::serve(int fd) {
    std::string buffer;
    while (!stopping_ && serve_one(fd, buffer)) {
    }
    {
        std::lock_guard lock(mutex_);
        open_.erase(fd);
    }
    ::close(fd);
}

// More bytes of the connection appended to `buffer`; false at its end or on an error.
bool receive_more(int fd, std::string& buffer) {
    char chunk[65536];
    for (;;) {
        const auto n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        buffer.append(chunk, static_cast<std::size_t>(n));
        return true;
    }
}

bool send_all(int fd, std::string_view text) {
    while (!text.empty()) {
        const auto n = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

// The value of header `name` (lower case) in `head` (the request line and headers, lower-cased,
// each line ending in CRLF), blanks trimmed; "" when absent.
std::string header_value(const std::string& head, const std::string& name) {
    const auto at = head.find("\r\n" + name + ":");
    if (at == std::string::npos) return "";
    const auto from = head.find_first_not_of(" \t", at + name.size() + 3);
    const auto end = head.find("\r\n", at + 2);
    if (from == std::string::npos || from >= end) return "";
    const auto last = head.find_last_not_of(" \t", end - 1);
    return head.substr(from, last - from + 1);
}

// Reads and answers one request of the connection; false when the connection is to end.
bool OtlpSink::serve_one(int fd, std::string& buffer) {
    std::size_t end = 0;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos)
        if (buffer.size() > (std::size_t{1} << 20) || !receive_more(fd, buffer)) return false;
    std::string head = buffer.substr(0, end + 2);
    buffer.erase(0, end + 4);
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (header_value(head, "transfer-encoding").find("chunked") != std::string::npos) {
        ++refused_;
        (void)send_all(fd,
                       "HTTP/1.1 411 Length Required\r\nContent-Length: 0\r\nConnection: "
                       "close\r\n\r\n");
        return false;
    }
    if (header_value(head, "expect") == "100-continue" &&
        !send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n"))
        return false;
    const auto length = static_cast<std::size_t>(
        std::strtoull(header_value(head, "content-length").c_str(), nullptr, 10));
    while (buffer.size() < length)
        if (!receive_more(fd, buffer)) return false;
    buffer.erase(0, length);
    ++requests_;
    bytes_ += length;
    if (!send_all(fd,
                  "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
                  "Content-Length: 0\r\n\r\n"))
        return false;
    return header_value(head, "connection") != "close";
}

// ---- the pipeline's environment -------------------------------------------------------------

// Variables for `glassbox up` and its children: a value to set, or none to unset.
using EnvChanges = std::vector<std::pair<std::string, std::optional<std::string>>>;

void set_env(const std::string& name, const std::optional<std::string>& value) {
    if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
    } else {
        ::unsetenv(name.c_str());
    }
}

// `changes` applied to this process's environment, which a child forked meanwhile inherits; what
// was there before restored on destruction.
class ScopedEnv {
public:
    explicit ScopedEnv(const EnvChanges& changes) {
        for (const auto& [name, value] : changes) {
            if (!saved_.contains(name)) {
                const char* before = std::getenv(name.c_str());
                saved_[name] = before ? std::optional<std::string>(before) : std::nullopt;
            }
            set_env(name, value);
        }
    }
    ~ScopedEnv() {
        for (const auto& [name, value] : saved_) set_env(name, value);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    std::map<std::string, std::optional<std::string>> saved_;
};

// The exporter off (no sink) or on (sending to the sink's port, its other settings at their
// defaults: the settle waits until it has sent every run): every OTEL_* and GLASSBOX_OTEL_*
// variable this process has
// is unset for the child either way, so neither the bench's environment nor a stray endpoint
// turns it on, or changes its protocol, where it should be off or as set here.
EnvChanges otel_env(std::optional<std::uint16_t> sink_port) {
    EnvChanges out;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string_view text(*entry);
        const std::string name(text.substr(0, text.find('=')));
        if (name.starts_with("OTEL_") || name.starts_with("GLASSBOX_OTEL_"))
            out.emplace_back(name, std::nullopt);
    }
    if (sink_port) {
        out.emplace_back("OTEL_EXPORTER_OTLP_ENDPOINT",
                         "http://127.0.0.1:" + std::to_string(*sink_port));
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

    // A fresh start: explored_edges for graph-rag (none: its default) and `env`, other variables
    // for `up` and its children.
    void start(std::optional<std::uint32_t> explored_edges, const EnvChanges& env = {});
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

    // The CPU so far of the trace collector's exporter thread ("otel-export"); none without one.
    std::optional<ThreadCpu> exporter_cpu() const {
        for (const auto& p : processes_)
            if (p.name == "trace-collector") return thread_cpu(p.pid, "otel-export");
        return std::nullopt;
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

void Pipeline::start(std::optional<std::uint32_t> explored_edges, const EnvChanges& env) {
    stop();
    // A fresh trace store per start: the collector's cost must not depend on earlier runs.
    for (const char* suffix : {"", "-wal", "-shm"})
        fs::remove(home_ / (std::string("traces.db") + suffix));
    EnvChanges changes = {{kExploredEdgesEnv, explored_edges ? std::optional<std::string>(
                                                                   std::to_string(*explored_edges))
                                                             : std::nullopt}};
    changes.insert(changes.end(), env.begin(), env.end());
    const auto ready = dir_ / "up.ready.json";
    fs::remove(ready);
    {
        const ScopedEnv scoped(changes);  // `up` and its children have them from the fork
        up_ = std::make_unique<integration::ChildProcess>(
            "up-" + std::to_string(++starts_),
            std::vector<std::string>{g_glassbox, "up", "--home", home_.string(), "--bind",
                                     "tcp://127.0.0.1:*", "--pub", "tcp://127.0.0.1:*",
                                     "--gateway-listen", "127.0.0.1:0", "--ready-file",
                                     ready.string()},
            dir_);
    }
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
    // The CPU of the bench's own stats calls (each read as the processes' CPU just before and
    // just after it): of those this settle made before its last read, and of the one after it.
    // They are the bench's probing, not the pipeline's work, and come off the figures between
    // two snapshots (cpu_between): with export on, a settle waits longer and so calls more.
    std::map<std::string, double> stats_cpu_ms;
    std::map<std::string, double> last_stats_cpu_ms;
    double wait_s = 0;
    std::optional<ThreadCpu> exporter;  // the collector's exporter thread, read with cpu_ms
    json otel = json::object();         // the `otel` object of the last stats answer
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

// True when the exporter's queue is empty and it has sent at least `runs` runs.
bool otel_drained(const json& otel, std::int64_t runs) {
    return otel.value("pending", std::int64_t{1}) == 0 &&
           otel.value("exported_runs", std::uint64_t{0}) >=
               static_cast<std::uint64_t>(std::max<std::int64_t>(0, runs));
}

// Reads the CPU of every process once the pipeline is quiet and the trace service counts
// `sessions` sessions (less `tolerance`: failed requests may leave none), none running, every
// delivery stored, and with `otel` the exporter has sent as many runs and has none queued; waits
// and reads again otherwise (60 s at most, 120 s with `otel`, then `settled` is false). A stats
// call made before the last read is in that read's CPU (stats_calls says how many).
Snapshot settle(Pipeline& pipeline, std::int64_t sessions, std::int64_t tolerance,
                bool otel = false) {
    const auto start = Clock::now();
    Snapshot s;
    for (;;) {
        wait_quiet(pipeline);
        s.cpu_ms = pipeline.cpu_ms();
        s.exporter = pipeline.exporter_cpu();
        const json stats = pipeline.call("trace", json{{"op", "stats"}});
        ++s.stats_calls;
        for (auto& [name, ms] : s.stats_cpu_ms) ms += s.last_stats_cpu_ms[name];
        s.last_stats_cpu_ms.clear();
        for (const auto& [name, ms] : pipeline.cpu_ms()) {
            s.last_stats_cpu_ms[name] = ms - s.cpu_ms[name];
            s.stats_cpu_ms.try_emplace(name, 0.0);
        }
        s.sessions = stats.value("sessions", std::int64_t{0});
        s.running = stats.value("by_status", json::object()).value("running", std::int64_t{0});
        s.file_bytes = stats.value("db_bytes", 0.0);
        const json collector = stats.value("collector", json::object());
        const bool drained = collector.value("pending", std::uint64_t{1}) == 0 &&
                             collector.value("acked", std::uint64_t{0}) ==
                                 collector.value("deliveries", std::uint64_t{1});
        s.otel = stats.value("otel", json::object());
        s.settled = s.sessions >= sessions - tolerance && s.running == 0 && drained &&
                    (!otel || otel_drained(s.otel, sessions - tolerance));
        s.wait_s = ms_since(start) / 1000.0;
        if (s.settled || s.wait_s > (otel ? 120.0 : 60.0)) break;
        std::this_thread::sleep_for(milliseconds{200});
    }
    s.live_bytes = trace_store_live_bytes(pipeline.home()).value_or(0.0);
    return s;
}

// Each process's CPU from snapshot `before` to `after`, less the bench's stats calls between
// them (the one `before` made after its last read, those `after` made before its own).
std::map<std::string, double> cpu_between(const Snapshot& before, const Snapshot& after) {
    const auto spent = [](const std::map<std::string, double>& calls, const std::string& name) {
        const auto found = calls.find(name);
        return found == calls.end() ? 0.0 : found->second;
    };
    std::map<std::string, double> out;
    for (const auto& [name, ms] : after.cpu_ms) {
        out[name] = ms - before.cpu_ms.at(name) - spent(before.last_stats_cpu_ms, name) -
                    spent(after.stats_cpu_ms, name);
    }
    return out;
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

// With `otel`, each settle also waits for the exporter to have sent every run (--otel, on).
ConfigFigures measure_config(Pipeline& pipeline, const RunConfig& config, const Options& o,
                             const std::vector<Question>& questions, std::int64_t& traces,
                             bool otel = false) {
    ConfigFigures f;
    f.config = config;
    f.queries = o.queries;
    f.load_at_start = load_average();
    const bus::BusClientConfig clients = config.client_config(pipeline.client_config());
    const auto warm = run_clients(clients, questions, config.clients, o.warmup, o.streaming);
    traces += static_cast<std::int64_t>(o.warmup);
    f.before = settle(pipeline, traces, static_cast<std::int64_t>(warm.errors), otel);
    f.run = run_clients(clients, questions, config.clients, o.queries, o.streaming);
    traces += static_cast<std::int64_t>(o.queries);
    f.after = settle(pipeline, traces, static_cast<std::int64_t>(f.run.errors + warm.errors), otel);
    f.cpu_ms = cpu_between(f.before, f.after);
    std::cerr << "bench_cost: " << config.id << " (" << config.describe()
              << "): " << fmt(static_cast<double>(o.queries) / f.run.wall_s, 1)
              << " questions/s, p50 " << fmt(percentile(f.run.latency_ms, 0.5), 1) << " ms, "
              << f.run.errors << " errors"
              << (f.after.settled ? ""
                  : otel          ? ", traces NOT all stored and exported"
                                  : ", traces NOT all stored")
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

// ---- --otel: configuration c with the exporter off and on ------------------------------------

const std::string kCollectorProcess = "trace-collector";

// One start of the pipeline under --otel: configuration c, the exporter off or on.
struct OtelRun {
    std::size_t pair = 0;  // from 1
    bool on = false;
    ConfigFigures f;
    std::optional<double> exporter_cpu_ms;  // its thread over the window; none: no such thread
    OtlpSink::Counts sink;                  // what the sink received from this start
    bool drained = true;                    // on: every run sent, none queued, in time
};

struct OtelResults {
    std::string started, ended, commit, load_at_start, load_at_end;
    std::vector<OtelRun> runs;
    std::size_t pairs = 0;
    bool streaming = false;
};

// The exporter thread's CPU between two snapshots: none unless the same thread is in both.
std::optional<double> exporter_between(const Snapshot& before, const Snapshot& after) {
    if (!before.exporter || !after.exporter || before.exporter->tid != after.exporter->tid)
        return std::nullopt;
    return after.exporter->cpu_ms - before.exporter->cpu_ms;
}

// Ends the benchmark unless the collector's exporter is configured exactly when `on`, to the sink.
void check_exporter(Pipeline& pipeline, bool on, std::uint16_t port) {
    const json otel = pipeline.call("trace", json{{"op", "stats"}}).value("otel", json::object());
    const bool configured = otel.value("configured", false);
    const std::string endpoint = otel.value("endpoint", "");
    if (configured != on)
        die(std::string("export ") + (on ? "on" : "off") + ", but the trace collector's exporter " +
            (configured ? "is configured (" + endpoint + ")" : "is not configured"));
    if (on && endpoint.find("127.0.0.1:" + std::to_string(port)) == std::string::npos)
        die("the exporter sends to " + endpoint + ", not to the sink (port " +
            std::to_string(port) + ")");
}

void report_drain_failure(const OtelRun& r) {
    const json& e = r.f.after.otel;
    std::cerr << "bench_cost: FAILED: pair " << r.pair
              << ", export on: the exporter did not send every run within 120 s of the last "
                 "answer: pending "
              << e.value("pending", std::int64_t{-1}) << ", exported_runs "
              << e.value("exported_runs", std::uint64_t{0}) << " for " << r.f.after.sessions
              << " stored sessions, dropped " << e.value("dropped", json::object()).dump()
              << ", failures " << e.value("failures", std::uint64_t{0}) << ", last error \""
              << e.value("last_error", "") << "\"\n";
}

// The pipeline stopped, waits (120 s at most) for the 1-min load average to fall below 1.5: the
// previous run's own load (8 clients keep 2 CPUs busy) would otherwise be in the next one's.
void wait_for_low_load(Pipeline& pipeline) {
    pipeline.stop();
    const auto start = Clock::now();
    while (load_average_1() >= 1.5 && ms_since(start) < 120'000.0)
        std::this_thread::sleep_for(milliseconds{1000});
    if (ms_since(start) > 1000.0)
        std::cerr << "bench_cost: waited " << fmt(ms_since(start) / 1000.0, 0)
                  << " s for the load average to fall: " << load_average() << "\n";
}

OtelRun measure_otel_run(Pipeline& pipeline, const OtlpSink& sink, const Options& o,
                         const std::vector<Question>& questions, std::size_t pair, bool on) {
    OtelRun r;
    r.pair = pair;
    r.on = on;
    if (o.wait_for_load) wait_for_low_load(pipeline);
    const auto sink_start = sink.counts();
    pipeline.start(std::nullopt,
                   otel_env(on ? std::optional<std::uint16_t>(sink.port()) : std::nullopt));
    check_exporter(pipeline, on, sink.port());
    std::int64_t traces =
        pipeline.call("trace", json{{"op", "stats"}}).value("sessions", std::int64_t{0});
    const RunConfig config{
        std::string("c, export ") + (on ? "on" : "off") + ", pair " + std::to_string(pair), 8,
        std::nullopt};
    r.f = measure_config(pipeline, config, o, questions, traces, on);
    const auto sink_end = sink.counts();
    r.sink = {sink_end.requests - sink_start.requests, sink_end.bytes - sink_start.bytes,
              sink_end.refused - sink_start.refused};
    r.exporter_cpu_ms = exporter_between(r.f.before, r.f.after);
    r.drained = !on || r.f.after.settled;
    if (!r.drained) report_drain_failure(r);
    return r;
}

// The knowledge loaded (or found) on a start of its own, then `pairs` pairs of fresh starts:
// export off, then on.
OtelResults run_otel(const Options& o, const std::vector<Question>& questions,
                     const fs::path& dir) {
    OtelResults r;
    r.started = utc_now();
    r.load_at_start = load_average();
    r.commit = git_commit(GLASSBOX_SOURCE_DIR);
    r.streaming = o.streaming;
    r.pairs = o.pairs;
    // One binary for every run (`up` starts its children from /proc/self/exe): the build's may be
    // relinked while the pairs run.
    const fs::path binary = dir / "glassbox-under-test";
    fs::remove(binary);
    fs::copy_file(g_glassbox, binary);
    std::cerr << "bench_cost: every run uses " << binary.string() << " (a copy of " << g_glassbox
              << ")\n";
    g_glassbox = binary.string();
    OtlpSink sink;
    std::cerr << "bench_cost: OTLP sink on 127.0.0.1:" << sink.port() << "\n";
    Pipeline pipeline(dir);
    pipeline.start(std::nullopt, otel_env(std::nullopt));
    pipeline.load_knowledge(o.data / "kg-pathquestion");
    for (std::size_t pair = 1; pair <= o.pairs; ++pair)
        for (const bool on : {false, true})
            r.runs.push_back(measure_otel_run(pipeline, sink, o, questions, pair, on));
    pipeline.stop();
    r.ended = utc_now();
    r.load_at_end = load_average();
    return r;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

// `value` of each run with the exporter `on` (or off) that has one.
template <typename Value>
std::vector<double> values_of(const OtelResults& r, bool on, Value value) {
    std::vector<double> out;
    for (const auto& run : r.runs)
        if (run.on == on)
            if (const std::optional<double> v = value(run)) out.push_back(*v);
    return out;
}

std::optional<double> collector_per_question(const OtelRun& r) {
    return process_per_question(r.f, kCollectorProcess);
}

std::optional<double> exporter_per_question(const OtelRun& r) {
    if (!r.exporter_cpu_ms) return std::nullopt;
    return per_question(*r.exporter_cpu_ms, r.f.queries);
}

// The collector's other threads (ingest, the store's queueing, the service): where export shows
// beside its own thread.
std::optional<double> collector_less_exporter(const OtelRun& r) {
    return *collector_per_question(r) - exporter_per_question(r).value_or(0.0);
}

std::optional<double> all_per_question(const OtelRun& r) { return total_per_question(r.f); }
std::optional<double> p50_of(const OtelRun& r) { return percentile(r.f.run.latency_ms, 0.5); }
std::optional<double> p99_of(const OtelRun& r) { return percentile(r.f.run.latency_ms, 0.99); }
std::optional<double> qps_of(const OtelRun& r) {
    return static_cast<double>(r.f.queries) / r.f.run.wall_s;
}

std::string change_percent(double before, double after) {
    if (before <= 0) return "–";
    const double change = (after - before) / before * 100.0;
    return (change >= 0 ? "+" : "") + fmt(change, 1) + " %";
}

bool otel_quiet(const OtelResults& r) {
    return std::all_of(r.runs.begin(), r.runs.end(), [](const OtelRun& run) {
        return std::strtod(run.f.load_at_start.c_str(), nullptr) < 1.5;
    });
}

const OtelRun* otel_run(const OtelResults& r, std::size_t pair, bool on) {
    for (const auto& run : r.runs)
        if (run.pair == pair && run.on == on) return &run;
    return nullptr;
}

std::string exported_cell(const OtelRun& run) {
    if (!run.on) return "–";
    const json& e = run.f.after.otel;
    return std::to_string(e.value("exported_runs", std::uint64_t{0})) + " (" +
           std::to_string(e.value("pending", std::int64_t{0})) + ")" +
           (run.drained ? "" : " NOT DRAINED");
}

void print_otel_runs(const OtelResults& r, std::ostream& out) {
    out << "### Each run (c: 8 clients, explored edges 500 (default), explain=none; ms CPU per "
           "question over the timed questions, the storing of their traces and, export on, their "
           "export)\n\n| pair | export | load average at its start | trace collector | its "
           "exporter thread | collector against the pair's off | all processes | questions/s | "
           "p50 ms | p99 ms | errors | runs exported (pending) | sink requests | sink KB |\n"
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& run : r.runs) {
        const auto* off = otel_run(r, run.pair, false);
        const auto exporter = exporter_per_question(run);
        out << "| " << run.pair << " | " << (run.on ? "on" : "off") << " | " << run.f.load_at_start
            << " | " << fmt(*collector_per_question(run), 3) << " | "
            << (exporter ? fmt(*exporter, 3) : std::string("n/a")) << " | "
            << (run.on && off != nullptr
                    ? change_percent(*collector_per_question(*off), *collector_per_question(run))
                    : std::string("–"))
            << " | " << fmt(*all_per_question(run), 2) << " | " << fmt(*qps_of(run), 1) << " | "
            << fmt(*p50_of(run), 1) << " | " << fmt(*p99_of(run), 1) << " | " << run.f.run.errors
            << " | " << exported_cell(run) << " | " << run.sink.requests << " | "
            << fmt(static_cast<double>(run.sink.bytes) / 1000.0, 1) << " |\n";
    }
    out << '\n';
}

void print_otel_medians(const OtelResults& r, std::ostream& out) {
    out << "### Medians over " << r.pairs << (r.pairs == 1 ? " pair" : " pairs")
        << "\n\n| | export off | export on | change |\n|---|---:|---:|---:|\n";
    const auto line = [&](const std::string& label, auto value, int decimals) {
        const double off = median(values_of(r, false, value));
        const double on = median(values_of(r, true, value));
        out << "| " << label << " | " << fmt(off, decimals) << " | " << fmt(on, decimals) << " | "
            << change_percent(off, on) << " |\n";
    };
    line("trace collector, ms CPU per question", collector_per_question, 3);
    line("its exporter thread", exporter_per_question, 3);
    line("the collector less its exporter thread", collector_less_exporter, 3);
    line("all processes, ms CPU per question", all_per_question, 2);
    line("p50 ms", p50_of, 1);
    line("p99 ms", p99_of, 1);
    line("throughput, questions/s", qps_of, 1);
    out << '\n';
}

// The sink's totals over the runs with export on (or off).
OtlpSink::Counts sink_total(const OtelResults& r, bool on) {
    OtlpSink::Counts total;
    for (const auto& run : r.runs) {
        if (run.on != on) continue;
        total.requests += run.sink.requests;
        total.bytes += run.sink.bytes;
        total.refused += run.sink.refused;
    }
    return total;
}

std::uint64_t exported_total(const OtelResults& r) {
    std::uint64_t runs = 0;
    for (const auto& run : r.runs)
        if (run.on) runs += run.f.after.otel.value("exported_runs", std::uint64_t{0});
    return runs;
}

void print_otel_sink(const OtelResults& r, std::ostream& out) {
    const auto on = sink_total(r, true);
    const auto off = sink_total(r, false);
    const double runs = static_cast<double>(std::max<std::uint64_t>(1, exported_total(r)));
    out << "- the sink, export on: " << on.requests << " requests, " << on.bytes << " bytes ("
        << exported_total(r) << " runs exported, warm-up included): "
        << fmt(static_cast<double>(on.bytes) / runs / 1000.0, 1) << " KB per run, "
        << fmt(runs / static_cast<double>(std::max<std::uint64_t>(1, on.requests)), 1)
        << " runs per request"
        << (on.refused ? "; " + std::to_string(on.refused) + " chunked requests refused (411)"
                       : std::string())
        << "; export off: " << off.requests << " requests"
        << (off.requests ? " (**the exporter was not off**)" : " (as it should)") << "\n";
}

void print_otel_targets(const OtelResults& r, std::ostream& out) {
    const auto verdict = [](bool met) { return met ? std::string("met") : std::string("NOT met"); };
    const double off = median(values_of(r, false, collector_per_question));
    const double on = median(values_of(r, true, collector_per_question));
    const auto exporter = values_of(r, true, exporter_per_question);
    const auto p50_off = values_of(r, false, p50_of);
    out << "### Targets (issue 37)\n\n- target: export adds ≤ 5 % to the trace collector's CPU "
           "per run (medians): "
        << verdict(on <= off * 1.05) << " (" << fmt(off, 3) << " → " << fmt(on, 3)
        << " ms per question, " << change_percent(off, on) << ")\n- the exporter thread "
        << "(\"otel-export\") alone, the same target read with less noise: ";
    if (exporter.size() == values_of(r, true, collector_per_question).size() && !exporter.empty()) {
        const double share = off > 0 ? median(exporter) / off * 100.0 : 0.0;
        out << verdict(share <= 5.0) << " (" << fmt(median(exporter), 3) << " ms per run, "
            << fmt(share, 1) << " % of the collector's CPU per run with export off)\n";
    } else {
        out << "n/a (no thread named otel-export in the collector in every run with export on)\n";
    }
    out << "- target: export adds nothing to request latency: p50 " << fmt(median(p50_off), 1)
        << " → " << fmt(median(values_of(r, true, p50_of)), 1) << " ms ("
        << change_percent(median(p50_off), median(values_of(r, true, p50_of)))
        << "); the off runs' p50 spans "
        << fmt(*std::min_element(p50_off.begin(), p50_off.end()), 1) << "–"
        << fmt(*std::max_element(p50_off.begin(), p50_off.end()), 1)
        << " ms between starts (the noise)\n";
    print_otel_sink(r, out);
    out << "- machine quiet (load average 1-min < 1.5 at the start of every run): "
        << (otel_quiet(r) ? "yes" : "**no**: the figures are noisy") << "\n";
    for (const auto& run : r.runs)
        if (!run.drained)
            out << "- **FAILED**: pair " << run.pair
                << ", export on: the exporter did not send every run in time (its CPU figures "
                   "miss what it had not sent)\n";
}

void report_otel(const OtelResults& r, std::ostream& out) {
    out << "## bench_cost --otel\n\nRun " << r.started << " – " << r.ended << ", commit `"
        << r.commit << "`, load average (1/5/15 min) " << r.load_at_start << " at the start, "
        << r.load_at_end << " at the end on " << std::thread::hardware_concurrency()
        << " CPUs. `glassbox up` with its defaults, the PathQuestion KB, configuration c, "
        << (r.runs.empty() ? 0 : r.runs.front().f.queries)
        << " timed questions per run after warm-up, " << r.pairs
        << " pairs of fresh starts, export off then on (on: OTEL_EXPORTER_OTLP_ENDPOINT names "
           "this process's OTLP/HTTP sink, the other otel.* settings at their defaults; off: no "
           "OTEL_* "
           "variable), "
        << (r.streaming ? "graph-rag streaming its answer (--stream).\n\n"
                        : "graph-rag without streaming.\n\n");
    if (r.runs.empty()) return;
    print_otel_runs(r, out);
    print_otel_medians(r, out);
    print_otel_targets(r, out);
    for (const auto& run : r.runs)
        for (const auto& e : run.f.run.error_samples)
            out << "\n- pair " << run.pair << (run.on ? " on" : " off") << " error: " << e;
    out << std::endl;
}

json to_json(const OtelRun& run) {
    json j = to_json(run.f);
    const auto exporter = exporter_per_question(run);
    j["pair"] = run.pair;
    j["export"] = run.on ? "on" : "off";
    j["collector_cpu_ms_per_question"] = *collector_per_question(run);
    j["exporter_thread_cpu_ms_per_question"] = exporter ? json(*exporter) : json(nullptr);
    j["otel"] = run.f.after.otel;
    j["drained"] = run.drained;
    j["sink"] = {
        {"requests", run.sink.requests}, {"bytes", run.sink.bytes}, {"refused", run.sink.refused}};
    return j;
}

json to_json(const OtelResults& r) {
    json runs = json::array();
    for (const auto& run : r.runs) runs.push_back(to_json(run));
    const auto medians = [&r](auto value) {
        return json{{"off", median(values_of(r, false, value))},
                    {"on", median(values_of(r, true, value))}};
    };
    const auto exporter = values_of(r, true, exporter_per_question);
    const double off = median(values_of(r, false, collector_per_question));
    const auto sink = sink_total(r, true);
    return {
        {"mode", "otel"},
        {"started", r.started},
        {"ended", r.ended},
        {"commit", r.commit},
        {"streaming", r.streaming},
        {"load_at_start", r.load_at_start},
        {"load_at_end", r.load_at_end},
        {"pairs", r.pairs},
        {"quiet", otel_quiet(r)},
        {"runs", runs},
        {"medians",
         {{"collector_cpu_ms_per_question", medians(collector_per_question)},
          {"collector_less_exporter_cpu_ms_per_question", medians(collector_less_exporter)},
          {"all_cpu_ms_per_question", medians(all_per_question)},
          {"p50_ms", medians(p50_of)},
          {"p99_ms", medians(p99_of)},
          {"throughput_qps", medians(qps_of)},
          {"exporter_thread_cpu_ms_per_run",
           exporter.empty() ? json(nullptr) : json(median(exporter))},
          {"exporter_thread_percent_of_off_collector",
           exporter.empty() || off <= 0 ? json(nullptr) : json(median(exporter) / off * 100.0)}}},
        {"sink",
         {{"requests", sink.requests},
          {"bytes", sink.bytes},
          {"refused", sink.refused},
          {"exported_runs", exported_total(r)},
          {"off_requests", sink_total(r, false).requests}}}};
}

// ---- main ------------------------------------------------------------------------------------

void usage() {
    std::cerr << "usage: bench_cost [--quick] [--queries N] [--warmup N] [--baseline-queries N]\n"
                 "                  [--store-requests N] [--stream] [--data DIR] [--dir DIR] "
                 "[--json FILE]\n"
                 "                  [--glassbox PATH] [--explain-stream] [--otel [--pairs N]]\n";
}

std::optional<int> read_options(int argc, char** argv, Options& o) {
    bench::Args args(argc, argv, kProgram);
    bool queries_given = false;
    bool pairs_given = false;
    while (args.next()) {
        const std::string& arg = args.arg();
        if (arg == "--quick") {
            if (!queries_given) o.queries = 40;
            o.warmup = 4;
            o.baseline_queries = 20;
            o.store_requests = 200;
            if (!pairs_given) o.pairs = 2;
            o.wait_for_load = false;
        } else if (arg == "--otel") {
            o.otel = true;
        } else if (arg == "--pairs") {
            o.pairs = args.number();
            pairs_given = true;
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
    if (o.otel) {
        const OtelResults results = run_otel(o, questions, dir);
        report_otel(results, std::cout);
        if (!o.json_path.empty()) std::ofstream(o.json_path) << to_json(results).dump(1) << '\n';
        const bool drained = std::all_of(results.runs.begin(), results.runs.end(),
                                         [](const OtelRun& run) { return run.drained; });
        return drained ? 0 : 1;
    }
    const Results results = run(o, questions, dir);
    report(results, std::cout);
    if (!o.json_path.empty()) std::ofstream(o.json_path) << to_json(results).dump(1) << '\n';
    return 0;
}
