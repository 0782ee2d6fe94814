// Relevance reflection and answer provenance on invented engine results.
#include <gtest/gtest.h>

#include <algorithm>

#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"
#include "workers/query/answer_provenance.hpp"
#include "workers/query/relevance.hpp"

namespace glassbox::query {
namespace {

using nlohmann::json;
namespace v = schema::vocab;

json iri(std::string_view value) { return json{{"t", "i"}, {"i", std::string(value)}}; }
json lit(std::string_view value) { return json{{"t", "l"}, {"v", std::string(value)}}; }
json triple(std::string_view s, std::string_view p, json o) {
    return json{{"s", iri(s)}, {"p", iri(p)}, {"o", std::move(o)}};
}

// A graph-rag Focus message keeping the given edges (subject, predicate, object, score, tier).
json focus(
    const std::vector<std::tuple<std::string, std::string, std::string, double, int>>& edges) {
    json triples = json::array();
    for (std::size_t i = 0; i < edges.size(); ++i) {
        const auto& [s, p, o, score, tier] = edges[i];
        const std::string uri =
            "urn:glassbox:00000000-0000-4000-8000-000000000001:focus:edge:" + std::to_string(i);
        triples.push_back(triple(uri, v::kRdfType, iri(v::kEdgeSelection)));
        triples.push_back(triple(uri, v::kRdfSubject, iri("http://x/e/" + s)));
        triples.push_back(triple(uri, v::kRdfPredicate, iri("http://x/r/" + p)));
        triples.push_back(triple(uri, v::kRdfObject, iri("http://x/e/" + o)));
        triples.push_back(triple(uri, v::kScore, lit(std::to_string(score))));
        triples.push_back(triple(uri, v::kDataTier, lit(std::to_string(tier))));
        triples.push_back(
            triple(uri, v::kSourceDocument, iri("file:///kb-" + std::to_string(tier) + ".nt")));
    }
    return json{{"message_type", "explain"}, {"explain_triples", triples}};
}

TEST(Evidence, ReadsKeptEdgesInOrderWithScoresSourcesAndTiers) {
    const auto evidence = read_evidence({focus({{"Cruz_Azul_FC", "is_in_country", "Mexico", 0.9, 1},
                                                {"Mexico", "capital", "Mexico_City", 0.4, 3}})},
                                        json{{"response", "Mexico."}, {"answer", "Mexico"}});
    ASSERT_EQ(evidence.kept.size(), 2u);
    EXPECT_EQ(evidence.kept[0].text, "Cruz Azul FC is in country Mexico");
    EXPECT_DOUBLE_EQ(evidence.kept[0].score, 0.9);
    EXPECT_EQ(evidence.kept[0].tier, 1);
    EXPECT_EQ(evidence.kept[1].source, "file:///kb-3.nt");
    ASSERT_TRUE(evidence.short_answer);
    EXPECT_EQ(*evidence.short_answer, "Mexico");
}

// A document-rag trace in the dictionary form (docs/protocol.md §8.1): an Exploration that
// retrieved two chunks (with sources and tiers) among candidates that are no selection (scores,
// sources and labels of their own), and a Focus that re-ranked them, deriving each from one.
std::vector<json> reranked_trace() {
    const std::string run = "urn:glassbox:00000000-0000-4000-8000-000000000002";
    json terms = json::array();
    json triples = json::array();
    const auto term = [&](json t) {
        terms.push_back(std::move(t));
        return terms.size() - 1;
    };
    const auto add = [&](const std::string& s, std::string_view p, json o) {
        triples.push_back(json::array({term(iri(s)), term(iri(p)), term(std::move(o))}));
    };
    for (int i = 0; i < 2; ++i) {
        const std::string chunk = run + ":exploration:chunk:" + std::to_string(i);
        add(chunk, v::kRdfType, iri(v::kChunkSelection));
        add(chunk, v::kScore, lit(i == 0 ? "0.3" : "0.7"));
        add(chunk, v::kSourceChunk, iri("urn:doc:d" + std::to_string(i) + "#c0"));
        add(chunk, v::kDataTier, lit(i == 0 ? "2" : "4"));
        add(chunk, "http://www.w3.org/2000/01/rdf-schema#label", lit("chunk " + std::to_string(i)));
    }
    const std::string candidate = run + ":exploration:candidate:0";
    add(candidate, v::kScore, lit("0.99"));
    add(candidate, v::kSourceChunk, iri("urn:doc:noise#c9"));
    json exploration{
        {"message_type", "explain"}, {"explain_terms", terms}, {"explain_triples", triples}};
    terms = json::array();
    triples = json::array();
    // Re-ranked: the second retrieved chunk first; neither names its own source or tier.
    for (int i = 0; i < 2; ++i) {
        const std::string chunk = run + ":focus:chunk:" + std::to_string(i);
        add(chunk, v::kRdfType, iri(v::kChunkSelection));
        add(chunk, v::kScore, lit(i == 0 ? "0.8" : "0.1"));
        add(chunk, v::kProvWasDerivedFrom,
            iri(run + ":exploration:chunk:" + std::to_string(1 - i)));
    }
    json focus{{"message_type", "explain"}, {"explain_terms", terms}, {"explain_triples", triples}};
    return {exploration, focus};
}

TEST(Evidence, ReRankedChunksTakeTheSourceAndTierOfTheChunkTheyCameFrom) {
    const auto evidence = read_evidence(reranked_trace(), json{{"answer", "d1"}});
    ASSERT_EQ(evidence.kept.size(), 2u);  // the Focus chunks, not the Exploration's too
    EXPECT_NE(evidence.kept[0].selection.find(":focus:chunk:0"), std::string::npos);
    EXPECT_DOUBLE_EQ(evidence.kept[0].score, 0.8);
    EXPECT_EQ(evidence.kept[0].source, "urn:doc:d1#c0");
    EXPECT_EQ(evidence.kept[0].tier, 4);
    EXPECT_DOUBLE_EQ(evidence.kept[1].score, 0.1);
    EXPECT_EQ(evidence.kept[1].source, "urn:doc:d0#c0");
    EXPECT_EQ(evidence.kept[1].tier, 2);
    // Without the Focus, the retrieved chunks are the evidence, in their order; the candidate
    // that is no selection is not.
    const auto retrieved = read_evidence({reranked_trace().front()}, json::object());
    ASSERT_EQ(retrieved.kept.size(), 2u);
    EXPECT_DOUBLE_EQ(retrieved.kept[0].score, 0.3);
    EXPECT_EQ(retrieved.kept[1].source, "urn:doc:d1#c0");
}

TEST(Reflection, CoveredDecidedEvidenceScoresHighAndWeakEvidenceLow) {
    const std::string q = "which country is the soccer team Cruz_Azul_FC based in ?";
    const auto good =
        reflect(q, read_evidence({focus({{"Cruz_Azul_FC", "is_in_country", "Mexico", 0.9, 1},
                                         {"Cruz_Azul_FC", "plays_in", "Liga_MX", 0.3, 1}})},
                                 json{{"answer", "Mexico"}}));
    EXPECT_FALSE(good.empty);
    EXPECT_DOUBLE_EQ(good.entity_coverage, 1.0);
    EXPECT_DOUBLE_EQ(good.decided, 1.0);
    EXPECT_GT(good.gap, 0.5);
    EXPECT_GT(good.score, 0.6);

    // Unrelated edges, and the synthesis could not decide.
    const auto weak = reflect(q, read_evidence({focus({{"Al_Jazira", "founded", "1974", 0.2, 3},
                                                       {"Dubai", "capital_of", "UAE", 0.19, 3}})},
                                               json{{"answer", ""}}));
    EXPECT_DOUBLE_EQ(weak.entity_coverage, 0.0);
    EXPECT_DOUBLE_EQ(weak.decided, 0.0);
    EXPECT_LT(weak.score, 0.3);
    EXPECT_LT(weak.score, good.score);
    EXPECT_NE(weak.reason.find("undecided"), std::string::npos) << weak.reason;
}

TEST(Reflection, AnEmptyResultScoresZeroAndSaysSo) {
    const auto r =
        reflect("who wrote it?", read_evidence({}, json{{"response", "I do not know."}}));
    EXPECT_TRUE(r.empty);
    EXPECT_DOUBLE_EQ(r.score, 0.0);
    EXPECT_NE(r.reason.find("empty"), std::string::npos);
    const auto failed =
        failed_relevance(base::make_error(base::ErrorType::kNotFound, "no collection"));
    EXPECT_DOUBLE_EQ(failed.score, 0.0);
    EXPECT_EQ(failed.reason, "NotFound: no collection");
}

TEST(Reflection, CitedChunkTextCountsAsEvidence) {
    const json final{
        {"answer", "a spirit"},
        {"citations",
         json::array({json{{"title", "Lilu (mythology)"},
                           {"text", "A lilu is a masculine Akkadian word for a spirit."},
                           {"chunk", "urn:doc:lilu#c0"},
                           {"tier", 2}}})}};
    const auto r = reflect("If Gallu is a demon, Lilu is what?", read_evidence({}, final));
    EXPECT_FALSE(r.empty);
    EXPECT_DOUBLE_EQ(r.entity_coverage, 0.5);  // Lilu yes, Gallu no
    EXPECT_GT(r.score, 0.4);
}

TEST(Reflection, AnAgentAnswerRestsOnTheSourcesItNames) {
    // The agent's lookups cite nothing; its FINAL names the entities it went through.
    const json final{
        {"answer", "franz liszt"},
        {"response", "Following parent → child → parent from cosima wagner leads to franz liszt."},
        {"sources",
         json::array({"http://example.org/e/cosima_wagner", "http://example.org/e/franz_liszt"})}};
    const auto r = reflect("what is the father of cosima_wagner 's mom 's offspring ?",
                           read_evidence({}, final));
    EXPECT_FALSE(r.empty);
    EXPECT_GT(r.score, 0.4);
    // Without a short answer the same sources are no evidence: undecided stays empty.
    json undecided = final;
    undecided["answer"] = "";
    EXPECT_TRUE(reflect("what is the father of cosima_wagner 's mom 's offspring ?",
                        read_evidence({}, undecided))
                    .empty);
}

EngineRun run_of(std::string engine, json final, std::vector<json> explain = {}) {
    EngineRun run;
    run.engine = std::move(engine);
    run.final = std::move(final);
    run.evidence = read_evidence(explain, run.final);
    return run;
}

TEST(Provenance, TheWeakestTierAndTheChainOfTheWinner) {
    RouteDecision route;
    route.method = "rules";
    std::vector<EngineRun> runs;
    runs.push_back(run_of("graph-rag", json{{"model", "extractive"}},
                          {focus({{"A", "r", "B", 0.9, 1}, {"B", "r", "C", 0.5, 3}})}));
    const auto p = answer_provenance(route, runs, 0);
    EXPECT_EQ(p.engine, "graph-rag");
    EXPECT_EQ(p.derivation_chain,
              "route:rules > graph-rag:traversal > llm:extractive > reflection:kept");
    ASSERT_EQ(p.sources.size(), 2u);
    EXPECT_EQ(p.aggregate_tier, 3);
    EXPECT_FALSE(p.sources[0].fusion_score) << "one engine: no fusion";
    const json j = provenance_json(p);
    EXPECT_EQ(j["derivation"].size(), 4u);
    EXPECT_EQ(j["aggregate_tier"], 3);
}

// Issue 35: a cited source's freshness, as the engine's citation gave it, is in the provenance
// (its FINAL entry and the Conclusion's gb:AnswerSource).
TEST(Provenance, ACitedSourcesFreshnessIsCarried) {
    RouteDecision route;
    route.method = "rules";
    std::vector<EngineRun> runs;
    runs.push_back(run_of(
        "graph-rag",
        json{{"citations",
              json::array({json{{"n", 1},
                                {"document", "file:///old.ttl"},
                                {"chunk", ""},
                                {"tier", 1},
                                {"loaded_at", "2026-11-29T10:00:00Z"},
                                {"date", "2020-01-01"},
                                {"max_age", "1d"},
                                {"stale", true}},
                           json{{"n", 2}, {"document", "file:///new.ttl"}, {"tier", 2}}})}}));
    const auto p = answer_provenance(route, runs, 0);
    ASSERT_EQ(p.sources.size(), 2u);
    EXPECT_EQ(p.sources[0].date, "2020-01-01");
    EXPECT_EQ(p.sources[0].stale, std::optional<bool>(true));
    EXPECT_FALSE(p.sources[1].stale.has_value()) << "its citation said nothing";
    const json j = provenance_json(p);
    EXPECT_EQ(j["sources"][0].value("loaded_at", ""), "2026-11-29T10:00:00Z");
    EXPECT_EQ(j["sources"][0].value("stale", false), true);
    EXPECT_FALSE(j["sources"][1].contains("stale"));
    const auto ts = schema::explain::routed_conclusion(
        schema::explain::RunUris::from_uuid("11111111-2222-4333-8444-555555555555").value(), {},
        schema::explain::StoredText{"x", std::nullopt}, p);
    const auto stale = std::count_if(ts.begin(), ts.end(), [](const schema::Triple& t) {
        return t.p == schema::iri(schema::vocab::kStale) &&
               t.o == schema::typed_literal("true", schema::kXsdBoolean);
    });
    EXPECT_EQ(stale, 1);
}

TEST(Provenance, UnknownTiersCountAsTheWeakestAndSeveralEnginesAreFused) {
    RouteDecision route;
    route.method = "classifier";
    std::vector<EngineRun> runs;
    runs.push_back(
        run_of("document-rag",
               json{{"citations", json::array({json{{"chunk", "urn:doc:a#c0"}, {"tier", 1}},
                                               json{{"chunk", "urn:doc:b#c0"}, {"tier", 2}}})}}));
    runs.push_back(
        run_of("graph-rag", json{{"sources", json::array({"urn:doc:b#c0", "file:///x.nt"})}}));
    const auto p = answer_provenance(route, runs, 1);
    EXPECT_EQ(p.derivation_chain,
              "route:classifier > escalation > graph-rag:traversal > reflection:best-of-2");
    ASSERT_EQ(p.sources.size(), 2u);
    EXPECT_EQ(p.aggregate_tier, 4) << "sources of unknown tier count as tier 4";
    ASSERT_TRUE(p.sources[0].fusion_score);
    ASSERT_TRUE(p.sources[1].fusion_score);
    // urn:doc:b#c0 was found by both engines: it outranks what only one found.
    EXPECT_GT(*p.sources[0].fusion_score, *p.sources[1].fusion_score);
}

}  // namespace
}  // namespace glassbox::query
