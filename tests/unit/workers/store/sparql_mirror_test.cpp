// Tests for the store's SPARQL mirror, on SQLite and PostgreSQL: the change number moves in every
// write that changes what a collection states and not on reads; the export holds exactly the
// facts (flattened), labels and source triples; and the mirror pass, against a fake engine, sends
// what changed once, records it, deletes the graphs of deleted collections and catches up after
// the engine was down.
#include "workers/store/sparql_mirror.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/result.hpp"
#include "schema/nquads.hpp"
#include "schema/sparql_graphs.hpp"
#include "schema/vocabulary.hpp"
#include "tests/support/knowledge_site.hpp"
#include "tests/unit/workers/store/graph_store_fixture.hpp"
#include "tests/unit/workers/store/graph_terms.hpp"
#include "workers/store/document_store.hpp"

namespace glassbox::store {
namespace {

using namespace graph_terms;
namespace vocab = schema::vocab;
using base::ErrorType;

SourceRecord file_source(const std::string& name, std::uint32_t tier = 2) {
    return SourceRecord{"file:///data/" + name, SourceKind::kFile,      {}, tier,
                        "2026-11-30T10:00:00Z", "application/n-triples"};
}

const KnowledgeBases::BeforeRemove no_step = [](KnowledgeBase&) -> base::Result<void> {
    return {};
};

Triple fact(int n) { return make_triple(ex("s" + std::to_string(n)), ex("p"), ex("o")); }

// Each statement of N-Triples text as its own N-Triples line (sorted), parsed back by the
// store's own reader: what the engine would hold.
std::multiset<std::string> statements(const std::vector<std::string>& parts) {
    std::multiset<std::string> out;
    for (const auto& part : parts) {
        auto parsed = schema::parse_nquads(part);
        EXPECT_TRUE(parsed) << parsed.error().message;
        if (!parsed) continue;
        for (const auto& t : *parsed) {
            EXPECT_FALSE(t.graph.has_value());
            out.insert(schema::to_ntriples(t));
        }
    }
    return out;
}

TEST(CollectionGraphIri, PercentEncodesAllButUnreservedBytes) {
    EXPECT_EQ(schema::collection_graph_iri("default"), "urn:glassbox:collection:default");
    EXPECT_EQ(schema::collection_graph_iri("a-b_c.d~9"), "urn:glassbox:collection:a-b_c.d~9");
    EXPECT_EQ(schema::collection_graph_iri("a b/%é"), "urn:glassbox:collection:a%20b%2F%25%C3%A9");
    EXPECT_NE(schema::collection_graph_iri("a b"), schema::collection_graph_iri("a%20b"));
    EXPECT_EQ(schema::skolem_iri("b1"), "urn:glassbox:bnode:b1");
}

// ---- the change number ----------------------------------------------------------------------

class ChangeNumberTest : public testing::GraphStoreFixture {
protected:
    std::int64_t version() {
        auto v = collection_version(*db_);
        EXPECT_TRUE(v) << v.error().message;
        return v ? *v : -1;
    }

    void load(const std::string& source, const std::vector<Triple>& facts, bool replace = false) {
        const std::string name = "load-" + std::to_string(++loads_);
        auto staged = store_->stage(name, file_source(source), facts);
        ASSERT_TRUE(staged) << staged.error().message;
        KnowledgeChange change;
        auto counts = replace ? store_->commit_staged(name, change) : store_->commit_staged(name);
        ASSERT_TRUE(counts) << counts.error().message;
    }

    // Asserts the number moved past `*before` and keeps the new one there.
    void expect_moved(std::int64_t& before, const char* what) {
        const auto now = version();
        EXPECT_GT(now, before) << what;
        before = now;
    }

    int loads_ = 0;
};

TEST_P(ChangeNumberTest, StartsAtTheCreationTimeAndIsNotYetMirrored) {
    // Microseconds since the epoch: a collection made again never repeats an old number.
    EXPECT_GT(version(), 1'700'000'000'000'000);
    auto mirrored = mirrored_version(*db_);
    ASSERT_TRUE(mirrored) << mirrored.error().message;
    EXPECT_EQ(*mirrored, 0);
}

TEST_P(ChangeNumberTest, MovesOnEveryKindOfWrite) {
    auto v = version();
    load("a.nt", {fact(1), fact(2)});
    expect_moved(v, "a load's commit");
    load("a.nt", {fact(1), fact(2)});
    expect_moved(v, "the same load again (its source registered again)");
    load("a.nt", {fact(1), fact(3)}, true);
    expect_moved(v, "a replacing commit");
    auto source = store_->register_source(file_source("b.nt", 1));
    ASSERT_TRUE(source) << source.error().message;
    expect_moved(v, "a source registered");
    ASSERT_TRUE(store_->insert(*source, std::vector<Triple>{make_triple(
                                            ex("s1"), iri(vocab::kRdfsLabel), literal("one"))}));
    expect_moved(v, "a label inserted");
    ASSERT_TRUE(store_->insert(*source, std::vector<Triple>{fact(1)}));
    expect_moved(v, "a present fact given another source");
    ASSERT_TRUE(store_->forget_fact(fact(3)));
    expect_moved(v, "forget fact");
    ASSERT_TRUE(store_->forget_source("file:///data/b.nt"));
    expect_moved(v, "forget source");
}

TEST_P(ChangeNumberTest, MovesWhenADocumentIsForgotten) {
    auto documents = DocumentStore::open(*db_);
    ASSERT_TRUE(documents) << documents.error().message;
    DocumentRecord doc;
    doc.uri = "file:///docs/light.md";
    doc.title = "Greyhollow Light";
    doc.text = "Greyhollow Light stands on the cape.";
    std::vector<ChunkRecord> chunks{{0, 0, doc.text.size(), doc.text}};
    ASSERT_TRUE((*documents)->put(doc, chunks));
    SourceRecord chunk{doc.uri + "#chunk-0", SourceKind::kChunk, doc.uri, 2, "", ""};
    auto chunk_id = store_->register_source(chunk);
    ASSERT_TRUE(chunk_id) << chunk_id.error().message;
    ASSERT_TRUE(store_->insert(*chunk_id, std::vector<Triple>{fact(7)}));
    auto v = version();
    auto change = store_->forget_document(doc.uri);
    ASSERT_TRUE(change) << change.error().message;
    expect_moved(v, "forget document");
}

TEST_P(ChangeNumberTest, ReadsAndFailedWritesLeaveItAlone) {
    load("a.nt", {fact(1), make_triple(ex("s1"), iri(vocab::kRdfsLabel), literal("one"))});
    const auto v = version();
    ASSERT_TRUE(store_->match(TriplePattern{}));
    ASSERT_TRUE(store_->labels(std::vector<Term>{ex("s1")}));
    ASSERT_TRUE(store_->sources_of(fact(1)));
    ASSERT_TRUE(store_->stats());
    ASSERT_TRUE(store_->entities_after(0, 10));
    ASSERT_TRUE(export_collection(*db_, *store_, "c"));
    ASSERT_TRUE(record_mirrored(*db_, v));
    EXPECT_FALSE(store_->forget_fact(fact(99)));
    EXPECT_FALSE(store_->forget_source("file:///data/none.nt"));
    // Staging alone shows nothing yet.
    ASSERT_TRUE(store_->stage("pending", file_source("c.nt"), std::vector<Triple>{fact(5)}));
    EXPECT_EQ(version(), v);
    auto mirrored = mirrored_version(*db_);
    ASSERT_TRUE(mirrored);
    EXPECT_EQ(*mirrored, v);
}

GLASSBOX_KNOWLEDGE_BACKENDS(ChangeNumberTest);

// ---- the export ------------------------------------------------------------------------------

class CollectionExportTest : public ChangeNumberTest {};

TEST_P(CollectionExportTest, HoldsEveryFactOnceEveryLabelAndEachSource) {
    const Triple label = make_triple(ex("s1"), iri(vocab::kRdfsLabel), lang_literal("One", "en"));
    // fact(1) again in a named graph (one statement in the engine's graph), and a fact stated
    // in a named graph only (flattened into it).
    const Triple in_graph = make_triple(ex("s1"), ex("p"), ex("o"), std::string("http://g/1"));
    const Triple only_in_graph = make_triple(ex("s9"), ex("p"), ex("o"), std::string("http://g/1"));
    const Triple quoted_fact = make_triple(schema::quoted(fact(2)), ex("says"), literal("x"));
    load("a.nt", {fact(1), fact(2), label, in_graph, only_in_graph, quoted_fact});
    SourceRecord dated = file_source("b.nt", 1);
    dated.source_date = "2026-01-02";
    dated.loaded_at = "2026-11-29T08:00:00Z";
    auto b = store_->register_source(dated);
    ASSERT_TRUE(b);
    ASSERT_TRUE(store_->insert(
        *b, std::vector<Triple>{make_triple(ex("s3"), ex("year"), schema::xsd_integer(1856)),
                                make_triple(ex("s3"), ex("name"), literal("a \"q\"\n"))}));
    auto out = export_collection(*db_, *store_, "my coll");
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ(out->version, version());
    EXPECT_EQ(out->skipped, 1u);
    ASSERT_EQ(out->parts.size(), 1u);

    const auto typed = [](const char* v, std::string_view dt) {
        return schema::typed_literal(v, dt);
    };
    std::multiset<std::string> want;
    for (const auto& t : {fact(1), fact(2), label, make_triple(ex("s9"), ex("p"), ex("o")),
                          make_triple(ex("s3"), ex("year"), schema::xsd_integer(1856)),
                          make_triple(ex("s3"), ex("name"), literal("a \"q\"\n"))})
        want.insert(schema::to_ntriples(t));
    const Term a = iri("file:///data/a.nt");
    const Term bt = iri("file:///data/b.nt");
    for (const auto& t :
         {make_triple(a, iri(vocab::kRdfType), iri(vocab::kProvEntity)),
          make_triple(a, iri(vocab::kDataTier), schema::xsd_integer(2)),
          make_triple(a, iri(vocab::kProvGeneratedAtTime),
                      typed("2026-11-30T10:00:00Z", schema::kXsdDateTime)),
          make_triple(a, iri(vocab::kCollection), literal("my coll")),
          make_triple(bt, iri(vocab::kRdfType), iri(vocab::kProvEntity)),
          make_triple(bt, iri(vocab::kDataTier), schema::xsd_integer(1)),
          make_triple(bt, iri(vocab::kProvGeneratedAtTime),
                      typed("2026-11-29T08:00:00Z", schema::kXsdDateTime)),
          make_triple(bt, iri(vocab::kDctermsDate), typed("2026-01-02", schema::kXsdDate)),
          make_triple(bt, iri(vocab::kCollection), literal("my coll"))})
        want.insert(schema::to_ntriples(t));
    EXPECT_EQ(statements(out->parts), want);
    EXPECT_EQ(out->triples, want.size());
}

TEST_P(CollectionExportTest, SplitsIntoPartsOfTheGivenSizeWithBlankNodesAsSkolemIris) {
    std::vector<Triple> facts;
    facts.reserve(25);
    for (int i = 0; i < 24; ++i) facts.push_back(fact(i));
    facts.push_back(make_triple(schema::blank("b1"), ex("p"), ex("o")));
    load("a.nt", facts);
    auto whole = export_collection(*db_, *store_, "c");
    ASSERT_TRUE(whole) << whole.error().message;
    EXPECT_FALSE(whole->skolemized);
    auto parts = export_collection(*db_, *store_, "c", 10);
    ASSERT_TRUE(parts) << parts.error().message;
    EXPECT_TRUE(parts->skolemized);
    EXPECT_EQ(whole->triples, 25u + 4u);
    ASSERT_EQ(parts->parts.size(), 3u);
    auto split = statements(parts->parts);
    auto one = statements(whole->parts);
    const std::string blank = "_:b1 <http://example.org/p> <http://example.org/o> .";
    const std::string skolem =
        "<urn:glassbox:bnode:b1> <http://example.org/p> <http://example.org/o> .";
    ASSERT_EQ(one.count(blank), 1u);
    ASSERT_EQ(split.count(skolem), 1u);
    one.erase(blank);
    split.erase(skolem);
    EXPECT_EQ(split, one);
    auto fits = export_collection(*db_, *store_, "c", 30);  // 25 quads + 5 per source
    ASSERT_TRUE(fits);
    EXPECT_FALSE(fits->skolemized);
    EXPECT_EQ(fits->parts.size(), 1u);
}

TEST_P(CollectionExportTest, AnEmptyCollectionHasNoPart) {
    auto out = export_collection(*db_, *store_, "c");
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_TRUE(out->parts.empty());
    EXPECT_EQ(out->triples, 0u);
}

GLASSBOX_KNOWLEDGE_BACKENDS(CollectionExportTest);

// ---- the mirror pass -------------------------------------------------------------------------

// A graph store in memory; `down` fails every call as an unreachable engine does.
struct FakeEngine final : MirrorEngine {
    std::map<std::string, std::multiset<std::string>> graphs;
    bool down = false;
    int puts = 0;

    base::Result<void> unreachable() const {
        return base::make_error(ErrorType::kServiceUnavailable, "engine down");
    }
    base::Result<void> put_graph(std::string_view graph, std::string_view ntriples) override {
        if (down) return unreachable();
        ++puts;
        graphs[std::string(graph)] = statements({std::string(ntriples)});
        return {};
    }
    base::Result<void> post_graph(std::string_view graph, std::string_view ntriples) override {
        if (down) return unreachable();
        graphs[std::string(graph)].merge(statements({std::string(ntriples)}));
        return {};
    }
    base::Result<void> delete_graph(std::string_view graph) override {
        if (down) return unreachable();
        graphs.erase(std::string(graph));
        return {};
    }
    base::Result<std::vector<std::string>> collection_graphs() override {
        if (down) return base::make_error(ErrorType::kServiceUnavailable, "engine down");
        std::vector<std::string> out;
        for (const auto& [graph, triples] : graphs) out.push_back(graph);
        return out;
    }
};

class SparqlMirrorTest : public store_testing::KnowledgeTest {
protected:
    void SetUp() override {
        KnowledgeTest::SetUp();
        if (IsSkipped()) return;
        std::filesystem::create_directories(site_->dir() / "knowledge");
        bases_ = std::make_unique<KnowledgeBases>(site_->dir(),
                                                  on_postgres() ? site_->dsn() : std::string());
        auto engine = std::make_unique<FakeEngine>();
        engine_ = engine.get();
        status_ = std::make_shared<SparqlMirrorStatus>();
        mirror_ = std::make_unique<SparqlMirror>(*bases_, std::move(engine), SparqlMirrorConfig{},
                                                 status_);
    }
    void TearDown() override {
        mirror_.reset();
        bases_.reset();
        KnowledgeTest::TearDown();
    }

    void add(const std::string& collection, const std::string& source,
             const std::vector<Triple>& facts) {
        auto kb = bases_->get(collection, true);
        ASSERT_TRUE(kb) << kb.error().message;
        auto held = (*kb)->lock();
        ASSERT_TRUE(held);
        auto id = (*kb)->graph().register_source(file_source(source));
        ASSERT_TRUE(id) << id.error().message;
        ASSERT_TRUE((*kb)->graph().insert(*id, facts));
    }

    std::size_t graph_size(const std::string& collection) {
        const auto it = engine_->graphs.find(schema::collection_graph_iri(collection));
        return it == engine_->graphs.end() ? 0 : it->second.size();
    }

    schema::StoreSparqlMirrorStats stats() {
        auto out = sparql_mirror_stats(*bases_, status_.get(), 100);
        EXPECT_TRUE(out) << out.error().message;
        return out ? *out : schema::StoreSparqlMirrorStats{};
    }

    std::unique_ptr<KnowledgeBases> bases_;
    FakeEngine* engine_ = nullptr;
    std::shared_ptr<SparqlMirrorStatus> status_;
    std::unique_ptr<SparqlMirror> mirror_;
};

TEST_P(SparqlMirrorTest, SendsEachChangedCollectionOnceAndRecordsIt) {
    add("alpha", "a.nt", {fact(1), fact(2)});
    add("beta", "b.nt", {fact(3)});
    auto before = stats();
    EXPECT_TRUE(before.configured);
    EXPECT_EQ(before.pending, 2u);
    ASSERT_EQ(before.collections.size(), 2u);
    EXPECT_EQ(before.collections[0].name, "alpha");
    EXPECT_EQ(before.collections[0].mirrored, 0);

    auto pass = mirror_->mirror_once();
    EXPECT_EQ(pass.sent, 2u);
    EXPECT_EQ(pass.failed, 0u);
    EXPECT_EQ(graph_size("alpha"), 2u + 4u);  // two facts, four triples of one source
    EXPECT_EQ(graph_size("beta"), 1u + 4u);
    auto after = stats();
    EXPECT_EQ(after.pending, 0u);
    EXPECT_EQ(after.collections[0].mirrored, after.collections[0].version);

    EXPECT_EQ(mirror_->mirror_once().sent, 0u);  // nothing changed: nothing sent
    EXPECT_EQ(engine_->puts, 2);
    add("alpha", "a.nt", {fact(4)});
    EXPECT_EQ(mirror_->mirror_once().sent, 1u);
    EXPECT_EQ(graph_size("alpha"), 3u + 4u);
    EXPECT_EQ(engine_->puts, 3);
}

TEST_P(SparqlMirrorTest, ARestartedMirrorSendsOnlyWhatChanged) {
    add("alpha", "a.nt", {fact(1)});
    add("beta", "b.nt", {fact(2)});
    ASSERT_EQ(mirror_->mirror_once().sent, 2u);
    add("beta", "b.nt", {fact(3)});
    auto engine = std::make_unique<FakeEngine>();
    engine->graphs = engine_->graphs;
    FakeEngine* second = engine.get();
    SparqlMirror restarted(*bases_, std::move(engine), SparqlMirrorConfig{},
                           std::make_shared<SparqlMirrorStatus>());
    EXPECT_EQ(restarted.mirror_once().sent, 1u);
    EXPECT_EQ(second->puts, 1);
    EXPECT_EQ(second->graphs[schema::collection_graph_iri("beta")].size(), 2u + 4u);
}

TEST_P(SparqlMirrorTest, AnEngineDownIsCountedAndCaughtUpWhenItReturns) {
    add("alpha", "a.nt", {fact(1)});
    engine_->down = true;
    auto pass = mirror_->mirror_once();
    EXPECT_EQ(pass.sent, 0u);
    EXPECT_GE(pass.failed, 1u);
    auto down = stats();
    EXPECT_GE(down.failures, 1u);
    EXPECT_NE(down.last_error.find("engine down"), std::string::npos);
    EXPECT_EQ(down.pending, 1u);
    add("alpha", "a.nt", {fact(2)});
    ASSERT_TRUE(bases_->remove("alpha", no_step, no_step));
    add("gamma", "g.nt", {fact(3)});
    engine_->down = false;
    engine_->graphs[schema::collection_graph_iri("old")] = {"<x:a> <x:b> <x:c> ."};
    pass = mirror_->mirror_once();
    EXPECT_EQ(pass.failed, 0u);
    EXPECT_EQ(pass.sent, 1u);
    EXPECT_EQ(graph_size("gamma"), 1u + 4u);
    // Graphs of collections that are gone (found by the sweep after the failure) are deleted.
    EXPECT_EQ(engine_->graphs.count(schema::collection_graph_iri("old")), 0u);
    EXPECT_EQ(engine_->graphs.count(schema::collection_graph_iri("alpha")), 0u);
    EXPECT_EQ(stats().pending, 0u);
}

TEST_P(SparqlMirrorTest, ADeletedCollectionsGraphIsDeleted) {
    add("alpha", "a.nt", {fact(1)});
    add("beta", "b.nt", {fact(2)});
    ASSERT_EQ(mirror_->mirror_once().sent, 2u);
    ASSERT_TRUE(bases_->remove("alpha", no_step, no_step));
    auto pass = mirror_->mirror_once();
    EXPECT_EQ(pass.deleted, 1u);
    EXPECT_EQ(engine_->graphs.count(schema::collection_graph_iri("alpha")), 0u);
    EXPECT_EQ(graph_size("beta"), 1u + 4u);
}

TEST_P(SparqlMirrorTest, ForgettingEverythingEmptiesTheGraph) {
    add("alpha", "a.nt", {fact(1)});
    ASSERT_EQ(mirror_->mirror_once().sent, 1u);
    {
        auto kb = bases_->get("alpha", false);
        ASSERT_TRUE(kb);
        auto held = (*kb)->lock();
        ASSERT_TRUE(held);
        ASSERT_TRUE((*kb)->graph().forget_source("file:///data/a.nt"));
    }
    EXPECT_EQ(mirror_->mirror_once().sent, 1u);
    EXPECT_EQ(engine_->graphs.count(schema::collection_graph_iri("alpha")), 0u);
}

TEST_P(SparqlMirrorTest, NotConfiguredStatsSayIt) {
    auto out = sparql_mirror_stats(*bases_, nullptr, 100);
    ASSERT_TRUE(out);
    EXPECT_FALSE(out->configured);
    EXPECT_TRUE(out->collections.empty());
}

GLASSBOX_KNOWLEDGE_BACKENDS(SparqlMirrorTest);

}  // namespace
}  // namespace glassbox::store
