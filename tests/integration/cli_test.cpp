// The `glassbox call` and `glassbox status` commands against a real broker and echo worker.
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "schema/messages.hpp"
#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

using std::chrono::milliseconds;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) {
            lines.push_back(line);
        }
    }
    return lines;
}

class CliTest : public ClusterTest {
protected:
    void SetUp() override {
        broker_ = start_broker();
        ASSERT_FALSE(broker_.endpoint.empty());
        start_echo_worker(broker_.endpoint, 2);
        start_echo_worker(broker_.endpoint, 1);
        ASSERT_TRUE(wait_for_service(broker_.endpoint, "echo", milliseconds{10'000}, 2));
    }

    CommandResult call(const std::string& service, const std::string& body,
                       std::vector<std::string> extra = {}) {
        std::vector<std::string> args{"call", service, body, "--broker", broker_.endpoint};
        args.insert(args.end(), extra.begin(), extra.end());
        return run_glassbox(args);
    }

    // A failed command: non-zero `code`, nothing on stdout, one line on stderr naming `type`.
    static void expect_typed_failure(const CommandResult& r, int code, const std::string& type) {
        EXPECT_FALSE(r.timed_out);
        EXPECT_TRUE(r.status.exited) << r.status.describe();
        EXPECT_EQ(r.status.code, code) << "stderr: " << r.err;
        const auto err = lines_of(r.err);
        ASSERT_EQ(err.size(), 1u) << "stderr must be one line:\n" << r.err;
        EXPECT_NE(err[0].find(type), std::string::npos) << err[0];
    }

    RunningBroker broker_;
};

TEST_F(CliTest, CallPrintsOneJsonLinePerReplyAndExitsZero) {
    const auto r = call("echo", R"({"question":"from the cli","partials":3})");
    ASSERT_FALSE(r.timed_out);
    EXPECT_TRUE(r.status.exited && r.status.code == 0) << r.status.describe() << "\n" << r.err;
    const auto lines = lines_of(r.out);
    ASSERT_GE(lines.size(), 6u) << r.out;  // 3 data + >= 2 explain + 1 final
    int data = 0;
    int explain = 0;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        auto value = nlohmann::json::parse(lines[i], nullptr, false);
        ASSERT_TRUE(value.is_object()) << "not a JSON object: " << lines[i];
        const auto kind = value.value("kind", "");
        data += kind == "data";
        explain += kind == "explain";
        if (i + 1 < lines.size()) {
            EXPECT_TRUE(kind == "data" || kind == "explain") << lines[i];
        } else {
            EXPECT_EQ(kind, "final") << lines[i];
            EXPECT_EQ(value["body"]["echo"]["question"], "from the cli") << lines[i];
        }
    }
    EXPECT_EQ(data, 3);
    EXPECT_GE(explain, 2);
}

TEST_F(CliTest, CallErrorsAreOneLineWithTypedExitCodes) {
    // 2: bad input or a thing that is not there.
    expect_typed_failure(call("echo", "not json"), 2, "InvalidJson");
    expect_typed_failure(call("echo", R"({"question": 7})"), 2, "InvalidRequest");
    expect_typed_failure(call("no-such-service", "{}"), 2, "UnknownService");
    // 1: the service or the bus failed.
    expect_typed_failure(call("echo", R"({"question":"q","fail":"UpstreamError"})"), 1,
                         "UpstreamError");
    expect_typed_failure(
        call("echo", R"({"question":"q","delay_ms":5000})", {"--timeout-ms", "500"}), 1,
        "DeadlineExceeded");
}

TEST_F(CliTest, CallWithNoBrokerFailsInBoundedTime) {
    // A port nobody listens on: reserved by a bound socket we close again.
    std::string endpoint;
    {
        zmq::socket_t probe(context_, zmq::socket_type::router);
        probe.bind("tcp://127.0.0.1:*");
        endpoint = probe.get(zmq::sockopt::last_endpoint);
    }
    const auto r = run_glassbox(
        {"call", "echo", R"({"question":"anyone?"})", "--broker", endpoint, "--timeout-ms", "1000"},
        milliseconds{10'000});
    ASSERT_FALSE(r.timed_out) << "glassbox call hung with no broker";
    EXPECT_TRUE(r.status.exited && r.status.code == 1) << r.status.describe() << "\n" << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
}

TEST_F(CliTest, WithNoBrokerInvokeAndStatusSayBrokerUnavailableWithinSeconds) {
    // A free port below Linux's ephemeral range (32768 and up): a connect to it cannot be
    // answered by the client's own socket (a TCP self-connect).
    std::string endpoint;
    std::mt19937 random(std::random_device{}());
    zmq::context_t probe_context(1);  // ended before the CLI runs: the probe's port is closed
    for (int attempt = 0; attempt < 100 && endpoint.empty(); ++attempt) {
        const std::string candidate =
            "tcp://127.0.0.1:" + std::to_string(20000 + static_cast<int>(random() % 12000));
        zmq::socket_t probe(probe_context, zmq::socket_type::router);
        probe.set(zmq::sockopt::linger, 0);
        try {
            probe.bind(candidate);
            endpoint = candidate;
        } catch (const zmq::error_t&) {
        }
    }
    ASSERT_FALSE(endpoint.empty());
    probe_context.close();
    // No --timeout-ms: the default deadline is minutes, and the user must not wait it out.
    const std::vector<std::vector<std::string>> commands{
        {"invoke", "graph-rag", "-q", "x", "--broker", endpoint},
        {"status", "--broker", endpoint},
    };
    for (const auto& args : commands) {
        // The outcome is the typed BrokerUnavailable of the connect check (a command that
        // waited for a reply instead would run into the 30 s guard).
        const auto r = run_glassbox(args, milliseconds{30'000});
        ASSERT_FALSE(r.timed_out) << args[0] << " hung with no broker";
        expect_typed_failure(r, 1, "BrokerUnavailable");
        EXPECT_NE(r.err.find(endpoint), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("glassbox up"), std::string::npos) << r.err;
    }
}

TEST_F(CliTest, StatusJsonListsTheEchoServiceWithItsWorkers) {
    const auto r = run_glassbox({"status", "--broker", broker_.endpoint, "--json"});
    ASSERT_FALSE(r.timed_out);
    EXPECT_TRUE(r.status.exited && r.status.code == 0) << r.status.describe() << "\n" << r.err;
    auto value = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(value.is_object()) << r.out;
    ASSERT_TRUE(value.contains("services")) << r.out;
    bool found = false;
    for (const auto& svc : value["services"]) {
        if (svc.value("name", "") == "echo") {
            found = true;
            // Two worker processes, three worker threads: each thread is one MDPW01 worker.
            EXPECT_EQ(svc.value("workers", 0), 3) << svc.dump();
        }
    }
    EXPECT_TRUE(found) << r.out;
    EXPECT_EQ(value["broker"].value("endpoint", ""), broker_.endpoint) << r.out;
    EXPECT_TRUE(value.contains("spool")) << r.out;
}

// Issue 31: `invoke graph-rag --help` said --max-path-length defaults to 2 while graph-rag uses
// schema::kDefaultMaxPathLength (3). The help names the contract's defaults.
TEST_F(CliTest, InvokeGraphRagHelpNamesTheWorkersDefaults) {
    const auto r = run_glassbox({"invoke", "graph-rag", "--help"});
    ASSERT_EQ(r.status.code, 0) << r.err;
    for (const auto& [option, value] :
         {std::pair{"Hops from the seeds", schema::kDefaultMaxPathLength},
          std::pair{"Seed entities, shared among concepts", schema::kDefaultEntityLimit},
          std::pair{"Triples per entity and hop", schema::kDefaultTripleLimit},
          std::pair{"Edges explored at most", schema::kDefaultMaxSubgraphSize},
          std::pair{"Edges kept for the answer", schema::kDefaultEdgeLimit}}) {
        EXPECT_NE(r.out.find(std::string(option) + " (0: " + std::to_string(value) + ")"),
                  std::string::npos)
            << option << " in:\n"
            << r.out;
    }
}

}  // namespace
}  // namespace glassbox::integration
