// The trace collector's OpenTelemetry exporter end to end (issue 37, docs/operations.md
// "OpenTelemetry"): the real pipeline (broker, trace collector, embeddings, store, llm, graph-rag,
// document-rag, agent and query workers) with the exporter pointed at an OTLP/HTTP receiver that
// decodes both encodings with the official OpenTelemetry JavaScript package
// (tests/interop/otel/receiver.mjs). Each run's spans are checked against `traces show`: trace id,
// one tree per trace rooted at the run span, sub-runs under their calling step, the GenAI
// attributes and the glassbox IRIs; then a receiver that is down and comes back gets every run
// once. Skips without node or tests/interop/otel/node_modules.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "schema/otel_ids.hpp"
#include "tests/integration/sample_knowledge.hpp"
#include "tests/support/cluster.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

const std::filesystem::path kOtelDir = GLASSBOX_OTEL_INTEROP_DIR;
constexpr const char* kNode = "/usr/bin/node";
constexpr const char* kAuthorization = "Basic dGVzdA==";

// The questions, one per engine the query worker fronts and the agent.
const std::vector<std::pair<std::string, std::string>> kQuestions = {
    {"graph-rag", "Who designed Greyhollow Light?"},
    {"document-rag", "what happened to the lamp during the great gale?"},
    {"agent", "Where was the founder of the company that built the Meridian Telescope born?"},
    {"query", "Who founded the shipyard that built the MV Curlew?"},
};

std::string text_of(const json& span, const char* key) {
    const json& attrs = span["attrs"];
    return attrs.contains(key) && attrs[key].is_string() ? attrs[key].get<std::string>() : "";
}

std::int64_t int_of(const json& span, const char* key) {
    const json& attrs = span["attrs"];
    if (!attrs.contains(key)) return 0;
    return attrs[key].is_string() ? std::stoll(attrs[key].get<std::string>())
                                  : attrs[key].get<std::int64_t>();
}

// Each session of a `show` answer (the run and its sub-runs, depth first) as its summary, and
// every IRI of the trace: the sessions and their events' explain ids.
void walk(const json& shown, std::vector<json>& sessions,
          std::map<std::string, std::set<std::string>>& iris) {
    sessions.push_back(shown["session"]);
    auto& own = iris[shown["session"]["session"].get<std::string>()];
    own.insert(shown["session"]["session"].get<std::string>());
    for (const auto& e : shown["events"]) own.insert(e["explain_id"].get<std::string>());
    for (const auto& sub : shown["subtraces"]) walk(sub, sessions, iris);
}

class OtelExportTest : public ClusterTest {
protected:
    void SetUp() override {
        if (!std::filesystem::exists(kNode))
            GTEST_SKIP() << "node is not installed (Debian's nodejs)";
        if (!std::filesystem::exists(kOtelDir / "node_modules/@opentelemetry/otlp-transformer"))
            GTEST_SKIP() << "tests/interop/otel/node_modules is missing (ops/install-deps)";
        out_ = dir() / "spans.jsonl";
    }

    // Starts the receiver (on `port`, or a random one) and waits for its port.
    void start_receiver(int port = 0) {
        receiver_ = &start_process("otel-receiver-" + std::to_string(receivers_++),
                                   {kNode, (kOtelDir / "receiver.mjs").string(), "--out",
                                    out_.string(), "--port", std::to_string(port)});
        ASSERT_TRUE(test_support::wait_until([&] {
            const auto text = receiver_->stdout_text();
            return text.find('\n') != std::string::npos || !receiver_->running();
        })) << receiver_->stderr_text();
        std::istringstream line(receiver_->stdout_text());
        std::string word;
        line >> word >> port_;
        ASSERT_EQ(word, "port") << receiver_->stderr_text();
        ASSERT_GT(port_, 0);
    }

    // The pipeline with the collector exporting to the receiver in `protocol`.
    void start_pipeline(const std::string& protocol) {
        const auto home = dir() / "collector-home";
        std::filesystem::create_directories(home);
        ::chmod(home.c_str(), 0700);
        const auto file = home / "config.toml";
        std::ofstream(file) << "[otel]\nendpoint = \"http://127.0.0.1:" << port_
                            << "\"\nprotocol = \"" << protocol
                            << "\"\nheaders = \"Authorization=Basic%20dGVzdA==\"\n"
                            << "service_name = \"glassbox-it\"\ninterval_ms = 100\n";
        ::chmod(file.c_str(), 0600);
        broker_ = start_broker();
        start_workers(broker_.endpoint, {{"trace-collector", {"--home", home.string()}},
                                         {"embeddings"},
                                         {"store", {"--home", (dir() / "store-home").string()}},
                                         {"llm"},
                                         {"graph-rag"},
                                         {"document-rag"},
                                         {"agent"},
                                         {"query"}});
        ASSERT_FALSE(HasFailure()) << "the pipeline did not start";
        load_sample(broker_.endpoint, kSample, true);
        ASSERT_FALSE(HasFailure()) << "ops/sample did not load";
    }

    void ask(const std::string& service, const std::string& question) {
        const auto r =
            run_glassbox({"invoke", service, "-q", question, "--broker", broker_.endpoint},
                         milliseconds{120'000});
        ASSERT_EQ(r.status.code, 0) << service << ": " << r.err;
    }

    json otel_stats() {
        const auto stats = trace_answer(broker_.endpoint, json{{"op", "stats"}});
        return stats.is_object() && stats.contains("otel") ? stats["otel"] : json();
    }

    // The ended top-level runs stored, once there are `n`.
    std::vector<json> top_level_runs(std::size_t n) {
        json listed;
        EXPECT_TRUE(wait_for_trace_answer(
            broker_.endpoint, json{{"op", "list"}, {"limit", 100}},
            [&](const json& a) {
                std::size_t ended = 0;
                for (const auto& s : a["sessions"]) ended += s["status"] != "running" ? 1 : 0;
                return ended >= n;
            },
            listed))
            << listed.dump();
        std::vector<json> out;
        for (const auto& s : listed["sessions"]) out.push_back(s);
        return out;
    }

    std::vector<json> spans() {
        std::vector<json> out;
        std::ifstream in(out_);
        for (std::string line; std::getline(in, line);) {
            if (!line.empty()) out.push_back(json::parse(line));
        }
        return out;
    }

    // Waits until the exporter has sent every queued run.
    void wait_exported(std::size_t runs) {
        json stats;
        ASSERT_TRUE(test_support::wait_until(
            [&] {
                stats = otel_stats();
                return stats.is_object() && stats["pending"] == 0 &&
                       stats["exported_runs"].get<std::size_t>() >= runs;
            },
            milliseconds{30'000}))
            << stats.dump();
    }

    void expect_run_exported(const std::string& session, const std::string& protocol);
    void export_all_engines(const std::string& protocol);

    RunningBroker broker_;
    std::filesystem::path out_;
    ChildProcess* receiver_ = nullptr;
    int receivers_ = 0;
    int port_ = 0;
};

// The receiver got the run `session` (top-level) once, as one span tree that matches its trace.
void OtelExportTest::expect_run_exported(const std::string& session, const std::string& protocol) {
    SCOPED_TRACE(session);
    const json shown = trace_answer(broker_.endpoint, json{{"op", "show"}, {"session", session}});
    ASSERT_TRUE(shown.is_object());
    std::vector<json> sessions;
    std::map<std::string, std::set<std::string>> iris_of;  // each run's own IRIs
    walk(shown, sessions, iris_of);
    std::set<std::string> iris;
    for (const auto& [run, own] : iris_of) iris.insert(own.begin(), own.end());
    const std::string trace_id = schema::otel::trace_id_of(session).value_or("");
    std::map<std::string, json> by_id;
    for (auto& span : spans()) {
        if (span["traceId"] != trace_id) continue;
        const std::string id = span["spanId"];
        EXPECT_EQ(by_id.count(id), 0u) << "span sent twice: " << span.dump();
        by_id[id] = span;
    }
    ASSERT_FALSE(by_id.empty()) << "no span of trace " << trace_id;
    std::size_t roots = 0;
    std::int64_t input_tokens = 0, output_tokens = 0;
    std::size_t retrievals = 0;
    std::map<std::string, std::string> run_span;  // session URI → span id
    for (const auto& [id, span] : by_id) {
        EXPECT_EQ(span["resource"]["service.name"], "glassbox-it");
        EXPECT_EQ(span["scope"], "glassbox");
        EXPECT_EQ(span["authorization"], kAuthorization);
        EXPECT_EQ(span["content_type"],
                  protocol == "http/json" ? "application/json" : "application/x-protobuf");
        EXPECT_EQ(text_of(span, "glassbox.trace.iri"), session) << span.dump();
        const std::string step = text_of(span, "glassbox.step.iri");
        EXPECT_TRUE(iris.count(step)) << "a step IRI that is not the trace's: " << span.dump();
        const std::string parent = span.value("parentSpanId", "");
        if (parent.empty()) {
            ++roots;
        } else {
            EXPECT_TRUE(by_id.count(parent)) << "parent not in the trace: " << span.dump();
        }
        const std::string op = text_of(span, "gen_ai.operation.name");
        if (op == "invoke_agent") run_span[text_of(span, "glassbox.run.iri")] = id;
        if (op == "chat" || op == "text_completion") {
            EXPECT_NE(text_of(span, "gen_ai.request.model"), "") << span.dump();
            input_tokens += int_of(span, "gen_ai.usage.input_tokens");
            output_tokens += int_of(span, "gen_ai.usage.output_tokens");
        }
        if (op == "retrieval") {
            ++retrievals;
            EXPECT_NE(text_of(span, "gen_ai.data_source.id"), "") << span.dump();
        }
    }
    EXPECT_EQ(roots, 1u) << "one tree per trace";
    const std::string kind = shown["session"]["kind"];
    if (kind == "graph-rag" || kind == "document-rag" || kind == "query") {
        EXPECT_GT(retrievals, 0u) << "a " << kind << " run retrieves";
    }
    // Each run (the top-level one and every sub-run) is an invoke_agent span: the root for the
    // top-level run, under the span of its calling step for a sub-run.
    for (const auto& run : sessions) {
        const std::string uri = run["session"];
        ASSERT_TRUE(run_span.count(uri)) << "no run span for " << uri;
        const json& span = by_id[run_span[uri]];
        EXPECT_EQ(span["name"], "invoke_agent " + run["kind"].get<std::string>()) << span.dump();
        EXPECT_EQ(text_of(span, "gen_ai.agent.name"), run["kind"]);
        EXPECT_EQ(text_of(span, "glassbox.step.iri"), uri);
        if (uri == session) {
            EXPECT_EQ(span.value("parentSpanId", ""), "");
            EXPECT_EQ(span["kind"], 2) << "SERVER";
            continue;
        }
        const std::string parent = span.value("parentSpanId", "");
        ASSERT_TRUE(by_id.count(parent)) << span.dump();
        // Under a step of the run that called it (the sub-run's parent), not its run span.
        const std::string caller = run["parent"];
        const std::string calling_step = text_of(by_id[parent], "glassbox.step.iri");
        EXPECT_TRUE(iris_of[caller].count(calling_step))
            << "a sub-run nests under its calling step: " << calling_step << " of " << caller;
        EXPECT_NE(calling_step, caller) << "under the calling step, not the caller's run span";
    }
    EXPECT_EQ(input_tokens, shown["session"]["input_tokens"].get<std::int64_t>());
    EXPECT_EQ(output_tokens, shown["session"]["output_tokens"].get<std::int64_t>());
}

// Every engine's runs, exported in `protocol`, arrive as one span tree each matching its trace.
void OtelExportTest::export_all_engines(const std::string& protocol) {
    ASSERT_NO_FATAL_FAILURE(start_receiver());
    ASSERT_NO_FATAL_FAILURE(start_pipeline(protocol));
    for (const auto& [service, question] : kQuestions)
        ASSERT_NO_FATAL_FAILURE(ask(service, question));
    const auto runs = top_level_runs(kQuestions.size());
    ASSERT_NO_FATAL_FAILURE(wait_exported(runs.size()));
    std::set<std::string> kinds;
    for (const auto& run : runs) {
        kinds.insert(run["kind"].get<std::string>());
        expect_run_exported(run["session"], protocol);
    }
    for (const auto& [service, question] : kQuestions) EXPECT_TRUE(kinds.count(service)) << service;
    const json stats = otel_stats();
    EXPECT_EQ(stats["configured"], true);
    EXPECT_EQ(stats["protocol"], protocol);
    EXPECT_EQ(stats["endpoint"], "http://127.0.0.1:" + std::to_string(port_) + "/v1/traces");
    EXPECT_EQ(stats["failures"], 0) << stats.dump();
    EXPECT_EQ(stats["dropped"]["rejected"], 0);
}

TEST_F(OtelExportTest, EveryRunArrivesAsOneSpanTreeInProtobuf) {
    export_all_engines("http/protobuf");
}

TEST_F(OtelExportTest, EveryRunArrivesAsOneSpanTreeInJson) { export_all_engines("http/json"); }

TEST_F(OtelExportTest, RunsWaitWhileTheReceiverIsDownAndArriveOnceWhenItIsBack) {
    ASSERT_NO_FATAL_FAILURE(start_receiver());
    const int port = port_;
    receiver_->terminate();
    ASSERT_NO_FATAL_FAILURE(start_pipeline("http/protobuf"));
    ASSERT_NO_FATAL_FAILURE(ask("graph-rag", kQuestions[0].second));
    ASSERT_NO_FATAL_FAILURE(ask("document-rag", kQuestions[1].second));
    const auto runs = top_level_runs(2);
    json stats;
    ASSERT_TRUE(test_support::wait_until([&] {
        stats = otel_stats();
        return stats.is_object() && stats["pending"] == runs.size() && stats["failures"] > 0;
    })) << stats.dump();
    EXPECT_NE(stats["last_error"], "");
    const auto down = run_glassbox({"status", "--broker", broker_.endpoint});
    EXPECT_NE(down.out.find("otel     http://127.0.0.1:" + std::to_string(port)), std::string::npos)
        << down.out;
    EXPECT_NE(down.out.find(std::to_string(runs.size()) + " pending"), std::string::npos)
        << down.out;

    ASSERT_NO_FATAL_FAILURE(start_receiver(port));
    ASSERT_NO_FATAL_FAILURE(wait_exported(runs.size()));
    for (const auto& run : runs) expect_run_exported(run["session"], "http/protobuf");
    const auto back = run_glassbox({"status", "--broker", broker_.endpoint});
    EXPECT_NE(back.out.find(" 0 pending"), std::string::npos) << back.out;
    stats = otel_stats();
    EXPECT_EQ(stats["exported_runs"], runs.size()) << "each run once";
    EXPECT_EQ(stats["dropped"]["queue_full"], 0);
}

}  // namespace
}  // namespace glassbox::integration
