// Cost end to end (issue 37, docs/traces.md "Cost"): prices in the trace collector's config.toml,
// a question through the real pipeline (broker, trace collector, embeddings, store, llm with the
// extractive model priced, graph-rag), and its cost in `traces show` (text and JSON), `traces
// list`, `traces stats` and the gateway's /metrics; a price table the settings refuse stops the
// collector before it starts, naming the model.
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/integration/sample_knowledge.hpp"
#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

const std::string kProbe = std::string(GLASSBOX_SOURCE_DIR) + "/tests/support/http_probe.py";
constexpr const char* kModel = "glassbox-extractive-v1";
constexpr double kInput = 2.0;   // EUR per million input tokens
constexpr double kOutput = 8.0;  // … output tokens

class CostTest : public ClusterTest {
protected:
    // A home holding `config` as its config.toml.
    std::filesystem::path home_with(const std::string& name, const std::string& config) {
        const auto home = dir() / name;
        std::filesystem::create_directories(home);
        ::chmod(home.c_str(), 0700);
        const auto file = home / "config.toml";
        std::ofstream(file) << config;
        ::chmod(file.c_str(), 0600);
        return home;
    }

    json run_json(std::vector<std::string> args) {
        args.insert(args.end(), {"--broker", broker_.endpoint, "--json"});
        const auto r = run_glassbox(args, milliseconds{60'000});
        EXPECT_TRUE(exited_with(r, 0)) << r.err;
        return json::parse(r.out, nullptr, false);
    }

    std::string run_text(std::vector<std::string> args) {
        args.insert(args.end(), {"--broker", broker_.endpoint});
        const auto r = run_glassbox(args, milliseconds{60'000});
        EXPECT_TRUE(exited_with(r, 0)) << r.err;
        return r.out;
    }

    // GET url/path with Python's own client: the body.
    std::string get(const std::string& url, const std::string& path) {
        const auto r = run_command({"/usr/bin/python3", kProbe, "GET", url + path}, dir(),
                                   milliseconds{30'000});
        EXPECT_TRUE(exited_with(r, 0)) << r.err;
        const json answer = json::parse(r.out, nullptr, false);
        return answer.is_object() ? answer.value("body", "") : "";
    }

    RunningBroker broker_;
};

TEST_F(CostTest, APriceTableTheSettingsRefuseStopsTheCollectorNamingTheModel) {
    const auto home =
        home_with("bad-home", "[costs]\nprices = { \"gpt-4o\" = { input = -2.5 } }\n");
    const auto r = run_glassbox(
        {"worker", "trace-collector", "--home", home.string(), "--broker", "tcp://127.0.0.1:1"},
        milliseconds{20'000});
    EXPECT_TRUE(exited_with(r, 2)) << r.out << r.err;
    EXPECT_NE(r.err.find("costs.prices"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("model \"gpt-4o\": input is negative"), std::string::npos) << r.err;
}

TEST_F(CostTest, AQuestionsCostShowsInShowListStatsAndMetrics) {
    const auto home = home_with("collector-home", "[costs]\ncurrency = \"EUR\"\nprices = { \"" +
                                                      std::string(kModel) +
                                                      "\" = { input = 2.0, output = 8.0 } }\n");
    broker_ = start_broker();
    start_workers(broker_.endpoint, {{"trace-collector", {"--home", home.string()}},
                                     {"embeddings"},
                                     {"store", {"--home", (dir() / "store-home").string()}},
                                     {"llm"},
                                     {"graph-rag"}});
    ASSERT_FALSE(HasFailure()) << "the pipeline did not start";
    load_sample(broker_.endpoint, kSample, false);
    ASSERT_FALSE(HasFailure());
    const auto asked = run_glassbox({"invoke", "graph-rag", "-q", "Who designed Greyhollow Light?",
                                     "--broker", broker_.endpoint},
                                    milliseconds{120'000});
    ASSERT_TRUE(exited_with(asked, 0)) << asked.err;
    // The trace the answer names can be shown at once, as the answer's footer suggests: `show`
    // asks again while the collector has not stored it yet (its group commit waits ~50 ms).
    const auto footer = asked.out.find("trace: ");
    ASSERT_NE(footer, std::string::npos) << asked.out;
    const auto named = asked.out.substr(footer + 7, asked.out.find('\n', footer) - footer - 7);
    const json at_once = run_json({"traces", "show", named});
    ASSERT_TRUE(at_once.is_object()) << named;
    ASSERT_TRUE(at_once.contains("session")) << at_once.dump();
    EXPECT_EQ(at_once["session"].value("session", ""), named);

    // The run, once its end is stored.
    json listed;
    ASSERT_TRUE(wait_for_trace_answer(
        broker_.endpoint, json{{"op", "list"}, {"kind", "graph-rag"}},
        [](const json& l) {
            return l.contains("sessions") && l["sessions"].size() == 1 &&
                   l["sessions"][0]["status"] == "complete";
        },
        listed))
        << listed.dump();
    const std::string session = listed["sessions"][0]["session"];
    const json shown = run_json({"traces", "show", session});
    ASSERT_TRUE(shown.is_object());
    // Each model call priced at the configured price: the run's cost is their sum.
    std::int64_t in = 0, out = 0;
    double steps = 0;
    int calls = 0;
    for (const auto& e : shown["events"]) {
        if (!e.contains("costs")) continue;
        for (const auto& c : e["costs"]) {
            EXPECT_EQ(c["model"], kModel);
            EXPECT_EQ(c["currency"], "EUR");
            const auto ci = c["input_tokens"].get<std::int64_t>();
            const auto co = c["output_tokens"].get<std::int64_t>();
            EXPECT_NEAR(
                c["cost"].get<double>(),
                (static_cast<double>(ci) * kInput + static_cast<double>(co) * kOutput) / 1e6,
                1e-12);
            in += ci;
            out += co;
            steps += c["cost"].get<double>();
            ++calls;
        }
    }
    ASSERT_GT(calls, 0) << "no step of the run was priced: " << shown.dump().substr(0, 3000);
    ASSERT_GT(in, 0);
    const json& run = shown["session"];
    EXPECT_EQ(run["input_tokens"], in);
    EXPECT_EQ(run["output_tokens"], out);
    const double cost =
        (static_cast<double>(in) * kInput + static_cast<double>(out) * kOutput) / 1e6;
    EXPECT_NEAR(run["cost"].get<double>(), cost, 1e-12);
    EXPECT_NEAR(steps, cost, 1e-12);
    EXPECT_EQ(run["currency"], "EUR");
    EXPECT_FALSE(run.contains("unpriced")) << run.dump();

    // The text renderings: the run's cost in the header and each call's beside its tokens.
    const std::string text = run_text({"traces", "show", session});
    EXPECT_NE(text.find("Cost"), std::string::npos) << text;
    EXPECT_NE(text.find(" EUR"), std::string::npos) << text;
    EXPECT_NE(text.find(" in / "), std::string::npos) << text;
    const std::string full = run_text({"traces", "show", session, "--full"});
    EXPECT_NE(full.find("cost"), std::string::npos) << full;
    const std::string table = run_text({"traces", "list"});
    EXPECT_NE(table.find("COST EUR"), std::string::npos) << table;

    // stats: the total, by model and by day.
    const json stats = run_json({"traces", "stats"});
    ASSERT_TRUE(stats.contains("costs")) << stats.dump();
    const json& costs = stats["costs"];
    EXPECT_EQ(costs["currency"], "EUR");
    EXPECT_NEAR(costs["total"].get<double>(), cost, 1e-12);
    ASSERT_EQ(costs["by_model"].size(), 1u) << costs.dump();
    EXPECT_EQ(costs["by_model"][0]["model"], kModel);
    EXPECT_EQ(costs["by_model"][0]["input_tokens"], in);
    EXPECT_EQ(costs["by_model"][0]["output_tokens"], out);
    EXPECT_NEAR(costs["by_model"][0]["cost"].get<double>(), cost, 1e-12);
    ASSERT_EQ(costs["by_day"].size(), 1u);
    EXPECT_NEAR(costs["by_day"][0]["cost"].get<double>(), cost, 1e-12);
    EXPECT_NE(run_text({"traces", "stats"}).find("Cost (EUR)"), std::string::npos);
    // glassbox status: one line.
    const auto status =
        run_glassbox({"status", "--broker", broker_.endpoint}, milliseconds{30'000});
    EXPECT_NE(status.out.find("cost     "), std::string::npos) << status.out << status.err;
    EXPECT_NE(status.out.find(" EUR · 1 model\n"), std::string::npos) << status.out;

    // The gateway's /metrics: the cost and tokens by model.
    const auto ready = dir() / "gateway.ready.json";
    auto& gateway =
        start_process("gateway", {glassbox_binary(), "gateway", "--listen", "127.0.0.1:0",
                                  "--broker", broker_.endpoint, "--ready-file", ready.string()});
    const auto info = wait_for_ready_file(ready, gateway, milliseconds{10'000});
    ASSERT_TRUE(info) << gateway.stderr_text();
    const std::string metrics = get(info->value("url", ""), "/metrics");
    const std::string series =
        "glassbox_cost_total{model=\"" + std::string(kModel) + "\",currency=\"EUR\"} ";
    const auto at = metrics.find(series);
    ASSERT_NE(at, std::string::npos) << metrics;
    EXPECT_NEAR(std::stod(metrics.substr(at + series.size())), cost, 1e-9);
    EXPECT_NE(metrics.find("glassbox_tokens_total{model=\"" + std::string(kModel) +
                           "\",direction=\"input\"} " + std::to_string(in) + "\n"),
              std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("glassbox_tokens_total{model=\"" + std::string(kModel) +
                           "\",direction=\"output\"} " + std::to_string(out) + "\n"),
              std::string::npos)
        << metrics;
}

}  // namespace
}  // namespace glassbox::integration
