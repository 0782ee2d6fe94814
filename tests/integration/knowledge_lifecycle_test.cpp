// The knowledge lifecycle end to end (issue 36, docs/knowledge.md "Changing and retracting
// knowledge"): a real broker, trace collector, store and embeddings worker on loopback. A file is
// loaded, a changed copy replaces it (`load rdf --replace`), facts, sources and documents are
// forgotten, and each change is a trace of kind "store" with its PROV record.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

constexpr const char* kEx = "https://example.org/kb/";

// The lighthouse facts: `built` its year, `extra` a fact only the first version has, `added` one
// only the second has.
std::string lighthouse(const std::string& built, bool extra, bool added) {
    std::string text =
        "<https://example.org/kb/Greyhollow> <http://www.w3.org/2000/01/rdf-schema#label> "
        "\"Greyhollow Light\" .\n"
        "<https://example.org/kb/Greyhollow> <https://example.org/kb/builtIn> \"" +
        built +
        "\" .\n"
        "<https://example.org/kb/Greyhollow> <https://example.org/kb/standsOn> "
        "<https://example.org/kb/Cape> .\n"
        "<https://example.org/kb/Cape> <http://www.w3.org/2000/01/rdf-schema#label> \"Cape "
        "Orrin\" .\n";
    if (extra) {
        text +=
            "<https://example.org/kb/Greyhollow> <https://example.org/kb/keeper> "
            "<https://example.org/kb/Ada> .\n";
    }
    if (added) {
        text += "<https://example.org/kb/Greyhollow> <https://example.org/kb/height> \"21 m\" .\n";
    }
    return text;
}

// The trace a change printed ("trace: <session>").
std::string printed_trace(const std::string& out) {
    static const std::regex kTrace(R"(trace: (urn:glassbox:[0-9a-f-]{36}:question))");
    std::smatch found;
    return std::regex_search(out, found, kTrace) ? found[1].str() : std::string();
}

class KnowledgeLifecycleTest : public ClusterTest {
protected:
    void SetUp() override {
        broker_ = start_broker();
        start_workers(broker_.endpoint,
                      {{"trace-collector", {"--home", (dir() / "traces").string()}},
                       {"embeddings"},
                       {"store", {"--home", (dir() / "store").string()}}});
        kb_ = fs::absolute(dir() / "lighthouse.nt");
    }

    CommandResult glassbox(std::vector<std::string> args) {
        args.insert(args.end(), {"--broker", broker_.endpoint});
        return run_glassbox(std::move(args), milliseconds{120'000});
    }

    json glassbox_json(std::vector<std::string> args) {
        args.push_back("--json");
        const auto r = glassbox(args);
        EXPECT_TRUE(exited_with(r, 0)) << r.status.describe() << r.err;
        return json::parse(r.out, nullptr, false);
    }

    std::int64_t facts() {
        return glassbox_json({"graph", "stats"}).value("quads", std::int64_t{-1});
    }

    // The change's trace once the collector holds it complete, as N-Triples lines.
    std::string stored_change(const std::string& session) {
        json shown;
        EXPECT_TRUE(wait_for_trace_answer(
            broker_.endpoint, {{"op", "show"}, {"session", session}},
            [](const json& s) { return s["session"].value("status", "") == "complete"; }, shown))
            << shown.dump().substr(0, 1000);
        EXPECT_EQ(shown["session"].value("kind", ""), "store") << shown.dump().substr(0, 1000);
        const auto nt = glassbox({"traces", "show", session, "--format", "ntriples"});
        EXPECT_TRUE(exited_with(nt, 0)) << nt.err;
        return nt.out;
    }

    // The sessions `traces list --kind store` lists.
    std::vector<std::string> store_runs() {
        std::vector<std::string> sessions;
        const json list = glassbox_json({"traces", "list", "--kind", "store"});
        for (const auto& s : list.value("sessions", json::array()))
            sessions.push_back(s.value("session", ""));
        return sessions;
    }

    RunningBroker broker_;
    fs::path kb_;
};

bool holds(const std::string& nt, const std::string& line) {
    return nt.find(line) != std::string::npos;
}

TEST_F(KnowledgeLifecycleTest, ReplaceKeepsUnchangedFactsRemovesTheRestAndRecordsTheChange) {
    std::ofstream(kb_) << lighthouse("1856", true, false);
    const auto first = glassbox({"load", "rdf", kb_.string()});
    ASSERT_TRUE(exited_with(first, 0)) << first.err;
    ASSERT_EQ(facts(), 5);

    // The year changed, the keeper went, the height came.
    std::ofstream(kb_) << lighthouse("1857", false, true);
    const auto replaced = glassbox({"load", "rdf", kb_.string(), "--replace"});
    ASSERT_TRUE(exited_with(replaced, 0)) << replaced.err;
    const std::string uri = "file://" + kb_.string();
    EXPECT_TRUE(holds(replaced.out, "replaced " + uri + ": 2 facts added, 2 removed, 3 unchanged"))
        << replaced.out;
    EXPECT_EQ(facts(), 5);
    const auto old_year = glassbox_json({"query", "triples", "-s", std::string(kEx) + "Greyhollow",
                                         "-p", std::string(kEx) + "builtIn"});
    EXPECT_EQ(old_year.dump().find("1856"), std::string::npos) << old_year.dump();
    EXPECT_NE(old_year.dump().find("1857"), std::string::npos) << old_year.dump();

    const auto session = printed_trace(replaced.out);
    ASSERT_FALSE(session.empty()) << replaced.out;
    const std::string nt = stored_change(session);
    const std::string q = "<" + session + "> ";
    const std::string prefix = session.substr(0, session.size() - std::string("question").size());
    EXPECT_TRUE(holds(nt, q + "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
                              "<https://glassbox.dev/ns#KnowledgeChange>"))
        << nt;
    EXPECT_TRUE(holds(nt, q + "<https://glassbox.dev/ns#changeKind> \"replace\"")) << nt;
    EXPECT_TRUE(holds(nt, q + "<http://www.w3.org/ns/prov#used> <" + uri + ">")) << nt;
    EXPECT_TRUE(holds(nt, q + "<https://glassbox.dev/ns#factsAdded> "
                              "\"2\"^^<http://www.w3.org/2001/XMLSchema#integer>"))
        << nt;
    EXPECT_TRUE(holds(nt, q + "<https://glassbox.dev/ns#factsRemoved> "
                              "\"2\"^^<http://www.w3.org/2001/XMLSchema#integer>"))
        << nt;
    EXPECT_TRUE(holds(nt, q + "<http://www.w3.org/ns/prov#wasAssociatedWith> "
                              "<urn:glassbox:agent:worker:store>"))
        << nt;
    EXPECT_TRUE(holds(nt, q + "<http://www.w3.org/ns/prov#wasAssociatedWith> "
                              "<urn:glassbox:agent:user:"))
        << nt;
    // The old year is listed as removed: subject, predicate, object, source, invalidation.
    static const std::regex kRemoved("<(" + prefix +
                                     "removed:[0-9]+)> "
                                     "<http://www.w3.org/1999/02/22-rdf-syntax-ns#object> "
                                     "\"1856\"");
    std::smatch found;
    ASSERT_TRUE(std::regex_search(nt, found, kRemoved)) << nt;
    const std::string r = "<" + found[1].str() + "> ";
    EXPECT_TRUE(holds(nt, r + "<http://www.w3.org/1999/02/22-rdf-syntax-ns#subject> <" +
                              std::string(kEx) + "Greyhollow>"))
        << nt;
    EXPECT_TRUE(holds(nt, r + "<http://www.w3.org/1999/02/22-rdf-syntax-ns#predicate> <" +
                              std::string(kEx) + "builtIn>"))
        << nt;
    EXPECT_TRUE(holds(nt, r + "<https://glassbox.dev/ns#sourceDocument> <" + uri + ">")) << nt;
    EXPECT_TRUE(holds(nt, r + "<http://www.w3.org/ns/prov#wasInvalidatedBy> <" + session + ">"))
        << nt;
    EXPECT_TRUE(holds(nt, q + "<https://glassbox.dev/ns#removedFact> " + r.substr(0, r.size() - 1)))
        << nt;
    const auto runs = store_runs();
    EXPECT_NE(std::find(runs.begin(), runs.end(), session), runs.end());
}

TEST_F(KnowledgeLifecycleTest, ForgetRetractsAFactASourceAndADocumentEachAsAChange) {
    std::ofstream(kb_) << lighthouse("1856", true, false);
    const fs::path other = fs::absolute(dir() / "cape.nt");
    std::ofstream(other) << "<https://example.org/kb/Cape> "
                            "<http://www.w3.org/2000/01/rdf-schema#label> \"Cape Orrin\" .\n";
    ASSERT_TRUE(exited_with(glassbox({"load", "rdf", kb_.string(), other.string()}), 0));
    ASSERT_EQ(facts(), 5);

    const auto fact = glassbox({"forget", "fact", std::string(kEx) + "Greyhollow",
                                "<" + std::string(kEx) + "builtIn>", "\"1856\""});
    ASSERT_TRUE(exited_with(fact, 0)) << fact.err;
    EXPECT_TRUE(holds(fact.out, ": 1 fact removed")) << fact.out;
    EXPECT_EQ(facts(), 4);

    const std::string uri = "file://" + kb_.string();
    const auto source = glassbox({"forget", "source", uri});
    ASSERT_TRUE(exited_with(source, 0)) << source.err;
    // The cape's label stays: the other file states it too.
    EXPECT_TRUE(holds(source.out, "forgot source " + uri + ": 3 facts removed, 1 kept"))
        << source.out;
    EXPECT_EQ(facts(), 1);
    const std::string nt = stored_change(printed_trace(source.out));
    EXPECT_TRUE(holds(nt, "<https://glassbox.dev/ns#removedSource> <" + uri + ">")) << nt;
    EXPECT_TRUE(holds(nt, "<" + uri + "> <http://www.w3.org/ns/prov#wasInvalidatedBy> ")) << nt;

    // What is not there is NotFound (exit 2), and changes nothing.
    const auto again = glassbox({"forget", "source", uri});
    EXPECT_TRUE(exited_with(again, 2)) << again.out << again.err;
    EXPECT_TRUE(holds(again.err, "NotFound")) << again.err;
    const auto bad = glassbox({"forget", "fact", "not an iri", "<https://x/p>", "\"v\""});
    EXPECT_TRUE(exited_with(bad, 2)) << bad.err;

    const fs::path docs = dir() / "docs";
    fs::create_directories(docs);
    std::ofstream(docs / "light.md") << "# Greyhollow Light\n\nThe light was first lit in 1856.\n";
    ASSERT_TRUE(exited_with(glassbox({"load", "docs", docs.string()}), 0));
    const std::string doc = "file://" + fs::absolute(docs / "light.md").string();
    const auto document = glassbox({"forget", "document", doc});
    ASSERT_TRUE(exited_with(document, 0)) << document.out << document.err;
    const json stats = glassbox_json({"graph", "stats"});
    EXPECT_EQ(stats.value("documents", -1), 0) << stats.dump();
    EXPECT_EQ(stats.value("chunks", -1), 0) << stats.dump();
    EXPECT_EQ(stats.value("chunk_vectors", -1), 0) << stats.dump();
    (void)stored_change(printed_trace(document.out));
    EXPECT_EQ(store_runs().size(), 3u);
}

}  // namespace
}  // namespace glassbox::integration
