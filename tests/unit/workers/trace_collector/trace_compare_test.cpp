// The `trace` service's `compare` op on a store holding two graph-RAG shaped runs (the explain
// builders' Question, Focus and Synthesis): answers, confidence, sources and facts added and
// removed, the revision link, typed errors.
#include <gtest/gtest.h>

#include "schema/messages_trace.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "workers/trace_collector/trace_compare.hpp"
#include "workers/trace_collector/trace_service.hpp"

namespace glassbox::trace::testing {
namespace {

using base::ErrorType;
using nlohmann::json;

constexpr std::int64_t kT0 = 1'790'000'000'000;
constexpr std::string_view kKg = "https://glassbox.dev/sample/orrin/";
const std::string kOldFile = "file:///kb/orrin.ttl";
const std::string kNewFile = "file:///kb/orrin-2.ttl";

schema::Triple fact(std::string_view s, std::string_view p, std::string_view o) {
    return schema::make_triple(schema::iri(std::string(kKg) + std::string(s)),
                               schema::iri(std::string(kKg) + std::string(p)),
                               schema::iri(std::string(kKg) + std::string(o)));
}

struct Edge {
    schema::Triple fact;
    std::string document;
};

// A graph-RAG run as the worker sends it: Question (revising `revision_of` when given), Focus
// keeping `edges` with their source files, Synthesis with its short answer and confidence.
struct GraphRun {
    explain::RunUris uris = explain::RunUris::generate();
    std::string question;
    std::vector<Edge> edges;
    std::string answer;
    std::string short_answer;
    double confidence = 0.5;
    std::string revision_of;
    std::int64_t started_ms = kT0;

    std::string session() const { return uris.question(); }

    schema::ExplainMessage message(std::uint64_t seq, std::string id,
                                   std::vector<schema::Triple> triples) const {
        schema::ExplainMessage m;
        m.session = session();
        m.seq = seq;
        m.service = "graph-rag";
        m.worker = "graph-rag-test/0";
        m.explain_id = std::move(id);
        m.explain_triples = std::move(triples);
        return m;
    }

    std::vector<schema::ExplainMessage> messages() const {
        const auto t0 = at(started_ms);
        std::vector<schema::ExplainMessage> out;
        out.push_back(
            message(0, session(),
                    explain::question(uris, question, t0, explain::worker_agent_uri("graph-rag"),
                                      std::nullopt, std::nullopt, {}, "default", revision_of)));
        std::vector<explain::SelectedEdge> selected;
        for (const auto& e : edges) {
            explain::SelectedEdge s;
            s.edge = e.fact;
            s.score = 0.5;
            s.data_tier = 1;
            s.source = explain::SourceRef{"", e.document, std::nullopt, std::nullopt};
            selected.push_back(s);
        }
        explain::StepInfo focus_step{t0, std::nullopt, milliseconds{3}};
        focus_step.model = "extractive";
        out.push_back(message(1, uris.focus(), explain::graph_focus(uris, focus_step, selected)));
        explain::StepInfo step{t0, uris.focus(), milliseconds{4}};
        step.model = "writer-model";
        explain::AnswerConfidence conf;
        conf.probability = confidence;
        conf.calibrator = "test-v1";
        auto synthesis = explain::synthesis(uris, step, explain::StoredText{answer, std::nullopt},
                                            {}, explain::ShortAnswer{short_answer, {}}, &conf);
        const auto end =
            explain::trace_end(uris, at(started_ms + 10), schema::TraceStatus::kComplete);
        synthesis.insert(synthesis.end(), end.begin(), end.end());
        auto last = message(2, uris.synthesis(), std::move(synthesis));
        last.end_of_trace = true;
        last.trace_status = schema::TraceStatus::kComplete;
        out.push_back(std::move(last));
        return out;
    }
};

class TraceCompareTest : public StoreTest {
protected:
    base::Result<json> ask(const json& body) {
        return answer_trace_request(*store_, body, [](const json&) { return true; });
    }

    // Two runs of one question: the second revises the first after the knowledge changed (one
    // fact replaced, its file too).
    void store_two_runs() {
        original_.question = "Who founded the shipyard that built the MV Curlew?";
        original_.edges = {{fact("Curlew", "builtBy", "BrennShipyard"), kOldFile},
                           {fact("BrennShipyard", "foundedBy", "OskarBrenn"), kOldFile}};
        original_.answer = "Oskar Brenn founded Brenn and Daughters Shipyard.";
        original_.short_answer = "Oskar Brenn";
        original_.confidence = 0.9;
        replay_.question = original_.question;
        replay_.edges = {{fact("Curlew", "builtBy", "BrennShipyard"), kOldFile},
                         {fact("BrennShipyard", "foundedBy", "ElinBrenn"), kNewFile}};
        replay_.answer = "Elin Brenn founded Brenn and Daughters Shipyard.";
        replay_.short_answer = "Elin Brenn";
        replay_.confidence = 0.6;
        replay_.revision_of = original_.session();
        replay_.started_ms = kT0 + 1000;
        auto messages = original_.messages();
        for (auto& m : replay_.messages()) messages.push_back(std::move(m));
        store(messages, kT0 + 2000);
    }

    GraphRun original_;
    GraphRun replay_;
};

GLASSBOX_TRACE_BACKENDS(TraceCompareTest);

TEST_P(TraceCompareTest, ComparesAnswersConfidenceSourcesAndFacts) {
    store_two_runs();
    auto reply = ask({{"op", "compare"}, {"a", original_.session()}, {"b", replay_.uris.uuid()}});
    ASSERT_TRUE(reply.ok()) << reply.error().describe();
    auto c = schema::decode<schema::TraceComparison>(*reply);
    ASSERT_TRUE(c.ok()) << c.error().describe();

    EXPECT_EQ(c->a.session, original_.session());
    EXPECT_EQ(c->b.session, replay_.session());
    EXPECT_EQ(c->a.question, original_.question);
    EXPECT_EQ(c->a.kind, std::optional<std::string>("graph-rag"));
    EXPECT_EQ(c->a.collection, std::optional<std::string>("default"));
    EXPECT_EQ(c->a.status, "complete");
    EXPECT_EQ(c->a.answer, original_.answer);
    EXPECT_EQ(c->b.answer, replay_.answer);
    EXPECT_EQ(c->a.short_answer, std::optional<std::string>("Oskar Brenn"));
    EXPECT_EQ(c->b.short_answer, std::optional<std::string>("Elin Brenn"));
    EXPECT_TRUE(c->answer_changed);
    EXPECT_TRUE(c->short_answer_changed);
    ASSERT_TRUE(c->a.confidence && c->b.confidence);
    EXPECT_DOUBLE_EQ(*c->a.confidence, 0.9);
    EXPECT_DOUBLE_EQ(*c->b.confidence, 0.6);
    ASSERT_TRUE(c->confidence_change);
    EXPECT_NEAR(*c->confidence_change, -0.3, 1e-9);
    EXPECT_EQ(c->a.models, (std::vector<std::string>{"extractive", "writer-model"}));

    EXPECT_EQ(c->a.sources, (std::vector<std::string>{kOldFile}));
    EXPECT_EQ(c->b.sources, (std::vector<std::string>{kNewFile, kOldFile}));  // sorted
    EXPECT_EQ(c->sources_added, (std::vector<std::string>{kNewFile}));
    EXPECT_TRUE(c->sources_removed.empty());
    EXPECT_EQ(c->sources_kept, 1);

    EXPECT_EQ(c->a.facts.size(), 2u);
    ASSERT_EQ(c->facts_added.size(), 1u);
    EXPECT_EQ(c->facts_added[0], fact("BrennShipyard", "foundedBy", "ElinBrenn"));
    ASSERT_EQ(c->facts_removed.size(), 1u);
    EXPECT_EQ(c->facts_removed[0], fact("BrennShipyard", "foundedBy", "OskarBrenn"));
    EXPECT_EQ(c->facts_kept, 1);

    EXPECT_EQ(c->b.revision_of, std::optional<std::string>(original_.session()));
    EXPECT_FALSE(c->a.revision_of.has_value());
    EXPECT_TRUE(c->b_revises_a);
    // The reply is the contract's encoding (the CLI and the gateway decode it).
    EXPECT_EQ(schema::encode(*c).dump(), reply->dump());
}

TEST_P(TraceCompareTest, ARunComparedWithItselfChangesNothing) {
    store_two_runs();
    auto reply = ask({{"op", "compare"}, {"a", original_.session()}, {"b", original_.session()}});
    ASSERT_TRUE(reply.ok()) << reply.error().describe();
    auto c = schema::decode<schema::TraceComparison>(*reply);
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(c->answer_changed);
    EXPECT_FALSE(c->short_answer_changed);
    EXPECT_TRUE(c->sources_added.empty() && c->sources_removed.empty());
    EXPECT_TRUE(c->facts_added.empty() && c->facts_removed.empty());
    EXPECT_EQ(c->facts_kept, 2);
    ASSERT_TRUE(c->confidence_change);
    EXPECT_DOUBLE_EQ(*c->confidence_change, 0.0);
    EXPECT_FALSE(c->b_revises_a);
}

TEST_P(TraceCompareTest, AnUnknownRunIsNotFoundNamingItsSideAndBadInputIsInvalid) {
    store_two_runs();
    auto missing = ask({{"op", "compare"},
                        {"a", original_.session()},
                        {"b", "urn:glassbox:00000000-0000-4000-8000-000000000000:question"}});
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().type, ErrorType::kNotFound);
    EXPECT_TRUE(missing.error().message.starts_with("b: ")) << missing.error().message;
    auto first = ask({{"op", "compare"}, {"a", "ffffffff"}, {"b", original_.session()}});
    ASSERT_FALSE(first.ok());
    EXPECT_EQ(first.error().type, ErrorType::kNotFound);
    EXPECT_TRUE(first.error().message.starts_with("a: ")) << first.error().message;
    for (const json& bad : {json{{"op", "compare"}, {"a", original_.session()}},
                            json{{"op", "compare"}, {"a", ""}, {"b", original_.session()}},
                            json{{"op", "compare"}, {"a", 1}, {"b", original_.session()}},
                            json{{"op", "compare"},
                                 {"a", original_.session()},
                                 {"b", original_.session()},
                                 {"settle_ms", -1}}}) {
        auto r = ask(bad);
        ASSERT_FALSE(r.ok()) << bad.dump();
        EXPECT_EQ(r.error().type, ErrorType::kInvalidRequest) << bad.dump();
    }
}

// A run whose end never came (stored long ago: it reads as incomplete) is compared as it stands:
// no answer, no confidence, and its sources are gone.
TEST_P(TraceCompareTest, ARunWithoutItsEndIsComparedAsItStands) {
    store_two_runs();
    GraphRun running;
    running.question = "still going";
    auto messages = running.messages();
    store({messages[0]}, kT0 + 3000);
    auto reply = ask({{"op", "compare"},
                      {"a", original_.session()},
                      {"b", running.session()},
                      {"settle_ms", 50}});
    ASSERT_TRUE(reply.ok()) << reply.error().describe();
    auto c = schema::decode<schema::TraceComparison>(*reply);
    ASSERT_TRUE(c.ok());
    EXPECT_NE(c->b.status, "complete");
    EXPECT_EQ(c->b.answer, "");
    EXPECT_TRUE(c->answer_changed);
    EXPECT_FALSE(c->b.confidence.has_value());
    EXPECT_FALSE(c->confidence_change.has_value());
    EXPECT_EQ(c->sources_removed, (std::vector<std::string>{kOldFile}));
}

}  // namespace
}  // namespace glassbox::trace::testing
