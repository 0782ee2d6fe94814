// `glassbox traces replay` and `traces diff` end to end (issue 36, docs/traces.md "Replay and
// compare"): the real broker, trace collector, store, embeddings, llm (extractive), graph-rag,
// document-rag and query workers as processes on loopback. A run is asked, the knowledge it used
// changes, the run is replayed: the new run's Question is prov:wasRevisionOf the old one's, and
// the comparison shows the answer, the facts and the confidence before and after.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "tests/support/cluster.hpp"

namespace glassbox::integration {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* kQuestion = "Who founded the shipyard that built the MV Curlew?";
constexpr const char* kCollection = "replay";
constexpr const char* kRevisionOf = "<http://www.w3.org/ns/prov#wasRevisionOf>";

// A small knowledge base whose shipyard was founded by `founder` ("Oskar" or "Elin").
std::string knowledge(const std::string& founder) {
    return "@prefix ex: <https://example.org/kb/> .\n"
           "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
           "ex:Curlew rdfs:label \"MV Curlew\" ; ex:builtBy ex:Yard .\n"
           "ex:Yard rdfs:label \"Brenn Shipyard\" ; ex:foundedBy ex:" +
           founder +
           " .\n"
           "ex:" +
           founder + " rdfs:label \"" + founder +
           " Brenn\" .\n"
           "ex:builtBy rdfs:label \"was built by\" .\n"
           "ex:foundedBy rdfs:label \"was founded by\" .\n";
}

// The trace session a `glassbox invoke` or `traces replay` printed last ("trace: <session>").
std::string printed_trace(const std::string& out) {
    static const std::regex kTrace(R"(trace: (urn:glassbox:[0-9a-f-]{36}:question))");
    std::string found;
    for (std::sregex_iterator it(out.begin(), out.end(), kTrace), end; it != end; ++it)
        found = (*it)[1].str();
    return found;
}

class ReplayTest : public ClusterTest {
protected:
    void SetUp() override {
        broker_ = start_broker();
        start_workers(broker_.endpoint,
                      {{"trace-collector", {"--home", (dir() / "traces").string()}},
                       {"embeddings"},
                       {"store", {"--home", (dir() / "store").string()}},
                       {"llm"},
                       {"graph-rag"},
                       {"document-rag"},
                       {"query"}});
        kb_ = dir() / "kb.ttl";
        load("Oskar");
    }

    CommandResult glassbox(std::vector<std::string> args,
                           milliseconds timeout = milliseconds{120'000}) {
        args.push_back("--broker");
        args.push_back(broker_.endpoint);
        return run_glassbox(std::move(args), timeout);
    }

    // Writes the knowledge base with `founder` and loads it into an emptied collection.
    void load(const std::string& founder) {
        std::ofstream(kb_) << knowledge(founder);
        (void)glassbox({"collections", "delete", kCollection, "--yes"});
        const auto loaded = glassbox({"load", "rdf", kb_.string(), "--collection", kCollection});
        ASSERT_TRUE(exited_with(loaded, 0)) << loaded.err;
    }

    // Asks `service` the question; the run's session once the collector holds it complete.
    std::string ask(const std::string& service) {
        const auto asked =
            glassbox({"invoke", service, "-q", kQuestion, "--collection", kCollection});
        EXPECT_TRUE(exited_with(asked, 0)) << asked.out << asked.err;
        auto session = printed_trace(asked.out);
        EXPECT_FALSE(session.empty()) << asked.out;
        json shown;
        EXPECT_TRUE(wait_for_trace_answer(
            broker_.endpoint, {{"op", "show"}, {"session", session}},
            [](const json& s) { return s["session"].value("status", "") == "complete"; }, shown))
            << shown.dump().substr(0, 1000);
        return session;
    }

    // The trace's triples as N-Triples lines (`traces show --format ntriples`).
    std::string ntriples(const std::string& session) {
        const auto shown = glassbox({"traces", "show", session, "--format", "ntriples"});
        EXPECT_TRUE(exited_with(shown, 0)) << shown.err;
        return shown.out;
    }

    RunningBroker broker_;
    std::filesystem::path kb_;
};

TEST_F(ReplayTest, ReplayAsksAgainLinksTheRevisionAndShowsWhatChanged) {
    const auto original = ask("graph-rag");
    ASSERT_FALSE(original.empty());
    ASSERT_NO_FATAL_FAILURE(load("Elin"));

    const auto replayed = glassbox({"traces", "replay", original.substr(13, 8)});
    ASSERT_TRUE(exited_with(replayed, 0)) << replayed.out << replayed.err;
    const auto& out = replayed.out;
    EXPECT_NE(out.find("Replayed " + original + " (graph-rag) as "), std::string::npos) << out;
    EXPECT_NE(out.find("(revises a)"), std::string::npos) << out;
    EXPECT_NE(out.find("question: " + std::string(kQuestion)), std::string::npos) << out;
    EXPECT_NE(out.find("answer: changed"), std::string::npos) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n  a: [^\n]*Oskar Brenn)"))) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n  b: [^\n]*Elin Brenn)"))) << out;
    EXPECT_NE(out.find("short answer: Oskar Brenn -> Elin Brenn"), std::string::npos) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(\nconfidence: \d+ % -> \d+ %)"))) << out;
    // The store names the facts' entities by label (Oskar Brenn's is gone with the old file).
    EXPECT_NE(out.find("facts: 1 added, 1 removed, 1 kept"), std::string::npos) << out;
    EXPECT_NE(out.find("  + Brenn Shipyard foundedBy Elin Brenn"), std::string::npos) << out;
    EXPECT_NE(out.find("  - Brenn Shipyard foundedBy Oskar\n"), std::string::npos) << out;
    // The source file is the same one, reloaded.
    EXPECT_NE(out.find("sources: 0 added, 0 removed, 1 kept"), std::string::npos) << out;

    // The new run's Question is a revision of the original's, in the stored trace.
    const auto replay = printed_trace(out);
    ASSERT_FALSE(replay.empty()) << out;
    ASSERT_NE(replay, original);
    EXPECT_NE(ntriples(replay).find("<" + replay + "> " + kRevisionOf + " <" + original + "> ."),
              std::string::npos);
    EXPECT_EQ(ntriples(original).find(kRevisionOf), std::string::npos);

    // diff --json: the op's reply, the same comparison.
    const auto diff = glassbox({"traces", "diff", original, replay, "--json"});
    ASSERT_TRUE(exited_with(diff, 0)) << diff.err;
    const json c = json::parse(diff.out);
    EXPECT_EQ(c["a"]["session"], original);
    EXPECT_EQ(c["b"]["session"], replay);
    EXPECT_EQ(c["b"]["revision_of"], original);
    EXPECT_TRUE(c["b_revises_a"].get<bool>());
    EXPECT_TRUE(c["answer_changed"].get<bool>());
    EXPECT_EQ(c["a"]["short_answer"], "Oskar Brenn");
    EXPECT_EQ(c["b"]["short_answer"], "Elin Brenn");
    ASSERT_EQ(c["facts_added"].size(), 1u);
    EXPECT_EQ(c["facts_added"][0]["o"]["i"], "https://example.org/kb/Elin");
    ASSERT_EQ(c["facts_removed"].size(), 1u);
    EXPECT_EQ(c["facts_removed"][0]["o"]["i"], "https://example.org/kb/Oskar");
    EXPECT_TRUE(c["a"]["confidence"].is_number() && c["b"]["confidence"].is_number());

    // The text diff says the same as replay did.
    const auto text = glassbox({"traces", "diff", original, replay});
    ASSERT_TRUE(exited_with(text, 0)) << text.err;
    EXPECT_NE(text.out.find("answer: changed"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("  + Brenn Shipyard foundedBy Elin Brenn"), std::string::npos);
}

// A routed run replays through the router with its revision on the router's own Question only:
// the engine it calls is a sub-run, not a revision of anything.
TEST_F(ReplayTest, AReplayedQueryRunRevisesOnlyItsOwnQuestion) {
    const auto original = ask("query");
    ASSERT_FALSE(original.empty());
    const auto replayed = glassbox({"traces", "replay", original, "--json"});
    ASSERT_TRUE(exited_with(replayed, 0)) << replayed.out << replayed.err;
    const json r = json::parse(replayed.out);
    EXPECT_EQ(r["original"], original);
    const std::string replay = r["replay"];
    EXPECT_EQ(r["comparison"]["b"]["kind"], "query");
    EXPECT_TRUE(r["comparison"]["b_revises_a"].get<bool>());
    EXPECT_FALSE(r["comparison"]["answer_changed"].get<bool>()) << r.dump();
    EXPECT_EQ(r["comparison"]["facts_kept"], r["comparison"]["a"]["facts"].size());
    const auto triples = ntriples(replay);
    std::size_t revisions = 0;
    for (auto at = triples.find(kRevisionOf); at != std::string::npos;
         at = triples.find(kRevisionOf, at + 1))
        ++revisions;
    EXPECT_EQ(revisions, 1u) << triples;
    EXPECT_NE(triples.find("<" + replay + "> " + kRevisionOf + " <" + original + "> ."),
              std::string::npos);
}

TEST_F(ReplayTest, ASubRunOrAnUnknownRunIsRefusedWithATypedError) {
    const auto routed = ask("query");
    ASSERT_FALSE(routed.empty());
    json shown = trace_answer(broker_.endpoint,
                              {{"op", "list"}, {"parent", routed}, {"include_subtraces", true}});
    ASSERT_TRUE(shown.is_object() && !shown["sessions"].empty()) << shown.dump();
    const std::string sub = shown["sessions"][0]["session"];
    const auto refused = glassbox({"traces", "replay", sub});
    EXPECT_TRUE(exited_with(refused, 2)) << refused.out << refused.err;
    EXPECT_NE(refused.err.find("InvalidRequest"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("is a sub-run of " + routed), std::string::npos) << refused.err;

    const auto unknown = glassbox(
        {"traces", "replay", "urn:glassbox:00000000-0000-4000-8000-000000000000:question"});
    EXPECT_TRUE(exited_with(unknown, 2)) << unknown.err;
    EXPECT_NE(unknown.err.find("NotFound"), std::string::npos) << unknown.err;
    const auto diff = glassbox({"traces", "diff", routed, "ffffffff"});
    EXPECT_TRUE(exited_with(diff, 2)) << diff.err;
    EXPECT_NE(diff.err.find("b: "), std::string::npos) << diff.err;
}

}  // namespace
}  // namespace glassbox::integration
