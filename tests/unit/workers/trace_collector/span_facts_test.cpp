// An event's span facts (workers/trace_collector/span_facts.hpp): what SpanFactWriter keeps of a
// message's triples, the record it writes and each_span_fact reading it back.
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "schema/vocabulary.hpp"
#include "workers/trace_collector/span_facts.hpp"

namespace glassbox::trace::detail {
namespace {

namespace v = schema::vocab;

constexpr std::string_view kSession = "urn:glassbox:0b5e2c1a-0000-4000-8000-00000000000a:question";
constexpr std::string_view kStep = "urn:glassbox:0b5e2c1a-0000-4000-8000-00000000000a:exploration";
const std::string kPrefix = "urn:glassbox:0b5e2c1a-0000-4000-8000-00000000000a:";

using Fact = std::tuple<char, std::string, std::string, bool>;

std::vector<Fact> read(const std::string& record, std::string_view explain_id = kStep) {
    std::vector<Fact> out;
    const bool ok = each_span_fact(record, kSession, explain_id, [&](const SpanFactTriple& t) {
        out.emplace_back(static_cast<char>(t.fact), std::string(t.s), std::string(t.o), t.o_is_iri);
    });
    EXPECT_TRUE(ok) << record;
    return out;
}

TEST(SpanFacts, KeepsTheStepsAndTheRunsFactsAndSkipsTheRest) {
    SpanFactWriter w;
    w.begin(kSession, kStep);
    w.see(kStep, v::kRdfType, std::string(v::kGbNs) + "Exploration", true);
    w.see(kStep, v::kRdfType, "http://www.w3.org/ns/prov#Activity", true);  // not gb: skipped
    w.see(kStep, v::kDurationMs, "5", false);
    w.see(kStep, v::kModelName, "m\t1\\x\ny", false);  // escaped in the record
    w.see(kSession, v::kProvUsed, kPrefix + "analysis/0", true);
    w.see(kPrefix + "edge/0", v::kRdfType, std::string(v::kGbNs) + "ExploredEdge", true);
    w.see(kStep, "urn:p:other", "x", false);
    w.see("urn:e:a", v::kScore, "0.5", false);  // a score of nothing retrieved: skipped
    const std::string record = w.finish();
    EXPECT_EQ(record.find("ExploredEdge"), std::string::npos) << record;
    EXPECT_EQ(read(record),
              (std::vector<Fact>{
                  {'t', std::string(kStep), std::string(v::kGbNs) + "Exploration", true},
                  {'d', std::string(kStep), "5", false},
                  {'m', std::string(kStep), "m\t1\\x\ny", false},
                  {'u', std::string(kSession), kPrefix + "analysis/0", true},
              }));
}

// The embeddings call a step made (gb:embedding*), each predicate its own code; not of another
// subject.
TEST(SpanFacts, KeepsTheStepsEmbeddingsCall) {
    SpanFactWriter w;
    w.begin(kSession, kStep);
    w.see(kStep, v::kEmbeddingModel, "glassbox-hashing-v1", false);
    w.see(kStep, v::kEmbeddingInputs, "2", false);
    w.see(kStep, v::kEmbeddingDimensions, "256", false);
    w.see(kStep, v::kEmbeddingStartedAt, "2026-09-21T13:46:40.004Z", false);
    w.see(kStep, v::kEmbeddingDurationMs, "3", false);
    w.see(kPrefix + "grounding", v::kEmbeddingModel, "other", false);
    const std::string step(kStep);
    EXPECT_EQ(read(w.finish()), (std::vector<Fact>{
                                    {'E', step, "glassbox-hashing-v1", false},
                                    {'N', step, "2", false},
                                    {'D', step, "256", false},
                                    {'S', step, "2026-09-21T13:46:40.004Z", false},
                                    {'L', step, "3", false},
                                }));
    SpanFact fact{};
    ASSERT_TRUE(span_fact_of(v::kEmbeddingDurationMs, fact));
    EXPECT_EQ(fact, SpanFact::kEmbeddingDuration);
}

TEST(SpanFacts, NumberedRetrievedItemsBecomeOneLineAndKeepTheirOrder) {
    SpanFactWriter w;
    w.begin(kSession, kStep);
    std::vector<Fact> expected;
    for (int i = 0; i < 500; ++i) {
        const std::string edge = kPrefix + "edge/" + std::to_string(i);
        w.see(kStep, v::kExploredEdgeProperty, edge, true);
        w.see(edge, v::kRdfType, std::string(v::kGbNs) + "ExploredEdge", true);
        expected.emplace_back('r', std::string(kStep), edge, true);
    }
    // Then items that do not continue the run: a gap, another stem, one without a number.
    for (const std::string& item :
         {kPrefix + "edge/700", kPrefix + "chunk/1", std::string("urn:x:no-number"),
          kPrefix + "chunk/2", kPrefix + "chunk/02"}) {
        w.see(kStep, v::kRetrievedChunk, item, true);
        expected.emplace_back('r', std::string(kStep), item, true);
    }
    const std::string record = w.finish();
    EXPECT_LT(record.size(), 200u) << record;
    EXPECT_EQ(read(record), expected);
}

TEST(SpanFacts, ScoresOfRetrievedItemsAreKept) {
    SpanFactWriter w;
    w.begin(kSession, kStep);
    for (int i = 0; i < 3; ++i) {
        const std::string chunk = kPrefix + "chunk/" + std::to_string(i);
        w.see(kStep, v::kRetrievedChunk, chunk, true);
        w.see(chunk, v::kScore, std::to_string(0.5 - i * 0.125), false);
    }
    w.see(kPrefix + "chunk/1", v::kScore, "0.9", false);  // an earlier item's: still kept
    w.see(kPrefix + "chunk/9", v::kScore, "0.9", false);  // not retrieved: skipped
    const auto facts = read(w.finish());
    std::vector<Fact> scores;
    for (const auto& f : facts)
        if (std::get<0>(f) == 'c') scores.push_back(f);
    EXPECT_EQ(scores, (std::vector<Fact>{{'c', kPrefix + "chunk/0", "0.500000", false},
                                         {'c', kPrefix + "chunk/1", "0.375000", false},
                                         {'c', kPrefix + "chunk/2", "0.250000", false},
                                         {'c', kPrefix + "chunk/1", "0.9", false}}));
}

TEST(SpanFacts, AnEventWithoutFactsHasAnEmptyRecord) {
    SpanFactWriter w;
    w.begin(kSession, "");
    w.see(kPrefix + "edge/0", v::kRdfType, std::string(v::kGbNs) + "ExploredEdge", true);
    EXPECT_EQ(w.finish(), "");
    EXPECT_TRUE(read("", "").empty());
    // A writer is reused event after event.
    w.begin(kSession, kStep);
    w.see(kStep, v::kDurationMs, "1", false);
    EXPECT_EQ(read(w.finish()).size(), 1u);
}

TEST(SpanFacts, RecordsNotWrittenSoAreRefused) {
    const auto refused = [](std::string_view record) {
        return !each_span_fact(record, kSession, kStep, [](const SpanFactTriple&) {});
    };
    EXPECT_TRUE(refused("garbage"));
    EXPECT_TRUE(refused("d.\t\"5"));             // no newline
    EXPECT_TRUE(refused("z.\t\"5\n"));           // unknown code
    EXPECT_TRUE(refused("d?\t\"5\n"));           // unknown subject form
    EXPECT_TRUE(refused("d\"lit\t\"5\n"));       // a literal subject
    EXPECT_TRUE(refused("d.\t\"a\\qb\n"));       // unknown escape
    EXPECT_TRUE(refused("R.\t~edge/\t5\t2\n"));  // last before first
    EXPECT_TRUE(refused("R.\t~edge/\tx\t2\n"));
    EXPECT_TRUE(refused("R.\t~edge/\t0\t99999999999\n"));  // more than any event names
    EXPECT_TRUE(refused("d.\t\"5\textra\n"));
    EXPECT_FALSE(refused("d.\t\"5\nR.\t~edge/\t0\t2\n"));
}

}  // namespace
}  // namespace glassbox::trace::detail
