// glassbox on three hosts (issue 20, "Many hosts"): Linux network namespaces joined by a
// bridge stand in for machines. Host A runs `glassbox up --role broker` (broker, trace collector,
// gateway), host B `up --role workers` with two graph-rag processes, document-rag, embeddings and
// llm (and echo), host C `up --role workers --services store` and every client command. The
// workers start before the broker. The test loads ops/sample, asks graph RAG and document RAG from
// C, checks the answers and the stored traces, then pulls B's cable for 10 s: B's workers expire on
// the broker and register again, the request running on B ends with WorkerLost and an error trace,
// every question asked around the outage ends with an answer or a typed error, and every trace the
// collector holds has an end. Needs root (or CAP_NET_ADMIN) and iproute2; skipped with the
// reason otherwise.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <variant>

#include "tests/integration/sample_knowledge.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/netns_lab.hpp"
#include "tests/support/postgres_server.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// An unusual private subnet, unlikely to meet a real network's (and only inside the namespaces).
constexpr const char* kSubnet = "10.231.77.";
// The hosts' heartbeat: B's workers count as gone 1.5 s (three intervals) after its cable goes.
constexpr int kHostHeartbeatMs = 500;
// How long B's cable stays out.
constexpr milliseconds kOutage{10'000};

// Who runs a command, for the security flags below.
enum class Party { kBrokerHost, kWorkersHost, kClient };

// THE ONE PLACE for transport security in this test: every security flag of the broker host's
// `up`, of the workers hosts' `up` and of the client commands (all run on C) comes from here.
// CURVE, as docs/deployment.md §2.1 sets a deployment up: before any `up` (the workers hosts
// start first), A's home gets its local set (`glassbox keys init`: the broker's pair, its
// collector's and gateway's), B's and C's homes a `worker` pair each (C a `client` pair too, for
// its commands), their public certificates are allowed on A under names of their own, and A's
// broker.key is copied into B's and C's keys/. Every process then finds its keys in its home:
// no flag is needed, and none says --insecure.
struct HostSecurity {
    // `log_dir`: where the key commands' output goes (the test's folder).
    void prepare(const std::map<std::string, fs::path>& homes, const fs::path& log_dir) {
        log_dir_ = log_dir;
        const auto& a = homes.at("a");
        glassbox({"keys", "init", "--home", a.string()});
        // Every other home (a host's, or a process's of its own on a host) is a worker's, or, for
        // a home named "...-collector", a trace collector's (its key named as the collector
        // looks for it).
        for (const auto& [host, home] : homes) {
            if (host == "a") continue;
            const bool collector = host.ends_with("-collector");
            const std::string pair = collector ? "collector" : "worker";
            std::vector<std::string> roles = {"--role", "worker:*", "--role", "client"};
            if (collector) roles = {"--role", "collector", "--role", "worker:trace"};
            std::vector<std::string> args = {"keys", "new", pair};
            args.insert(args.end(), roles.begin(), roles.end());
            args.insert(args.end(), {"--home", home.string()});
            glassbox(args);
            glassbox({"keys", "allow", (home / "keys" / (pair + ".key")).string(), "--as",
                      "host-" + host + "-" + pair, "--home", a.string()});
            fs::copy_file(a / "keys" / "broker.key", home / "keys" / "broker.key",
                          fs::copy_options::overwrite_existing);
        }
        const auto& c = homes.at("c");
        glassbox({"keys", "new", "client", "--role", "client", "--role", "subscriber", "--home",
                  c.string()});
        glassbox({"keys", "allow", (c / "keys" / "client.key").string(), "--as", "host-c-client",
                  "--home", a.string()});
    }
    std::vector<std::string> flags(Party /*party*/, const fs::path& /*home*/) const { return {}; }

private:
    void glassbox(std::vector<std::string> args) const {
        args.insert(args.begin(), glassbox_binary());
        const auto done = run_command(std::move(args), log_dir_, milliseconds{30'000});
        ASSERT_TRUE(done.status.exited && done.status.code == 0) << done.err;
    }
    fs::path log_dir_;
};

// Every JSON line of a command's output (`invoke --json` prints one reply per line).
std::vector<json> json_lines(const std::string& text) {
    std::vector<json> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        auto value = json::parse(line, nullptr, false);
        if (!value.is_discarded()) out.push_back(std::move(value));
    }
    return out;
}

// One question as `glassbox invoke … --json` answered it.
struct Asked {
    std::string service;
    std::string question;
    ChildProcess* process = nullptr;
    std::optional<ExitStatus> status;
    std::string session;  // from its explain replies or FINAL, if any came
    bool final = false;   // a FINAL came
    std::string answer;   // the FINAL's response, if one came
    std::string error;    // the typed error line on stderr, if it failed
};

class HostsTest : public ClusterTest {
protected:
    void SetUp() override {
        auto made = NetnsLab::create({"a", "b", "c"}, kSubnet, dir());
        if (auto* reason = std::get_if<std::string>(&made)) GTEST_SKIP() << *reason;
        lab_ = std::move(std::get<std::unique_ptr<NetnsLab>>(made));
        endpoint_ = "tcp://" + lab_->host("a").address + ":5555";
        homes_ = {{"a", dir() / "a-home"}, {"b", dir() / "b-home"}, {"c", dir() / "c-home"}};
        security_.prepare(homes_, dir());
    }

    void TearDown() override {
        ClusterTest::TearDown();  // every process first: a namespace goes once nothing runs in it
        lab_.reset();
    }

    // `glassbox up` on `host` with `args` (after the common ones); its ready file.
    json start_up(const std::string& host, Party party, std::vector<std::string> args) {
        const auto ready_file = dir() / (host + "-up.ready");
        std::vector<std::string> argv = {glassbox_binary(),  "up",
                                         "--home",           homes_.at(host).string(),
                                         "--heartbeat-ms",   std::to_string(kHostHeartbeatMs),
                                         "--threads",        "1",
                                         "--engine-threads", "1",
                                         "--ready-file",     ready_file.string()};
        argv.insert(argv.end(), args.begin(), args.end());
        const auto security = security_.flags(party, homes_.at(host));
        argv.insert(argv.end(), security.begin(), security.end());
        auto& up = start_process("up-" + host, lab_->in_host(host, argv));
        const auto ready = wait_for_ready_file(ready_file, up, milliseconds{30'000});
        if (!ready) {
            ADD_FAILURE() << "up on host " << host << " wrote no ready file; stderr:\n"
                          << up.stderr_text();
            return json();
        }
        return *ready;
    }

    // `glassbox <args>` on the client host C, against the broker on A.
    std::vector<std::string> client_argv(std::vector<std::string> args) const {
        std::vector<std::string> argv = {glassbox_binary()};
        argv.insert(argv.end(), args.begin(), args.end());
        for (const auto& flag :
             std::vector<std::string>{"--broker", endpoint_, "--home", homes_.at("c").string()})
            argv.push_back(flag);
        const auto security = security_.flags(Party::kClient, homes_.at("c"));
        argv.insert(argv.end(), security.begin(), security.end());
        return lab_->in_host("c", argv);
    }
    CommandResult on_client(std::vector<std::string> args,
                            milliseconds timeout = milliseconds{120'000}) {
        return run_command(client_argv(std::move(args)), dir(), timeout);
    }

    std::optional<json> status() {
        const auto result =
            on_client({"status", "--json", "--timeout-ms", "3000"}, milliseconds{15'000});
        if (!result.status.exited || result.status.code != 0) return std::nullopt;
        auto value = json::parse(result.out, nullptr, false);
        if (!value.is_object()) return std::nullopt;
        return value;
    }

    static int workers_of(const json& status, const std::string& service) {
        for (const auto& s : status.value("services", json::array())) {
            if (s.value("name", "") == service) return s.value("workers", 0);
        }
        return 0;
    }

    // Polls `glassbox status` on C until every service shows its count of workers; the last
    // status seen when it does not come.
    bool wait_for_workers_on_broker(const std::map<std::string, int>& expected,
                                    milliseconds timeout, std::string& last) {
        const auto until = Clock::now() + timeout;
        while (Clock::now() < until) {
            if (const auto s = status()) {
                bool all = true;
                for (const auto& [service, workers] : expected)
                    all = all && workers_of(*s, service) == workers;
                if (all) return true;
                last = s->value("services", json::array()).dump();
            }
            std::this_thread::sleep_for(milliseconds{200});
        }
        return false;
    }

    // Starts `glassbox invoke <service> -q <question> --json` on C in the background.
    Asked ask_in_background(const std::string& service, const std::string& question,
                            int timeout_ms) {
        Asked asked;
        asked.service = service;
        asked.question = question;
        asked.process = &start_process("invoke-" + std::to_string(processes_.size()),
                                       client_argv({"invoke", service, "-q", question, "--json",
                                                    "--timeout-ms", std::to_string(timeout_ms)}));
        return asked;
    }

    // Starts `glassbox call <service> <body>` on C in the background (replies as `invoke --json`).
    Asked call_in_background(const std::string& service, const json& body, int timeout_ms) {
        Asked asked;
        asked.service = service;
        asked.question = body.dump();
        asked.process = &start_process("call-" + std::to_string(processes_.size()),
                                       client_argv({"call", service, body.dump(), "--timeout-ms",
                                                    std::to_string(timeout_ms)}));
        return asked;
    }

    // Polls `glassbox status` on C until `service` has a worker and none of them is idle.
    bool wait_until_busy(const std::string& service, milliseconds timeout) {
        const auto until = Clock::now() + timeout;
        while (Clock::now() < until) {
            if (const auto s = status()) {
                for (const auto& entry : s->value("services", json::array())) {
                    if (entry.value("name", "") == service && entry.value("workers", 0) > 0 &&
                        entry.value("idle", -1) == 0)
                        return true;
                }
            }
            std::this_thread::sleep_for(milliseconds{50});
        }
        return false;
    }

    // Waits for a background question to end and reads what it got.
    void finish(Asked& asked, milliseconds timeout = milliseconds{120'000}) {
        asked.status = asked.process->wait_exit(timeout);
        for (const auto& line : json_lines(asked.process->stdout_text())) {
            const json body = line.value("body", json::object());
            if (!body.is_object()) continue;
            if (asked.session.empty() && body.contains("session") && body["session"].is_string())
                asked.session = body["session"].get<std::string>();
            if (line.value("kind", "") == "final") {
                asked.final = true;
                asked.answer = body.value("response", "");
            }
        }
        asked.error = asked.process->stderr_text();
        while (!asked.error.empty() && asked.error.back() == '\n') asked.error.pop_back();
    }

    Asked ask(const std::string& service, const std::string& question) {
        Asked asked = ask_in_background(service, question, 60'000);
        finish(asked);
        return asked;
    }

    // The trace the collector stored for `session` once it has ended; null if it never does.
    json ended_trace(const std::string& session, milliseconds timeout = milliseconds{30'000}) {
        const auto until = Clock::now() + timeout;
        json shown;
        while (Clock::now() < until) {
            const auto result =
                on_client({"traces", "show", session, "--format", "json"}, milliseconds{15'000});
            if (result.status.exited && result.status.code == 0) {
                shown = json::parse(result.out, nullptr, false);
                const std::string status =
                    shown.is_object() ? shown["session"].value("status", "") : "";
                if (status == "complete" || status == "error") return shown;
            }
            std::this_thread::sleep_for(milliseconds{200});
        }
        ADD_FAILURE() << "the trace " << session
                      << " has no end; last shown: " << shown.dump().substr(0, 2000);
        return json();
    }

    // Every session the collector holds (sub-traces too).
    json all_sessions() {
        const auto result = on_client({"traces", "list", "--all", "--json", "--limit", "10000"});
        EXPECT_TRUE(result.status.exited && result.status.code == 0) << result.err;
        const auto reply = json::parse(result.out, nullptr, false);
        return reply.is_object() ? reply.value("sessions", json::array()) : json::array();
    }

    std::unique_ptr<NetnsLab> lab_;
    std::string endpoint_;
    std::map<std::string, fs::path> homes_;
    HostSecurity security_;
};

// The services every host runs, as the broker counts their workers (one thread per process).
const std::map<std::string, int> kAllWorkers = {{"trace", 1},       {"echo", 1},  {"embeddings", 1},
                                                {"llm", 1},         {"store", 1}, {"graph-rag", 2},
                                                {"document-rag", 1}};
const std::map<std::string, int> kHostBWorkersGone = {
    {"echo", 0}, {"graph-rag", 0}, {"document-rag", 0}, {"embeddings", 0},
    {"llm", 0},  {"store", 1},     {"trace", 1}};

bool is_typed_error(const std::string& line) {
    static const std::regex typed("^[A-Z][A-Za-z]+: .+");
    return std::regex_search(line, typed) && line.rfind("Internal:", 0) != 0;
}

TEST_F(HostsTest, ThreeHostsAnswerAndSurviveAPulledCable) {
    const std::string broker_address = lab_->host("a").address;

    // The workers hosts first: their workers keep trying until the broker is up.
    const json b = start_up("b", Party::kWorkersHost,
                            {"--role", "workers", "--broker", endpoint_, "--services",
                             "echo,embeddings,llm,graph-rag=2,document-rag"});
    ASSERT_TRUE(b.is_object());
    EXPECT_EQ(b.value("role", ""), "workers");
    EXPECT_EQ(b.value("endpoint", ""), endpoint_);
    EXPECT_EQ(b["services"],
              json({"echo", "embeddings", "llm", "graph-rag", "graph-rag-2", "document-rag"}));
    const json c = start_up("c", Party::kWorkersHost,
                            {"--role", "workers", "--broker", endpoint_, "--services", "store"});
    ASSERT_TRUE(c.is_object());

    const json a =
        start_up("a", Party::kBrokerHost,
                 {"--role", "broker", "--bind", endpoint_, "--pub",
                  "tcp://" + broker_address + ":5556", "--gateway-listen", "127.0.0.1:0"});
    ASSERT_TRUE(a.is_object());
    EXPECT_EQ(a.value("endpoint", ""), endpoint_);
    EXPECT_EQ(a["services"], json({"trace-collector"}));
    EXPECT_TRUE(a.contains("gateway")) << "the broker role runs the gateway: " << a.dump();

    std::string last;
    ASSERT_TRUE(wait_for_workers_on_broker(kAllWorkers, milliseconds{30'000}, last))
        << "not every host's workers registered; last status: " << last;

    // The sample knowledge, loaded from C into the store on C through the broker on A.
    const auto rdf = on_client({"load", "rdf", (kSample / "orrin.ttl").string(), "--tier", "1"});
    ASSERT_TRUE(rdf.status.exited && rdf.status.code == 0) << rdf.err;
    const auto docs = on_client({"load", "docs", (kSample / "docs").string()});
    ASSERT_TRUE(docs.status.exited && docs.status.code == 0) << docs.err;

    // Questions from C, answered on B with the facts of C, traced on A.
    const std::vector<std::pair<std::string, std::string>> graph_questions = {
        {"Who designed Greyhollow Light?", "Ilse Varrow"},
        {"Which shipyard built the MV Curlew?", "Brenn and Daughters Shipyard"},
        {"Who founded the shipyard that built the MV Curlew?", "Oskar Brenn"},
        {"Where was the designer of Saltspire Light born?", "Tarnwick"},
    };
    std::vector<Asked> answered;
    for (const auto& [question, expected] : graph_questions) {
        answered.push_back(ask("graph-rag", question));
        const Asked& asked = answered.back();
        ASSERT_TRUE(asked.status && asked.status->exited && asked.status->code == 0)
            << question << ": " << asked.error;
        EXPECT_NE(asked.answer.find(expected), std::string::npos)
            << question << " -> " << asked.answer;
    }
    answered.push_back(ask("document-rag", "In which year was the Halden Ironworks founded?"));
    ASSERT_TRUE(answered.back().status && answered.back().status->code == 0)
        << answered.back().error;
    EXPECT_NE(answered.back().answer.find("1858"), std::string::npos) << answered.back().answer;

    // Each trace is whole in the collector on A: ended complete, the steps of its engine.
    std::set<std::string> graph_workers;
    for (const Asked& asked : answered) {
        ASSERT_FALSE(asked.session.empty()) << asked.question;
        const json trace = ended_trace(asked.session);
        ASSERT_TRUE(trace.is_object());
        EXPECT_EQ(trace["session"].value("status", ""), "complete") << asked.question;
        EXPECT_TRUE(trace["session"]["ended"].is_string()) << trace["session"].dump();
        EXPECT_GE(trace["events"].size(), asked.service == "graph-rag" ? 5u : 4u) << asked.question;
        if (asked.service == "graph-rag")
            graph_workers.insert(trace["session"].value("worker", ""));
    }
    EXPECT_EQ(graph_workers.size(), 2u)
        << "both graph-rag processes of B served (least recently used first)";

    // B's cable out for 10 s. Just before: a slow echo request that is running on B when the
    // cable goes (its stream has begun: it cannot be given to another worker), and RAG
    // questions; while it is out: more, one with a deadline that passes before B is back.
    std::vector<Asked> around;
    Asked in_flight = call_in_background(
        "echo",
        json{
            {"question", "running on B when its cable goes"}, {"partials", 6}, {"delay_ms", 1'000}},
        60'000);
    ASSERT_TRUE(wait_until_busy("echo", milliseconds{20'000})) << "the echo request never ran on B";
    around.push_back(ask_in_background("graph-rag", "Who designed Saltspire Light?", 60'000));
    around.push_back(
        ask_in_background("graph-rag", "What is the population of Brinehaven?", 60'000));
    around.push_back(ask_in_background("document-rag", "Who kept Saltspire Light?", 60'000));
    const auto cut = Clock::now();
    ASSERT_TRUE(lab_->set_link("b", false));
    ASSERT_TRUE(wait_for_workers_on_broker(kHostBWorkersGone, kOutage, last))
        << "the broker still counts B's workers with its cable out: " << last;
    around.push_back(ask_in_background(
        "graph-rag", "Which company built the telescope of the Tidewater Observatory?", 3'000));
    around.push_back(ask_in_background(
        "graph-rag", "Who founded the shipyard that built the MV Curlew?", 60'000));
    around.push_back(ask_in_background(
        "document-rag", "What happened to Saltspire Light in the Great Gale?", 60'000));
    around.push_back(call_in_background(
        "echo", json{{"question", "asked while B is away"}, {"partials", 1}}, 60'000));
    // The outage's length is this test's subject: the cable stays out for kOutage whatever
    // happens meanwhile (requests asked while B is away must ride it out).
    std::this_thread::sleep_until(cut + kOutage);
    ASSERT_TRUE(lab_->set_link("b", true));

    // B's workers register again on their own.
    ASSERT_TRUE(wait_for_workers_on_broker(kAllWorkers, milliseconds{60'000}, last))
        << "B's workers did not register again; last status: " << last;

    // The request running on B lost its worker: a typed error, and its trace ends as an error
    // with the steps it had (the worker's late replies, delivered when the cable is back, add
    // nothing to it).
    finish(in_flight);
    ASSERT_TRUE(in_flight.status) << "the echo request running on B never ended";
    EXPECT_TRUE(in_flight.status->exited && in_flight.status->code == 1)
        << in_flight.status->describe();
    EXPECT_EQ(in_flight.error.rfind("WorkerLost: ", 0), 0u) << in_flight.error;
    ASSERT_FALSE(in_flight.session.empty()) << in_flight.process->stdout_text();
    {
        const json trace = ended_trace(in_flight.session);
        ASSERT_TRUE(trace.is_object());
        EXPECT_EQ(trace["session"].value("status", ""), "error") << trace.dump().substr(0, 2000);
        for (const auto& event : trace["events"]) {
            EXPECT_FALSE(event.value("explain_id", "").ends_with(":synthesis"))
                << trace.dump().substr(0, 2000);
        }
    }

    // Every other question ended with an answer or a typed error, and its trace (if it began)
    // ended.
    for (Asked& asked : around) {
        finish(asked);
        ASSERT_TRUE(asked.status) << asked.question << " never ended";
        if (asked.status->exited && asked.status->code == 0) {
            EXPECT_TRUE(asked.final) << asked.question;
            if (asked.service != "echo") {
                EXPECT_FALSE(asked.answer.empty()) << asked.question;
            }
        } else {
            EXPECT_TRUE(asked.status->exited && asked.status->code == 1)
                << asked.status->describe();
            EXPECT_TRUE(is_typed_error(asked.error)) << asked.question << ": " << asked.error;
        }
        if (!asked.session.empty()) {
            const json trace = ended_trace(asked.session);
            if (trace.is_object() && asked.status->exited && asked.status->code == 0) {
                EXPECT_EQ(trace["session"].value("status", ""), "complete") << asked.question;
            }
        }
    }

    // No trace of the collector is left open, and every explain message reached it: the broker's
    // spool empties (it keeps only what no collector has acknowledged).
    const auto until = Clock::now() + milliseconds{30'000};
    json open_sessions = json::array();
    std::optional<json> spool;
    do {
        open_sessions = json::array();
        for (const auto& session : all_sessions()) {
            const std::string status = session.value("status", "");
            if (status != "complete" && status != "error") open_sessions.push_back(session);
        }
        if (const auto s = status()) spool = s->value("spool", json::object());
        if (open_sessions.empty() && spool && spool->value("messages", -1) == 0) break;
        std::this_thread::sleep_for(milliseconds{300});
    } while (Clock::now() < until);
    EXPECT_TRUE(open_sessions.empty()) << "traces without an end: " << open_sessions.dump();
    ASSERT_TRUE(spool.has_value());
    EXPECT_EQ(spool->value("messages", -1), 0) << spool->dump();
    std::size_t sessions_asked = answered.size() + 1;
    for (const Asked& asked : around) sessions_asked += asked.session.empty() ? 0 : 1;
    EXPECT_GE(all_sessions().size(), sessions_asked) << "a trace is missing";

    // And the pipeline answers as before.
    const Asked after = ask("graph-rag", "Who designed Greyhollow Light?");
    ASSERT_TRUE(after.status && after.status->code == 0) << after.error;
    EXPECT_NE(after.answer.find("Ilse Varrow"), std::string::npos) << after.answer;
    EXPECT_EQ(ended_trace(after.session)["session"].value("status", ""), "complete");
    const Asked documents = ask("document-rag", "In which year was the Halden Ironworks founded?");
    ASSERT_TRUE(documents.status && documents.status->code == 0) << documents.error;
    EXPECT_NE(documents.answer.find("1858"), std::string::npos) << documents.answer;
}

// ---- many hosts, one PostgreSQL (issue 34)
// -------------------------------------------------------

// Four hosts: the database on DB; on A the broker with its trace collector and embeddings (`up
// --role broker`) and a store worker of a home of its own; on B a store, graph RAG, embeddings and
// llm (`up
// --role workers`) and a second trace collector of a home of its own; clients on C. Both stores
// and both collectors keep their state in DB's PostgreSQL (storage.* in their homes'
// config.toml), none in its home.
class PostgresHostsTest : public HostsTest {
protected:
    void SetUp() override {
        if (auto why = PostgresServer::unavailable()) GTEST_SKIP() << *why;
        auto made = NetnsLab::create({"db", "a", "b", "c"}, kDbSubnet, dir());
        if (auto* reason = std::get_if<std::string>(&made)) GTEST_SKIP() << *reason;
        lab_ = std::move(std::get<std::unique_ptr<NetnsLab>>(made));
        endpoint_ = "tcp://" + lab_->host("a").address + ":5555";
        PostgresServer::Options options;
        options.netns = lab_->host("db").netns;
        options.listen_address = lab_->host("db").address;
        options.trusted_network = std::string(kDbSubnet) + "0/24";
        server_.emplace(options);
        server_->create_database("glassbox");
        homes_ = {{"a", dir() / "a-home"},
                  {"a-store", dir() / "a-store-home"},
                  {"b", dir() / "b-home"},
                  {"b-collector", dir() / "b-collector-home"},
                  {"c", dir() / "c-home"}};
        for (const auto& [name, home] : homes_) fs::create_directories(home);
        security_.prepare(homes_, dir());
        // The password is never checked (the server trusts the subnet): it must appear nowhere.
        for (const char* host : {"a", "a-store", "b", "b-collector"}) {
            std::ofstream config(homes_.at(host) / "config.toml");
            config << "[storage]\nbackend = \"postgres\"\npostgres_dsn = \""
                   << server_->network_dsn("glassbox") << " password=" << kDbPassword << "\"\n";
        }
        for (const char* host : {"a", "a-store", "b", "b-collector"})
            fs::permissions(homes_.at(host) / "config.toml",
                            fs::perms::owner_read | fs::perms::owner_write);
    }
    void TearDown() override {
        HostsTest::TearDown();  // every glassbox process first, then the database
        server_.reset();
    }

    // `glassbox worker <service>` on `host` with the home `home`, owned by the fixture.
    ChildProcess& start_worker_on(const std::string& host, const std::string& service,
                                  const std::string& home) {
        return start_process(
            service + "-" + home + "-" + std::to_string(processes_.size()),
            lab_->in_host(host, {glassbox_binary(), "worker", service, "--broker", endpoint_,
                                 "--home", homes_.at(home).string(), "--heartbeat-ms",
                                 std::to_string(kHostHeartbeatMs), "--threads", "1"}));
    }

    json store_stats(const std::string& collection) {
        const auto done =
            on_client({"call", "store", json{{"op", "stats"}, {"collection", collection}}.dump()});
        EXPECT_TRUE(done.status.exited && done.status.code == 0) << done.err;
        const auto reply = json::parse(done.out, nullptr, false);
        return reply.is_object() ? reply.value("body", json()) : json();
    }

    static constexpr const char* kDbSubnet = "10.231.78.";
    static constexpr const char* kDbPassword = "pw-hosts-never-logged-93d1";
    std::optional<PostgresServer> server_;
};

TEST_F(PostgresHostsTest, TwoStoresAndTwoCollectorsOnTwoHostsShareOneDatabase) {
    const json a = start_up("a", Party::kBrokerHost,
                            {"--role", "broker", "--bind", endpoint_, "--pub",
                             "tcp://" + lab_->host("a").address + ":5556", "--gateway-listen",
                             "127.0.0.1:0", "--services", "trace-collector,embeddings"});
    ASSERT_TRUE(a.is_object());
    auto* store_a = &start_worker_on("a", "store", "a-store");
    std::string last;
    ASSERT_TRUE(
        wait_for_workers_on_broker({{"store", 1}, {"trace", 1}}, milliseconds{30'000}, last))
        << last;

    // Loaded through A's store, the only one yet.
    const auto rdf = on_client({"load", "rdf", (kSample / "orrin.ttl").string(), "--tier", "1"});
    ASSERT_TRUE(rdf.status.exited && rdf.status.code == 0) << rdf.err;
    const json loaded = store_stats("default");
    ASSERT_GT(loaded.value("quads", 0), 0) << loaded.dump();

    // B comes, A's store goes: B's store answers with what was loaded through A's.
    const json b =
        start_up("b", Party::kWorkersHost,
                 {"--role", "workers", "--broker", endpoint_, "--services", "store,llm,graph-rag"});
    ASSERT_TRUE(b.is_object());
    auto& collector_b = start_worker_on("b", "trace-collector", "b-collector");
    ASSERT_TRUE(wait_for_workers_on_broker({{"store", 2}, {"trace", 2}, {"graph-rag", 1}},
                                           milliseconds{30'000}, last))
        << last;
    store_a->kill();
    ASSERT_TRUE(wait_for_workers_on_broker({{"store", 1}}, milliseconds{30'000}, last)) << last;
    EXPECT_EQ(store_stats("default")["quads"], loaded["quads"]);
    const Asked through_b = ask("graph-rag", "Who designed Greyhollow Light?");
    ASSERT_TRUE(through_b.status && through_b.status->code == 0) << through_b.error;
    EXPECT_NE(through_b.answer.find("Ilse Varrow"), std::string::npos) << through_b.answer;

    // Two loads of one file into one collection at once, through both stores: each fact once.
    store_a = &start_worker_on("a", "store", "a-store");
    ASSERT_TRUE(wait_for_workers_on_broker({{"store", 2}}, milliseconds{30'000}, last)) << last;
    const std::vector<std::string> twice = {
        "load", "rdf", (kSample / "orrin.ttl").string(), "--tier", "1", "--collection", "twice"};
    auto one = std::async(std::launch::async, [&] { return on_client(twice); });
    auto two = std::async(std::launch::async, [&] { return on_client(twice); });
    for (auto* load : {&one, &two}) {
        const auto done = load->get();
        ASSERT_TRUE(done.status.exited && done.status.code == 0) << done.err;
    }
    const json both = store_stats("twice");
    EXPECT_EQ(both["quads"], loaded["quads"]) << both.dump();
    EXPECT_EQ(both["terms"], loaded["terms"]) << both.dump();

    // A burst of questions; A's store and B's collector killed in the middle of it.
    const std::vector<std::string> questions = {
        "Who designed Greyhollow Light?", "Which shipyard built the MV Curlew?",
        "Who founded the shipyard that built the MV Curlew?",
        "Where was the designer of Saltspire Light born?"};
    std::vector<Asked> burst;
    for (int round = 0; round < 3; ++round) {
        for (const auto& question : questions)
            burst.push_back(ask_in_background("graph-rag", question, 60'000));
    }
    ASSERT_TRUE(wait_until_busy("graph-rag", milliseconds{20'000}));
    store_a->kill();
    collector_b.kill();
    std::set<std::string> sessions;
    for (Asked& asked : burst) {
        finish(asked);
        ASSERT_TRUE(asked.status) << asked.question << " never ended";
        if (asked.status->exited && asked.status->code == 0) {
            EXPECT_FALSE(asked.answer.empty()) << asked.question;
        } else {
            EXPECT_TRUE(is_typed_error(asked.error)) << asked.question << ": " << asked.error;
        }
        if (asked.session.empty()) continue;
        EXPECT_TRUE(sessions.insert(asked.session).second) << "one session per question";
        const json trace = ended_trace(asked.session);
        ASSERT_TRUE(trace.is_object()) << asked.question;
        if (asked.status->code == 0) {
            EXPECT_EQ(trace["session"].value("status", ""), "complete") << asked.question;
            EXPECT_GE(trace["events"].size(), 5u) << asked.question;
        }
    }
    // Stored once each, whichever collector took its messages.
    ASSERT_FALSE(sessions.empty());
    std::map<std::string, int> listed;
    for (const auto& session : all_sessions()) ++listed[session.value("session", "")];
    for (const auto& session : sessions) EXPECT_EQ(listed[session], 1) << session;

    // No state in the homes, no password in any log.
    for (const char* host : {"a", "a-store", "b", "b-collector"}) {
        EXPECT_FALSE(fs::exists(homes_.at(host) / "traces.db")) << host;
        EXPECT_FALSE(fs::exists(homes_.at(host) / "knowledge" / "default.db")) << host;
    }
    EXPECT_FALSE(logs_hold(kDbPassword));
}

}  // namespace
}  // namespace glassbox::integration
