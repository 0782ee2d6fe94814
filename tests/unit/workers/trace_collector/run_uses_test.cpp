// The usage index (issue 36): what runs used, the list filters over it, and affected answers.
#include <algorithm>

#include <gtest/gtest.h>

#include "schema/explain_uris.hpp"
#include "schema/services.hpp"
#include "schema/vocabulary.hpp"
#include "storage/sqlite_database.hpp"
#include "tests/support/trace_store_suite.hpp"
#include "workers/trace_collector/run_uses.hpp"

namespace glassbox::trace::testing {
namespace {

using base::ErrorType;
using nlohmann::json;
namespace v = schema::vocab;

constexpr std::int64_t kT0 = 1'790'000'000'000;

schema::Triple fact(const std::string& s, const std::string& p, schema::Term o) {
    return schema::make_triple(schema::iri(s), schema::iri(p), std::move(o));
}

// A graph-RAG-shaped run: Question, an Exploration that only explored `explored`, a Focus that
// selected `selected` (each from `source`), a Synthesis, the end.
struct GraphRun {
    FakeRun run;
    std::vector<schema::Triple> selected;
    std::vector<schema::Triple> explored;
    std::string source = "file:///data/orrin.ttl";
    std::string model = "extractive";
    // The selected edges (by index) a Synthesis step's citation names; none: no Synthesis step.
    std::vector<std::size_t> cited{};

    std::vector<schema::ExplainMessage> messages() const {
        std::vector<schema::ExplainMessage> out;
        out.push_back(run.open());
        const auto step = [&](std::uint64_t seq, std::string id, std::vector<schema::Triple> t) {
            schema::ExplainMessage m;
            m.session = run.session();
            m.seq = seq;
            m.service = run.service;
            m.worker = run.service + "-test/0";
            m.explain_id = std::move(id);
            m.explain_triples = std::move(t);
            return m;
        };
        explain::StepInfo info;
        info.generated_at = at(run.started_ms + 1);
        info.model = model;
        std::vector<explain::ExploredEdge> seen;
        for (const auto& e : explored) seen.push_back(explain::ExploredEdge{e, 1});
        out.push_back(step(1, run.uris.exploration(),
                           explain::graph_exploration(run.uris, info, {"urn:seed:lighthouse"},
                                                      seen.size(), seen)));
        std::vector<explain::SelectedEdge> edges;
        for (const auto& e : selected) {
            explain::SelectedEdge edge;
            edge.edge = e;
            edge.score = 0.9;
            edge.source = explain::SourceRef{};
            edge.source->document = source;
            edges.push_back(std::move(edge));
        }
        out.push_back(step(2, run.uris.focus(), explain::graph_focus(run.uris, info, edges)));
        std::uint64_t seq = 3;
        if (!cited.empty()) {
            const std::string g(v::kRetrievalGraph);
            std::vector<schema::Triple> t;
            const std::string citation = run.uris.citation(0);
            t.push_back(schema::make_triple(schema::iri(run.uris.synthesis()),
                                            schema::iri(v::kCitationProperty),
                                            schema::iri(citation), g));
            for (const std::size_t i : cited) {
                t.push_back(schema::make_triple(schema::iri(citation), schema::iri(v::kSupportedBy),
                                                schema::iri(run.uris.edge_selection(i)), g));
            }
            out.push_back(step(seq++, run.uris.synthesis(), std::move(t)));
        }
        auto end = run.end(schema::TraceStatus::kComplete, "Ada Brandt designed it");
        end.seq = seq;
        out.push_back(std::move(end));
        return out;
    }
};

// A knowledge change as the store records it (docs/knowledge.md): a `store` run removing
// `removed` (listed or not) and the sources `removed_sources`.
std::vector<schema::ExplainMessage> change_run(const FakeRun& run, const std::string& kind,
                                               const std::vector<schema::Triple>& removed,
                                               const std::vector<std::string>& removed_sources,
                                               const std::string& used, bool listed = true) {
    const std::string q = run.session();
    const std::string g(v::kRetrievalGraph);
    std::vector<schema::Triple> t;
    const auto add = [&](const std::string& s, std::string_view p, schema::Term o) {
        t.push_back(schema::make_triple(schema::iri(s), schema::iri(p), std::move(o), g));
    };
    add(q, v::kRdfType, schema::iri(v::kProvActivity));
    add(q, v::kRdfType, schema::iri(v::kKnowledgeChange));
    add(q, v::kQuery, schema::literal(kind + " " + used));
    add(q, v::kChangeKind, schema::literal(kind));
    add(q, v::kProvStartedAtTime, explain::datetime_literal(at(run.started_ms)));
    add(q, v::kProvUsed, schema::iri(used));
    add(q, v::kRemovedListed, schema::xsd_boolean(listed));
    for (std::size_t i = 0; i < removed.size(); ++i) {
        const std::string r = run.uris.removed_fact(i);
        add(q, v::kRemovedFact, schema::iri(r));
        add(r, v::kRdfType, schema::iri(v::kRdfStatement));
        add(r, v::kRdfSubject, removed[i].s);
        add(r, v::kRdfPredicate, removed[i].p);
        add(r, v::kRdfObject, removed[i].o);
        add(r, v::kProvWasInvalidatedBy, schema::iri(q));
    }
    for (const auto& s : removed_sources) add(q, v::kRemovedSource, schema::iri(s));
    schema::ExplainMessage m;
    m.session = q;
    m.seq = 0;
    m.service = std::string(schema::services::kStore);
    m.worker = "store-test/0";
    m.explain_id = q;
    m.explain_triples = std::move(t);
    const auto tail =
        explain::trace_end(run.uris, at(run.started_ms + 5), schema::TraceStatus::kComplete);
    m.explain_triples.insert(m.explain_triples.end(), tail.begin(), tail.end());
    m.end_of_trace = true;
    m.trace_status = schema::TraceStatus::kComplete;
    return {m};
}

class RunUsesTest : public StoreTest {
protected:
    void store_all(const std::vector<schema::ExplainMessage>& messages, std::int64_t at_ms) {
        const auto outcome = store(messages, at_ms);
        EXPECT_EQ(outcome.stored, messages.size());
    }
    // The sessions `list` gives for `query` (UUIDs in list order).
    std::vector<std::string> listed(const ListQuery& query) {
        auto out = store_->list(query, at(kT0 + 100'000));
        EXPECT_TRUE(out.ok()) << out.error().describe();
        std::vector<std::string> sessions;
        if (out.ok()) {
            for (const auto& s : (*out)["sessions"]) sessions.push_back(s["session"]);
        }
        return sessions;
    }
    const schema::Triple designed_ =
        fact("urn:e:greyhollow", "urn:p:designedBy", schema::iri("urn:e:ada"));
    const schema::Triple built_ = fact("urn:e:greyhollow", "urn:p:built", schema::literal("1858"));
    const schema::Triple keeper_ =
        fact("urn:e:greyhollow", "urn:p:keeper", schema::iri("urn:e:orrin"));
};

TEST_P(RunUsesTest, IndexesTheSelectedFactsNotTheExploredOnes) {
    GraphRun a{FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0),
               {designed_},
               {designed_, keeper_}};
    GraphRun b{FakeRun::make("graph-rag", "When was Greyhollow built?", kT0 + 10), {built_}, {}};
    b.source = "file:///data/other.ttl";
    b.model = "gpt-test";
    store_all(a.messages(), kT0 + 50);
    store_all(b.messages(), kT0 + 60);

    ListQuery q;
    q.uses_fact = "<urn:e:greyhollow> <urn:p:designedBy> <urn:e:ada>";
    EXPECT_EQ(listed(q), std::vector<std::string>{a.run.session()});
    // The same fact written with bare IRIs.
    q.uses_fact = "urn:e:greyhollow urn:p:designedBy urn:e:ada";
    EXPECT_EQ(listed(q), std::vector<std::string>{a.run.session()});
    // Explored but not selected: not a use.
    q.uses_fact = "urn:e:greyhollow urn:p:keeper urn:e:orrin";
    EXPECT_TRUE(listed(q).empty());
    // A literal object.
    q.uses_fact = "urn:e:greyhollow urn:p:built \"1858\"";
    EXPECT_EQ(listed(q), std::vector<std::string>{b.run.session()});

    ListQuery by_source;
    by_source.uses_source = "file:///data/orrin.ttl";
    EXPECT_EQ(listed(by_source), std::vector<std::string>{a.run.session()});
    ListQuery by_document;
    by_document.uses_document = "file:///data/other.ttl";
    EXPECT_EQ(listed(by_document), std::vector<std::string>{b.run.session()});
    ListQuery by_entity;
    by_entity.entity = "urn:e:ada";
    EXPECT_EQ(listed(by_entity), std::vector<std::string>{a.run.session()});
    by_entity.entity = "urn:e:greyhollow";  // a subject of both runs' facts
    EXPECT_EQ(listed(by_entity), (std::vector<std::string>{b.run.session(), a.run.session()}));
    by_entity.entity = "urn:seed:lighthouse";  // a seed entity of both
    EXPECT_EQ(listed(by_entity).size(), 2u);
    by_entity.entity = "urn:e:orrin";  // only explored
    EXPECT_TRUE(listed(by_entity).empty());
    ListQuery by_model;
    by_model.model = "gpt-test";
    EXPECT_EQ(listed(by_model), std::vector<std::string>{b.run.session()});
}

TEST_P(RunUsesTest, FiltersCombineWithEachOtherAndTheExistingOnes) {
    GraphRun a{FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0), {designed_}, {}};
    GraphRun b{
        FakeRun::make("graph-rag", "Who keeps the lamp?", kT0 + 10), {designed_, keeper_}, {}};
    GraphRun c{FakeRun::make("document-rag", "Who designed the tower?", kT0 + 20), {designed_}, {}};
    store_all(a.messages(), kT0 + 50);
    store_all(b.messages(), kT0 + 60);
    store_all(c.messages(), kT0 + 70);

    ListQuery q;
    q.uses_fact = "urn:e:greyhollow urn:p:designedBy urn:e:ada";
    EXPECT_EQ(listed(q).size(), 3u);
    q.kind = "graph-rag";
    EXPECT_EQ(listed(q), (std::vector<std::string>{b.run.session(), a.run.session()}));
    q.entity = "urn:e:orrin";
    EXPECT_EQ(listed(q), std::vector<std::string>{b.run.session()});
    q.status = "error";
    EXPECT_TRUE(listed(q).empty());

    ListQuery text;
    text.text = "keeps lamp";  // both words of one question
    EXPECT_EQ(listed(text), (std::vector<std::string>{b.run.session()}));
    text.text = "keeps tower";  // each word in another run: none has both
    EXPECT_TRUE(listed(text).empty());
    text.text = "greyhollow";
    EXPECT_EQ(listed(text), (std::vector<std::string>{a.run.session()}));
    text.text = "Ada Brandt";  // the answer's words
    EXPECT_EQ(listed(text).size(), 3u);
    text.text = "DESIGNED tower";  // every word, any case
    EXPECT_EQ(listed(text), std::vector<std::string>{c.run.session()});
    text.kind = "graph-rag";
    EXPECT_TRUE(listed(text).empty());
    text.kind.reset();
    text.text = "Ada";
    text.since_ms = kT0 + 15;
    EXPECT_EQ(listed(text), std::vector<std::string>{c.run.session()});
    text.uses_fact = "urn:e:greyhollow urn:p:keeper urn:e:orrin";
    text.since_ms.reset();
    EXPECT_EQ(listed(text), std::vector<std::string>{b.run.session()});
}

TEST_P(RunUsesTest, ASubRunsUsesCountForItsTopLevelRun) {
    const auto agent = FakeRun::make("agent", "Tell me about Greyhollow", kT0);
    GraphRun sub{FakeRun::make("graph-rag", "Greyhollow designer", kT0 + 1, agent.session()),
                 {designed_},
                 {}};
    store_all({agent.open()}, kT0 + 10);
    store_all(sub.messages(), kT0 + 20);
    auto end = agent.end();
    store_all({end}, kT0 + 30);

    ListQuery q;
    q.uses_fact = "urn:e:greyhollow urn:p:designedBy urn:e:ada";
    EXPECT_EQ(listed(q), std::vector<std::string>{agent.session()});
    q.include_subtraces = true;
    EXPECT_EQ(listed(q), (std::vector<std::string>{sub.run.session(), agent.session()}));
}

// Two usage filters, each met by a use the run's top-level run got in another batch (another
// index row): on SQLite the rarer one drives and the other is checked per run over all its rows.
TEST_P(RunUsesTest, CombinedFiltersSeeUsesStoredByDifferentBatches) {
    const auto agent = FakeRun::make("agent", "Tell me about Greyhollow", kT0);
    GraphRun first{FakeRun::make("graph-rag", "Greyhollow designer", kT0 + 1, agent.session()),
                   {designed_},
                   {}};
    GraphRun second{
        FakeRun::make("graph-rag", "Greyhollow keeper", kT0 + 2, agent.session()), {keeper_}, {}};
    GraphRun unrelated{FakeRun::make("graph-rag", "Who keeps it?", kT0 + 3), {keeper_}, {}};
    store_all({agent.open()}, kT0 + 10);
    store_all(first.messages(), kT0 + 20);
    store_all(second.messages(), kT0 + 30);
    store_all(unrelated.messages(), kT0 + 35);
    store_all({agent.end()}, kT0 + 40);

    ListQuery q;
    q.uses_fact = "urn:e:greyhollow urn:p:designedBy urn:e:ada";
    q.entity = "urn:e:orrin";
    EXPECT_EQ(listed(q), std::vector<std::string>{agent.session()});
    q.text = "Greyhollow";
    EXPECT_EQ(listed(q), std::vector<std::string>{agent.session()});
    q.uses_fact.reset();
    q.text.reset();
    q.entity = "urn:e:orrin";
    EXPECT_EQ(listed(q), (std::vector<std::string>{unrelated.run.session(), agent.session()}));
    q.text = "keeps";
    EXPECT_EQ(listed(q), std::vector<std::string>{unrelated.run.session()});
}

TEST_P(RunUsesTest, AChangeMarksExactlyTheRunsThatUsedWhatItRemoved) {
    GraphRun used{
        FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0), {designed_}, {}};
    GraphRun other{FakeRun::make("graph-rag", "When was it built?", kT0 + 10), {built_}, {}};
    // Used a fact the change did not remove (it kept another source): not marked.
    GraphRun kept{FakeRun::make("graph-rag", "Who keeps it?", kT0 + 20), {keeper_}, {}};
    store_all(used.messages(), kT0 + 50);
    store_all(other.messages(), kT0 + 60);
    store_all(kept.messages(), kT0 + 70);
    const auto change = FakeRun::make("store", "replace", kT0 + 1000);
    store_all(change_run(change, "replace",
                         {fact("urn:e:greyhollow", "urn:p:designedBy", schema::iri("urn:e:ada"))},
                         {}, "file:///data/orrin.ttl"),
              kT0 + 1010);

    ListQuery affected;
    affected.affected = true;
    EXPECT_EQ(listed(affected), std::vector<std::string>{used.run.session()});
    auto all = store_->list(ListQuery{}, at(kT0 + 2000));
    ASSERT_TRUE(all.ok());
    for (const auto& s : (*all)["sessions"]) {
        EXPECT_EQ(s["affected"], s["session"] == used.run.session() ? 1 : 0) << s["session"];
    }
    auto shown = store_->show(used.run.session(), at(kT0 + 2000));
    ASSERT_TRUE(shown.ok());
    ASSERT_TRUE(shown->contains("affected"));
    const json& a = (*shown)["affected"];
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0]["change"], change.session());
    EXPECT_EQ(a[0]["kind"], "replace");
    EXPECT_EQ(a[0]["facts"], json::array({"<urn:e:greyhollow> <urn:p:designedBy> <urn:e:ada>"}));
    EXPECT_EQ(a[0]["sources"], json::array());
    auto other_shown = store_->show(other.run.session(), at(kT0 + 2000));
    ASSERT_TRUE(other_shown.ok());
    EXPECT_FALSE(other_shown->contains("affected"));
    // The change's reply decodes as the contract's type (the service checks it too).
    EXPECT_TRUE(schema::decode<schema::TraceDetail>(*shown).ok());
}

// The same fact in two collections is two collections' knowledge: a change in one marks the
// runs of that collection only (and a run whose collection is unknown).
TEST_P(RunUsesTest, AChangeMarksOnlyTheRunsOfItsOwnCollection) {
    const auto in_collection = [](std::vector<schema::ExplainMessage> messages,
                                  const std::string& session, const char* name) {
        messages.front().explain_triples.push_back(schema::make_triple(
            schema::iri(session), schema::iri(v::kCollection), schema::literal(name)));
        return messages;
    };
    GraphRun here{
        FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0), {designed_}, {}};
    GraphRun there{FakeRun::make("graph-rag", "Who designed it?", kT0 + 10), {designed_}, {}};
    GraphRun unknown{FakeRun::make("graph-rag", "Designer?", kT0 + 20), {designed_}, {}};
    store_all(in_collection(here.messages(), here.run.session(), "kb2"), kT0 + 50);
    store_all(in_collection(there.messages(), there.run.session(), "default"), kT0 + 60);
    store_all(unknown.messages(), kT0 + 70);
    const auto change = FakeRun::make("store", "replace", kT0 + 1000);
    store_all(in_collection(change_run(change, "replace", {designed_}, {}, "file:///data/a.ttl"),
                            change.session(), "kb2"),
              kT0 + 1010);

    ListQuery affected;
    affected.affected = true;
    EXPECT_EQ(listed(affected),
              (std::vector<std::string>{unknown.run.session(), here.run.session()}));
}

TEST_P(RunUsesTest, AnAnswerIsAffectedByTheFactsItCitesNotByItsOtherSelectedFacts) {
    // Both runs kept both facts in their Focus; the first cites the designer, the second the
    // year. Removing the designer fact affects the first answer only.
    GraphRun designer{
        FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0), {designed_, built_}, {}};
    designer.cited = {0};
    GraphRun year{FakeRun::make("graph-rag", "When was Greyhollow Light built?", kT0 + 10),
                  {designed_, built_},
                  {}};
    year.cited = {1};
    store_all(designer.messages(), kT0 + 50);
    store_all(year.messages(), kT0 + 60);
    const auto change = FakeRun::make("store", "replace", kT0 + 1000);
    store_all(change_run(change, "replace", {designed_}, {}, "file:///data/orrin.ttl"), kT0 + 1010);
    ListQuery affected;
    affected.affected = true;
    EXPECT_EQ(listed(affected), std::vector<std::string>{designer.run.session()});
    // Removing the year affects the second one (the first is marked by the earlier change only).
    const auto second = FakeRun::make("store", "replace", kT0 + 2000);
    store_all(change_run(second, "replace", {built_}, {}, "file:///data/orrin.ttl"), kT0 + 2010);
    auto marked = listed(affected);
    std::sort(marked.begin(), marked.end());
    std::vector<std::string> both{designer.run.session(), year.run.session()};
    std::sort(both.begin(), both.end());
    EXPECT_EQ(marked, both);
    auto shown = store_->show(year.run.session(), at(kT0 + 3000));
    ASSERT_TRUE(shown.ok());
    ASSERT_EQ((*shown)["affected"].size(), 1u);
    EXPECT_EQ((*shown)["affected"][0]["change"], second.session());
}

TEST_P(RunUsesTest, ARemovedSourceAndAnUnlistedChangeMarkTheRunsOfTheSource) {
    GraphRun a{FakeRun::make("graph-rag", "q a", kT0), {designed_}, {}};
    GraphRun b{FakeRun::make("graph-rag", "q b", kT0 + 10), {built_}, {}};
    b.source = "file:///data/b.ttl";
    GraphRun c{FakeRun::make("graph-rag", "q c", kT0 + 20), {keeper_}, {}};
    c.source = "file:///data/c.ttl";
    store_all(a.messages(), kT0 + 50);
    store_all(b.messages(), kT0 + 60);
    store_all(c.messages(), kT0 + 70);
    store_all(change_run(FakeRun::make("store", "forget", kT0 + 1000), "forget-source", {},
                         {"file:///data/b.ttl"}, "file:///data/b.ttl"),
              kT0 + 1010);
    // Not every removed fact listed: the runs of the source it changed are marked.
    store_all(change_run(FakeRun::make("store", "replace", kT0 + 2000), "replace", {}, {},
                         "file:///data/c.ttl", false),
              kT0 + 2010);
    ListQuery affected;
    affected.affected = true;
    EXPECT_EQ(listed(affected), (std::vector<std::string>{c.run.session(), b.run.session()}));
    auto shown = store_->show(b.run.session(), at(kT0 + 3000));
    ASSERT_TRUE(shown.ok());
    EXPECT_EQ((*shown)["affected"][0]["kind"], "forget-source");
    EXPECT_EQ((*shown)["affected"][0]["sources"], json::array({"file:///data/b.ttl"}));
}

TEST_P(RunUsesTest, AMalformedFactIsInvalidRequest) {
    for (const std::string bad :
         {"", "urn:a urn:p", "\"x\" urn:p urn:o", "<urn:a> <urn:p> <urn:o> <urn:g>"}) {
        ListQuery q;
        q.uses_fact = bad;
        auto out = store_->list(q, at(kT0));
        ASSERT_FALSE(out.ok()) << bad;
        EXPECT_EQ(out.error().type, ErrorType::kInvalidRequest) << bad;
    }
    ListQuery q;
    q.text = " ,; ";
    auto out = store_->list(q, at(kT0));
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.error().type, ErrorType::kInvalidRequest);
}

TEST_P(RunUsesTest, PruneDeletesARunsUsesAndInvalidations) {
    GraphRun a{FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0), {designed_}, {}};
    store_all(a.messages(), kT0 + 50);
    store_all(change_run(FakeRun::make("store", "replace", kT0 + 1000), "replace", {designed_}, {},
                         "file:///data/orrin.ttl"),
              kT0 + 1010);
    PruneRequest prune;
    prune.older_than = std::chrono::milliseconds(500);
    prune.now = at(kT0 + 1200);
    auto pruned = store_->prune(prune);
    ASSERT_TRUE(pruned.ok()) << pruned.error().describe();
    EXPECT_EQ(pruned->traces, 1);
    // Re-stored under the same id space, nothing of the pruned run remains to match.
    ListQuery q;
    q.uses_fact = "urn:e:greyhollow urn:p:designedBy urn:e:ada";
    EXPECT_TRUE(listed(q).empty());
    ListQuery affected;
    affected.affected = true;
    EXPECT_TRUE(listed(affected).empty());
}

// Issue 33: ingest writes the full-text rows of the question, text and uses indexes itself (a
// trigger on each table made every row statement of a batch ~3x dearer). A store whose file
// still has the triggers of before (put back here as they were) loses them on open, and a run
// stored after is indexed once in each index: found by its question, its text and a use, with
// one full-text row apiece.
TEST_P(RunUsesTest, TheIngestTriggersOfBeforeAreDroppedOnOpenAndNothingIsIndexedTwice) {
    if (on_postgres()) GTEST_SKIP() << "PostgreSQL's indexes are the tables' own (no triggers)";
    downgrade(
        "CREATE TRIGGER sessions_search_insert AFTER INSERT ON sessions "
        "WHEN new.question IS NOT NULL BEGIN "
        "INSERT INTO sessions_search(rowid, q) VALUES(new.id, new.question); END; "
        "CREATE TRIGGER run_uses_insert AFTER INSERT ON run_uses BEGIN "
        "INSERT INTO run_uses_search(rowid, terms) VALUES(new.doc, new.terms); END; "
        "CREATE TRIGGER run_text_insert AFTER INSERT ON run_text BEGIN "
        "INSERT INTO run_text_search(rowid, body) VALUES(new.session, new.body); END;");
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(store_);
    GraphRun run{
        FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0), {designed_}, {}};
    // Its end first, then its Question: the text and the question come in separate batches.
    const auto messages = run.messages();
    store_all({messages.back()}, kT0 + 50);
    store_all(std::vector<schema::ExplainMessage>(messages.begin(), messages.end() - 1), kT0 + 60);
    ListQuery by_question;
    by_question.search = "Greyhollow Light";
    EXPECT_EQ(listed(by_question), std::vector<std::string>{run.run.session()});
    ListQuery by_text;
    by_text.text = "designed greyhollow";
    EXPECT_EQ(listed(by_text), std::vector<std::string>{run.run.session()});
    ListQuery by_use;
    by_use.uses_fact = "urn:e:greyhollow urn:p:designedBy urn:e:ada";
    EXPECT_EQ(listed(by_use), std::vector<std::string>{run.run.session()});
    store_.reset();
    auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
    ASSERT_TRUE(db.ok()) << db.error().describe();
    const auto count = [&](const std::string& sql) {
        auto q = (*db)->prepare(sql);
        EXPECT_TRUE(q.ok()) << sql;
        if (!q.ok()) return std::int64_t{-1};
        return q->first([](const storage::Row& row) { return row.int64(0); }).value().value_or(-1);
    };
    EXPECT_EQ(count("SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND "
                    "(name LIKE '%\\_insert' ESCAPE '\\' OR name LIKE '%\\_update' ESCAPE '\\')"),
              0);
    EXPECT_EQ(count("SELECT COUNT(*) FROM sessions_search WHERE sessions_search MATCH "
                    "'\"Greyhollow Light\"'"),
              1);
    EXPECT_EQ(count("SELECT COUNT(*) FROM run_text_search WHERE run_text_search MATCH "
                    "'greyhollow'"),
              1);
    // The indexes agree with their tables (FTS5's own check; a doubled row fails it).
    EXPECT_TRUE((*db)
                    ->exec("INSERT INTO run_text_search(run_text_search) VALUES('integrity-check');"
                           "INSERT INTO run_uses_search(run_uses_search) VALUES('integrity-check')")
                    .ok());
}

TEST_P(RunUsesTest, AVersion7StoreIsMigratedOnOpenAndIndexesNewRuns) {
    GraphRun before{FakeRun::make("graph-rag", "stored by version 7", kT0), {designed_}, {}};
    store_all(before.messages(), kT0 + 50);
    store_.reset();
    const std::string downgrade_sql =
        std::string(on_postgres() ? ""
                                  : "DROP TABLE run_text_search; DROP TABLE run_uses_search; ") +
        "DROP TABLE run_uses; DROP TABLE invalidations; DROP TABLE run_text; UPDATE meta SET "
        "value = '7' WHERE key = 'schema'";
    downgrade(downgrade_sql);
    auto read_only = site_->open(OpenMode::kReadOnly, config_);
    ASSERT_FALSE(read_only.ok()) << "a reader does not migrate";
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(store_);
    GraphRun after{FakeRun::make("graph-rag", "stored by version 8", kT0 + 100), {designed_}, {}};
    store_all(after.messages(), kT0 + 150);
    // Runs stored before the upgrade are not back-filled (docs/traces.md).
    ListQuery q;
    q.uses_fact = "urn:e:greyhollow urn:p:designedBy urn:e:ada";
    EXPECT_EQ(listed(q), std::vector<std::string>{after.run.session()});
}

// SQLite, version 8 kept a row per (run, batch); version 9 keeps one per run, so that combined
// filters are one FTS5 AND. The upgrade merges a run's rows: here every use was in a row of its
// own, and the run is still found by three filters at once.
TEST_P(RunUsesTest, AVersion8StoresRowsOfOneRunAreMergedOnOpen) {
    if (on_postgres()) GTEST_SKIP() << "PostgreSQL keeps a row per batch (GIN overlap per filter)";
    GraphRun run{
        FakeRun::make("graph-rag", "Who designed Greyhollow Light?", kT0), {designed_}, {}};
    store_all(run.messages(), kT0 + 50);
    downgrade(R"sql(
CREATE TEMP TABLE split AS WITH RECURSIVE parts(session, n, term, rest) AS (
  SELECT session, 0, '', terms || ' ' FROM run_uses
  UNION ALL SELECT session, n + 1, substr(rest, 1, instr(rest, ' ') - 1),
                   substr(rest, instr(rest, ' ') + 1) FROM parts WHERE rest <> '')
  SELECT session, n, term FROM parts WHERE n > 0;
DELETE FROM run_uses;
INSERT INTO run_uses(doc, session, terms) SELECT (session << 10) + n, session, term FROM split;
INSERT INTO run_uses_search(rowid, terms) SELECT (session << 10) + n, term FROM split;
DROP TABLE split;
DROP TABLE sparql_pending;
UPDATE meta SET value = '8' WHERE key = 'schema';
)sql");
    store_ = reopen(OpenMode::kReadWrite);
    ASSERT_TRUE(store_);
    ListQuery q;
    q.uses_fact = "urn:e:greyhollow urn:p:designedBy urn:e:ada";
    q.entity = "urn:e:ada";
    q.uses_source = "file:///data/orrin.ttl";
    EXPECT_EQ(listed(q), std::vector<std::string>{run.run.session()});
}

// A batch that adds a sub-run to each of eight agents whose first sub-run is stored: each agent's
// one usage row is rewritten in place (run_uses.cpp, rewrite_sqlite_uses: no DELETE, whose
// trigger's statement savepoint made SQLite 3.40's FTS5 write a segment per run), and each agent
// is still found by a use of either batch, and the full-text index agrees with its table.
TEST_P(RunUsesTest, ABatchMergingRunsUsesRewritesTheirRowsInPlace) {
    if (on_postgres()) GTEST_SKIP() << "PostgreSQL keeps a row per batch (GIN overlap per filter)";
    std::vector<FakeRun> agents;
    std::vector<schema::ExplainMessage> first;
    std::vector<schema::ExplainMessage> second;
    for (int i = 0; i < 8; ++i) {
        agents.push_back(FakeRun::make("agent", "Tell me about Greyhollow", kT0 + i));
        const auto& agent = agents.back();
        GraphRun a{FakeRun::make("graph-rag", "Greyhollow designer", kT0 + 10 + i, agent.session()),
                   {designed_},
                   {}};
        GraphRun b{FakeRun::make("graph-rag", "Greyhollow keeper", kT0 + 20 + i, agent.session()),
                   {keeper_},
                   {}};
        first.push_back(agent.open());
        for (auto& m : a.messages()) first.push_back(std::move(m));
        for (auto& m : b.messages()) second.push_back(std::move(m));
    }
    store_all(first, kT0 + 100);
    store_all(second, kT0 + 200);

    ListQuery q;
    q.uses_fact = "urn:e:greyhollow urn:p:designedBy urn:e:ada";
    q.entity = "urn:e:orrin";
    std::vector<std::string> expected;
    for (auto it = agents.rbegin(); it != agents.rend(); ++it) expected.push_back(it->session());
    EXPECT_EQ(listed(q), expected);
    auto db = storage::Database::open(dir_ / "traces.db", storage::OpenOptions{});
    ASSERT_TRUE(db.ok()) << db.error().describe();
    EXPECT_TRUE(
        (*db)->exec("INSERT INTO run_uses_search(run_uses_search) VALUES('integrity-check')").ok());
}

TEST(ParseFact, GivesTheIndexedFormOrSaysWhatIsWrong) {
    auto plain = detail::parse_fact("urn:a urn:p a plain literal");
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(*plain, "<urn:a> <urn:p> \"a plain literal\"");
    auto typed =
        detail::parse_fact("<urn:a> <urn:p> \"1858\"^^<http://www.w3.org/2001/XMLSchema#integer>");
    ASSERT_TRUE(typed.ok()) << typed.error().describe();
    EXPECT_EQ(*typed, "<urn:a> <urn:p> \"1858\"^^<http://www.w3.org/2001/XMLSchema#integer>");
    auto bad = detail::parse_fact("just-a-word");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("S P O"), std::string::npos);
}

GLASSBOX_TRACE_BACKENDS(RunUsesTest);

}  // namespace
}  // namespace glassbox::trace::testing
