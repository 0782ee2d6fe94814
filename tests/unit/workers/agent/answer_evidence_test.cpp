// Tracing an agent's answer back through its lookups' facts, and the citations, sources and tiers
// built from them.
#include <gtest/gtest.h>

#include "tests/unit/workers/agent/step_facts.hpp"
#include "workers/agent/answer_evidence.hpp"

namespace glassbox::agent {
namespace {

using test_support::fact;

TEST(FactsBehind, TracesTheAnswerBackAlongTheChainAndLeavesTheRestOut) {
    // Telescope -builtBy-> Yard -foundedBy-> Founder -bornIn-> Port, with side facts at each hop.
    const std::vector<StepFact> facts = {
        fact("Telescope", "builtBy", "Yard", "Telescope", 0),
        fact("Telescope", "locatedIn", "Hill", "Telescope", 0),
        fact("Yard", "foundedBy", "Founder", "Yard", 1),
        fact("Yard", "locatedIn", "Port", "Yard", 1),  // names the answer too, but from a side hop
        fact("Telescope", "builtBy", "Yard", "Yard",
             1),  // the same stored fact, seen from the Yard
        fact("Founder", "bornIn", "Port", "Founder", 2),
        fact("Founder", "worksAt", "Yard", "Founder", 2),  // points back at an earlier hop
    };
    const auto behind = facts_behind("port", facts);
    std::vector<std::string> texts;
    for (const auto i : behind) texts.push_back(facts[i].fact.text);
    // The last hop's fact naming the answer (not the side fact of hop 1 naming it too); back
    // from the Founder (looked up at 2) the founding fact (1); back from the Yard the building
    // fact (0), once; nothing else.
    EXPECT_EQ(texts, (std::vector<std::string>{"Founder bornIn Port", "Yard foundedBy Founder",
                                               "Telescope builtBy Yard"}));
    EXPECT_TRUE(facts_behind("", facts).empty());
    EXPECT_TRUE(facts_behind("Nowhere", facts).empty());
    EXPECT_EQ(facts_behind("Port", facts, 2).size(), 2u);
}

TEST(AnswerEvidence, CitesFactsWithTheirSourcesThenTheRagCitationsKeepingTheWeakerTier) {
    std::vector<ObservedFact> chosen = {fact("A", "p", "B", "A", 0).fact,
                                        fact("B", "q", "C", "B", 1).fact,
                                        fact("C", "r", "D", "C", 2).fact};
    std::vector<std::vector<schema::FactSource>> sources = {
        {{"file:///kb.ttl", "file", std::nullopt, 1, ""}},
        {{"urn:chunk:7", "chunk", std::string("urn:doc:2"), 3, ""},
         {"file:///kb.ttl", "file", std::nullopt, 1, ""}},
        {}};  // the third fact: no recorded source
    schema::RagCitation cited;
    cited.n = 4;
    cited.kind = "chunk";
    cited.chunk = "file:///kb.ttl";
    cited.tier = 2;
    cited.spans.push_back({});
    const auto e = answer_evidence(chosen, sources, {cited}, {"urn:uncited"});
    ASSERT_EQ(e.citations.size(), 4u);
    EXPECT_EQ(e.citations[0].n, 1u);
    EXPECT_EQ(e.citations[0].kind, "edge");
    EXPECT_EQ(e.citations[0].document, "file:///kb.ttl");
    EXPECT_EQ(e.citations[1].chunk, "urn:chunk:7");
    EXPECT_EQ(e.citations[1].document, "urn:doc:2");
    EXPECT_EQ(e.citations[1].tier, 3u);
    EXPECT_EQ(e.citations[2].tier, 0u);
    EXPECT_EQ(e.citations[3].n, 4u);
    EXPECT_TRUE(e.citations[3].spans.empty())
        << "a sub-run's spans do not point into the agent's text";
    EXPECT_EQ(e.sources, (std::vector<std::string>{"file:///kb.ttl", "urn:chunk:7"}));
    ASSERT_EQ(e.answer_sources.size(), 2u);
    EXPECT_EQ(e.answer_sources[0].data_tier, 2)
        << "cited as tier 1 and as tier 2: the weaker stays";
    EXPECT_EQ(e.answer_sources[1].data_tier, 3);
    EXPECT_EQ(schema::explain::aggregate_tier(e.answer_sources), 3);

    // Nothing cited with a source: the RAG tools' sources, tier not known (aggregate 4).
    const auto bare = answer_evidence({}, {}, {}, {"urn:a", "urn:a", "urn:b"});
    EXPECT_EQ(bare.sources, (std::vector<std::string>{"urn:a", "urn:b"}));
    EXPECT_EQ(schema::explain::aggregate_tier(bare.answer_sources), 4);
    EXPECT_EQ(schema::explain::aggregate_tier({}), 4);
}

// Issue 35: a cited source's freshness goes with it onto the answer's sources (the Conclusion's
// gb:answerSource), so a stale source is marked in the trace as well as in the citation.
TEST(AnswerEvidence, AnAnswerSourceKeepsItsCitationsFreshness) {
    std::vector<ObservedFact> chosen = {fact("A", "p", "B", "A", 0).fact};
    schema::FactSource dated{"file:///register.ttl", "file", std::nullopt, 3, ""};
    dated.loaded_at = "2026-12-01T10:00:00Z";
    dated.date = "2020-01-01";
    dated.max_age = "30d";
    dated.stale = true;
    const auto e = answer_evidence(chosen, {{dated}}, {}, {});
    ASSERT_EQ(e.citations.size(), 1u);
    EXPECT_EQ(e.citations[0].stale, std::optional<bool>(true));
    ASSERT_EQ(e.answer_sources.size(), 1u);
    EXPECT_EQ(e.answer_sources[0].loaded_at, "2026-12-01T10:00:00Z");
    EXPECT_EQ(e.answer_sources[0].date, "2020-01-01");
    EXPECT_EQ(e.answer_sources[0].stale, std::optional<bool>(true));
}

TEST(WithCitationMarkers, MarksTheSourcesBeforeTheFullStopUnlessTheTextCites) {
    EXPECT_EQ(with_citation_markers("Ilse Varrow designed Greyhollow Light.", 1),
              "Ilse Varrow designed Greyhollow Light [1].");
    EXPECT_EQ(with_citation_markers("Brenn Yard", 2), "Brenn Yard [1][2]");
    // A model that cited keeps its markers; nothing cited, nothing added.
    EXPECT_EQ(with_citation_markers("Saltspire Light [2].", 3), "Saltspire Light [2].");
    EXPECT_EQ(with_citation_markers("No sources.", 0), "No sources.");
    // Brackets that are no marker do not count as citing.
    EXPECT_EQ(with_citation_markers("It was [unknown].", 1), "It was [unknown] [1].");
    // Issue 35: a passage that gives a conflict's rival value does not back the answer.
    EXPECT_EQ(with_citation_markers("It was built in 1879.", 3, {2}),
              "It was built in 1879 [1][3].");
    EXPECT_EQ(with_citation_markers("It was built in 1879.", 1, {1}), "It was built in 1879.");
}

// A RAG tool's citation of `selection`, numbered `n` by the tool, cited at code points
// [start, end) of the tool's answer text.
schema::RagCitation tool_citation(std::string selection, std::uint32_t n, std::uint64_t start,
                                  std::uint64_t end) {
    schema::RagCitation c;
    c.kind = "edge";
    c.selection = std::move(selection);
    c.n = n;
    c.spans.push_back({start, end});
    return c;
}

// The agent's citations: `selections` numbered from 1, as answer_evidence numbers them.
std::vector<schema::RagCitation> agent_citations(const std::vector<std::string>& selections) {
    std::vector<schema::RagCitation> out;
    for (const auto& s : selections) {
        schema::RagCitation c;
        c.selection = s;
        c.n = static_cast<std::uint32_t>(out.size() + 1);
        out.push_back(std::move(c));
    }
    return out;
}

TEST(WithToolMarkers, PutsTheToolsMarkersBackAtTheirSpansNumberedAsTheAgentCites) {
    // graph-rag's text "Saltspire Light was built in 1879; another source gives 1881." cites
    // its edge e1 for the first clause (0-33) and e2 for the second (35-61, with the stop).
    const std::string text = "Saltspire Light was built in 1879; another source gives 1881.";
    const std::vector<schema::RagCitation> tool = {tool_citation("urn:r:focus:edge:0", 1, 0, 33),
                                                   tool_citation("urn:r:focus:edge:1", 2, 35, 61)};
    // The agent cites a looked-up fact first, so the tool's citations are its [2] and [3].
    const auto cited = agent_citations({"", "urn:r:focus:edge:0", "urn:r:focus:edge:1"});
    EXPECT_EQ(with_tool_markers(text, tool, cited),
              "Saltspire Light was built in 1879 [2]; another source gives 1881 [3][1].");
    // Left out (a rival's passage), the fact is not marked at the end; the tool's own markers
    // stay where the tool put them.
    EXPECT_EQ(with_tool_markers(text, tool, cited, {1}),
              "Saltspire Light was built in 1879 [2]; another source gives 1881 [3].");
    // A tool citation the agent does not cite, and a span past the text, are not marked.
    const auto only_first = agent_citations({"urn:r:focus:edge:0"});
    EXPECT_EQ(with_tool_markers(text, tool, only_first),
              "Saltspire Light was built in 1879 [1]; another source gives 1881.");
    const std::vector<schema::RagCitation> past = {tool_citation("urn:r:focus:edge:0", 1, 0, 99)};
    EXPECT_EQ(with_tool_markers(text, past, only_first),
              "Saltspire Light was built in 1879; another source gives 1881 [1].");
    // A marker the text holds that is none of the tool's citations stays as written.
    EXPECT_EQ(with_tool_markers("It was 1879 [4].", tool, cited), "It was 1879 [4].");
}

TEST(WithToolMarkers, RenumbersTheMarkersTheToolsTextHolds) {
    // graph-rag's dispute: its first sentence cites edge e1 by span (0-14, with the stop), and
    // its conflict note cites both sides in its own words, [1] and [2] as graph-rag numbers.
    const std::string text =
        "Built in 1879.\nSources disagree on this: [1] gives 1879; [2] gives 1881.";
    const std::vector<schema::RagCitation> tool = {tool_citation("e1", 1, 0, 14),
                                                   tool_citation("e2", 2, 99, 99)};
    // The agent cites a looked-up fact first: graph-rag's [1] and [2] are its [2] and [3]. The
    // note cites, so nothing is added at the end.
    EXPECT_EQ(with_tool_markers(text, tool, agent_citations({"", "e1", "e2"})),
              "Built in 1879 [2].\nSources disagree on this: [2] gives 1879; [3] gives 1881.");
    // Numbered alike, the text keeps its numbers and gains the span's marker.
    EXPECT_EQ(with_tool_markers(text, tool, agent_citations({"e1", "e2"})),
              "Built in 1879 [1].\nSources disagree on this: [1] gives 1879; [2] gives 1881.");
}

TEST(WithToolMarkers, CountsSpansInCodePointsAndMarksASharedPlaceOnce) {
    // "Zürich" is 7 bytes for 6 code points: the span (0-6) ends after its 'h'.
    const std::string text = "Zürich is in Switzerland.";
    const std::vector<schema::RagCitation> tool = {
        tool_citation("s1", 1, 0, 6), tool_citation("s2", 2, 0, 6), tool_citation("s1", 1, 0, 6)};
    EXPECT_EQ(with_tool_markers(text, tool, agent_citations({"s2", "s1"})),
              "Zürich [1][2] is in Switzerland.");
}

}  // namespace
}  // namespace glassbox::agent
