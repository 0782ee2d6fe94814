// Issue 37 points 2 and 5 end to end: `glassbox up` with redaction.rules = ["email"] and a
// pattern, a question carrying an e-mail address and an account number asked through graph-rag,
// document-rag, agent and query (and a loaded document holding another address). Neither is in
// any file the pipeline writes under the home (trace store and its WAL, broker spool, logs), in
// `traces export` or `traces show --format nquads`; the traces record the redactions. The worker
// log lines of a request carry trace= and otel_trace_id= (a sub-run's: its top-level run's id).
#include <signal.h>

#include <fstream>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "tests/support/bus_peers.hpp"
#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* kAddress = "ana.silva@example.com";
constexpr const char* kAccount = "ACC-12345678";
constexpr const char* kDocumentAddress = "keeper@saltspire-light.example.org";

// The trace session a `glassbox invoke` printed ("trace: <session>").
std::string printed_trace(const std::string& out) {
    static const std::regex kTrace(R"(trace: (urn:glassbox:([0-9a-f-]{36}):question))");
    std::smatch match;
    return std::regex_search(out, match, kTrace) ? match[1].str() : std::string{};
}

std::string otel_id_of(const std::string& session) {
    std::string id = session.substr(13, 36);
    id.erase(std::remove(id.begin(), id.end(), '-'), id.end());
    return id;
}

class RedactionTest : public ClusterTest {
protected:
    void SetUp() override {
        home_ = dir() / "home";
        fs::create_directories(home_);
        fs::permissions(home_, fs::perms::owner_all, fs::perm_options::replace);
        std::ofstream(home_ / "config.toml")
            << "[redaction]\n"
               "rules = [\"email\"]\n"
               "patterns = [{ name = \"account\", regex = \"ACC-[0-9]{8}\", scope = "
               "[\"question\", \"answer\", \"observations\"] }]\n"
               "[log]\n"
               "level = \"debug\"\n";
        fs::permissions(home_ / "config.toml", fs::perms::owner_read | fs::perms::owner_write,
                        fs::perm_options::replace);
        auto& up = start_up(home_, dir() / "up.ready");
        up_ = &up;
        const auto ready = wait_for_ready_file(dir() / "up.ready", up, milliseconds{30'000});
        ASSERT_TRUE(ready) << up.stderr_text();
        endpoint_ = (*ready)["endpoint"].get<std::string>();
        use_curve_for(endpoint_, home_curve_keys(home_.string()));
        for (const char* service :
             {"store", "trace", "graph-rag", "document-rag", "agent", "query"})
            ASSERT_TRUE(wait_for_service(endpoint_, service, milliseconds{30'000})) << service;
        const auto docs = dir() / "docs";
        fs::create_directories(docs);
        std::ofstream(docs / "saltspire.md")
            << "# Saltspire Light\n\nSaltspire Light is a lighthouse on Solen Island, built in "
               "1871. Its keeper answers letters sent to "
            << kDocumentAddress << " and visitors may write there to book a tour.\n";
        for (const auto& load : std::vector<std::vector<std::string>>{
                 {"load", "rdf", std::string(GLASSBOX_SAMPLE_DIR) + "/orrin.ttl"},
                 {"load", "docs", docs.string()}}) {
            const auto loaded = glassbox(load);
            ASSERT_TRUE(exited_with(loaded, 0)) << loaded.out << loaded.err;
        }
    }

    CommandResult glassbox(std::vector<std::string> args,
                           milliseconds timeout = milliseconds{120'000}) {
        args.push_back("--home");
        args.push_back(home_.string());
        return run_glassbox(std::move(args), timeout);
    }

    // Asks `service` the question; its session once the collector holds the run ended.
    std::string ask(const std::string& service) {
        const std::string question = std::string("Who keeps Saltspire Light? Write to ") +
                                     kAddress + " about " + kAccount + " please.";
        const auto asked = glassbox({"invoke", service, "-q", question});
        EXPECT_TRUE(exited_with(asked, 0)) << service << ": " << asked.out << asked.err;
        const auto session = printed_trace(asked.out);
        EXPECT_FALSE(session.empty()) << asked.out;
        json shown;
        EXPECT_TRUE(wait_for_trace_answer(
            endpoint_, {{"op", "show"}, {"session", session}},
            [](const json& s) {
                const auto status = s["session"].value("status", "");
                return status == "complete" || status == "error";
            },
            shown))
            << shown.dump().substr(0, 1000);
        return session;
    }

    // Every file under `root` that holds `text`, but those under `skip`.
    static std::vector<std::string> files_holding(const fs::path& root, const std::string& text,
                                                  const std::set<fs::path>& skip = {}) {
        std::vector<std::string> found;
        for (const auto& entry : fs::recursive_directory_iterator(root)) {
            if (!entry.is_regular_file()) continue;
            bool skipped = false;
            for (const auto& s : skip)
                if (entry.path().string().starts_with(s.string())) skipped = true;
            if (skipped) continue;
            std::ifstream in(entry.path(), std::ios::binary);
            const std::string body{std::istreambuf_iterator<char>(in), {}};
            if (body.find(text) != std::string::npos) found.push_back(entry.path().string());
        }
        return found;
    }

    fs::path home_;
    std::string endpoint_;
    ChildProcess* up_ = nullptr;
};

TEST_F(RedactionTest, NoAddressInAnyFileThePipelineWritesAndTheTracesRecordTheRedaction) {
    std::vector<std::string> sessions;
    for (const char* service : {"graph-rag", "document-rag", "agent", "query"})
        sessions.push_back(ask(service));
    for (const auto& s : sessions) ASSERT_FALSE(s.empty());

    // The exports: every stored triple, and one trace as N-Quads.
    const auto exported = glassbox({"traces", "export", "--since", "1d"});
    ASSERT_TRUE(exited_with(exported, 0)) << exported.err;
    EXPECT_NE(exported.out.find("redactionRule"), std::string::npos);
    for (const auto& session : sessions) {
        const auto nquads = glassbox({"traces", "show", session, "--format", "nquads"});
        ASSERT_TRUE(exited_with(nquads, 0)) << nquads.err;
        for (const auto& text :
             {std::string(kAddress), std::string(kAccount), std::string(kDocumentAddress)}) {
            EXPECT_EQ(nquads.out.find(text), std::string::npos) << session << " holds " << text;
            EXPECT_EQ(exported.out.find(text), std::string::npos) << "the export holds " << text;
        }
        // The Question records the e-mail rule in the question scope (count >= 1).
        const std::regex recorded("<" +
                                  std::regex_replace(session, std::regex(R"([.:-])"), R"(\$&)") +
                                  R"(> <https://glassbox.dev/ns#redaction> <([^>]+)>)");
        std::smatch node;
        ASSERT_TRUE(std::regex_search(nquads.out, node, recorded)) << nquads.out.substr(0, 3000);
        EXPECT_NE(nquads.out.find("<https://glassbox.dev/ns#redactionRule> \"email\""),
                  std::string::npos);
        EXPECT_TRUE(std::regex_search(
            nquads.out, std::regex(R"(<https://glassbox.dev/ns#redactionCount> "[1-9][0-9]*")")));
    }

    // Log hygiene: the worker lines of each run carry trace= and the top-level run's id.
    const auto logs = home_ / "logs";
    std::string all_logs;
    for (const auto& entry : fs::directory_iterator(logs)) {
        std::ifstream in(entry.path());
        all_logs += std::string{std::istreambuf_iterator<char>(in), {}};
    }
    for (const auto& session : sessions) {
        const std::string line_fields =
            "trace=" + session + " otel_trace_id=" + otel_id_of(session);
        EXPECT_NE(all_logs.find(line_fields), std::string::npos) << line_fields;
    }
    // query -> graph-rag (or another engine): the sub-run's lines carry the query's otel id
    // with a trace= of their own.
    const std::regex nested("trace=(urn:glassbox:[0-9a-f-]{36}:question) otel_trace_id=" +
                            otel_id_of(sessions[3]));
    std::set<std::string> traces_of_query;
    for (std::sregex_iterator it(all_logs.begin(), all_logs.end(), nested), end; it != end; ++it)
        traces_of_query.insert((*it)[1].str());
    EXPECT_GE(traces_of_query.size(), 2U) << "no sub-run logged the query's trace id";

    // Every file under the home once the processes stopped (databases checkpointed, logs
    // flushed): the trace store and its WAL, the spool, every log. The knowledge store holds
    // the loaded document as the user gave it (its text is knowledge, not a trace), so the
    // document's address is looked for everywhere but there.
    up_->send_signal(SIGTERM);
    ASSERT_TRUE(up_->wait_exit(milliseconds{30'000}));
    EXPECT_EQ(files_holding(home_, kAddress), std::vector<std::string>{});
    EXPECT_EQ(files_holding(home_, kAccount), std::vector<std::string>{});
    EXPECT_EQ(files_holding(home_, kDocumentAddress, {home_ / "knowledge"}),
              std::vector<std::string>{});
    // The processes' own logs (stderr; `up`'s stdout): a command's stdout is what the user
    // asked to see (the answer, the agent's steps as they stream) and is not searched.
    for (const auto& entry : fs::directory_iterator(dir())) {
        const auto name = entry.path().filename().string();
        if (!entry.is_regular_file() || !(name.ends_with(".err") || name == "up.out")) continue;
        std::ifstream in(entry.path());
        const std::string body{std::istreambuf_iterator<char>(in), {}};
        for (const auto* text : {kAddress, kAccount, kDocumentAddress})
            EXPECT_EQ(body.find(text), std::string::npos) << name << " holds " << text;
    }
}

}  // namespace
}  // namespace glassbox::integration
