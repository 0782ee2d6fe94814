// Tests for changing and retracting knowledge, on SQLite and PostgreSQL: a replacing commit keeps
// unchanged facts' rows, removes what its source no longer states, keeps what another source
// states (promoting it), and leaves the old state when it fails; forgetting a source, a fact or a
// document removes exactly theirs (NotFound for an unknown one); and a change's trace.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schema/explain_uris.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/knowledge_site.hpp"
#include "tests/unit/workers/store/graph_store_fixture.hpp"
#include "tests/unit/workers/store/graph_terms.hpp"
#include "workers/store/change_trace.hpp"
#include "workers/store/document_store.hpp"
#include "workers/store/graph_store.hpp"

namespace glassbox::store {
namespace {

using namespace graph_terms;

SourceRecord file_source(const std::string& name) {
    return SourceRecord{"file:///data/" + name, SourceKind::kFile,      {}, 3,
                        "2026-11-30T10:00:00Z", "application/n-triples"};
}

Triple fact(int n) { return make_triple(ex("s" + std::to_string(n)), ex("p"), ex("o")); }

class KnowledgeChangeTest : public testing::GraphStoreFixture {
protected:
    // Stages `facts` from `source` under a load of their own and commits it (replacing or not).
    InsertCounts load(const std::string& source, const std::vector<Triple>& facts,
                      KnowledgeChange* change = nullptr) {
        const std::string name = "load-" + std::to_string(++loads_);
        auto staged = store_->stage(name, file_source(source), facts);
        EXPECT_TRUE(staged) << staged.error().message;
        auto counts = change ? store_->commit_staged(name, *change) : store_->commit_staged(name);
        EXPECT_TRUE(counts) << counts.error().message;
        return counts ? *counts : InsertCounts{};
    }

    std::int64_t count(const std::string& sql) {
        auto st = db_->prepare(sql);
        EXPECT_TRUE(st) << st.error().message;
        auto n = st->first([](const storage::sql::Row& row) { return row.int64(0); });
        EXPECT_TRUE(n && *n);
        return n && *n ? **n : -1;
    }

    bool stored(const Triple& t) {
        auto found = store_->match(TriplePattern{t.s, t.p, t.o, t.graph.value_or("")});
        EXPECT_TRUE(found) << found.error().message;
        return found && !found->empty();
    }

    // Sources of a stored fact, by uri.
    std::vector<std::string> sources(const Triple& t) {
        auto found = store_->sources_of(t);
        EXPECT_TRUE(found) << found.error().message;
        std::vector<std::string> uris;
        if (found) {
            for (const auto& s : *found) uris.push_back(s.uri);
        }
        std::sort(uris.begin(), uris.end());
        return uris;
    }

    // Every row a DELETE or an UPDATE takes out of graph_quads from now on is logged in
    // quads_log, so a test sees whether an unchanged fact's row was touched.
    void log_quad_deletes() {
        const bool lite = !on_postgres();
        auto r = db_->exec(
            lite ? "CREATE TABLE quads_log(s INTEGER, p INTEGER, o INTEGER, g INTEGER);"
                   "CREATE TRIGGER log_delete AFTER DELETE ON graph_quads BEGIN INSERT INTO "
                   "quads_log VALUES(old.s, old.p, old.o, old.g); END;"
                   "CREATE TRIGGER log_update AFTER UPDATE ON graph_quads BEGIN INSERT INTO "
                   "quads_log VALUES(old.s, old.p, old.o, old.g); END;"
                 : "CREATE TABLE quads_log(s BIGINT, p BIGINT, o BIGINT, g BIGINT);"
                   "CREATE FUNCTION log_quad() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN "
                   "INSERT INTO quads_log VALUES(OLD.s, OLD.p, OLD.o, OLD.g); RETURN OLD; END$$;"
                   "CREATE TRIGGER log_quad AFTER DELETE OR UPDATE ON graph_quads FOR EACH ROW "
                   "EXECUTE FUNCTION log_quad();");
        ASSERT_TRUE(r) << r.error().message;
    }

    // Makes every insert into graph_pos fail, as a write failing midway would.
    void refuse_pos_inserts() {
        auto r = db_->exec(on_postgres()
                               ? "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                                 "$$BEGIN RAISE EXCEPTION 'refused'; END$$; CREATE TRIGGER refuse "
                                 "BEFORE INSERT ON graph_pos FOR EACH ROW EXECUTE FUNCTION "
                                 "refuse()"
                               : "CREATE TRIGGER refuse BEFORE INSERT ON graph_pos BEGIN SELECT "
                                 "RAISE(ABORT, 'refused'); END");
        ASSERT_TRUE(r) << r.error().message;
    }

    int loads_ = 0;
};

TEST_P(KnowledgeChangeTest, ReplaceRemovesDroppedFactsAddsNewOnesAndLeavesUnchangedRows) {
    load("a.nt", {fact(1), fact(2), fact(3)});
    auto before = count("SELECT src FROM graph_quads ORDER BY s LIMIT 1");
    log_quad_deletes();
    KnowledgeChange change;
    load("a.nt", {fact(1), fact(2), fact(4)}, &change);
    EXPECT_TRUE(stored(fact(1)));
    EXPECT_TRUE(stored(fact(2)));
    EXPECT_FALSE(stored(fact(3)));
    EXPECT_TRUE(stored(fact(4)));
    // Only the dropped fact's row left graph_quads: the unchanged ones were not rewritten.
    EXPECT_EQ(count("SELECT count(*) FROM quads_log"), 1);
    EXPECT_EQ(count("SELECT src FROM graph_quads ORDER BY s LIMIT 1"), before);
    // Gone from every quad table.
    EXPECT_EQ(count("SELECT count(*) FROM graph_quads"), 3);
    EXPECT_EQ(count("SELECT count(*) FROM graph_pos"), 3);
    EXPECT_EQ(count("SELECT count(*) FROM graph_osp"), 3);
    EXPECT_EQ(change.kind, kChangeReplace);
    EXPECT_EQ(change.facts_added, 1u);
    EXPECT_EQ(change.facts_removed, 1u);
    EXPECT_EQ(change.facts_unchanged, 2u);
    ASSERT_EQ(change.removed.size(), 1u);
    EXPECT_EQ(change.removed[0].fact, fact(3));
    EXPECT_EQ(change.removed[0].sources, std::vector<std::string>{"file:///data/a.nt"});
    ASSERT_EQ(change.sources.size(), 1u);
    EXPECT_EQ(change.sources[0].uri, "file:///data/a.nt");
    EXPECT_EQ(change.sources[0].removed, 1u);
    EXPECT_EQ(change.used, std::vector<std::string>{"file:///data/a.nt"});
    EXPECT_TRUE(change.removed_listed());
    // s3 has no fact left: its vector must go; s1 keeps its facts.
    auto s3 = store_->find_term(ex("s3"));
    ASSERT_TRUE(s3 && *s3);
    EXPECT_EQ(change.orphaned_entities, std::vector<std::int64_t>{**s3});
}

TEST_P(KnowledgeChangeTest, AnEntityStatedAgainAfterAChangeIsIndexedAgain) {
    load("a.nt", {fact(1), fact(2)});
    auto s2 = store_->find_term(ex("s2"));
    ASSERT_TRUE(s2 && *s2);
    const std::int64_t past_every_id = 1'000'000;  // the index mark is past every entity
    auto none = store_->entities_to_index(past_every_id, 10);
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_TRUE(none->empty());
    KnowledgeChange change;
    load("a.nt", {fact(1)}, &change);
    EXPECT_EQ(change.orphaned_entities, std::vector<std::int64_t>{**s2});
    // Not stated yet: nothing to embed.
    auto still_none = store_->entities_to_index(past_every_id, 10);
    ASSERT_TRUE(still_none);
    EXPECT_TRUE(still_none->empty());
    load("b.nt", {fact(2)});
    auto restored = store_->entities_to_index(past_every_id, 10);
    ASSERT_TRUE(restored) << restored.error().message;
    ASSERT_EQ(restored->size(), 1u);
    EXPECT_EQ((*restored)[0].id, **s2);
    EXPECT_EQ((*restored)[0].term, ex("s2"));
    EXPECT_EQ((*restored)[0].label, "s2");
    auto once = store_->entities_to_index(past_every_id, 10);
    ASSERT_TRUE(once);
    EXPECT_TRUE(once->empty());
}

TEST_P(KnowledgeChangeTest, ReplaceKeepsAFactAnotherSourceStates) {
    const Triple named = make_triple(ex("s9"), ex("p"), literal("x"), "http://example.org/g");
    load("a.nt", {fact(1), fact(2), named});
    load("b.nt", {fact(1), named});  // b states fact 1 and the named one too (further sources)
    load("c.nt", {fact(2)});
    KnowledgeChange change;
    load("a.nt", {}, &change);  // a no longer states anything
    EXPECT_TRUE(stored(fact(1)));
    EXPECT_TRUE(stored(named));
    EXPECT_TRUE(stored(fact(2)));
    EXPECT_EQ(sources(fact(1)), std::vector<std::string>{"file:///data/b.nt"});
    EXPECT_EQ(sources(fact(2)), std::vector<std::string>{"file:///data/c.nt"});
    // The promoted source is the fact's first now, not a further link beside it.
    EXPECT_EQ(count("SELECT count(*) FROM graph_fact_sources"), 0);
    EXPECT_EQ(change.facts_removed, 0u);
    EXPECT_EQ(change.facts_kept, 3u);
    EXPECT_TRUE(change.orphaned_entities.empty());
    // c, now fact 2's only source, no longer states it: the fact goes.
    KnowledgeChange again;
    load("c.nt", {}, &again);
    EXPECT_FALSE(stored(fact(2)));
    EXPECT_EQ(again.facts_removed, 1u);
}

TEST_P(KnowledgeChangeTest, EachFileOfAReplacingLoadReplacesItsOwnSource) {
    load("a.nt", {fact(1), fact(2)});
    load("b.nt", {fact(3)});
    log_quad_deletes();
    // One load of both files: fact 1 moves from a to b, fact 2 and fact 3 go, fact 4 comes.
    const std::string name = "load-both";
    ASSERT_TRUE(store_->stage(name, file_source("a.nt"), std::vector<Triple>{fact(4)}));
    ASSERT_TRUE(store_->stage(name, file_source("b.nt"), std::vector<Triple>{fact(1)}));
    KnowledgeChange change;
    auto committed = store_->commit_staged(name, change);
    ASSERT_TRUE(committed) << committed.error().message;
    EXPECT_TRUE(stored(fact(1)));
    EXPECT_FALSE(stored(fact(2)));
    EXPECT_FALSE(stored(fact(3)));
    EXPECT_TRUE(stored(fact(4)));
    EXPECT_EQ(sources(fact(1)), std::vector<std::string>{"file:///data/b.nt"});
    // Fact 1 was never removed: its row stayed (its first source changed in place).
    EXPECT_EQ(change.facts_removed, 2u);
    EXPECT_EQ(change.facts_kept, 1u);
    ASSERT_EQ(change.removed.size(), 2u);
    EXPECT_EQ(count("SELECT count(*) FROM graph_quads"), 2);
    EXPECT_EQ(count("SELECT count(*) FROM graph_fact_sources"), 0);
    ASSERT_EQ(change.sources.size(), 2u);
    EXPECT_EQ(change.sources[0].uri, "file:///data/a.nt");
    EXPECT_EQ(change.sources[0].added, 1u);
    EXPECT_EQ(change.sources[0].kept, 1u);
    EXPECT_EQ(change.sources[0].removed, 1u);
    EXPECT_EQ(change.sources[1].uri, "file:///data/b.nt");
    EXPECT_EQ(change.sources[1].added, 1u);
    EXPECT_EQ(change.sources[1].removed, 1u);
    EXPECT_EQ(change.used, (std::vector<std::string>{"file:///data/a.nt", "file:///data/b.nt"}));
}

TEST_P(KnowledgeChangeTest, AFailedReplaceLeavesTheOldState) {
    load("a.nt", {fact(1), fact(2), fact(3)});
    refuse_pos_inserts();
    const std::string name = "load-failing";
    ASSERT_TRUE(store_->stage(name, file_source("a.nt"), std::vector<Triple>{fact(1), fact(4)}));
    KnowledgeChange change;
    auto committed = store_->commit_staged(name, change);
    ASSERT_FALSE(committed);
    // The retraction ran in the commit's transaction: it rolled back with it.
    EXPECT_TRUE(stored(fact(2)));
    EXPECT_TRUE(stored(fact(3)));
    EXPECT_FALSE(stored(fact(4)));
    EXPECT_EQ(count("SELECT count(*) FROM graph_pos"), 3);
    EXPECT_EQ(sources(fact(3)), std::vector<std::string>{"file:///data/a.nt"});
}

TEST_P(KnowledgeChangeTest, ForgetSourceRemovesItsFactsAndItsRecord) {
    load("a.nt", {fact(1), fact(2)});
    load("b.nt", {fact(2), fact(3)});
    auto change = store_->forget_source("file:///data/a.nt");
    ASSERT_TRUE(change) << change.error().message;
    EXPECT_FALSE(stored(fact(1)));
    EXPECT_TRUE(stored(fact(2)));
    EXPECT_EQ(sources(fact(2)), std::vector<std::string>{"file:///data/b.nt"});
    EXPECT_EQ(change->kind, kChangeForgetSource);
    EXPECT_EQ(change->facts_removed, 1u);
    EXPECT_EQ(change->facts_kept, 1u);
    EXPECT_EQ(change->removed_sources, std::vector<std::string>{"file:///data/a.nt"});
    EXPECT_EQ(count("SELECT count(*) FROM graph_sources WHERE uri = 'file:///data/a.nt'"), 0);
    auto again = store_->forget_source("file:///data/a.nt");
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().type, base::ErrorType::kNotFound);
    EXPECT_TRUE(stored(fact(3)));
}

TEST_P(KnowledgeChangeTest, ForgetFactRemovesItWithEverySource) {
    const Triple named =
        make_triple(ex("s9"), ex("p"), lang_literal("x", "en"), "http://example.org/g");
    load("a.nt", {fact(1), named});
    load("b.nt", {fact(1)});
    auto change = store_->forget_fact(fact(1));
    ASSERT_TRUE(change) << change.error().message;
    EXPECT_FALSE(stored(fact(1)));
    EXPECT_EQ(count("SELECT count(*) FROM graph_fact_sources"), 0);
    ASSERT_EQ(change->removed.size(), 1u);
    EXPECT_EQ(change->removed[0].sources,
              (std::vector<std::string>{"file:///data/a.nt", "file:///data/b.nt"}));
    // A fact in a named graph is that graph's: the same triple in the default graph is not it.
    Triple in_default = named;
    in_default.graph.reset();
    auto missing = store_->forget_fact(in_default);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().type, base::ErrorType::kNotFound);
    auto unknown_term = store_->forget_fact(make_triple(ex("never"), ex("p"), ex("o")));
    ASSERT_FALSE(unknown_term);
    EXPECT_EQ(unknown_term.error().type, base::ErrorType::kNotFound);
    auto in_graph = store_->forget_fact(named);
    ASSERT_TRUE(in_graph) << in_graph.error().message;
    ASSERT_EQ(in_graph->removed.size(), 1u);
    EXPECT_EQ(in_graph->removed[0].fact, named);
    EXPECT_FALSE(stored(named));
}

TEST_P(KnowledgeChangeTest, ForgetDocumentRemovesItsChunksFactsAndSources) {
    auto documents = DocumentStore::open(*db_);
    ASSERT_TRUE(documents) << documents.error().message;
    DocumentRecord doc;
    doc.uri = "file:///docs/light.md";
    doc.title = "Greyhollow Light";
    doc.text = "Greyhollow Light stands on the cape. It was lit in 1856.";
    const std::size_t cut = doc.text.find(". ") + 1;
    std::vector<ChunkRecord> chunks{
        {0, 0, cut, doc.text.substr(0, cut)},
        {1, cut + 1, doc.text.size() - cut - 1, doc.text.substr(cut + 1)}};
    auto put = (*documents)->put(doc, chunks);
    ASSERT_TRUE(put) << put.error().message;
    SourceRecord chunk{chunk_uri(doc.uri, 1), SourceKind::kChunk, doc.uri, 2, "", ""};
    auto chunk_id = store_->register_source(chunk);
    ASSERT_TRUE(chunk_id);
    ASSERT_TRUE(store_->insert(*chunk_id, std::vector<Triple>{fact(7)}));
    load("a.nt", {fact(8)});
    auto change = store_->forget_document(doc.uri);
    ASSERT_TRUE(change) << change.error().message;
    EXPECT_FALSE(stored(fact(7)));
    EXPECT_TRUE(stored(fact(8)));
    EXPECT_EQ(count("SELECT count(*) FROM chunks"), 0);
    EXPECT_EQ(count("SELECT count(*) FROM documents"), 0);
    auto found = (*documents)->keyword("Greyhollow", 10);
    ASSERT_TRUE(found) << found.error().message;
    EXPECT_TRUE(found->empty());
    EXPECT_EQ(change->removed_chunks, put->chunk_rowids);
    EXPECT_EQ(change->removed_sources,
              (std::vector<std::string>{doc.uri, chunk_uri(doc.uri, 0), chunk_uri(doc.uri, 1)}));
    auto again = store_->forget_document(doc.uri);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().type, base::ErrorType::kNotFound);
}

GLASSBOX_KNOWLEDGE_BACKENDS(KnowledgeChangeTest);

// ---- the change's trace --------------------------------------------------------------------

bool has(const std::vector<Triple>& triples, const std::string& s, std::string_view p,
         const Term& o) {
    return std::any_of(triples.begin(), triples.end(), [&](const Triple& t) {
        return t.s == iri(s) && t.p == iri(std::string(p)) && t.o == o &&
               t.graph == std::string(schema::vocab::kRetrievalGraph);
    });
}

TEST(ChangeTrace, RecordsTheActivityItsAgentsCountsAndEachRemovedFact) {
    namespace v = schema::vocab;
    const auto run = *schema::explain::RunUris::from_uuid("12345678-1234-4234-8234-123456789abc");
    KnowledgeChange change;
    change.kind = std::string(kChangeReplace);
    change.facts_added = 3;
    change.facts_removed = 1;
    change.used = {"file:///data/a.nt"};
    change.removed.push_back({make_triple(ex("s"), ex("p"), literal("old"), "http://example.org/g"),
                              {"file:///data/a.nt"}});
    change.removed_sources = {"file:///data/gone.nt"};
    ChangeContext context{"default", "ada lovelace", "replace file:///data/a.nt", {}, {}};
    const auto messages =
        change_trace_messages(run, schema::explain::worker_agent_uri("store"), change, context);
    ASSERT_EQ(messages.size(), 2u);
    std::vector<Triple> all;
    for (const auto& m : messages) all.insert(all.end(), m.begin(), m.end());
    const std::string q = run.question();
    const std::string r = run.removed_fact(0);
    EXPECT_EQ(r, "urn:glassbox:12345678-1234-4234-8234-123456789abc:removed:0");
    EXPECT_TRUE(has(all, q, v::kRdfType, iri(std::string(v::kKnowledgeChange))));
    EXPECT_TRUE(has(all, q, v::kRdfType, iri(std::string(v::kProvActivity))));
    EXPECT_TRUE(has(all, q, v::kChangeKind, literal("replace")));
    EXPECT_TRUE(has(all, q, v::kQuery, literal("replace file:///data/a.nt")));
    EXPECT_TRUE(has(all, q, v::kCollection, literal("default")));
    EXPECT_TRUE(has(all, q, v::kProvWasAssociatedWith, iri("urn:glassbox:agent:worker:store")));
    EXPECT_TRUE(
        has(all, q, v::kProvWasAssociatedWith, iri("urn:glassbox:agent:user:ada%20lovelace")));
    EXPECT_TRUE(has(all, "urn:glassbox:agent:user:ada%20lovelace", v::kRdfType,
                    iri(std::string(v::kProvAgent))));
    EXPECT_TRUE(has(all, q, v::kFactsAdded, schema::xsd_integer(3)));
    EXPECT_TRUE(has(all, q, v::kFactsRemoved, schema::xsd_integer(1)));
    EXPECT_TRUE(has(all, q, v::kRemovedListed, schema::xsd_boolean(true)));
    EXPECT_TRUE(has(all, q, v::kProvUsed, iri("file:///data/a.nt")));
    EXPECT_TRUE(has(all, q, v::kRemovedSource, iri("file:///data/gone.nt")));
    EXPECT_TRUE(has(all, "file:///data/gone.nt", v::kProvWasInvalidatedBy, iri(q)));
    EXPECT_TRUE(has(all, q, v::kRemovedFact, iri(r)));
    EXPECT_TRUE(has(all, r, v::kRdfType, iri(std::string(v::kRdfStatement))));
    EXPECT_TRUE(has(all, r, v::kRdfSubject, ex("s")));
    EXPECT_TRUE(has(all, r, v::kRdfPredicate, ex("p")));
    EXPECT_TRUE(has(all, r, v::kRdfObject, literal("old")));
    EXPECT_TRUE(has(all, r, v::kFactGraph, iri("http://example.org/g")));
    EXPECT_TRUE(has(all, r, v::kSourceDocument, iri("file:///data/a.nt")));
    EXPECT_TRUE(has(all, r, v::kProvWasInvalidatedBy, iri(q)));
    // The last message ends the trace complete.
    EXPECT_TRUE(has(messages.back(), q, v::kStatus, literal("complete")));
}

TEST(ChangeTrace, SaysWhenNotEveryRemovedFactIsListed) {
    namespace v = schema::vocab;
    const auto run = schema::explain::RunUris::generate();
    KnowledgeChange change;
    change.kind = std::string(kChangeForgetSource);
    change.facts_removed = kMaxListedRemovals + 5;
    change.removed.resize(kMaxListedRemovals, RemovedFact{fact(1), {}});
    const auto messages = change_trace_messages(run, "urn:glassbox:agent:worker:store", change,
                                                ChangeContext{"default", "", "forget", {}, {}});
    EXPECT_EQ(messages.size(), 1 + kMaxListedRemovals / kRemovedFactsPerMessage);
    EXPECT_TRUE(
        has(messages.front(), run.question(), v::kRemovedListed, schema::xsd_boolean(false)));
    EXPECT_EQ(change_description(change, "file:///x"), "forget source file:///x");
}

}  // namespace
}  // namespace glassbox::store
