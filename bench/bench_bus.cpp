// bench_bus: the glassbox broker against bare ZeroMQ forwarders, measured in the same run.
//
// Four targets, each its own process on tcp loopback:
//   forwarder      a bare ROUTER<->DEALER zmq::proxy (this program, `forwarder` mode): the
//                  backend DEALER round-robins and pipelines any number of requests per worker;
//   lb             a bare load-balancing forwarder, ROUTER<->ROUTER (this program, `lb` mode),
//                  the zguide "lbbroker": each worker holds one request at a time, like 7/MDP;
//   broker         `glassbox broker` with 7/MDP workers (one request at a time);
//   broker-credit  `glassbox broker` with GBW03 workers that declare credit 64 (protocol.md
//                  §5.1): the broker pipelines to them as the forwarder's DEALER does.
// Extended workers (broker-credit, and broker with --gbw01) declare GBW03, the compact layout in
// the packed form (protocol.md §5.4, §1.4), and the clients send packed, as glassbox's own
// worker runtime and BusClient do; --unpacked makes workers declare GBW02 and clients send the
// classic GBC01 frames, --classic makes workers declare GBW01, to compare the framings.
// The bench process holds one client thread and N worker threads for each. The client keeps
// `in_flight` requests outstanding and measures each round trip (send to terminal reply);
// throughput counts replies in the measurement window. Clients speak GBC01 to the broker
// (REQUEST / FINAL) and [empty][request-id][body] to the forwarders; workers speak MDPW01
// (READY / REQUEST / REPLY / HEARTBEAT) to the broker and echo the envelope back
// through the forwarders.
//
// --curve measures something else: the same broker with CURVE (docs/security.md) against plain
// TCP, in the same run and interleaved: round-trip p50 and throughput of GBW03 workers (target:
// CURVE p50 <= 1.3x and throughput >= 70% of plain), and the cost of one new connection (TCP,
// the handshake, and for CURVE the broker's ZAP check) to its first answer.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "bus/curve_keys.hpp"
#include "bus/detail/frame_io.hpp"

#include "tests/support/process.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using Frames = std::vector<std::string>;

constexpr int kHwm = 100'000;

// How the broker's clients and extended workers frame their messages (protocol.md §1.4, §5.4).
enum class Framing { kPacked, kCompact, kClassic };
const char* framing_name(Framing f) {
    return f == Framing::kPacked ? "GBW03 (packed)" : f == Framing::kCompact ? "GBW02" : "GBW01";
}

enum class Target { kForwarder, kLoadBalancer, kBroker, kBrokerCredit };
constexpr int kTargets = 4;
const char* const kTargetNames[kTargets] = {"forwarder", "lb", "broker", "broker-credit"};
bool is_broker(Target t) { return t == Target::kBroker || t == Target::kBrokerCredit; }

// Credit of the broker-credit workers: as many requests as the client keeps in flight, so a
// single worker can hold all of them, as behind the forwarder's DEALER.
constexpr int kWorkerCredit = 64;

void send_frames(zmq::socket_t& socket, const Frames& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
        socket.send(zmq::buffer(frames[i]),
                    i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
}

// Receives one whole message without blocking; false if none is waiting.
bool recv_frames(zmq::socket_t& socket, std::vector<zmq::message_t>& frames) {
    frames.clear();
    while (true) {
        zmq::message_t part;
        if (!socket.recv(part, zmq::recv_flags::dontwait)) {
            return !frames.empty();
        }
        const bool more = part.more();
        frames.push_back(std::move(part));
        if (!more) {
            return true;
        }
    }
}

void configure(zmq::socket_t& socket) {
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::sndhwm, kHwm);
    socket.set(zmq::sockopt::rcvhwm, kHwm);
}

// --curve: the keys of the sockets that connect to the CURVE broker, by its endpoint (set once
// before any client or worker thread starts).
std::map<std::string, glassbox::bus::CurveClientKeys> g_curve_by_endpoint;

void connect(zmq::socket_t& socket, const std::string& endpoint) {
    if (const auto found = g_curve_by_endpoint.find(endpoint); found != g_curve_by_endpoint.end()) {
        glassbox::bus::apply_curve_client(socket, found->second);
    }
    socket.connect(endpoint);
}

// ---------------------------------------------------------------------------------------------
// Forwarder mode: the baseline, a bare zmq::proxy in its own process.

// Binds both sides of a baseline broker on loopback ports and writes its ready file (endpoint,
// backend_endpoint, pid) whole, by a rename, so the bench never reads half of it.
void bind_and_announce(zmq::socket_t& frontend, zmq::socket_t& backend,
                       const std::string& ready_file) {
    frontend.bind("tcp://127.0.0.1:*");
    backend.bind("tcp://127.0.0.1:*");
    nlohmann::json ready{{"endpoint", frontend.get(zmq::sockopt::last_endpoint)},
                         {"backend_endpoint", backend.get(zmq::sockopt::last_endpoint)},
                         {"pid", ::getpid()}};
    {
        std::ofstream out(ready_file + ".tmp");
        out << ready.dump() << "\n";
    }
    std::rename((ready_file + ".tmp").c_str(), ready_file.c_str());
}

int run_forwarder(const std::string& ready_file) {
    zmq::context_t context(1);
    zmq::socket_t frontend(context, zmq::socket_type::router);
    zmq::socket_t backend(context, zmq::socket_type::dealer);
    configure(frontend);
    configure(backend);
    bind_and_announce(frontend, backend, ready_file);
    zmq::proxy(frontend, backend);  // until the process is killed
    return 0;
}

// LB mode: the zguide load-balancing broker. Workers announce READY, get one request at a
// time, and are ready again when they reply; requests wait in a FIFO while none is ready.
int run_load_balancer(const std::string& ready_file) {
    zmq::context_t context(1);
    zmq::socket_t frontend(context, zmq::socket_type::router);
    zmq::socket_t backend(context, zmq::socket_type::router);
    configure(frontend);
    configure(backend);
    backend.set(zmq::sockopt::router_mandatory, 1);
    bind_and_announce(frontend, backend, ready_file);

    std::deque<std::string> idle;                     // worker identities, LRU first
    std::deque<std::vector<zmq::message_t>> waiting;  // [client-id][empty][rid][body]
    std::vector<zmq::message_t> frames;
    zmq::pollitem_t items[] = {{frontend.handle(), 0, ZMQ_POLLIN, 0},
                               {backend.handle(), 0, ZMQ_POLLIN, 0}};
    while (true) {
        zmq::poll(items, 2, milliseconds{-1});
        while (recv_frames(backend, frames)) {
            // [worker-id][empty]["READY" | "BYE"] or
            // [worker-id][empty][client-id][empty][rid][body]
            if (frames.size() == 3) {
                const auto id = frames[0].to_string();
                if (frames[2].to_string() == "READY") {
                    idle.push_back(id);
                } else {
                    idle.erase(std::remove(idle.begin(), idle.end(), id), idle.end());
                }
                continue;
            }
            if (frames.size() < 4) {
                continue;
            }
            idle.push_back(frames[0].to_string());
            for (std::size_t i = 2; i < frames.size(); ++i) {
                frontend.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore
                                                               : zmq::send_flags::none);
            }
        }
        while (recv_frames(frontend, frames)) {
            waiting.push_back(std::move(frames));
            frames.clear();
        }
        while (!idle.empty() && !waiting.empty()) {
            const auto worker = idle.front();
            idle.pop_front();
            auto& request = waiting.front();
            try {
                backend.send(zmq::buffer(worker), zmq::send_flags::sndmore);
            } catch (const zmq::error_t&) {
                continue;  // gone (EHOSTUNREACH): forget it, keep the request
            }
            backend.send(zmq::str_buffer(""), zmq::send_flags::sndmore);
            for (std::size_t i = 0; i < request.size(); ++i) {
                backend.send(request[i], i + 1 < request.size() ? zmq::send_flags::sndmore
                                                                : zmq::send_flags::none);
            }
            waiting.pop_front();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Workers.

// MDPW01 worker: READY, then REPLY with the request body; HEARTBEAT when idle for an interval.
// extended (--gbw01, or credit > 0): READY declares the glassbox extension, GBW03 (the compact
// layout, packed: protocol.md §5.1, §1.4), GBW02 (compact, unpacked) or GBW01 (classic) as
// `framing` says, and the credit if any; the worker answers every REQUEST waiting in its
// socket back to back (it holds up to `credit` of them).
void mdp_worker(zmq::context_t& context, std::string endpoint, std::string service, bool gbw01,
                Framing framing, int credit, std::atomic<bool>& stop, std::atomic<int>& ready) {
    zmq::socket_t socket(context, zmq::socket_type::dealer);
    configure(socket);
    connect(socket, endpoint);
    const std::string header = "MDPW01";
    const bool extended = gbw01 || credit > 0;
    // Plain 7/MDP and GBW01 keep the empty frame after the token; GBW02 and GBW03 leave it out.
    const bool compact = extended && framing != Framing::kClassic;
    const bool packed = extended && framing == Framing::kPacked;
    Frames hello{"", header, std::string(1, '\x01'), service};
    if (extended) {
        hello.push_back(packed ? "GBW03" : compact ? "GBW02" : "GBW01");
    }
    if (credit > 0) {
        hello.push_back(std::to_string(credit));
    }
    send_frames(socket, hello);
    ready.fetch_add(1);
    const milliseconds heartbeat{2500};
    auto next_heartbeat = Clock::now() + heartbeat;
    std::vector<zmq::message_t> frames;
    glassbox::bus::FrameViews views;
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    while (!stop.load(std::memory_order_relaxed)) {
        zmq::poll(&item, 1, milliseconds{50});
        while (recv_frames(socket, frames)) {
            if (packed) {
                // [envelope: MDPW01, 0x02, token, meta][body] -> [envelope: MDPW01, 0x03,
                // token][body]
                if (frames.size() != 2 ||
                    !glassbox::bus::unpack_views(frames[0].to_string_view(),
                                                 frames[1].to_string_view(), views)) {
                    continue;
                }
                if (views.size() < 5 || views[2] != std::string_view{"\x02", 1}) continue;
                std::vector<zmq::message_t> reply;
                reply.emplace_back();
                reply.emplace_back(header.data(), header.size());
                reply.emplace_back("\x03", 1);
                reply.emplace_back(views[3].data(), views[3].size());
                reply.push_back(std::move(frames.back()));
                glassbox::bus::pack_messages(reply);
                zmq::send_multipart(socket, reply);
                next_heartbeat = Clock::now() + heartbeat;
                continue;
            }
            // [empty][MDPW01][0x02][token][empty][body]... (GBW01: [meta][body]; GBW02: no
            // empty frame, [token][meta][body])
            if (frames.size() < (compact ? 5u : 6u) || frames[2].size() != 1 ||
                *frames[2].data<char>() != '\x02') {
                continue;
            }
            zmq::multipart_t reply;
            reply.addstr("");
            reply.addstr(header);
            reply.addstr(std::string(1, '\x03'));
            reply.add(std::move(frames[3]));
            if (!compact) {
                reply.addstr("");
            }
            reply.add(std::move(frames.back()));
            reply.send(socket);
            next_heartbeat = Clock::now() + heartbeat;
        }
        if (Clock::now() >= next_heartbeat) {
            send_frames(socket, {"", header, std::string(1, '\x04')});
            next_heartbeat = Clock::now() + heartbeat;
        }
    }
    send_frames(socket, {"", header, std::string(1, '\x05')});
}

// Sends every message that comes on `socket` back unchanged, until `stop`.
void send_back_until(zmq::socket_t& socket, const std::atomic<bool>& stop) {
    std::vector<zmq::message_t> frames;
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    while (!stop.load(std::memory_order_relaxed)) {
        zmq::poll(&item, 1, milliseconds{50});
        while (recv_frames(socket, frames)) {
            for (std::size_t i = 0; i < frames.size(); ++i) {
                socket.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore
                                                             : zmq::send_flags::none);
            }
        }
    }
}

// LB worker: READY, then each [empty][client-id][empty][rid][body] back unchanged; BYE on stop.
void lb_worker(zmq::context_t& context, std::string endpoint, std::atomic<bool>& stop,
               std::atomic<int>& ready) {
    zmq::socket_t socket(context, zmq::socket_type::dealer);
    configure(socket);
    socket.connect(endpoint);
    send_frames(socket, {"", "READY"});
    ready.fetch_add(1);
    send_back_until(socket, stop);
    send_frames(socket, {"", "BYE"});
}

// Forwarder worker: [client-id][empty][request-id][body] back unchanged.
void forwarder_worker(zmq::context_t& context, std::string endpoint, std::atomic<bool>& stop,
                      std::atomic<int>& ready) {
    zmq::socket_t socket(context, zmq::socket_type::dealer);
    configure(socket);
    socket.connect(endpoint);
    ready.fetch_add(1);
    send_back_until(socket, stop);
}

// ---------------------------------------------------------------------------------------------
// The client: keeps `in_flight` requests outstanding, records round trips.

struct Measurement {
    std::vector<double> latencies_us;  // measurement window only
    double seconds = 0;
    std::size_t errors = 0;
    std::size_t replies = 0;         // all replies, warm-up and drain included
    double intermediary_cpu_us = 0;  // CPU time of the broker/forwarder process meanwhile
    // CPU cost of the intermediary per request: robust to scheduling noise, unlike latency.
    double cpu_us_per_request() const {
        return replies > 0 ? intermediary_cpu_us / static_cast<double>(replies) : 0;
    }
    double p(double q) const {
        if (latencies_us.empty()) {
            return 0;
        }
        auto v = latencies_us;
        const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
        return v[k];
    }
    double throughput() const {
        return seconds > 0 ? static_cast<double>(latencies_us.size()) / seconds : 0;
    }
    // Adds one slice `m` of the same target, during which the intermediary spent `cpu_us`.
    void add(const Measurement& m, double cpu_us) {
        intermediary_cpu_us += cpu_us;
        replies += m.replies;
        latencies_us.insert(latencies_us.end(), m.latencies_us.begin(), m.latencies_us.end());
        seconds += m.seconds;
        errors += m.errors;
    }
};

Measurement run_client(zmq::context_t& context, Target target, const std::string& endpoint,
                       const std::string& service, const std::string& body, int in_flight,
                       milliseconds warmup, milliseconds duration, bool packed) {
    zmq::socket_t socket(context, zmq::socket_type::dealer);
    configure(socket);
    connect(socket, endpoint);
    std::map<std::uint64_t, Clock::time_point> sent;
    std::uint64_t next_id = 1;
    const std::string kGbc = "GBC01";
    auto send_one = [&] {
        const auto id = next_id++;
        const auto rid = std::to_string(id);
        if (is_broker(target)) {
            Frames request{"", kGbc, std::string(1, '\x01'), service, rid, "60000", body};
            if (packed) glassbox::bus::pack_frames(request);
            send_frames(socket, request);
        } else {
            send_frames(socket, {"", rid, body});
        }
        sent.emplace(id, Clock::now());
    };
    Measurement m;
    m.latencies_us.reserve(1'000'000);
    const auto start = Clock::now();
    const auto measure_from = start + warmup;
    const auto measure_to = measure_from + duration;
    for (int i = 0; i < in_flight; ++i) {
        send_one();
    }
    std::vector<zmq::message_t> frames;
    glassbox::bus::FrameViews views;
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    const auto drain_until = measure_to + milliseconds{5000};
    while (!sent.empty()) {
        const auto now = Clock::now();
        if (now >= drain_until) {
            break;
        }
        zmq::poll(&item, 1, milliseconds{100});
        while (recv_frames(socket, frames)) {
            const auto arrived = Clock::now();
            std::string rid;
            if (is_broker(target)) {
                // [empty][GBC01][0x03 FINAL | 0x05 ERROR][request-id]... (packed: the same
                // frames in [envelope][last])
                views.clear();
                if (frames.size() == 2 && frames[0].size() > 0) {
                    if (!glassbox::bus::unpack_views(frames[0].to_string_view(),
                                                     frames[1].to_string_view(), views)) {
                        views.clear();
                    }
                } else {
                    for (const auto& f : frames) views.push_back(f.to_string_view());
                }
                if (views.size() < 4) {
                    ++m.errors;
                    continue;
                }
                if (views[2] != std::string_view{"\x03", 1}) {
                    ++m.errors;
                }
                rid = std::string{views[3]};
            } else {
                if (frames.size() < 3) {
                    ++m.errors;
                    continue;
                }
                rid = frames[1].to_string();
            }
            const auto id = std::strtoull(rid.c_str(), nullptr, 10);
            auto it = sent.find(id);
            if (it == sent.end()) {
                continue;
            }
            if (it->second >= measure_from && arrived <= measure_to) {
                m.latencies_us.push_back(
                    std::chrono::duration<double, std::micro>(arrived - it->second).count());
            }
            sent.erase(it);
            ++m.replies;
            if (arrived < measure_to) {
                send_one();
            }
        }
    }
    m.seconds = std::chrono::duration<double>(duration).count();
    m.errors += sent.size();
    return m;
}

// ---------------------------------------------------------------------------------------------

struct Config {
    int workers;
    int in_flight;
    std::size_t body_bytes;
};

struct Row {
    Config config;
    Measurement m[kTargets];  // indexed by Target
    const Measurement& of(Target t) const { return m[static_cast<int>(t)]; }
};

// A JSON body of exactly `bytes` bytes: {"p":"xxx..."}.
std::string make_body(std::size_t bytes) {
    const std::size_t overhead = std::string(R"({"p":""})").size();
    return R"({"p":")" + std::string(bytes > overhead ? bytes - overhead : 0, 'x') + R"("})";
}

Measurement run_one(zmq::context_t& context, Target target, const nlohmann::json& ready,
                    const Config& c, int round, milliseconds warmup, milliseconds duration,
                    bool gbw01, Framing framing) {
    std::atomic<bool> stop{false};
    std::atomic<int> started{0};
    std::vector<std::thread> workers;
    const std::string service = "bench-" + std::to_string(round);
    for (int i = 0; i < c.workers; ++i) {
        if (is_broker(target)) {
            const int credit = target == Target::kBrokerCredit ? kWorkerCredit : 0;
            workers.emplace_back(mdp_worker, std::ref(context),
                                 ready["endpoint"].get<std::string>(), service, gbw01, framing,
                                 credit, std::ref(stop), std::ref(started));
        } else if (target == Target::kLoadBalancer) {
            workers.emplace_back(lb_worker, std::ref(context),
                                 ready["backend_endpoint"].get<std::string>(), std::ref(stop),
                                 std::ref(started));
        } else {
            workers.emplace_back(forwarder_worker, std::ref(context),
                                 ready["backend_endpoint"].get<std::string>(), std::ref(stop),
                                 std::ref(started));
        }
    }
    while (started.load() < c.workers) {
        std::this_thread::yield();
    }
    std::this_thread::sleep_for(milliseconds{100});  // connections up, READY registered
    auto m = run_client(context, target, ready["endpoint"].get<std::string>(), service,
                        make_body(c.body_bytes), c.in_flight, warmup, duration,
                        is_broker(target) && framing == Framing::kPacked);
    stop.store(true);
    for (auto& w : workers) {
        w.join();
    }
    return m;
}

// CPU time of every thread of `pid` so far, in microseconds (/proc/PID/task/*/schedstat, ns).
double cpu_us(pid_t pid) {
    double total_ns = 0;
    std::error_code ec;
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
        std::ifstream in(task.path() / "schedstat");
        double ns = 0;
        if (in >> ns) {
            total_ns += ns;
        }
    }
    return total_ns / 1000.0;
}

long rss_kib(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("VmRSS:", 0) == 0) {
            return std::strtol(line.c_str() + 6, nullptr, 10);
        }
    }
    return -1;
}

std::string fmt(double v, int precision = 1) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    return buf;
}

std::string self_path() {
    std::vector<char> buf(4096);
    const auto n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
    return n > 0 ? std::string(buf.data(), static_cast<std::size_t>(n)) : std::string{};
}

void usage() {
    std::cerr
        << "usage: bench_bus [--glassbox PATH] [--duration-ms N] [--warmup-ms N] [--slices N]\n"
           "                 [--gbw01] [--classic | --unpacked] [--quick] [--curve] [--json FILE]\n"
           "       bench_bus forwarder|lb --ready-file FILE\n";
}

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

double median_of(std::vector<double> v) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

using Child = std::unique_ptr<glassbox::integration::ChildProcess>;

// Starts a child and waits for its ready file (a stale one is removed first: it would name a
// dead process); exits the bench if it does not come up.
std::pair<Child, nlohmann::json> start_child(glassbox::integration::TempDir& tmp,
                                             const std::string& name, std::vector<std::string> argv,
                                             const std::string& ready_file) {
    std::filesystem::remove(ready_file);
    auto p =
        std::make_unique<glassbox::integration::ChildProcess>(name, std::move(argv), tmp.path());
    auto ready = glassbox::integration::wait_for_ready_file(ready_file, *p, milliseconds{10'000});
    if (!ready) {
        std::cerr << "bench_bus: " << name << " did not start:\n" << p->stderr_text() << "\n";
        std::exit(1);
    }
    return {std::move(p), *ready};
}

// One new connection to its first answer: connect, `mmi.service` over MDPC01, the reply, close.
double connect_round_trip_us(zmq::context_t& context, const std::string& endpoint) {
    const auto began = Clock::now();
    zmq::socket_t socket(context, zmq::socket_type::dealer);
    configure(socket);
    connect(socket, endpoint);
    send_frames(socket, {"", "MDPC01", "mmi.service", "bench"});
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    std::vector<zmq::message_t> frames;
    const auto give_up = began + milliseconds{5000};
    while (Clock::now() < give_up) {
        zmq::poll(&item, 1, milliseconds{50});
        if (recv_frames(socket, frames)) {
            return std::chrono::duration<double, std::micro>(Clock::now() - began).count();
        }
    }
    return -1;
}

// --curve: the broker with CURVE against the same broker on plain TCP (docs/security.md).
int run_curve_bench(const std::string& glassbox, milliseconds duration, milliseconds warmup,
                    int slices, bool quick, Framing framing, const std::string& json_out) {
    namespace bus = glassbox::bus;
    glassbox::integration::TempDir tmp("glassbox-bench-curve");
    // The broker's pair and one allowed client/worker key, as `glassbox keys` makes them.
    const auto keys = tmp.path() / "keys";
    std::filesystem::create_directories(keys / "allowed");
    auto server = bus::generate_certificate("broker", {});
    auto peer = bus::generate_certificate("bench", bus::parse_roles("client worker:*").value());
    if (!server.ok() || !peer.ok() || !bus::write_certificate_pair(keys, server.value()).ok() ||
        !bus::write_certificate_pair(keys / "allowed", peer.value()).ok()) {
        std::cerr << "bench_bus: cannot make CURVE keys\n";
        return 1;
    }
    std::filesystem::remove(bus::secret_certificate_path(keys / "allowed", "bench"));

    const std::vector<std::string> variants{"plain", "curve"};
    Child processes[2];
    nlohmann::json ready[2];
    for (int v = 0; v < 2; ++v) {
        const auto ready_file = (tmp.path() / (variants[v] + ".ready.json")).string();
        std::vector<std::string> argv{
            glassbox,       "--log-level",
            "warn",         "broker",
            "--bind",       "tcp://127.0.0.1:*",
            "--pub",        "tcp://127.0.0.1:*",
            "--home",       (tmp.path() / (variants[v] + "-home")).string(),
            "--ready-file", ready_file};
        if (v == 1) {
            argv.insert(argv.end(),
                        {"--curve-key", bus::secret_certificate_path(keys, "broker").string(),
                         "--curve-allow", (keys / "allowed").string()});
        }
        std::tie(processes[v], ready[v]) =
            start_child(tmp, variants[v], std::move(argv), ready_file);
    }
    g_curve_by_endpoint[ready[1]["endpoint"].get<std::string>()] = bus::CurveClientKeys{
        server.value().public_key, peer.value().public_key, peer.value().secret_key};

    std::vector<Config> configs;
    for (int workers : {1, 4}) {
        for (int in_flight : {1, 64}) {
            for (std::size_t body : {std::size_t{64}, std::size_t{4096}}) {
                if (quick && workers == 4) continue;
                configs.push_back({workers, in_flight, body});
            }
        }
    }
    zmq::context_t context(1);
    std::vector<std::array<Measurement, 2>> rows;
    int round = 0;
    std::cerr << "bench_bus --curve: " << configs.size()
              << " configurations, plain and CURVE interleaved, " << duration.count()
              << " ms each in " << slices << " slices\n";
    for (const auto& c : configs) {
        std::array<Measurement, 2> row;
        for (int slice = 0; slice < slices; ++slice) {
            for (int k = 0; k < 2; ++k) {
                const int v = (k + slice) % 2;
                const double cpu_before = cpu_us(processes[v]->pid());
                // GBW03 workers without credit and a packed client: what glassbox's own workers
                // and BusClient speak (--unpacked: GBW02 and the classic GBC01 frames).
                auto m = run_one(context, Target::kBroker, ready[v], c, round++, warmup,
                                 duration / slices, true, framing);
                row[static_cast<std::size_t>(v)].add(m, cpu_us(processes[v]->pid()) - cpu_before);
            }
        }
        std::cerr << "  workers=" << c.workers << " in_flight=" << c.in_flight
                  << " body=" << c.body_bytes << "  plain p50 " << fmt(row[0].p(0.5)) << " us "
                  << fmt(row[0].throughput(), 0) << "/s  curve p50 " << fmt(row[1].p(0.5)) << " us "
                  << fmt(row[1].throughput(), 0) << "/s\n";
        rows.push_back(std::move(row));
    }

    // New connections, alternating: the CURVE handshake and the ZAP check against a plain one.
    constexpr int kConnections = 200;
    std::vector<double> connect_us[2];
    double connect_cpu_us[2] = {0, 0};
    for (int i = 0; i < kConnections; ++i) {
        for (int v = 0; v < 2; ++v) {
            const double cpu_before = cpu_us(processes[v]->pid());
            const double us =
                connect_round_trip_us(context, ready[v]["endpoint"].get<std::string>());
            connect_cpu_us[v] += cpu_us(processes[v]->pid()) - cpu_before;
            if (us >= 0) connect_us[v].push_back(us);
        }
    }
    for (auto& p : processes) p->terminate();

    std::ostringstream out;
    out << "| workers | in flight | body | plain p50 us | CURVE p50 us | p50 CURVE/plain | plain "
           "req/s "
           "| CURVE req/s | req/s CURVE/plain | CPU us/req plain | CURVE |\n";
    out << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    double worst_p50 = 0;
    double worst_rps = 1e9;
    nlohmann::json json_rows = nlohmann::json::array();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& c = configs[i];
        const auto& plain = rows[i][0];
        const auto& secured = rows[i][1];
        const double p50 = ratio(secured.p(0.5), plain.p(0.5));
        const double rps = ratio(secured.throughput(), plain.throughput());
        worst_p50 = std::max(worst_p50, p50);
        worst_rps = std::min(worst_rps, rps);
        out << "| " << c.workers << " | " << c.in_flight << " | "
            << (c.body_bytes == 4096 ? std::string{"4 KiB"} : std::to_string(c.body_bytes) + " B")
            << " | " << fmt(plain.p(0.5)) << " | " << fmt(secured.p(0.5)) << " | " << fmt(p50, 2)
            << " | " << fmt(plain.throughput(), 0) << " | " << fmt(secured.throughput(), 0) << " | "
            << fmt(rps, 2) << " | " << fmt(plain.cpu_us_per_request(), 1) << " | "
            << fmt(secured.cpu_us_per_request(), 1) << " |\n";
        json_rows.push_back({{"workers", c.workers},
                             {"in_flight", c.in_flight},
                             {"body", c.body_bytes},
                             {"plain_p50_us", plain.p(0.5)},
                             {"curve_p50_us", secured.p(0.5)},
                             {"plain_rps", plain.throughput()},
                             {"curve_rps", secured.throughput()},
                             {"errors", plain.errors + secured.errors}});
    }
    const double plain_connect = median_of(connect_us[0]);
    const double curve_connect = median_of(connect_us[1]);
    auto verdict = [](bool met) { return met ? std::string{"met"} : std::string{"NOT met"}; };
    out << "\n- p50 CURVE / plain: worst " << fmt(worst_p50, 2)
        << " (target <= 1.30: " << verdict(worst_p50 <= 1.3) << ")\n";
    out << "- throughput CURVE / plain: worst " << fmt(worst_rps, 2)
        << " (target >= 0.70: " << verdict(worst_rps >= 0.7) << ")\n";
    out << "- a new connection to its first answer (" << kConnections << " each): plain median "
        << fmt(plain_connect) << " us, CURVE (handshake + ZAP check) " << fmt(curve_connect)
        << " us, +" << fmt(curve_connect - plain_connect) << " us; broker CPU per connection plain "
        << fmt(connect_cpu_us[0] / kConnections) << " us, CURVE "
        << fmt(connect_cpu_us[1] / kConnections) << " us\n";
    std::cout << out.str();
    if (!json_out.empty()) {
        std::ofstream(json_out) << nlohmann::json{{"rows", json_rows},
                                                  {"worst_p50_ratio", worst_p50},
                                                  {"worst_rps_ratio", worst_rps},
                                                  {"connect_plain_us", plain_connect},
                                                  {"connect_curve_us", curve_connect}}
                                       .dump(2)
                                << "\n";
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && (args[0] == "forwarder" || args[0] == "lb")) {
        if (args.size() != 3 || args[1] != "--ready-file") {
            usage();
            return 2;
        }
        return args[0] == "lb" ? run_load_balancer(args[2]) : run_forwarder(args[2]);
    }
#ifdef GLASSBOX_BINARY
    std::string glassbox = GLASSBOX_BINARY;
#else
    std::string glassbox;
#endif
    milliseconds duration{1600};  // per configuration and target, split into `slices`
    milliseconds warmup{100};     // per slice, not measured
    int slices = 4;
    bool gbw01 = false;
    Framing framing = Framing::kPacked;
    bool quick = false;
    bool curve = false;
    std::string json_out;
    for (std::size_t i = 0; i < args.size(); ++i) {
        auto next = [&]() -> std::string {
            if (i + 1 >= args.size()) {
                usage();
                std::exit(2);
            }
            return args[++i];
        };
        if (args[i] == "--glassbox") {
            glassbox = next();
        } else if (args[i] == "--duration-ms") {
            duration = milliseconds{std::stoi(next())};
        } else if (args[i] == "--warmup-ms") {
            warmup = milliseconds{std::stoi(next())};
        } else if (args[i] == "--slices") {
            slices = std::max(1, std::stoi(next()));
        } else if (args[i] == "--gbw01") {
            gbw01 = true;  // 7/MDP-variant workers declare the extension (no credit): [meta][body]
        } else if (args[i] == "--classic") {
            framing =
                Framing::kClassic;  // extended workers declare GBW01, clients send GBC01 frames
        } else if (args[i] == "--unpacked") {
            framing =
                Framing::kCompact;  // extended workers declare GBW02, clients send GBC01 frames
        } else if (args[i] == "--curve") {
            curve = true;  // CURVE against plain TCP, the same broker (docs/security.md)
        } else if (args[i] == "--quick") {
            quick = true;  // skip the 2-worker configurations
        } else if (args[i] == "--json") {
            json_out = next();
        } else {
            usage();
            return 2;
        }
    }
    if (glassbox.empty()) {
        std::cerr << "bench_bus: no glassbox binary (--glassbox PATH)\n";
        return 2;
    }
    ::signal(SIGPIPE, SIG_IGN);

    if (curve) return run_curve_bench(glassbox, duration, warmup, slices, quick, framing, json_out);

    glassbox::integration::TempDir tmp("glassbox-bench");
    auto start = [&](const std::string& name, std::vector<std::string> argv,
                     const std::string& ready_file) {
        return start_child(tmp, name, std::move(argv), ready_file);
    };
    auto start_target = [&](Target t) {
        const std::string tag = kTargetNames[static_cast<int>(t)];
        const auto ready_file = (tmp.path() / (tag + ".ready.json")).string();
        if (is_broker(t)) {
            return start(tag,
                         {glassbox, "--log-level", "warn", "broker", "--bind", "tcp://127.0.0.1:*",
                          "--pub", "tcp://127.0.0.1:*", "--home",
                          (tmp.path() / (tag + "-home")).string(), "--ready-file", ready_file},
                         ready_file);
        }
        return start(tag, {self_path(), tag, "--ready-file", ready_file}, ready_file);
    };

    // Idle RSS of a fresh broker: started, bound, 1.5 s of nothing.
    long idle_rss = -1;
    {
        auto [broker, ready] = start_target(Target::kBroker);
        std::this_thread::sleep_for(milliseconds{1500});
        idle_rss = rss_kib(broker->pid());
        broker->terminate();
        std::filesystem::remove_all(tmp.path() / "broker-home");
    }

    Child processes[kTargets];
    nlohmann::json ready[kTargets];
    for (int t = 0; t < kTargets; ++t) {
        std::tie(processes[t], ready[t]) = start_target(static_cast<Target>(t));
    }

    std::vector<Config> configs;
    for (int workers : {1, 2, 4}) {
        for (int in_flight : {1, 64}) {
            for (std::size_t body : {std::size_t{64}, std::size_t{4096}}) {
                if (quick && workers == 2) {
                    continue;
                }
                configs.push_back({workers, in_flight, body});
            }
        }
    }

    zmq::context_t context(1);
    std::vector<Row> rows;
    int round = 0;
    std::cerr << "bench_bus: " << configs.size() << " configurations x " << kTargets << " targets, "
              << duration.count() << " ms each in " << slices << " interleaved slices (+"
              << warmup.count() << " ms warm-up per slice)\n";
    for (const auto& c : configs) {
        Row row{c, {}};
        // Interleaved slices, rotating the order: drift and noise of the machine (other
        // processes, frequency changes) fall on every target alike.
        for (int slice = 0; slice < slices; ++slice) {
            for (int k = 0; k < kTargets; ++k) {
                const int t = (k + slice) % kTargets;
                const double cpu_before = cpu_us(processes[t]->pid());
                auto m = run_one(context, static_cast<Target>(t), ready[t], c, round++, warmup,
                                 duration / slices, gbw01, framing);
                row.m[t].add(m, cpu_us(processes[t]->pid()) - cpu_before);
            }
        }
        std::cerr << "  workers=" << c.workers << " in_flight=" << c.in_flight
                  << " body=" << c.body_bytes;
        for (int t = 0; t < kTargets; ++t) {
            std::cerr << "  " << kTargetNames[t] << " p50 " << fmt(row.m[t].p(0.5)) << " us "
                      << fmt(row.m[t].throughput(), 0) << "/s";
        }
        std::cerr << "\n";
        rows.push_back(std::move(row));
    }
    const long loaded_rss = rss_kib(processes[static_cast<int>(Target::kBroker)]->pid());
    const long loaded_credit_rss =
        rss_kib(processes[static_cast<int>(Target::kBrokerCredit)]->pid());
    for (auto& p : processes) {
        p->terminate();
    }

    // Table 1: absolute figures per target. Table 2: each broker variant against the two
    // baselines, and the CPU cost per request of every intermediary.
    std::ostringstream out;
    auto body_text = [](const Config& c) {
        return c.body_bytes == 4096 ? std::string{"4 KiB"} : std::to_string(c.body_bytes) + " B";
    };
    out << "| workers | in flight | body | fwd p50 | fwd p99 | fwd req/s | lb p50 | lb p99 | lb "
           "req/s "
           "| mdp p50 | mdp p99 | mdp req/s | credit p50 | credit p99 | credit req/s |\n";
    out << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& r : rows) {
        out << "| " << r.config.workers << " | " << r.config.in_flight << " | "
            << body_text(r.config);
        for (int t = 0; t < kTargets; ++t) {
            const auto& m = r.m[t];
            out << " | " << fmt(m.p(0.5)) << " | " << fmt(m.p(0.99)) << " | "
                << fmt(m.throughput(), 0);
        }
        out << " |\n";
    }
    out << "\n| workers | in flight | body | p50 mdp/fwd | req/s mdp/fwd | p50 mdp/lb "
           "| req/s mdp/lb | p50 credit/fwd | req/s credit/fwd | p50 credit/lb | req/s credit/lb "
           "| CPU us/req fwd | lb | mdp | credit |\n";
    out << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";

    // Ratios of one broker variant against both baselines, gathered for the summary.
    struct Ratios {
        std::vector<double> p50_fwd, p50_lb, tput_fwd_64, tput_lb_64, cpu_fwd, cpu_lb;
    };
    Ratios variant[2];  // [0] 7/MDP workers, [1] credit workers
    const Target variant_target[2] = {Target::kBroker, Target::kBrokerCredit};
    nlohmann::json results = nlohmann::json::array();
    std::size_t errors = 0;
    for (const auto& r : rows) {
        const auto& f = r.of(Target::kForwarder);
        const auto& l = r.of(Target::kLoadBalancer);
        out << "| " << r.config.workers << " | " << r.config.in_flight << " | "
            << body_text(r.config);
        for (int v = 0; v < 2; ++v) {
            const auto& b = r.of(variant_target[v]);
            const double p50f = ratio(b.p(0.5), f.p(0.5));
            const double p50l = ratio(b.p(0.5), l.p(0.5));
            const double tf = ratio(b.throughput(), f.throughput());
            const double tl = ratio(b.throughput(), l.throughput());
            variant[v].p50_fwd.push_back(p50f);
            variant[v].p50_lb.push_back(p50l);
            if (r.config.in_flight == 64) {
                variant[v].tput_fwd_64.push_back(tf);
                variant[v].tput_lb_64.push_back(tl);
            }
            variant[v].cpu_fwd.push_back(ratio(b.cpu_us_per_request(), f.cpu_us_per_request()));
            variant[v].cpu_lb.push_back(ratio(b.cpu_us_per_request(), l.cpu_us_per_request()));
            out << " | " << fmt(p50f, 2) << " | " << fmt(tf, 2) << " | " << fmt(p50l, 2) << " | "
                << fmt(tl, 2);
        }
        for (int t = 0; t < kTargets; ++t) out << " | " << fmt(r.m[t].cpu_us_per_request());
        out << " |\n";
        nlohmann::json row{{"workers", r.config.workers},
                           {"in_flight", r.config.in_flight},
                           {"body_bytes", r.config.body_bytes}};
        for (int t = 0; t < kTargets; ++t) {
            errors += r.m[t].errors;
            row[kTargetNames[t]] = {{"p50_us", r.m[t].p(0.5)},
                                    {"p99_us", r.m[t].p(0.99)},
                                    {"rps", r.m[t].throughput()},
                                    {"errors", r.m[t].errors},
                                    {"cpu_us_per_request", r.m[t].cpu_us_per_request()},
                                    {"samples", r.m[t].latencies_us.size()}};
        }
        results.push_back(row);
    }
    out << "\nLatencies in microseconds (send to terminal reply); req/s over the measured window."
           " mdp: broker with 7/MDP workers; credit: broker with "
        << framing_name(framing) << " workers of credit " << kWorkerCredit << ".\n\n";
    for (int v = 0; v < 2; ++v) {
        const Target t = variant_target[v];
        const Ratios& x = variant[v];
        // A target with no samples (every request failed) is missed, whatever the ratio says.
        const bool ok = std::all_of(rows.begin(), rows.end(),
                                    [t](const Row& r) { return !r.of(t).latencies_us.empty(); });
        auto verdict = [ok](bool met) { return met && ok ? "met" : "MISSED"; };
        const double worst_p50_fwd = *std::max_element(x.p50_fwd.begin(), x.p50_fwd.end());
        const double worst_p50_lb = *std::max_element(x.p50_lb.begin(), x.p50_lb.end());
        const double worst_t_fwd = *std::min_element(x.tput_fwd_64.begin(), x.tput_fwd_64.end());
        const double worst_t_lb = *std::min_element(x.tput_lb_64.begin(), x.tput_lb_64.end());
        const std::string name = kTargetNames[static_cast<int>(t)];
        out << "- " << name << " p50 / forwarder: median " << fmt(median_of(x.p50_fwd), 2)
            << ", worst " << fmt(worst_p50_fwd, 2)
            << " (target <= 1.30: " << verdict(worst_p50_fwd <= 1.3) << ")\n";
        out << "- " << name << " req/s / forwarder at 64 in flight: median "
            << fmt(median_of(x.tput_fwd_64), 2) << ", worst " << fmt(worst_t_fwd, 2)
            << " (target >= 0.70: " << verdict(worst_t_fwd >= 0.7) << ")\n";
        out << "- " << name << " p50 / lb: median " << fmt(median_of(x.p50_lb), 2) << ", worst "
            << fmt(worst_p50_lb, 2) << " (same target: " << verdict(worst_p50_lb <= 1.3) << ")\n";
        out << "- " << name << " req/s / lb at 64 in flight: median "
            << fmt(median_of(x.tput_lb_64), 2) << ", worst " << fmt(worst_t_lb, 2)
            << " (same target: " << verdict(worst_t_lb >= 0.7) << ")\n";
        out << "- " << name << " CPU per request / forwarder: median "
            << fmt(median_of(x.cpu_fwd), 2) << "; / lb: median " << fmt(median_of(x.cpu_lb), 2)
            << "\n";
    }
    const bool rss_ok = idle_rss >= 0 && idle_rss * 1024 <= 20'000'000;
    out << "- broker idle RSS: " << fmt(static_cast<double>(idle_rss) / 1024.0, 1)
        << " MiB (target <= 20 MB: " << (rss_ok ? "met" : "MISSED")
        << "); after the run: " << fmt(static_cast<double>(loaded_rss) / 1024.0, 1)
        << " MiB (7/MDP), " << fmt(static_cast<double>(loaded_credit_rss) / 1024.0, 1)
        << " MiB (credit)\n";
    out << "- errors (requests without a FINAL): " << errors << "\n";
    std::cout << out.str();
    if (!json_out.empty()) {
        std::ofstream(json_out) << nlohmann::json{{"rows", results},
                                                  {"idle_rss_kib", idle_rss},
                                                  {"loaded_rss_kib", loaded_rss},
                                                  {"loaded_credit_rss_kib", loaded_credit_rss},
                                                  {"worker_credit", kWorkerCredit},
                                                  {"duration_ms", duration.count()},
                                                  {"slices", slices},
                                                  {"gbw01", gbw01},
                                                  {"layout", framing_name(framing)}}
                                       .dump(2)
                                << "\n";
    }
    return errors == 0 ? 0 : 1;
}
