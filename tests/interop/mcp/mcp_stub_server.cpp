// The MCP server on cpp-httplib over a canned Backend: the SDK client test's protocol half,
// runnable without a bus. Prints its port, then serves /mcp until stdin closes.
// mcp_stub_server [IDLE_MS [sse]]: `sse` answers every POST as an event stream.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/mcp/http_mount.hpp"
#include "gateway/mcp/server.hpp"

namespace {

using nlohmann::json;
namespace mcp = glassbox::gateway::mcp;
namespace base = glassbox::base;

const std::string kTrace = "urn:glassbox:11111111-2222-3333-4444-555555555555:question";

json iri(const std::string& i) { return {{"t", "i"}, {"i", i}}; }

// Answers as the gateway's Backend would for one stored run; any other trace is NotFound. A
// question asked with mode "agent" runs until cancelled (30 s at most), a progress step every
// 100 ms, as the real gateway test's held agent does; a cancelled run is listed by trace_list
// with status error, as the trace store would.
class CannedBackend : public mcp::Backend {
public:
    base::Result<json> resolve_intent(const json& args, mcp::RunControl& control) override {
        // The ToolBox hands the question over as `question`, whichever name the client used.
        const std::string query = args["question"].get<std::string>();
        control.progress("query route decided: graph-rag");
        if (args.value("mode", "") == "agent") {
            const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            for (int step = 1; std::chrono::steady_clock::now() < until; ++step) {
                if (control.cancelled()) {
                    std::lock_guard lock(mutex_);
                    cancelled_.push_back(query);
                    return base::make_error(base::ErrorType::kCancelled, "cancelled");
                }
                control.progress("graph-rag exploration: " + std::to_string(step) + " edges");
                // Simulated work, slow on purpose: cancellation must reach a run in progress.
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }
        control.progress("graph-rag synthesis");
        // As the gateway answers POST /api/v1/query (docs/http.md §3).
        return json{
            {"answer", "Canned answer to: " + query},
            {"short_answer", "canned"},
            {"question", query},
            {"citations",
             {{{"n", 1},
               {"kind", "edge"},
               {"text", "a canned fact"},
               {"spans", {{{"start", 0}, {"end", 6}}}}}}},
            {"sources", {{{"source", "file:///canned.ttl"}, {"tier", 1}, {"engine", "graph-rag"}}}},
            {"trace_id", kTrace},
            {"answered_by", "graph-rag"},
            {"usage", {{"input_tokens", 3}, {"output_tokens", 2}}}};
    }
    base::Result<json> search_graph(const json&) override {
        return json{{"edges",
                     {{{"s", "urn:a"},
                       {"p", "urn:b"},
                       {"o", "urn:c"},
                       {"score", 0.9},
                       {"sources", {"file:///canned.ttl"}}}}},
                    {"chunks", json::array()}};
    }
    base::Result<json> trace_show(const std::string& id) override {
        if (id != kTrace && kTrace.find(id) != 13) {
            return base::make_error(base::ErrorType::kNotFound, "no trace matches '" + id + "'");
        }
        json triples = {{{"s", iri(kTrace)},
                         {"p", iri("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")},
                         {"o", iri("https://glassbox.dev/ns#Question")}}};
        return json{{"session", summary()},
                    {"events",
                     {{{"seq", 0},
                       {"explain_id", kTrace},
                       {"state", "closed"},
                       {"received", "2026-11-27T08:00:00.000Z"},
                       {"triples", triples}}}},
                    {"subtraces", json::array()}};
    }
    base::Result<json> trace_list(const json& filters) override {
        json sessions = json::array({summary()});
        std::lock_guard lock(mutex_);
        for (std::size_t i = 0; i < cancelled_.size(); ++i) {
            std::string n = std::to_string(i + 1);
            std::string uuid = "00000000-0000-0000-0000-" +
                               std::string(12 - std::min<std::size_t>(n.size(), 12), '0') + n;
            sessions.push_back({{"session", "urn:glassbox:" + uuid + ":question"},
                                {"kind", "query"},
                                {"service", "query"},
                                {"question", cancelled_[i]},
                                {"status", "error"},
                                {"error", "Cancelled: cancelled by the client"},
                                {"started", "2026-11-27T08:00:00.000Z"}});
        }
        if (filters.contains("search")) {
            const std::string search = filters["search"].get<std::string>();
            json kept = json::array();
            for (auto& row : sessions) {
                if (row["question"].get<std::string>().find(search) != std::string::npos)
                    kept.push_back(row);
            }
            sessions = std::move(kept);
        }
        const auto total = sessions.size();
        return json{{"sessions", std::move(sessions)}, {"total", total}, {"next", nullptr}};
    }

    // One recorded evaluation run of three questions, as the trace service keeps it.
    base::Result<json> eval_list(std::int64_t limit, std::int64_t offset) override {
        json runs = json::array();
        if (offset == 0 && limit > 0) {
            json run = eval_run();
            run.erase("rows");
            runs.push_back(std::move(run));
        }
        return json{{"runs", std::move(runs)}, {"total", 1}};
    }
    base::Result<json> eval_show(const std::string& name) override {
        if (name != "canned-eval")
            return base::make_error(base::ErrorType::kNotFound,
                                    "no evaluation run named '" + name + "'");
        return json{{"run", eval_run()}};
    }

private:
    std::mutex mutex_;
    std::vector<std::string> cancelled_;

    static json eval_run() {
        json rows = json::array();
        for (int i = 0; i < 3; ++i)
            rows.push_back({{"id", "q" + std::to_string(i)},
                            {"question", "canned question " + std::to_string(i)},
                            {"verdict", i == 2 ? "miss" : "hit"},
                            {"correct", i != 2},
                            {"confidence", 0.9 - 0.2 * i},
                            {"trace", kTrace}});
        return {{"name", "canned-eval"},
                {"set", "canned"},
                {"set_path", "/data/canned.jsonl"},
                {"engine", "graph-rag"},
                {"collection", ""},
                {"started", "2026-11-27T08:00:00.000Z"},
                {"finished", "2026-11-27T08:01:00.000Z"},
                {"recorded", "2026-11-27T08:01:01.000Z"},
                {"summary",
                 {{"questions", 3},
                  {"hits1", 2.0 / 3.0},
                  {"exact", 2.0 / 3.0},
                  {"f1", 0.7},
                  {"ece", 0.1},
                  {"bins", {{{"lower", 0.0}, {"upper", 1.0}, {"questions", 3}}}},
                  {"accuracy_at_coverage",
                   {{{"coverage", 1.0}, {"kept", 3}, {"accuracy", 2.0 / 3.0}},
                    {{"coverage", 0.5}, {"kept", 2}, {"accuracy", 1.0}}}}}},
                {"rows", std::move(rows)}};
    }

    static json summary() {
        return {{"session", kTrace},    {"kind", "query"},
                {"service", "query"},   {"question", "canned?"},
                {"status", "complete"}, {"started", "2026-11-27T08:00:00.000Z"}};
    }
};

}  // namespace

int main(int argc, char** argv) {
    mcp::Options options;
    if (argc > 1) options.session_idle = std::chrono::milliseconds(std::stoll(argv[1]));
    if (argc > 2 && std::string(argv[2]) == "sse") options.prefer_sse = true;
    CannedBackend backend;
    mcp::Server server(backend, options);
    httplib::Server http;
    mcp::mount(http, [&server](const mcp::HttpExchange& e) { return server.handle(e); });
    int port = http.bind_to_any_port("127.0.0.1");
    if (port <= 0) {
        std::cerr << "mcp_stub_server: cannot bind 127.0.0.1\n";
        return 1;
    }
    std::cout << port << std::endl;
    std::thread serving([&] { http.listen_after_bind(); });
    std::string line;
    while (std::getline(std::cin, line)) {
    }
    http.stop();
    serving.join();
    return 0;
}
