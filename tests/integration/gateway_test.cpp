// The HTTP gateway end to end: the real broker, trace collector and RAG pipeline (ops/sample)
// as processes on loopback, `glassbox gateway` in front of them, and Python's urllib as the HTTP
// client (tests/support/http_probe.py): questions answered as JSON and as typed SSE events,
// traces listed and shown, health, and malformed requests answered with problem bodies.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

const fs::path kSample = GLASSBOX_SAMPLE_DIR;
const std::string kProbe = std::string(GLASSBOX_SOURCE_DIR) + "/tests/support/http_probe.py";

// One answer as http_probe.py prints it.
struct HttpAnswer {
    int status = 0;
    json headers;
    std::string body;
    json events;  // SSE: [{event, id, data}]
    int comments = 0;
    json body_json() const { return json::parse(body, nullptr, false); }
    std::string describe() const {
        return std::to_string(status) + " " + body.substr(0, 2000) + events.dump().substr(0, 4000);
    }
};

class GatewayTest : public ClusterTest {
protected:
    // The broker, the trace collector and the gateway; the RAG pipeline only when `pipeline`.
    void start(bool pipeline) {
        broker_ = start_broker();
        const std::string hb = std::to_string(kHeartbeatMs);
        std::vector<std::pair<std::string, std::vector<std::string>>> workers = {
            {"trace-collector", {"--home", (dir() / "collector-home").string()}}};
        if (pipeline) {
            for (const char* name : {"embeddings", "llm"}) workers.push_back({name, {}});
            workers.push_back({"store", {"--home", (dir() / "store-home").string()}});
            for (const char* name : {"graph-rag", "document-rag", "query"}) workers.push_back({name, {"--threads", "2"}});
        }
        for (const auto& [name, extra] : workers) {
            std::vector<std::string> argv = {glassbox_binary(), "worker", name, "--broker", broker_.endpoint,
                                             "--heartbeat-ms", hb};
            argv.insert(argv.end(), extra.begin(), extra.end());
            start_process(name, argv);
        }
        for (const auto& [name, extra] : workers) {
            const std::string service = name == "trace-collector" ? "trace" : name;
            ASSERT_TRUE(wait_for_service(broker_.endpoint, service)) << service << " did not register";
        }
        if (pipeline) {
            for (std::vector<std::string> load :
                 {std::vector<std::string>{"load", "rdf", (kSample / "orrin.ttl").string(), "--tier", "1"},
                  std::vector<std::string>{"load", "docs", (kSample / "docs").string()}}) {
                load.insert(load.end(), {"--broker", broker_.endpoint});
                const auto loaded = run_glassbox(load, milliseconds{120'000});
                ASSERT_TRUE(loaded.status.exited && loaded.status.code == 0) << loaded.err;
            }
        }
        const auto ready = dir() / "gateway.ready.json";
        auto& gateway = start_process("gateway", {glassbox_binary(), "gateway", "--listen", "127.0.0.1:0", "--broker",
                                                  broker_.endpoint, "--ready-file", ready.string()});
        const auto info = wait_for_ready_file(ready, gateway, milliseconds{10'000});
        ASSERT_TRUE(info) << "the gateway wrote no ready file";
        url_ = info->value("url", "");
        ASSERT_FALSE(url_.empty());
    }

    HttpAnswer http(const std::string& method, const std::string& path, std::optional<std::string> body = {},
                    std::vector<std::string> headers = {}) {
        std::vector<std::string> argv = {"/usr/bin/python3", kProbe, method, url_ + path};
        if (body) argv.insert(argv.end(), {"--body", *body});
        for (const auto& h : headers) argv.insert(argv.end(), {"--header", h});
        const auto done = run_command(argv, dir(), milliseconds{90'000});
        HttpAnswer answer;
        const json out = json::parse(done.out, nullptr, false);
        if (!done.status.exited || done.status.code != 0 || !out.is_object()) {
            ADD_FAILURE() << "http_probe failed: " << done.err << done.out;
            return answer;
        }
        answer.status = out.value("status", 0);
        answer.headers = out.value("headers", json::object());
        answer.body = out.value("body", "");
        answer.events = out.value("events", json::array());
        answer.comments = out.value("comments", 0);
        return answer;
    }

    // The stored trace, once the collector has it with `status`.
    json stored_trace(const std::string& id, const std::string& status) {
        const auto until = std::chrono::steady_clock::now() + milliseconds{20'000};
        HttpAnswer last;
        while (std::chrono::steady_clock::now() < until) {
            last = http("GET", "/api/v1/traces/" + id);
            const json body = last.body_json();
            if (last.status == 200 && body.is_object() && body["session"].value("status", "") == status) return body;
            std::this_thread::sleep_for(milliseconds{200});
        }
        ADD_FAILURE() << id << " never stored as " << status << ": " << last.describe();
        return json();
    }

    // An RFC 9457 problem body with this status and typed error, echoing the request id.
    static void expect_problem(const HttpAnswer& answer, int status, const std::string& error) {
        EXPECT_EQ(answer.status, status) << answer.describe();
        EXPECT_EQ(answer.headers.value("content-type", ""), "application/problem+json") << answer.describe();
        const json body = answer.body_json();
        ASSERT_TRUE(body.is_object()) << answer.describe();
        EXPECT_EQ(body.value("status", 0), status);
        EXPECT_EQ(body.value("error", ""), error) << answer.describe();
        EXPECT_FALSE(body.value("title", "").empty());
        EXPECT_FALSE(body.value("detail", "").empty());
        EXPECT_EQ(body.value("request_id", ""), answer.headers.value("x-request-id", "?"));
    }

    RunningBroker broker_;
    std::string url_;
};

// The names of a stream's events, in order.
std::vector<std::string> event_names(const json& events) {
    std::vector<std::string> names;
    for (const auto& e : events) names.push_back(e.value("event", ""));
    return names;
}

std::size_t count_of(const std::vector<std::string>& names, const std::string& name) {
    return static_cast<std::size_t>(std::count(names.begin(), names.end(), name));
}

TEST_F(GatewayTest, AQuestionStreamsTypedEventsThatEndWithDoneAndItsTraceIsStored) {
    start(true);
    const auto answer = http("POST", "/api/v1/query",
                             json{{"query", "Who founded the shipyard that built the MV Curlew?"}}.dump(),
                             {"Accept: text/event-stream", "X-Request-ID: test-stream-1"});
    ASSERT_EQ(answer.status, 200) << answer.describe();
    EXPECT_EQ(answer.headers.value("content-type", ""), "text/event-stream");
    EXPECT_EQ(answer.headers.value("x-request-id", ""), "test-stream-1");
    const auto names = event_names(answer.events);
    ASSERT_GE(names.size(), 6u) << answer.describe();
    // Ids count 1, 2, … and every event's data carries the trace (once known).
    for (std::size_t i = 0; i < answer.events.size(); ++i)
        EXPECT_EQ(answer.events[i].value("id", ""), std::to_string(i + 1)) << answer.events[i].dump();
    EXPECT_EQ(names.front(), "run.started");
    EXPECT_EQ(names.back(), "done");
    EXPECT_EQ(count_of(names, "done"), 1u);
    EXPECT_EQ(count_of(names, "error"), 0u) << answer.describe();
    EXPECT_EQ(count_of(names, "route.decided"), 1u);
    EXPECT_EQ(count_of(names, "answer.done"), 1u);
    EXPECT_GE(count_of(names, "answer.delta"), 1u);
    EXPECT_GE(count_of(names, "step"), 6u) << "the query's own steps and the engine's forwarded ones";
    EXPECT_EQ(answer.events.front()["data"].value("request_id", ""), "test-stream-1");

    const json done = answer.events.back()["data"];
    EXPECT_EQ(done.value("status", ""), "complete");
    const std::string trace = done.value("trace", "");
    ASSERT_FALSE(trace.empty());
    std::set<std::string> sessions;
    std::set<std::string> types;
    for (const auto& e : answer.events) {
        const json& data = e["data"];
        EXPECT_EQ(data.value("trace", ""), trace) << e.dump();
        if (e.value("event", "") == "step") {
            EXPECT_FALSE(data.value("step", "").empty());
            EXPECT_EQ(data["explain"].value("explain_id", ""), data.value("step", ""));
            sessions.insert(data.value("session", ""));
            types.insert(data.value("type", ""));
            // A sub-run's steps name their parent step; the query's own do not.
            if (data.value("session", "") != trace) {
                EXPECT_TRUE(data["parent"].is_string() || data.value("type", "") != "Question") << e.dump();
            }
        }
    }
    EXPECT_EQ(sessions.size(), 2u) << "the query's session and graph-rag's sub-run";
    for (const char* type : {"Question", "RoutingDecision", "Conclusion", "Synthesis"})
        EXPECT_TRUE(types.count(type)) << type;

    const auto routed = std::find(names.begin(), names.end(), "route.decided") - names.begin();
    const json route = answer.events[static_cast<std::size_t>(routed)]["data"];
    EXPECT_EQ(route.value("engine", ""), "graph-rag") << route.dump();
    EXPECT_EQ(route.value("method", ""), "rules");
    EXPECT_TRUE(route["confidence"].is_number());

    const auto answered = std::find(names.begin(), names.end(), "answer.done") - names.begin();
    const json final = answer.events[static_cast<std::size_t>(answered)]["data"];
    EXPECT_FALSE(final.value("response", "").empty()) << final.dump();
    EXPECT_TRUE(final["usage"]["in_token"].is_number());
    EXPECT_TRUE(final["provenance"].is_object());
    // Each citation event: the source in full the first time, a reference after.
    std::set<std::string> seen;
    for (const auto& e : answer.events) {
        if (e.value("event", "") != "citation") continue;
        const json& data = e["data"];
        EXPECT_TRUE(data.contains("source") != data.contains("source_ref")) << data.dump();
        if (data.contains("source")) {
            const std::string key = data["source"].value("chunk", "") + data["source"].value("document", "") +
                                    data["source"].value("text", "");
            EXPECT_TRUE(seen.insert(key).second) << "a source sent in full twice: " << data.dump();
        }
    }

    // The trace is stored complete and shown by id; the list has it.
    const json shown = stored_trace(trace, "complete");
    ASSERT_TRUE(shown.is_object());
    EXPECT_EQ(shown["session"].value("session", ""), trace);
    const auto list = http("GET", "/api/v1/traces?limit=5&kind=query");
    ASSERT_EQ(list.status, 200) << list.describe();
    EXPECT_NE(list.body.find(trace), std::string::npos) << list.describe();
}

TEST_F(GatewayTest, AQuestionAnsweredAsJsonCarriesTheTraceIdUsageAndEscalations) {
    start(true);
    // No agent runs here: asked for it, the router escalates, and the answer says so.
    const auto answer = http("POST", "/api/v1/query",
                             json{{"query", "Who founded the shipyard that built the MV Curlew?"}, {"mode", "agent"}}.dump(),
                             {"Accept: application/json"});
    ASSERT_EQ(answer.status, 200) << answer.describe();
    const json body = answer.body_json();
    ASSERT_TRUE(body.is_object()) << answer.describe();
    EXPECT_FALSE(body.value("response", "").empty());
    EXPECT_EQ(body.value("trace_id", ""), body.value("session", "?"));
    EXPECT_TRUE(body["usage"]["in_token"].is_number());
    ASSERT_GE(body["escalations"].size(), 1u) << body.dump();
    EXPECT_EQ(body["escalations"][0].value("from", ""), "agent");
    EXPECT_FALSE(answer.headers.value("x-request-id", "").empty()) << "a request id is made when none is sent";

    // The same through SSE: an escalation event between the routing and the answer.
    const auto streamed = http("POST", "/api/v1/query",
                               json{{"query", "Who founded the shipyard that built the MV Curlew?"}, {"mode", "agent"}}.dump(),
                               {"Accept: text/event-stream"});
    const auto names = event_names(streamed.events);
    ASSERT_EQ(count_of(names, "escalation"), 1u) << streamed.describe();
    const auto at = std::find(names.begin(), names.end(), "escalation") - names.begin();
    const json escalation = streamed.events[static_cast<std::size_t>(at)]["data"];
    EXPECT_EQ(escalation.value("from", ""), "agent") << escalation.dump();
    EXPECT_FALSE(escalation.value("to", "").empty());
    EXPECT_FALSE(escalation.value("reason", "").empty());
    EXPECT_EQ(names.back(), "done");
}

TEST_F(GatewayTest, HealthTracesAndTheViewerAreServedAndBadRequestsGetProblems) {
    start(false);
    const auto health = http("GET", "/api/v1/health");
    ASSERT_EQ(health.status, 200) << health.describe();
    const json h = health.body_json();
    EXPECT_TRUE(h["broker"].value("reachable", false));
    EXPECT_NE(h["services"].dump().find("\"trace\""), std::string::npos) << health.describe();

    const auto index = http("GET", "/");
    EXPECT_EQ(index.status, 200);
    EXPECT_NE(index.headers.value("content-type", "").find("text/html"), std::string::npos);
    EXPECT_NE(index.body.find("<html"), std::string::npos);
    EXPECT_EQ(http("GET", "/index.html").body, index.body);

    const auto list = http("GET", "/api/v1/traces?limit=3");
    ASSERT_EQ(list.status, 200) << list.describe();
    EXPECT_EQ(list.body_json().value("limit", 0), 3);

    expect_problem(http("GET", "/api/v1/traces?limit=0"), 400, "InvalidRequest");
    expect_problem(http("GET", "/api/v1/traces?colour=red"), 400, "InvalidRequest");
    expect_problem(http("GET", "/api/v1/traces/00000000-no-such-trace"), 404, "NotFound");
    expect_problem(http("GET", "/no-such-file.js"), 404, "NotFound");
    expect_problem(http("POST", "/api/v1/query", std::string("{not json")), 400, "InvalidJson");
    expect_problem(http("POST", "/api/v1/query", std::string("[1, 2]")), 400, "InvalidRequest");
    expect_problem(http("POST", "/api/v1/query", json{{"query", ""}}.dump()), 400, "InvalidRequest");
    expect_problem(http("POST", "/api/v1/query", json{{"query", "q"}, {"mode", "psychic"}}.dump()), 400,
                   "InvalidRequest");
    expect_problem(http("POST", "/api/v1/query", json{{"query", "q"}, {"colour", 1}}.dump()), 400, "InvalidRequest");
    expect_problem(http("POST", "/api/v1/query", std::string("{\"query\": \"\xff\"}")), 400, "InvalidJson");
    // Without a query worker, a question is a typed error: a problem as JSON, error + done as SSE.
    const auto unanswered = http("POST", "/api/v1/query", json{{"query", "anyone?"}}.dump());
    EXPECT_EQ(unanswered.status, 503) << unanswered.describe();
    const auto stream = http("POST", "/api/v1/query", json{{"query", "anyone?"}}.dump(), {"Accept: text/event-stream"});
    EXPECT_EQ(event_names(stream.events), (std::vector<std::string>{"run.started", "error", "done"})) << stream.describe();
    EXPECT_EQ(stream.events[1]["data"].value("type", ""), "UnknownService");
    EXPECT_EQ(stream.events[2]["data"].value("status", ""), "error");
    // The gateway still serves.
    EXPECT_EQ(http("GET", "/api/v1/health").status, 200);
}

TEST_F(GatewayTest, UpStartsTheGatewayAndStatusShowsIt) {
    const auto home = dir() / "up-home";
    const auto ready_file = dir() / "up.ready";
    auto& up = start_process("up", {glassbox_binary(), "up", "--home", home.string(), "--bind", "tcp://127.0.0.1:*",
                                    "--pub", "tcp://127.0.0.1:*", "--heartbeat-ms", std::to_string(kHeartbeatMs),
                                    "--gateway-listen", "127.0.0.1:0", "--ready-file", ready_file.string()});
    const auto ready = wait_for_ready_file(ready_file, up, milliseconds{20'000});
    ASSERT_TRUE(ready) << up.stderr_text();
    url_ = ready->value("gateway", "");
    ASSERT_EQ(url_.rfind("http://127.0.0.1:", 0), 0u) << ready->dump();
    ASSERT_TRUE(wait_for_service(ready->value("endpoint", ""), "trace"));
    const auto health = http("GET", "/api/v1/health");
    EXPECT_EQ(health.status, 200) << health.describe();
    EXPECT_NE(health.body.find("\"query\""), std::string::npos) << "up's workers are behind it";
    const auto status = run_glassbox({"status", "--home", home.string()});
    EXPECT_NE(status.out.find("gateway  " + url_ + "  (pid"), std::string::npos) << status.out;
    EXPECT_NE(status.out.find("running)"), std::string::npos) << status.out;
}

}  // namespace
}  // namespace glassbox::integration
