// The SPARQL mirror's queue in the trace store and the mirror thread (issue 36, docs/traces.md
// "Mirror to a SPARQL engine"), on both backends, against a recording engine.
#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "schema/nquads.hpp"
#include "schema/services.hpp"
#include "schema/trace_rdf.hpp"
#include "schema/vocabulary.hpp"
#include "storage/sqlite_database.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "tests/support/wait_until.hpp"
#include "workers/trace_collector/sparql_mirror.hpp"
#include "workers/trace_collector/trace_service.hpp"

namespace glassbox::trace::testing {
namespace {

using base::ErrorType;
using nlohmann::json;
namespace v = schema::vocab;

constexpr std::int64_t kT0 = 1'790'000'000'000;

const schema::Triple kDesigned = schema::make_triple(
    schema::iri("urn:e:greyhollow"), schema::iri("urn:p:designedBy"), schema::iri("urn:e:ada"));

// A graph-RAG-shaped run that selected kDesigned from `source` (so a change removing it affects
// the run), answering `answer`.
std::vector<schema::ExplainMessage> graph_run(const FakeRun& run, const std::string& answer) {
    schema::ExplainMessage focus;
    focus.session = run.session();
    focus.seq = 1;
    focus.service = run.service;
    focus.worker = run.service + "-test/0";
    focus.explain_id = run.uris.focus();
    explain::StepInfo info;
    info.generated_at = at(run.started_ms + 1);
    explain::SelectedEdge edge;
    edge.edge = kDesigned;
    edge.score = 0.9;
    edge.source = explain::SourceRef{};
    edge.source->document = "file:///data/orrin.ttl";
    focus.explain_triples = explain::graph_focus(run.uris, info, {edge});
    auto end = run.end(schema::TraceStatus::kComplete, answer);
    end.seq = 2;
    return {run.open(), focus, end};
}

// A knowledge change (a complete `store` run) removing kDesigned.
schema::ExplainMessage change_run(const FakeRun& run) {
    const std::string q = run.session();
    const std::string g(v::kRetrievalGraph);
    schema::ExplainMessage m;
    const auto add = [&](const std::string& s, std::string_view p, schema::Term o) {
        m.explain_triples.push_back(
            schema::make_triple(schema::iri(s), schema::iri(p), std::move(o), g));
    };
    add(q, v::kRdfType, schema::iri(v::kProvActivity));
    add(q, v::kRdfType, schema::iri(v::kKnowledgeChange));
    add(q, v::kQuery, schema::literal("replace file:///data/orrin.ttl"));
    add(q, v::kChangeKind, schema::literal("replace"));
    add(q, v::kProvStartedAtTime, explain::datetime_literal(at(run.started_ms)));
    add(q, v::kProvUsed, schema::iri("file:///data/orrin.ttl"));
    const std::string r = run.uris.removed_fact(0);
    add(q, v::kRemovedFact, schema::iri(r));
    add(r, v::kRdfType, schema::iri(v::kRdfStatement));
    add(r, v::kRdfSubject, kDesigned.s);
    add(r, v::kRdfPredicate, kDesigned.p);
    add(r, v::kRdfObject, kDesigned.o);
    const auto tail =
        explain::trace_end(run.uris, at(run.started_ms + 5), schema::TraceStatus::kComplete);
    m.explain_triples.insert(m.explain_triples.end(), tail.begin(), tail.end());
    m.session = q;
    m.seq = 0;
    m.service = std::string(schema::services::kStore);
    m.worker = "store-test/0";
    m.explain_id = q;
    m.end_of_trace = true;
    m.trace_status = schema::TraceStatus::kComplete;
    return m;
}

// An engine that keeps the graphs PUT to it, or fails every write while `down` (or refuses the
// graphs in `refused`).
struct RecordingEngine {
    std::mutex mutex;
    std::map<std::string, std::string> graphs;
    std::vector<std::string> writes;
    bool down = false;
    std::set<std::string> refused;

    GraphPut put() {
        return [this](std::string_view graph, std::string_view ntriples) -> base::Result<void> {
            std::lock_guard lock(mutex);
            if (down) return base::make_error(ErrorType::kServiceUnavailable, "engine down");
            if (refused.count(std::string(graph)) != 0)
                return base::make_error(ErrorType::kInvalidRequest, "refused");
            graphs[std::string(graph)] = std::string(ntriples);
            writes.emplace_back(graph);
            return {};
        };
    }
    std::size_t count() {
        std::lock_guard lock(mutex);
        return graphs.size();
    }
};

// The lines of `text`, as a set.
std::set<std::string> lines_of(const std::string& text) {
    std::set<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) out.insert(line);
    }
    return out;
}

class MirrorTest : public StoreTest {
protected:
    void SetUp() override {
        config_.mirror_sparql = true;
        StoreTest::SetUp();
    }
    void store_all(const std::vector<schema::ExplainMessage>& messages, std::int64_t at_ms) {
        EXPECT_EQ(store(messages, at_ms).stored, messages.size());
    }
    std::vector<MirrorItem> pending() {
        auto items = store_->mirror_pending(100);
        EXPECT_TRUE(items.ok()) << items.error().describe();
        return items.ok() ? *items : std::vector<MirrorItem>{};
    }
    std::vector<std::string> pending_sessions() {
        std::vector<std::string> out;
        for (const auto& item : pending()) out.push_back(item.session);
        return out;
    }
    std::unique_ptr<SparqlMirror> mirror(RecordingEngine& engine,
                                         const std::shared_ptr<MirrorCounters>& counters,
                                         std::int64_t batch = 32) {
        MirrorConfig config;
        config.interval = std::chrono::milliseconds{10};
        config.batch = batch;
        return std::make_unique<SparqlMirror>(reopen(OpenMode::kReadWrite), engine.put(), config,
                                              counters);
    }
};

TEST_P(MirrorTest, AnEndedTopLevelRunIsQueuedInTheTransactionThatEndsItARunningOneIsNot) {
    const auto a = FakeRun::make("echo", "first", kT0);
    const auto b = FakeRun::make("echo", "second", kT0 + 1);
    store_all({a.open(), b.open()}, kT0 + 10);
    EXPECT_TRUE(pending().empty());
    store_all({a.end()}, kT0 + 20);
    const auto items = pending();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].session, a.session());
    EXPECT_EQ(items[0].due, kT0 + 20);
    auto backlog = store_->mirror_backlog();
    ASSERT_TRUE(backlog.ok()) << backlog.error().describe();
    EXPECT_EQ(backlog->pending, 1);
    EXPECT_EQ(backlog->oldest_due, kT0 + 20);
    store_all({b.end(schema::TraceStatus::kError)}, kT0 + 30);
    EXPECT_EQ(pending_sessions(), (std::vector<std::string>{a.session(), b.session()}));
}

TEST_P(MirrorTest, AStoreWithoutTheMirrorQueuesNothing) {
    StoreConfig off = config_;
    off.mirror_sparql = false;
    auto plain = site_->open(OpenMode::kReadWrite, off);
    ASSERT_TRUE(plain.ok()) << plain.error().describe();
    const auto a = FakeRun::make("echo", "unmirrored", kT0);
    ASSERT_TRUE(
        (*plain)
            ->store_batch({delivery_of(a.open(), 1001), delivery_of(a.end(), 1002)}, at(kT0 + 10))
            .ok());
    EXPECT_TRUE(pending().empty());
    // `traces mirror --all` queues what was stored meanwhile (ended top-level runs only).
    const auto running = FakeRun::make("echo", "running", kT0 + 1);
    store_all({running.open()}, kT0 + 20);
    auto queued = store_->mirror_all(at(kT0 + 30));
    ASSERT_TRUE(queued.ok()) << queued.error().describe();
    EXPECT_EQ(*queued, 1);
    EXPECT_EQ(pending_sessions(), std::vector<std::string>{a.session()});
}

TEST_P(MirrorTest, ASubRunEndingQueuesItsTopLevelRunOnlyOnceThatHasEnded) {
    const auto agent = FakeRun::make("agent", "Tell me about Greyhollow", kT0);
    const auto sub = FakeRun::make("echo", "Greyhollow designer", kT0 + 1, agent.session());
    const auto late = FakeRun::make("echo", "a late sub-run", kT0 + 2, agent.session());
    store_all({agent.open(), sub.open(), late.open()}, kT0 + 10);
    store_all({sub.end()}, kT0 + 20);
    EXPECT_TRUE(pending().empty()) << "the top-level run is still running";
    store_all({agent.end()}, kT0 + 30);
    auto items = pending();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].session, agent.session());
    EXPECT_EQ(items[0].due, kT0 + 30);
    // Mirrored, then a sub-run ends after its caller: the caller's graph is queued again.
    auto done = store_->mirror_done(items[0]);
    ASSERT_TRUE(done.ok()) << done.error().describe();
    EXPECT_TRUE(*done);
    EXPECT_TRUE(pending().empty());
    store_all({late.end()}, kT0 + 40);
    items = pending();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].session, agent.session());
    EXPECT_EQ(items[0].due, kT0 + 40);
}

TEST_P(MirrorTest, AnInvalidationQueuesTheAffectedRunAgain) {
    const auto used = FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0);
    store_all(graph_run(used, "Ada Brandt"), kT0 + 50);
    auto items = pending();
    ASSERT_EQ(items.size(), 1u);
    ASSERT_TRUE(store_->mirror_done(items[0]).ok());
    const auto change = FakeRun::make("store", "replace", kT0 + 1000);
    store_all({change_run(change)}, kT0 + 1010);
    // The change run (a top-level run that ended) and the run it affected.
    EXPECT_EQ(pending_sessions(), (std::vector<std::string>{used.session(), change.session()}));
    auto graph = store_->mirror_ntriples(used.session());
    ASSERT_TRUE(graph.ok()) << graph.error().describe();
    EXPECT_NE(graph->find(std::string("<").append(v::kProvWasInvalidatedBy).append("> <") +
                          change.session() + ">"),
              std::string::npos)
        << *graph;
}

TEST_P(MirrorTest, TheGraphIsTheNquadsExportOfTheRunTreeWithoutGraphsAndExactLiterals) {
    const auto agent = FakeRun::make("agent", "Tell me about Greyhollow", kT0);
    const auto sub = FakeRun::make("graph-rag", "Greyhollow designer", kT0 + 1, agent.session());
    const auto other = FakeRun::make("echo", "another question", kT0 + 2);
    // Longer than the store's text threshold, with what N-Triples escapes.
    std::string answer = "Ada \"Brandt\"\n\tdesigned it \\ ";
    while (answer.size() < 3 * config_.text_threshold) answer.append("and kept it lit. ");
    store_all({agent.open(), other.open(), other.end()}, kT0 + 10);
    auto sub_messages = graph_run(sub, "the sub-run's answer");
    store_all(sub_messages, kT0 + 20);
    store_all({agent.end(schema::TraceStatus::kComplete, answer)}, kT0 + 30);
    store_all({change_run(FakeRun::make("store", "replace", kT0 + 100))}, kT0 + 110);

    auto graph = store_->mirror_ntriples(agent.session());
    ASSERT_TRUE(graph.ok()) << graph.error().describe();
    auto shown = store_->show(agent.session());
    ASSERT_TRUE(shown.ok()) << shown.error().describe();
    auto trace = schema::decode<schema::TraceDetail>(*shown);
    ASSERT_TRUE(trace.ok()) << trace.error().describe();
    // What `traces show --format nquads` prints, each quad's graph dropped.
    std::set<std::string> expected;
    bool invalidation = false;
    for (const auto& quad :
         lines_of(schema::rdf::render_nquads(schema::rdf::shown_triples(*trace)))) {
        auto parsed = schema::parse_nquads_line(quad, 1);
        ASSERT_TRUE(parsed.ok() && *parsed) << quad;
        invalidation = invalidation || (*parsed)->graph == schema::rdf::kInvalidationGraph;
        schema::Triple triple = **parsed;
        triple.graph.reset();
        expected.insert(schema::to_ntriples(triple));
    }
    EXPECT_TRUE(invalidation) << "the sub-run's fact was removed: the run is affected";
    const auto got = lines_of(*graph);
    EXPECT_EQ(got, expected);
    EXPECT_EQ(std::count(graph->begin(), graph->end(), '\n'), static_cast<long>(expected.size()))
        << "each triple once";
    // The sub-run's triples are in, the other run's are not, the long answer is whole.
    const auto has = [&](const std::string& part) {
        return graph->find(part) != std::string::npos;
    };
    EXPECT_TRUE(has("<" + sub.session() + ">"));
    EXPECT_FALSE(has("<" + other.session() + ">"));
    EXPECT_TRUE(has(schema::to_ntriples(schema::literal(answer))));
    for (const auto& line : got) {
        auto parsed = schema::parse_nquads_line(line, 1);
        ASSERT_TRUE(parsed.ok() && *parsed) << line;
        EXPECT_FALSE((*parsed)->graph.has_value()) << line;
    }
}

TEST_P(MirrorTest, TakingARunOffTheQueueKeepsItWhenItWasQueuedAgainMeanwhile) {
    const auto a = FakeRun::make("echo", "first", kT0);
    store_all({a.open(), a.end()}, kT0 + 10);
    const auto read = pending();
    ASSERT_EQ(read.size(), 1u);
    // Queued again (at a time not after the first: the due still moves on).
    ASSERT_TRUE(store_->mirror_all(at(kT0 + 5)).ok());
    const auto again = pending();
    ASSERT_EQ(again.size(), 1u);
    EXPECT_GT(again[0].due, read[0].due);
    auto stale = store_->mirror_done(read[0]);
    ASSERT_TRUE(stale.ok()) << stale.error().describe();
    EXPECT_FALSE(*stale);
    EXPECT_EQ(pending().size(), 1u);
    auto fresh = store_->mirror_done(again[0]);
    ASSERT_TRUE(fresh.ok()) << fresh.error().describe();
    EXPECT_TRUE(*fresh);
    EXPECT_TRUE(pending().empty());
}

TEST_P(MirrorTest, PruneTakesItsTracesOffTheQueue) {
    const auto a = FakeRun::make("echo", "old", kT0);
    const auto b = FakeRun::make("echo", "new", kT0 + 10'000);
    store_all({a.open(), a.end()}, kT0 + 10);
    store_all({b.open(), b.end()}, kT0 + 10'010);
    PruneRequest prune;
    prune.older_than = std::chrono::milliseconds(5'000);
    prune.now = at(kT0 + 10'020);
    auto pruned = store_->prune(prune);
    ASSERT_TRUE(pruned.ok()) << pruned.error().describe();
    EXPECT_EQ(pruned->traces, 1);
    EXPECT_EQ(pending_sessions(), std::vector<std::string>{b.session()});
}

TEST_P(MirrorTest, TheMirrorWritesEachQueuedRunAndKeepsTheQueueWhileTheEngineIsDown) {
    RecordingEngine engine;
    auto counters = std::make_shared<MirrorCounters>(true);
    auto worker = mirror(engine, counters);
    const auto a = FakeRun::make("echo", "first", kT0);
    const auto b = FakeRun::make("echo", "second", kT0 + 1);
    store_all({a.open(), a.end(), b.open(), b.end()}, kT0 + 10);
    engine.down = true;
    auto failed = worker->mirror_once();
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.error().type, ErrorType::kServiceUnavailable);
    EXPECT_EQ(pending().size(), 2u);
    auto stats = counters->snapshot(*store_->mirror_backlog(), kT0 + 1010);
    EXPECT_TRUE(stats.configured);
    EXPECT_EQ(stats.pending, 2);
    EXPECT_EQ(stats.mirrored, 0u);
    EXPECT_EQ(stats.failures, 1u);
    EXPECT_NE(stats.last_error.find("engine down"), std::string::npos) << stats.last_error;
    EXPECT_EQ(stats.watermark, kT0 + 10);
    EXPECT_EQ(stats.oldest_pending_ms, 1000);

    engine.down = false;
    auto mirrored = worker->mirror_once();
    ASSERT_TRUE(mirrored.ok()) << mirrored.error().describe();
    EXPECT_EQ(*mirrored, 2u);
    EXPECT_TRUE(pending().empty());
    EXPECT_EQ(engine.graphs[a.session()], *store_->mirror_ntriples(a.session()));
    EXPECT_EQ(engine.graphs.count(b.session()), 1u);
    stats = counters->snapshot(*store_->mirror_backlog(), kT0 + 2000);
    EXPECT_EQ(stats.pending, 0);
    EXPECT_EQ(stats.mirrored, 2u);
    EXPECT_EQ(stats.watermark, kT0 + 2000);
    EXPECT_EQ(stats.oldest_pending_ms, 0);
}

TEST_P(MirrorTest, AGraphTheEngineRefusesWaitsBehindTheOthers) {
    RecordingEngine engine;
    auto counters = std::make_shared<MirrorCounters>(true);
    auto worker = mirror(engine, counters);
    const auto a = FakeRun::make("echo", "refused", kT0);
    const auto b = FakeRun::make("echo", "taken", kT0 + 1);
    store_all({a.open(), a.end()}, kT0 + 10);
    store_all({b.open(), b.end()}, kT0 + 20);
    engine.refused.insert(a.session());
    auto mirrored = worker->mirror_once();
    ASSERT_TRUE(mirrored.ok()) << mirrored.error().describe();
    EXPECT_EQ(*mirrored, 1u);
    EXPECT_EQ(engine.writes, std::vector<std::string>{b.session()});
    const auto items = pending();
    ASSERT_EQ(items.size(), 1u);
    EXPECT_EQ(items[0].session, a.session());
    EXPECT_GT(items[0].due, kT0 + 20) << "behind what was queued before it failed";
    EXPECT_EQ(counters->snapshot(MirrorBacklog{}, 0).failures, 1u);
}

TEST_P(MirrorTest, TheThreadCatchesUpWhenTheEngineComesBack) {
    RecordingEngine engine;
    engine.down = true;
    auto counters = std::make_shared<MirrorCounters>(true);
    auto worker = mirror(engine, counters, 2);
    worker->start();
    std::vector<FakeRun> runs;
    for (int i = 0; i < 5; ++i) {
        runs.push_back(FakeRun::make("echo", "question " + std::to_string(i), kT0 + i));
        store_all({runs.back().open(), runs.back().end()}, kT0 + 10 + i);
    }
    ASSERT_TRUE(test_support::wait_until(
        [&] { return counters->snapshot(MirrorBacklog{}, 0).failures >= 2; }));
    EXPECT_EQ(pending().size(), 5u);
    {
        std::lock_guard lock(engine.mutex);
        engine.down = false;
    }
    ASSERT_TRUE(test_support::wait_until([&] { return engine.count() == 5 && pending().empty(); }));
    worker->stop();
    EXPECT_EQ(counters->snapshot(MirrorBacklog{}, 0).mirrored, 5u);
}

TEST_P(MirrorTest, StatsReportTheMirror) {
    const auto a = FakeRun::make("echo", "first", kT0);
    store_all({a.open(), a.end()}, kT0 + 10);
    const MirrorCounters counters(true);
    auto reply = answer_trace_request(
        *store_, json{{"op", "stats"}}, [](const json&) { return true; }, {}, nullptr, &counters);
    ASSERT_TRUE(reply.ok()) << reply.error().describe();
    ASSERT_TRUE(reply->contains("sparql_mirror")) << reply->dump();
    const json& m = (*reply)["sparql_mirror"];
    EXPECT_EQ(m["configured"], true);
    EXPECT_EQ(m["pending"], 1);
    EXPECT_EQ(m["watermark"], kT0 + 10);
    EXPECT_GT(m["oldest_pending_ms"].get<std::int64_t>(), 0);
    auto decoded = schema::decode<schema::TraceStats>(*reply);
    ASSERT_TRUE(decoded.ok()) << decoded.error().describe();
    ASSERT_TRUE(decoded->sparql_mirror.has_value());
    EXPECT_EQ(decoded->sparql_mirror->pending, 1);
    // No mirror in the process: no such member.
    auto plain =
        answer_trace_request(*store_, json{{"op", "stats"}}, [](const json&) { return true; });
    ASSERT_TRUE(plain.ok());
    EXPECT_FALSE(plain->contains("sparql_mirror"));
}

TEST_P(MirrorTest, TheMirrorOpQueuesEveryEndedTopLevelRun) {
    const auto a = FakeRun::make("echo", "ended", kT0);
    const auto b = FakeRun::make("echo", "running", kT0 + 1);
    store_all({a.open(), a.end(), b.open()}, kT0 + 10);
    ASSERT_TRUE(store_->mirror_done(pending().at(0)).ok());
    const json request{{"op", "mirror"}, {"all", true}};
    EXPECT_TRUE(is_write_request(request));
    auto reply = answer_trace_request(*store_, request, [](const json&) { return true; });
    ASSERT_TRUE(reply.ok()) << reply.error().describe();
    EXPECT_EQ(*reply, (json{{"queued", 1}}));
    EXPECT_EQ(pending_sessions(), std::vector<std::string>{a.session()});
    auto refused =
        answer_trace_request(*store_, json{{"op", "mirror"}}, [](const json&) { return true; });
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().type, ErrorType::kInvalidRequest);
}

TEST_P(MirrorTest, AVersion8StoreIsMigratedOnOpen) {
    store_.reset();
    const std::string downgrade_sql =
        "DROP TABLE sparql_pending; UPDATE meta SET value = '8' WHERE key = 'schema'";
    downgrade(downgrade_sql);
    auto read_only = site_->open(OpenMode::kReadOnly, config_);
    ASSERT_FALSE(read_only.ok()) << "a reader does not migrate";
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(store_);
    const auto a = FakeRun::make("echo", "after the upgrade", kT0);
    store_all({a.open(), a.end()}, kT0 + 10);
    EXPECT_EQ(pending_sessions(), std::vector<std::string>{a.session()});
}

GLASSBOX_TRACE_BACKENDS(MirrorTest);

}  // namespace
}  // namespace glassbox::trace::testing
