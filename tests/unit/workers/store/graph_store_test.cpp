// Tests for the knowledge-graph store: term round trips, pattern shapes, graphs, sources and
// tiers, labels, entity paging, stats, provenance export and all-or-nothing inserts.
#include "workers/store/graph_store.hpp"
#include "tests/support/knowledge_site.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <span>

#include <gtest/gtest.h>

#include "schema/vocabulary.hpp"
#include "tests/unit/workers/store/graph_terms.hpp"

namespace glassbox::store {
namespace {

using namespace graph_terms;
using schema::typed_literal;
namespace vocab = schema::vocab;

// A fresh knowledge base per test, on each backend (a SQLite file in WAL mode, or a PostgreSQL
// schema); a second site_->connect() is another process using it.
class GraphStoreTest : public store_testing::KnowledgeTest {
protected:
    void SetUp() override {
        KnowledgeTest::SetUp();
        if (IsSkipped()) return;
        auto db = site_->connect();
        ASSERT_TRUE(db) << db.error().message;
        db_ = std::move(*db);
        auto store = GraphStore::open(*db_);
        ASSERT_TRUE(store) << store.error().message;
        store_ = std::move(*store);
    }
    void TearDown() override {
        store_.reset();
        db_.reset();
        KnowledgeTest::TearDown();
    }

    // Another connection to the same knowledge base with a store of its own (another process).
    struct Other {
        std::unique_ptr<storage::sql::Connection> db;
        std::unique_ptr<GraphStore> store;
    };
    Other other_process(const GraphStoreOptions& options = {}) {
        Other other;
        auto db = site_->connect();
        EXPECT_TRUE(db) << db.error().message;
        if (!db) return other;
        other.db = std::move(*db);
        auto store = GraphStore::open(*other.db, options);
        EXPECT_TRUE(store) << store.error().message;
        if (store) other.store = std::move(*store);
        return other;
    }

    std::int64_t source(const std::string& uri, std::uint32_t tier = 3,
                        SourceKind kind = SourceKind::kFile, const std::string& document = {}) {
        SourceRecord record;
        record.uri = uri;
        record.kind = kind;
        record.document_uri = document;
        record.tier = tier;
        record.loaded_at = "2026-11-22T05:00:00Z";
        record.media_type = "application/n-triples";
        auto id = store_->register_source(record);
        EXPECT_TRUE(id) << id.error().message;
        return id ? *id : -1;
    }

    InsertCounts insert(std::int64_t source_id, const std::vector<Triple>& triples) {
        auto counts = store_->insert(source_id, triples);
        EXPECT_TRUE(counts) << counts.error().message;
        return counts ? *counts : InsertCounts{};
    }

    // A second store on this test's connection, with other options, and a tier-2 file source
    // registered through it (nulls when either fails, with the reason reported).
    std::pair<std::unique_ptr<GraphStore>, std::optional<std::int64_t>> store_with(
        const GraphStoreOptions& options, const std::string& uri) {
        auto other = GraphStore::open(*db_, options);
        EXPECT_TRUE(other) << other.error().message;
        if (!other) return {nullptr, std::nullopt};
        auto id = (*other)->register_source(SourceRecord{uri, SourceKind::kFile, {}, 2, {}, {}});
        EXPECT_TRUE(id) << id.error().message;
        if (!id) return {nullptr, std::nullopt};
        return {std::move(*other), *id};
    }

    std::vector<Triple> match(const TriplePattern& pattern, std::uint32_t limit = 0) {
        auto found = store_->match(pattern, limit);
        EXPECT_TRUE(found) << found.error().message;
        return found ? *found : std::vector<Triple>{};
    }

    GraphStats stats() {
        auto s = store_->stats();
        EXPECT_TRUE(s) << s.error().message;
        return s ? *s : GraphStats{};
    }

    std::unique_ptr<storage::sql::Connection> db_;
    std::unique_ptr<GraphStore> store_;
};

std::vector<Triple> sorted(std::vector<Triple> triples) {
    std::sort(triples.begin(), triples.end(), [](const Triple& a, const Triple& b) {
        return schema::to_nquads(a) < schema::to_nquads(b);
    });
    return triples;
}

bool matches(const TriplePattern& pattern, const Triple& t) {
    if (pattern.s && *pattern.s != t.s) return false;
    if (pattern.p && *pattern.p != t.p) return false;
    if (pattern.o && *pattern.o != t.o) return false;
    if (pattern.g) {
        if (pattern.g->empty()) return !t.graph.has_value();
        return t.graph == *pattern.g;
    }
    return true;
}

TEST_P(GraphStoreTest, EveryTermKindRoundTrips) {
    const Term quoted = schema::quoted(make_triple(ex("alice"), ex("knows"), ex("bob")));
    const Term nested =
        schema::quoted(make_triple(quoted, ex("statedBy"), lang_literal("Carol", "en")));
    const std::vector<Term> objects = {
        ex("bob"),
        schema::blank("b0"),
        literal("plain \"quoted\" text\nwith a newline"),
        literal(""),
        typed_literal("42", schema::kXsdInteger),
        typed_literal("2026-11-22T05:00:00Z", schema::kXsdDateTime),
        lang_literal("chat", "fr"),
        lang_literal("chat", "en-GB"),
        quoted,
        nested,
    };
    std::vector<Triple> triples;
    for (std::size_t i = 0; i < objects.size(); ++i) {
        triples.push_back(make_triple(ex("s" + std::to_string(i)), ex("p"), objects[i]));
    }
    triples.push_back(make_triple(schema::blank("b0"), ex("p"), ex("o")));
    triples.push_back(make_triple(quoted, ex("confidence"), schema::xsd_double(0.5)));
    triples.push_back(make_triple(nested, ex("p"), ex("o")));
    const auto src = source("file:///terms.nt");
    EXPECT_EQ(insert(src, triples).added, triples.size());

    for (const auto& t : triples) {
        const auto found = match(TriplePattern{t.s, t.p, std::nullopt, std::nullopt});
        ASSERT_EQ(found.size(), 1u) << schema::to_ntriples(t);
        EXPECT_EQ(found[0], t) << schema::to_ntriples(t) << " came back as "
                               << schema::to_ntriples(found[0]);
        // The same term by id.
        auto id = store_->find_term(t.o);
        ASSERT_TRUE(id && id->has_value()) << schema::to_ntriples(t.o);
        const std::int64_t ids[] = {**id};
        auto back = store_->terms(ids);
        ASSERT_TRUE(back) << back.error().message;
        ASSERT_EQ(back->size(), 1u);
        EXPECT_EQ((*back)[0], t.o);
    }
    // A literal and an IRI with the same text are different terms, as are "chat"@fr and "chat".
    EXPECT_TRUE(
        match(TriplePattern{std::nullopt, std::nullopt, literal("chat"), std::nullopt}).empty());
    EXPECT_EQ(
        match(TriplePattern{std::nullopt, std::nullopt, lang_literal("chat", "fr"), std::nullopt})
            .size(),
        1u);
}

TEST_P(GraphStoreTest, UnknownIdIsNotFound) {
    const std::int64_t ids[] = {987654};
    auto back = store_->terms(ids);
    ASSERT_FALSE(back);
    EXPECT_EQ(back.error().type, base::ErrorType::kNotFound);
}

// 6 subjects × 3 predicates × 4 objects less a third, those of s1 and s4 in a named graph.
std::vector<Triple> shape_triples() {
    std::vector<Triple> triples;
    for (int s = 0; s < 6; ++s) {
        for (int p = 0; p < 3; ++p) {
            for (int o = 0; o < 4; ++o) {
                if ((s + p + o) % 3 == 0) continue;
                const Term object =
                    o == 3 ? literal("v" + std::to_string(s)) : ex("o" + std::to_string(o));
                std::optional<std::string> graph;
                if (s % 3 == 1) graph = "http://example.org/g1";
                triples.push_back(make_triple(ex("s" + std::to_string(s)),
                                              ex("p" + std::to_string(p)), object, graph));
            }
        }
    }
    return triples;
}

// Every pattern shape over shape_triples' terms, terms the store lacks included.
std::vector<TriplePattern> shape_patterns() {
    const std::vector<std::optional<Term>> subjects = {std::nullopt, ex("s1"), ex("s2"),
                                                       ex("missing")};
    const std::vector<std::optional<Term>> predicates = {std::nullopt, ex("p0"), ex("p2")};
    const std::vector<std::optional<Term>> objects = {std::nullopt, ex("o1"), literal("v4"),
                                                      literal("missing")};
    const std::vector<std::optional<std::string>> graphs = {
        std::nullopt, std::string{}, "http://example.org/g1", "http://example.org/nowhere"};
    std::vector<TriplePattern> patterns;
    for (const auto& s : subjects) {
        for (const auto& p : predicates) {
            for (const auto& o : objects) {
                for (const auto& g : graphs) patterns.push_back(TriplePattern{s, p, o, g});
            }
        }
    }
    return patterns;
}

TEST_P(GraphStoreTest, EveryPatternShapeAnswersWhatABruteForceFilterFinds) {
    const auto triples = shape_triples();
    insert(source("file:///shapes.nt"), triples);
    int shapes_with_answers = 0;
    for (const auto& pattern : shape_patterns()) {
        const auto& [s, p, o, g] = pattern;
        std::vector<Triple> expected;
        for (const auto& t : triples) {
            if (matches(pattern, t)) expected.push_back(t);
        }
        const auto found = match(pattern);
        EXPECT_EQ(sorted(found), sorted(expected))
            << "s=" << (s ? schema::to_ntriples(*s) : "?")
            << " p=" << (p ? schema::to_ntriples(*p) : "?")
            << " o=" << (o ? schema::to_ntriples(*o) : "?") << " g=" << (g ? "<" + *g + ">" : "?");
        if (!expected.empty()) ++shapes_with_answers;
    }
    EXPECT_GT(shapes_with_answers, 40)
        << "the fixture should exercise most shapes with non-empty answers";
}

// triples-batch's `rows`: each pattern's first rows are those the limit alone answers first
// (their ids too), and its count is its number of matches up to the limit, however many rows
// were read (on SQLite the rest are counted, not read).
TEST_P(GraphStoreTest, FirstRowsAreAPrefixOfTheLimitsAnswerAndCountsItsMatches) {
    insert(source("file:///shapes.nt"), shape_triples());
    const auto patterns = shape_patterns();
    int cut = 0;
    for (const std::uint32_t limit : {0u, 5u}) {
        std::vector<std::vector<std::int64_t>> full_ids;
        auto full = store_->match_batch(patterns, limit, nullptr, &full_ids);
        ASSERT_TRUE(full) << full.error().message;
        for (const std::uint32_t rows : {0u, 1u, 3u, 5u}) {
            GraphStore::FirstRows first{rows, {}};
            std::vector<std::vector<std::int64_t>> ids;
            auto found = store_->match_batch(patterns, limit, nullptr, &ids, &first);
            ASSERT_TRUE(found) << found.error().message;
            ASSERT_EQ(found->size(), patterns.size());
            ASSERT_EQ(first.counts.size(), patterns.size());
            for (std::size_t i = 0; i < patterns.size(); ++i) {
                const auto& all = (*full)[i];
                const auto kept = std::min<std::ptrdiff_t>(rows, std::ssize(all));
                EXPECT_EQ((*found)[i], std::vector<Triple>(all.begin(), all.begin() + kept))
                    << "pattern " << i << ", limit " << limit << ", rows " << rows;
                EXPECT_EQ(ids[i], std::vector<std::int64_t>(full_ids[i].begin(),
                                                            full_ids[i].begin() + 3 * kept));
                EXPECT_EQ(first.counts[i], all.size()) << "pattern " << i << ", limit " << limit;
                if (kept < std::ssize(all)) ++cut;
            }
        }
    }
    EXPECT_GT(cut, 100) << "the fixture should cut many patterns' answers";
}

TEST_P(GraphStoreTest, LimitCapsAndBatchAnswersEachPattern) {
    std::vector<Triple> triples;
    for (int i = 0; i < 50; ++i)
        triples.push_back(make_triple(ex("hub"), ex("links"), ex("n" + std::to_string(i))));
    insert(source("file:///hub.nt"), triples);
    EXPECT_EQ(match(TriplePattern{ex("hub"), std::nullopt, std::nullopt, std::nullopt}, 7).size(),
              7u);
    EXPECT_EQ(match(TriplePattern{ex("hub"), std::nullopt, std::nullopt, std::nullopt}, 0).size(),
              50u);

    const std::vector<TriplePattern> patterns = {
        TriplePattern{ex("hub"), std::nullopt, std::nullopt, std::nullopt},
        TriplePattern{std::nullopt, std::nullopt, ex("n3"), std::nullopt},
        TriplePattern{ex("nobody"), std::nullopt, std::nullopt, std::nullopt},
    };
    auto batch = store_->match_batch(patterns, 10);
    ASSERT_TRUE(batch) << batch.error().message;
    ASSERT_EQ(batch->size(), 3u);
    EXPECT_EQ((*batch)[0].size(), 10u);
    ASSERT_EQ((*batch)[1].size(), 1u);
    EXPECT_EQ((*batch)[1][0], make_triple(ex("hub"), ex("links"), ex("n3")));
    EXPECT_TRUE((*batch)[2].empty());
}

TEST_P(GraphStoreTest, StreamingDeliversEveryMatchInBatchesAndStopsWhenAsked) {
    std::vector<Triple> triples;
    for (int i = 0; i < 2'500; ++i)
        triples.push_back(make_triple(ex("n" + std::to_string(i)), ex("p"), literal("x")));
    insert(source("file:///many.nt"), triples);
    const TriplePattern all{std::nullopt, ex("p"), std::nullopt, std::nullopt};
    std::vector<std::size_t> sizes;
    std::vector<Triple> seen;
    auto r = store_->match_each(all, 1'000, [&](std::span<const Triple> batch) {
        sizes.push_back(batch.size());
        seen.insert(seen.end(), batch.begin(), batch.end());
        // The store may be used from the callback.
        auto again =
            store_->match(TriplePattern{batch.front().s, std::nullopt, std::nullopt, std::nullopt});
        EXPECT_TRUE(again && again->size() == 1u);
        return true;
    });
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(sizes, (std::vector<std::size_t>{1'000, 1'000, 500}));
    EXPECT_EQ(sorted(seen), sorted(triples));

    int calls = 0;
    r = store_->match_each(all, 100, [&](std::span<const Triple>) { return ++calls < 2; });
    ASSERT_TRUE(r);
    EXPECT_EQ(calls, 2);
}

TEST_P(GraphStoreTest, QuotedTriplesMatchInSubjectAndObjectPosition) {
    const Triple fact = make_triple(ex("alice"), ex("worksFor"), ex("acme"));
    const Term statement = schema::quoted(fact);
    const std::vector<Triple> triples = {
        fact,
        make_triple(statement, ex("confidence"), typed_literal("0.9", schema::kXsdDecimal)),
        make_triple(ex("bob"), ex("claims"), statement),
        make_triple(ex("bob"), ex("claims"),
                    schema::quoted(make_triple(ex("alice"), ex("worksFor"), ex("other")))),
    };
    insert(source("file:///rdf12.nt"), triples);
    const auto about = match(TriplePattern{statement, std::nullopt, std::nullopt, std::nullopt});
    ASSERT_EQ(about.size(), 1u);
    EXPECT_EQ(about[0], triples[1]);
    // Matched by value: a quoted triple built separately with the same parts.
    const auto claimed = match(TriplePattern{
        std::nullopt, ex("claims"),
        schema::quoted(make_triple(ex("alice"), ex("worksFor"), ex("acme"))), std::nullopt});
    ASSERT_EQ(claimed.size(), 1u);
    EXPECT_EQ(claimed[0].s, ex("bob"));
    // A quoted triple whose parts were never stored matches nothing, without an error.
    EXPECT_TRUE(
        match(TriplePattern{schema::quoted(make_triple(ex("zed"), ex("worksFor"), ex("acme"))),
                            std::nullopt, std::nullopt, std::nullopt})
            .empty());
}

TEST_P(GraphStoreTest, NamedGraphsAreSeparateFromTheDefaultGraph) {
    const auto src = source("file:///graphs.nq");
    const std::vector<Triple> triples = {
        make_triple(ex("a"), ex("p"), ex("b")),
        make_triple(ex("a"), ex("p"), ex("b"), "http://example.org/g1"),
        make_triple(ex("a"), ex("p"), ex("c"), "http://example.org/g2"),
    };
    EXPECT_EQ(insert(src, triples).added, 3u) << "the same triple in two graphs is two quads";
    const std::optional<Term> a = ex("a");
    EXPECT_EQ(match(TriplePattern{a, std::nullopt, std::nullopt, std::nullopt}).size(), 3u);
    EXPECT_EQ(match(TriplePattern{a, std::nullopt, std::nullopt, std::string{}}),
              (std::vector<Triple>{triples[0]}));
    EXPECT_EQ(match(TriplePattern{a, std::nullopt, std::nullopt, "http://example.org/g1"}),
              (std::vector<Triple>{triples[1]}));
    EXPECT_EQ(
        match(TriplePattern{std::nullopt, std::nullopt, std::nullopt, "http://example.org/g2"}),
        (std::vector<Triple>{triples[2]}));
    EXPECT_TRUE(
        match(TriplePattern{a, std::nullopt, std::nullopt, "http://example.org/g3"}).empty());
    EXPECT_EQ(stats().graphs, 2u);
}

TEST_P(GraphStoreTest, ReloadingTheSameFileAddsNothing) {
    const auto src = source("file:///kb.nt");
    const std::vector<Triple> triples = {
        make_triple(ex("a"), ex("p"), ex("b")), make_triple(ex("a"), ex("p"), literal("x")),
        make_triple(ex("a"), ex("p"), literal("x")),  // a repeat inside one load
    };
    const auto first = insert(src, triples);
    EXPECT_EQ(first.added, 2u);
    EXPECT_EQ(first.already_present, 1u);
    const auto before = stats();
    EXPECT_EQ(source("file:///kb.nt"), src) << "registering again is idempotent by uri";
    const auto second = insert(src, triples);
    EXPECT_EQ(second.added, 0u);
    EXPECT_EQ(second.already_present, 3u);
    EXPECT_EQ(stats(), before);
    auto sources = store_->sources_of(triples[0]);
    ASSERT_TRUE(sources);
    EXPECT_EQ(sources->size(), 1u) << "no duplicate fact-to-source link";
}

TEST_P(GraphStoreTest, AFactLoadedFromTwoSourcesHasBothBestTierFirst) {
    const Triple fact = make_triple(ex("paris"), ex("capitalOf"), ex("france"));
    const auto crowd = source("file:///crowd.nt", 3);
    const auto chunk = source("urn:chunk:doc1#0", 2, SourceKind::kChunk, "urn:doc:doc1");
    EXPECT_EQ(insert(crowd, {fact}).added, 1u);
    const auto again = insert(chunk, {fact, fact});
    EXPECT_EQ(again.added, 0u);
    EXPECT_EQ(again.already_present, 2u);
    insert(chunk, {fact});  // a second link from the same source is not added
    auto sources = store_->sources_of(fact);
    ASSERT_TRUE(sources) << sources.error().message;
    ASSERT_EQ(sources->size(), 2u);
    EXPECT_EQ((*sources)[0].uri, "urn:chunk:doc1#0");
    EXPECT_EQ((*sources)[0].kind, SourceKind::kChunk);
    EXPECT_EQ((*sources)[0].document_uri, "urn:doc:doc1");
    EXPECT_EQ((*sources)[0].tier, 2u);
    EXPECT_EQ((*sources)[0].loaded_at, "2026-11-22T05:00:00Z");
    EXPECT_EQ((*sources)[1].uri, "file:///crowd.nt");
    EXPECT_EQ((*sources)[1].tier, 3u);
    // The fact is one quad, and it counts once, under its best tier.
    const auto s = stats();
    EXPECT_EQ(s.quads, 1u);
    EXPECT_EQ(s.facts_per_tier[2], 1u);
    EXPECT_EQ(s.facts_per_tier[3], 0u);
    // Not stored: no sources, no error. Another graph is another fact.
    auto none = store_->sources_of(
        make_triple(ex("paris"), ex("capitalOf"), ex("france"), "http://example.org/g"));
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

TEST_P(GraphStoreTest, SourcesOfEachFactAreWhatSourcesOfGivesEach) {
    const Triple shared = make_triple(ex("paris"), ex("capitalOf"), ex("france"));
    const Triple named = make_triple(ex("paris"), ex("capitalOf"), ex("france"), "http://ex.org/g");
    const Triple dated = make_triple(ex("paris"), ex("founded"), literal("-250"));
    const Triple quoted = make_triple(schema::quoted(shared), ex("statedBy"), ex("atlas"));
    const auto crowd = source("file:///crowd.nt", 3);
    const auto chunk = source("urn:chunk:doc1#0", 2, SourceKind::kChunk, "urn:doc:doc1");
    const auto atlas = source("file:///atlas.nt", 1);
    insert(crowd, {shared, dated, quoted});
    insert(chunk, {shared, named});
    insert(atlas, {shared});
    const std::vector<Triple> facts = {
        shared, make_triple(ex("paris"), ex("capitalOf"), ex("germany")),  // terms stored, fact not
        named,  make_triple(ex("nowhere"), ex("capitalOf"), ex("france")),  // a term never stored
        dated,
        shared,  // asked twice
        quoted, make_triple(ex("paris"), ex("capitalOf"), ex("france"), "http://ex.org/other"),
    };
    auto each = store_->sources_of_each(facts);
    ASSERT_TRUE(each) << each.error().message;
    ASSERT_EQ(each->size(), facts.size());
    for (std::size_t i = 0; i < facts.size(); ++i) {
        auto one = store_->sources_of(facts[i]);
        ASSERT_TRUE(one) << one.error().message;
        EXPECT_EQ((*each)[i], *one) << "fact " << i;
    }
    ASSERT_EQ((*each)[0].size(), 3u);
    EXPECT_EQ((*each)[0][0].uri, "file:///atlas.nt") << "best tier first";
    EXPECT_EQ((*each)[0][1].uri, "urn:chunk:doc1#0");
    EXPECT_EQ((*each)[0][2].uri, "file:///crowd.nt");
    EXPECT_TRUE((*each)[1].empty());
    ASSERT_EQ((*each)[2].size(), 1u);
    EXPECT_EQ((*each)[2][0].document_uri, "urn:doc:doc1");
    EXPECT_TRUE((*each)[3].empty());
    EXPECT_EQ((*each)[4].size(), 1u);
    EXPECT_EQ((*each)[5], (*each)[0]);
    ASSERT_EQ((*each)[6].size(), 1u);
    EXPECT_TRUE((*each)[7].empty());
    auto none = store_->sources_of_each({});
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_TRUE(none->empty());

    // A budget: the strings of the sources count against its bytes (the first source that does
    // not fit ends the reading), and a stop asked for ends it (SQLite reads fact by fact).
    MatchBudget tight;
    tight.bytes_left = 30;
    auto cut = store_->sources_of_each(facts, &tight);
    ASSERT_TRUE(cut) << cut.error().message;
    EXPECT_TRUE(tight.over_bytes);
    MatchBudget roomy;
    roomy.bytes_left = 10'000;
    auto whole = store_->sources_of_each(facts, &roomy);
    ASSERT_TRUE(whole) << whole.error().message;
    EXPECT_FALSE(roomy.exhausted());
    EXPECT_EQ(*whole, *each);
    MatchBudget stopping;
    stopping.should_stop = [] { return true; };
    auto stopped = store_->sources_of_each(facts, &stopping);
    ASSERT_TRUE(stopped) << stopped.error().message;
    EXPECT_EQ(stopping.stopped, !on_postgres());
}

TEST_P(GraphStoreTest, TiersAreCheckedAndReRegisteringUpdatesThem) {
    SourceRecord bad;
    bad.uri = "file:///bad.nt";
    bad.tier = 5;
    auto r = store_->register_source(bad);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().type, base::ErrorType::kInvalidRequest);
    bad.tier = 0;
    EXPECT_FALSE(store_->register_source(bad));
    SourceRecord chunk_without_document;
    chunk_without_document.uri = "urn:chunk:x";
    chunk_without_document.kind = SourceKind::kChunk;
    EXPECT_FALSE(store_->register_source(chunk_without_document));

    const auto authoritative = source("file:///a.nt", 1);
    const auto inferred = source("file:///i.nt", 4);
    insert(authoritative, {make_triple(ex("a"), ex("p"), ex("b"))});
    insert(inferred,
           {make_triple(ex("a"), ex("p"), ex("c")), make_triple(ex("a"), ex("p"), ex("d"))});
    auto s = stats();
    EXPECT_EQ(s.facts_per_tier[1], 1u);
    EXPECT_EQ(s.facts_per_tier[4], 2u);
    EXPECT_EQ(s.sources, 2u);

    EXPECT_EQ(source("file:///i.nt", 2), inferred);
    s = stats();
    EXPECT_EQ(s.facts_per_tier[2], 2u);
    EXPECT_EQ(s.facts_per_tier[4], 0u);
    auto sources = store_->sources_of(make_triple(ex("a"), ex("p"), ex("c")));
    ASSERT_TRUE(sources && sources->size() == 1u);
    EXPECT_EQ((*sources)[0].tier, 2u);
}

TEST_P(GraphStoreTest, LabelsPreferEnglishThenPlainThenAnyElseLocalName) {
    const Term label = iri(vocab::kRdfsLabel);
    insert(source("file:///labels.nt"),
           {
               make_triple(ex("e1"), label, lang_literal("Erde", "de")),
               make_triple(ex("e1"), label, literal("earth")),
               make_triple(ex("e1"), label, lang_literal("Earth", "en")),
               make_triple(ex("e2"), label, lang_literal("Terre", "fr")),
               make_triple(ex("e2"), label, literal("terre (plain)")),
               make_triple(ex("e3"), label, lang_literal("Mond", "de")),
               make_triple(ex("e4"), ex("p"), ex("e1")),
           });
    const std::vector<Term> terms = {
        ex("e1"),
        ex("e2"),
        ex("e3"),
        ex("e4"),                               // stored, no label
        iri("http://example.org/onto#Planet"),  // never stored
        iri("urn:isbn:0451450523"),
        iri("http://example.org/trailing/"),
        literal("a literal"),
        lang_literal("ein Literal", "de"),
    };
    auto labels = store_->labels(terms);
    ASSERT_TRUE(labels) << labels.error().message;
    EXPECT_EQ(*labels,
              (std::vector<std::string>{"Earth", "terre (plain)", "Mond", "e4", "Planet",
                                        "0451450523", "trailing", "a literal", "ein Literal"}));
}

// triples-batch's labels: the ids a match read name each term as labels() names the term.
TEST_P(GraphStoreTest, LabelsOfMatchedIdsAreTheLabelsOfTheirTerms) {
    const Term label = iri(vocab::kRdfsLabel);
    const Term quoted = schema::quoted(make_triple(ex("e1"), ex("p"), ex("e2")));
    insert(source("file:///labels.nt"),
           {
               make_triple(ex("e1"), label, lang_literal("Erde", "de")),
               make_triple(ex("e1"), label, lang_literal("Earth", "en")),
               make_triple(ex("e2"), label, literal("terre (plain)")),
               make_triple(ex("p"), label, lang_literal("related to", "en-GB")),
               make_triple(ex("e1"), ex("p"), ex("e2")),
               make_triple(ex("e1"), ex("p"), ex("e3")),
               make_triple(ex("e3"), ex("p"), literal("a literal")),
               make_triple(ex("e3"), ex("q"), lang_literal("ein Literal", "de")),
               make_triple(schema::blank("b1"), ex("p"), ex("e1")),
               make_triple(quoted, ex("q"), iri("http://example.org/trailing/")),
           });
    const std::vector<TriplePattern> patterns = {
        TriplePattern{ex("e1"), std::nullopt, std::nullopt, std::nullopt},
        TriplePattern{std::nullopt, ex("p"), std::nullopt, std::nullopt},
        TriplePattern{std::nullopt, ex("q"), std::nullopt, std::nullopt},
        TriplePattern{ex("never-stored"), std::nullopt, std::nullopt, std::nullopt},
    };
    std::vector<std::vector<std::int64_t>> ids;
    auto results = store_->match_batch(patterns, 0, nullptr, &ids);
    ASSERT_TRUE(results) << results.error().message;
    ASSERT_EQ(ids.size(), results->size());
    std::vector<std::int64_t> all_ids;
    std::vector<const Term*> pointers;
    std::vector<Term> terms;
    for (std::size_t i = 0; i < results->size(); ++i) {
        ASSERT_EQ(ids[i].size(), 3 * (*results)[i].size());
        all_ids.insert(all_ids.end(), ids[i].begin(), ids[i].end());
        for (const auto& t : (*results)[i]) {
            for (const Term* term : {&t.s, &t.p, &t.o}) {
                pointers.push_back(term);
                terms.push_back(*term);
            }
        }
    }
    ASSERT_EQ(terms.size(), 3u * 10u);  // e1's 4 edges, p's 4, q's 2, the unknown term's none
    auto by_id = store_->labels_of_stored(all_ids, pointers, "triples-batch");
    ASSERT_TRUE(by_id) << by_id.error().message;
    auto by_term = store_->labels(terms);
    ASSERT_TRUE(by_term) << by_term.error().message;
    EXPECT_EQ(*by_id, *by_term);
    for (const char* expected :
         {"Earth", "terre (plain)", "related to", "e3", "a literal", "ein Literal", "trailing"}) {
        EXPECT_NE(std::find(by_id->begin(), by_id->end(), expected), by_id->end()) << expected;
    }

    // Their bytes are bounded as labels() bounds them, naming the op asked.
    auto bounded = store_->labels_of_stored(all_ids, pointers, "triples-batch", 40);
    ASSERT_FALSE(bounded);
    EXPECT_EQ(bounded.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(bounded.error().message.find("triples-batch"), std::string::npos)
        << bounded.error().message;
}

TEST_P(GraphStoreTest, EntitiesPageThroughSubjectAndObjectIrisInIdOrder) {
    const Term label = iri(vocab::kRdfsLabel);
    std::vector<Triple> triples;
    for (int i = 0; i < 25; ++i) {
        triples.push_back(
            make_triple(ex("n" + std::to_string(i)), ex("next"), ex("n" + std::to_string(i + 1))));
        triples.push_back(
            make_triple(ex("n" + std::to_string(i)), ex("value"), literal(std::to_string(i))));
    }
    triples.push_back(make_triple(ex("n0"), label, literal("the first")));
    triples.push_back(make_triple(schema::blank("x"), ex("next"), ex("n0")));
    insert(source("file:///chain.nt", 2, SourceKind::kFile), triples);

    std::set<std::string> expected;
    for (const auto& t : triples) {
        if (t.s.is_iri()) expected.insert(t.s.as_iri().value);
        if (t.o.is_iri()) expected.insert(t.o.as_iri().value);
    }
    std::vector<Entity> all;
    std::int64_t after = 0;
    for (int pages = 0; pages < 100; ++pages) {
        auto page = store_->entities_after(after, 7);
        ASSERT_TRUE(page) << page.error().message;
        if (page->empty()) break;
        EXPECT_LE(page->size(), 7u);
        for (const auto& e : *page) {
            EXPECT_GT(e.id, after) << "ids strictly increase";
            after = e.id;
            all.push_back(e);
        }
    }
    std::set<std::string> got;
    for (const auto& e : all) got.insert(e.term.as_iri().value);
    EXPECT_EQ(got, expected) << "predicates, literals and blank nodes are not entities";
    EXPECT_EQ(all.size(), expected.size());

    std::vector<std::int64_t> ids;
    for (const auto& e : all) ids.push_back(e.id);
    auto terms = store_->terms(ids);
    ASSERT_TRUE(terms);
    for (std::size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ((*terms)[i], all[i].term);
        const auto expected_label = all[i].term == ex("n0") ? std::string("the first")
                                                            : all[i].term.as_iri().value.substr(19);
        EXPECT_EQ(all[i].label, expected_label);
    }
}

TEST_P(GraphStoreTest, StatsCountWhatWasInserted) {
    std::vector<Triple> triples;
    std::set<std::string> subjects, predicates, objects;
    for (int i = 0; i < 40; ++i) {
        const Term s = ex("s" + std::to_string(i % 9));
        const Term p = ex("p" + std::to_string(i % 4));
        const Term o =
            i % 2 == 0 ? ex("o" + std::to_string(i % 7)) : literal(std::to_string(i % 5));
        std::optional<std::string> g;
        if (i % 5 == 0) g = "http://example.org/g" + std::to_string(i % 3);
        triples.push_back(make_triple(s, p, o, g));
    }
    std::set<std::string> quads, graphs;
    for (const auto& t : triples) {
        quads.insert(schema::to_nquads(t));
        subjects.insert(schema::to_ntriples(t.s));
        predicates.insert(schema::to_ntriples(t.p));
        objects.insert(schema::to_ntriples(t.o));
        if (t.graph) graphs.insert(*t.graph);
    }
    insert(source("file:///stats.nq", 1), triples);
    const auto s = stats();
    EXPECT_EQ(s.quads, quads.size());
    EXPECT_EQ(s.subjects, subjects.size());
    EXPECT_EQ(s.predicates, predicates.size());
    EXPECT_EQ(s.objects, objects.size());
    EXPECT_EQ(s.graphs, graphs.size());
    EXPECT_GE(s.terms, subjects.size() + predicates.size() + graphs.size());
    EXPECT_EQ(s.sources, 1u);
    EXPECT_EQ(s.facts_per_tier[1], quads.size());
}

TEST_P(GraphStoreTest, ProvenanceExportDerivesEveryFactFromItsSources) {
    const auto file = source("file:///facts.nt", 1);
    const auto chunk = source("urn:chunk:report#3", 3, SourceKind::kChunk, "urn:doc:report");
    const auto document = source("urn:doc:report", 2, SourceKind::kDocument);
    const std::vector<Triple> from_file = {
        make_triple(ex("a"), ex("p"), ex("b")),
        make_triple(ex("a"), ex("p"), literal("x"), "http://example.org/g")};
    const std::vector<Triple> from_chunk = {
        make_triple(ex("a"), ex("p"), ex("b")),
        make_triple(ex("c"), ex("q"), schema::quoted(from_file[0]))};
    insert(file, from_file);
    insert(chunk, from_chunk);
    (void)document;

    std::vector<Triple> exported;
    std::size_t batches = 0;
    auto r = store_->export_provenance(2, [&](std::span<const Triple> batch) {
        EXPECT_LE(batch.size(), 2u + 8u);
        ++batches;
        exported.insert(exported.end(), batch.begin(), batch.end());
        return true;
    });
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_GT(batches, 1u);

    const Term derived = iri(vocab::kProvWasDerivedFrom);
    std::map<std::string, std::set<std::string>>
        fact_sources;  // N-Triples of the fact -> source IRIs
    std::map<std::string, std::string> tiers;
    std::set<std::string> entities;
    std::set<std::string> chunk_documents;
    for (const auto& t : exported) {
        ASSERT_EQ(t.graph, std::optional<std::string>(vocab::kSourceGraph));
        if (t.p == derived && t.s.is_triple()) {
            ASSERT_TRUE(t.o.is_iri());
            fact_sources[schema::to_ntriples(t.s.as_triple())].insert(t.o.as_iri().value);
        } else if (t.p == derived) {
            chunk_documents.insert(t.s.as_iri().value + " " + t.o.as_iri().value);
        } else if (t.p == iri(vocab::kDataTier)) {
            ASSERT_TRUE(t.o.is_literal());
            EXPECT_EQ(t.o.as_literal().datatype, schema::kXsdInteger);
            tiers[t.s.as_iri().value] = t.o.as_literal().value;
        } else if (t.p == iri(vocab::kRdfType) && t.o == iri(vocab::kProvEntity)) {
            entities.insert(t.s.as_iri().value);
        }
    }
    EXPECT_EQ(entities,
              (std::set<std::string>{"file:///facts.nt", "urn:chunk:report#3", "urn:doc:report"}));
    EXPECT_EQ(tiers, (std::map<std::string, std::string>{{"file:///facts.nt", "1"},
                                                         {"urn:chunk:report#3", "3"},
                                                         {"urn:doc:report", "2"}}));
    EXPECT_EQ(chunk_documents, (std::set<std::string>{"urn:chunk:report#3 urn:doc:report"}));

    // Every stored fact has a wasDerivedFrom to each source it was loaded from.
    std::map<std::string, std::set<std::string>> expected;
    for (const auto& t : from_file) expected[schema::to_ntriples(t)].insert("file:///facts.nt");
    for (const auto& t : from_chunk) expected[schema::to_ntriples(t)].insert("urn:chunk:report#3");
    EXPECT_EQ(fact_sources, expected);

    int calls = 0;
    r = store_->export_provenance(1, [&](std::span<const Triple>) { return ++calls < 3; });
    ASSERT_TRUE(r);
    EXPECT_EQ(calls, 3) << "the export stops when the callback says so";
}

TEST_P(GraphStoreTest, InvalidInputIsRejectedByNameAndLeavesTheStoreUnchanged) {
    const auto src = source("file:///good.nt");
    insert(src, {make_triple(ex("a"), ex("p"), ex("b"))});
    const auto before = stats();

    schema::Literal both{"x", std::string(schema::kXsdString), "en"};
    const std::vector<std::pair<Triple, std::string>> bad = {
        {make_triple(iri(""), ex("p"), ex("o")), "subject"},
        {make_triple(ex("s"), iri(""), ex("o")), "predicate"},
        {make_triple(ex("s"), ex("p"), Term(both)), "both datatype"},
        {make_triple(ex("s"), ex("p"), ex("o"), "not an iri"), "graph"},
        {make_triple(ex("s"), ex("p"), ex("o"), "_:b0"), "graph"},
        {make_triple(ex("s"), ex("p"), schema::quoted(make_triple(ex("s"), iri(""), ex("o")))),
         "quoted"},
    };
    for (const auto& [triple, words] : bad) {
        const std::vector<Triple> batch = {make_triple(ex("new1"), ex("p"), ex("new2")), triple,
                                           make_triple(ex("new3"), ex("p"), literal("new"))};
        auto r = store_->insert(src, batch);
        ASSERT_FALSE(r) << "accepted " << schema::to_nquads(triple);
        EXPECT_EQ(r.error().type, base::ErrorType::kInvalidRequest);
        EXPECT_NE(r.error().message.find("triple 1"), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find(words), std::string::npos) << r.error().message;
    }
    EXPECT_EQ(stats(), before);
    EXPECT_TRUE(match(TriplePattern{ex("new1"), std::nullopt, std::nullopt, std::nullopt}).empty());
    auto unknown =
        store_->insert(424242, std::vector<Triple>{make_triple(ex("a"), ex("p"), ex("c"))});
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().type, base::ErrorType::kNotFound);
    EXPECT_EQ(stats(), before);
}

TEST_P(GraphStoreTest, InsideACallersTransactionARollbackUndoesTheInsert) {
    const auto src = source("file:///tx.nt");
    {
        auto tx = storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
        ASSERT_TRUE(tx) << tx.error().message;
        auto r = store_->insert(src, std::vector<Triple>{make_triple(ex("a"), ex("p"), ex("b"))},
                                TransactionMode::kCallers);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->added, 1u);
        // A failing insert inside the transaction undoes only itself.
        auto bad = store_->insert(src, std::vector<Triple>{make_triple(iri(""), ex("p"), ex("b"))},
                                  TransactionMode::kCallers);
        EXPECT_FALSE(bad);
        EXPECT_EQ(match(TriplePattern{ex("a"), std::nullopt, std::nullopt, std::nullopt}).size(),
                  1u);
    }  // rolled back
    store_->forget_cached_terms();
    EXPECT_TRUE(match(TriplePattern{ex("a"), std::nullopt, std::nullopt, std::nullopt}).empty());
    EXPECT_EQ(stats().quads, 0u);
    // The terms that were rolled back are interned again afresh.
    EXPECT_EQ(insert(src, {make_triple(ex("a"), ex("p"), ex("b"))}).added, 1u);
    EXPECT_EQ(match(TriplePattern{ex("a"), std::nullopt, std::nullopt, std::nullopt}).size(), 1u);
    {
        auto tx = storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kWrite);
        ASSERT_TRUE(tx);
        ASSERT_TRUE(store_->insert(src, std::vector<Triple>{make_triple(ex("c"), ex("p"), ex("d"))},
                                   TransactionMode::kCallers));
        ASSERT_TRUE(tx->commit());
    }
    EXPECT_EQ(stats().quads, 2u);
}

TEST_P(GraphStoreTest, TwoConnectionsToOneFileShareTermIds) {
    const auto src = source("file:///shared.nt");
    insert(src, {make_triple(ex("a"), ex("p"), ex("b"))});
    auto other_db = site_->connect();
    ASSERT_TRUE(other_db) << other_db.error().message;
    auto other = GraphStore::open(**other_db);
    ASSERT_TRUE(other) << other.error().message;
    // The other connection interns a new term and reuses the stored ones.
    auto other_src = (*other)->register_source(
        SourceRecord{"file:///shared.nt", SourceKind::kFile, {}, 3, {}, {}});
    ASSERT_TRUE(other_src);
    EXPECT_EQ(*other_src, src);
    auto r =
        (*other)->insert(*other_src, std::vector<Triple>{make_triple(ex("a"), ex("p"), ex("c"))});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->added, 1u);
    const auto here = store_->find_term(ex("c"));
    const auto there = (*other)->find_term(ex("c"));
    ASSERT_TRUE(here && there && here->has_value());
    EXPECT_EQ(*here, *there);
    EXPECT_EQ(match(TriplePattern{ex("a"), std::nullopt, std::nullopt, std::nullopt}).size(), 2u);
    EXPECT_EQ(stats().terms, 4u);
    other->reset();
}

TEST_P(GraphStoreTest, ATermMissingHereIsFoundOnceAnotherConnectionStoresIt) {
    const auto src = source("file:///late.nt");
    const TriplePattern late{ex("late"), std::nullopt, std::nullopt, std::nullopt};
    EXPECT_TRUE(match(late).empty());  // a miss must not be remembered
    auto labels = store_->labels(std::vector<Term>{ex("late")});
    ASSERT_TRUE(labels);
    EXPECT_EQ(*labels, std::vector<std::string>{"late"});

    auto other_db = site_->connect();
    ASSERT_TRUE(other_db) << other_db.error().message;
    auto other = GraphStore::open(**other_db);
    ASSERT_TRUE(other);
    auto r =
        (*other)->insert(src, std::vector<Triple>{make_triple(ex("late"), iri(vocab::kRdfsLabel),
                                                              lang_literal("Late arrival", "en"))});
    ASSERT_TRUE(r) << r.error().message;

    const auto found = match(late);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].o, lang_literal("Late arrival", "en"));
    labels = store_->labels(std::vector<Term>{ex("late")});
    ASSERT_TRUE(labels);
    EXPECT_EQ(*labels, std::vector<std::string>{"Late arrival"});
    auto sources = store_->sources_of(found[0]);
    ASSERT_TRUE(sources && sources->size() == 1u);
    EXPECT_EQ((*sources)[0].uri, "file:///late.nt");
}

// Labels are cached between requests: a label written on this connection, one committed by
// another connection, and one read inside a write transaction that is rolled back must each
// show (or not) exactly as the file has them.
TEST_P(GraphStoreTest, CachedLabelsFollowEveryChangeOfTheFile) {
    const auto src = source("file:///cached.nt");
    insert(src, {make_triple(ex("cached"), ex("p"), ex("o"))});
    const auto label_of = [&] {
        auto labels = store_->labels(std::vector<Term>{ex("cached")});
        EXPECT_TRUE(labels) << labels.error().message;
        return labels && labels->size() == 1 ? labels->front() : std::string("?");
    };
    EXPECT_EQ(label_of(), "cached");  // no rdfs:label yet: the local name, remembered as such
    EXPECT_EQ(label_of(), "cached");

    insert(src, {make_triple(ex("cached"), iri(vocab::kRdfsLabel), literal("Plain"))});
    EXPECT_EQ(label_of(), "Plain");  // this connection's write

    auto other_db = site_->connect();
    ASSERT_TRUE(other_db) << other_db.error().message;
    auto other = GraphStore::open(**other_db);
    ASSERT_TRUE(other);
    ASSERT_TRUE(
        (*other)->insert(src, std::vector<Triple>{make_triple(ex("cached"), iri(vocab::kRdfsLabel),
                                                              lang_literal("English", "en"))}));
    EXPECT_EQ(label_of(), "English");  // another connection's commit

    // Read inside a write transaction that then rolls back: what it saw must not be kept.
    ASSERT_TRUE(db_->begin(storage::sql::TransactionKind::kWrite));
    ASSERT_TRUE(
        db_->exec("DELETE FROM graph_quads WHERE p = (SELECT id FROM graph_terms WHERE "
                  "kind = 0 AND value = '" +
                  std::string(vocab::kRdfsLabel) + "')"));
    EXPECT_EQ(label_of(), "cached");
    db_->rollback();
    EXPECT_EQ(label_of(), "English");
}

TEST_P(GraphStoreTest, WritersOnTwoConnectionsNeverDuplicateATerm) {
    // Each writer keeps the set of stored key hashes and trusts "not in the set" to mean "new":
    // it must pick up what the other connection stored since its last write.
    const auto src = source("file:///two-writers.nt");
    auto other_db = site_->connect();
    ASSERT_TRUE(other_db) << other_db.error().message;
    auto other = GraphStore::open(**other_db);
    ASSERT_TRUE(other) << other.error().message;
    const auto other_insert = [&](std::vector<Triple> triples) {
        auto r = (*other)->insert(src, triples);
        ASSERT_TRUE(r) << r.error().message;
    };
    insert(src, {make_triple(ex("a"), ex("p"), ex("b"))});
    other_insert({make_triple(ex("c"), ex("p"), ex("d"))});
    insert(src, {make_triple(ex("c"), ex("p"), ex("b")), make_triple(ex("d"), ex("p"), ex("e"))});
    other_insert({make_triple(ex("e"), ex("p"), ex("a")), make_triple(ex("f"), ex("q"), ex("c"))});
    insert(src, {make_triple(ex("f"), ex("q"), ex("e"))});
    EXPECT_EQ(stats().terms, 8u);  // a b c d e f p q, each once
    EXPECT_EQ(stats().quads, 7u);
    for (const char* name : {"a", "b", "c", "d", "e", "f", "p", "q"}) {
        const auto here = store_->find_term(ex(name));
        const auto there = (*other)->find_term(ex(name));
        ASSERT_TRUE(here && there && here->has_value()) << name;
        EXPECT_EQ(*here, *there) << name;
    }
    EXPECT_EQ(match(TriplePattern{std::nullopt, ex("p"), std::nullopt, std::nullopt}).size(), 5u);
    other->reset();
}

// Two processes (two connections, each with its own store and caches) write overlapping facts
// in turns, by insert and by staged load, each warming its caches between the other's writes:
// every term and fact is stored once, each fact keeps every source it came from, and both see
// the same ids and counts.
TEST_P(GraphStoreTest, TwoProcessesWritingOverlappingFactsStoreEachTermAndFactOnce) {
    auto other = other_process();
    ASSERT_TRUE(other.store);
    const auto fact = [](int i) {
        return make_triple(
            ex("s" + std::to_string(i % 20)), ex("p" + std::to_string(i % 3)),
            i % 4 == 0 ? literal("v" + std::to_string(i % 25)) : ex("o" + std::to_string(i % 25)));
    };
    const auto facts = [&](int first, int last) {
        std::vector<Triple> out;
        for (int i = first; i < last; ++i) out.push_back(fact(i));
        return out;
    };
    const auto here_src = source("file:///here.nt");
    auto there_src = other.store->register_source(
        SourceRecord{"file:///there.nt", SourceKind::kFile, {}, 2, {}, {}});
    ASSERT_TRUE(there_src) << there_src.error().message;
    EXPECT_NE(*there_src, here_src);
    std::uint64_t added = 0;
    const auto count = [&added](const base::Result<InsertCounts>& r) {
        ASSERT_TRUE(r) << r.error().message;
        added += r->added;
    };
    // Here facts 0-59, there 30-89, in turns; the last turn there is a staged load.
    count(store_->insert(here_src, facts(0, 30)));
    count(other.store->insert(*there_src, facts(30, 45)));
    count(store_->insert(here_src, facts(30, 60)));
    ASSERT_TRUE(other.store->find_term(ex("s3")));  // warms the other's caches
    count(other.store->insert(*there_src, facts(45, 60)));
    const auto staged = facts(60, 90);
    ASSERT_TRUE(other.store->stage(
        "there-load", SourceRecord{"file:///there.nt", SourceKind::kFile, {}, 2, {}, {}}, staged));
    count(store_->insert(here_src, facts(0, 10)));  // repeats, while the other's load is staged
    count(other.store->commit_staged("there-load"));

    std::set<std::string> distinct_facts;
    std::set<std::string> distinct_terms;
    for (int i = 0; i < 90; ++i) {
        const Triple t = fact(i);
        distinct_facts.insert(schema::to_nquads(t));
        for (const Term* term : {&t.s, &t.p, &t.o})
            distinct_terms.insert(schema::to_ntriples(*term));
    }
    EXPECT_EQ(added, distinct_facts.size());
    const auto here_stats = stats();
    auto there_stats = other.store->stats();
    ASSERT_TRUE(there_stats);
    EXPECT_EQ(here_stats, *there_stats);
    EXPECT_EQ(here_stats.quads, distinct_facts.size());
    EXPECT_EQ(here_stats.terms, distinct_terms.size());
    EXPECT_EQ(here_stats.sources, 2u);
    for (int i = 0; i < 90; ++i) {
        const Triple t = fact(i);
        for (const Term* term : {&t.s, &t.p, &t.o}) {
            const auto a = store_->find_term(*term);
            const auto b = other.store->find_term(*term);
            ASSERT_TRUE(a && b && a->has_value()) << schema::to_ntriples(*term);
            EXPECT_EQ(*a, *b);
        }
        // Facts 30-59 came from both; the rest from one (0-29 here, 60-89 there) unless the
        // same fact recurs among the other's (i and i + 60 give the same triple).
        std::set<std::string> expected;
        for (int j = 0; j < 90; ++j) {
            if (schema::to_nquads(fact(j)) != schema::to_nquads(t)) continue;
            expected.insert(j < 30 ? "file:///here.nt" : (j < 60 ? "both" : "file:///there.nt"));
        }
        if (expected.count("both") != 0) {
            expected = {"file:///here.nt", "file:///there.nt"};
        }
        auto sources = store_->sources_of(t);
        ASSERT_TRUE(sources) << sources.error().message;
        std::set<std::string> uris;
        for (const auto& record : *sources) uris.insert(record.uri);
        EXPECT_EQ(uris, expected) << schema::to_nquads(t);
    }
}

TEST_P(GraphStoreTest, PastTheKnownTermLimitEveryTermIsLookedUpAndNoneDuplicated) {
    auto [small_store, src] = store_with(
        GraphStoreOptions{.term_cache_entries = 4, .known_term_limit = 5}, "file:///limit.nt");
    ASSERT_TRUE(small_store && src);
    std::vector<Triple> triples;
    std::set<std::string> distinct_terms;
    for (int i = 0; i < 40; ++i) {
        triples.push_back(make_triple(ex("s" + std::to_string(i % 9)), ex("p"),
                                      ex("o" + std::to_string(i % 11))));
        distinct_terms.insert("s" + std::to_string(i % 9));
        distinct_terms.insert("o" + std::to_string(i % 11));
    }
    distinct_terms.insert("p");
    // In small batches, so later ones start past the limit.
    for (std::size_t first = 0; first < triples.size(); first += 4) {
        const std::span<const Triple> batch(triples.data() + first,
                                            std::min<std::size_t>(4, triples.size() - first));
        auto counts = small_store->insert(*src, batch);
        ASSERT_TRUE(counts) << counts.error().message;
    }
    auto again = small_store->insert(*src, triples);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->added, 0u);
    EXPECT_EQ(stats().terms, distinct_terms.size());
}

// Runs of one subject, predicate or graph (as in a dump grouped by subject) reuse the previous
// statement's ids; every change of term in any position must still be seen.
TEST_P(GraphStoreTest, RunsOfRepeatedTermsStoreExactlyTheirStatements) {
    const auto src = source("file:///runs.nq");
    std::vector<Triple> triples;
    const std::optional<std::string> g1 = "http://example.org/g1";
    const std::optional<std::string> g2 = "http://example.org/g2";
    for (int i = 0; i < 60; ++i) {
        const Term subject = ex("s" + std::to_string(i / 7));          // runs of 7
        const Term predicate = ex("p" + std::to_string((i / 3) % 4));  // runs of 3
        const Term object =
            i % 5 == 0 ? literal("s" + std::to_string(i / 7)) : ex("o" + std::to_string(i % 13));
        const auto graph =
            (i / 11) % 3 == 0 ? std::nullopt : ((i / 11) % 3 == 1 ? g1 : g2);  // runs of 11
        triples.push_back(make_triple(subject, predicate, object, graph));
    }
    const auto counts = insert(src, triples);
    std::set<std::string> distinct;
    for (const auto& t : triples) distinct.insert(schema::to_nquads(t));
    EXPECT_EQ(counts.added, distinct.size());
    std::set<std::string> stored;
    for (const auto& t :
         match(TriplePattern{std::nullopt, std::nullopt, std::nullopt, std::nullopt})) {
        stored.insert(schema::to_nquads(t));
    }
    EXPECT_EQ(stored, distinct);
}

TEST_P(GraphStoreTest, TinyTermCachesGiveTheSameAnswersAsLargeOnes) {
    auto [small_store, src] = store_with(
        GraphStoreOptions{.term_cache_entries = 3, .decode_cache_entries = 2}, "file:///tiny.nt");
    ASSERT_TRUE(small_store && src);
    std::vector<Triple> triples;
    for (int i = 0; i < 300; ++i) {
        triples.push_back(make_triple(
            ex("n" + std::to_string(i % 37)), ex("p" + std::to_string(i % 5)),
            i % 2 == 0 ? ex("n" + std::to_string(i % 41)) : literal(std::to_string(i % 13)),
            i % 7 == 0 ? std::optional<std::string>("http://example.org/g") : std::nullopt));
    }
    auto counts = small_store->insert(*src, triples);
    ASSERT_TRUE(counts) << counts.error().message;
    std::set<std::string> distinct;
    for (const auto& t : triples) distinct.insert(schema::to_nquads(t));
    EXPECT_EQ(counts->added, distinct.size());
    // Evicted entries are found again in the file, with the same ids the big-cache store sees.
    for (int i = 0; i < 41; ++i) {
        const auto a = small_store->find_term(ex("n" + std::to_string(i)));
        const auto b = store_->find_term(ex("n" + std::to_string(i)));
        ASSERT_TRUE(a && b);
        EXPECT_EQ(*a, *b);
    }
    for (int i = 0; i < 37; ++i) {
        const TriplePattern pattern{ex("n" + std::to_string(i)), std::nullopt, std::nullopt,
                                    std::nullopt};
        auto small_found = small_store->match(pattern);
        ASSERT_TRUE(small_found);
        EXPECT_EQ(sorted(*small_found), sorted(match(pattern)));
        std::vector<Triple> expected;
        for (const auto& t : triples) {
            if (matches(pattern, t) &&
                std::find(expected.begin(), expected.end(), t) == expected.end()) {
                expected.push_back(t);
            }
        }
        EXPECT_EQ(sorted(*small_found), sorted(expected));
    }
}

// The shared PathQuestion knowledge base, through a minimal N-Triples line splitter (IRIs and
// plain literals only; the real loader is serd-based and lives elsewhere).
std::optional<Triple> split_ntriples_line(std::string_view line) {
    const auto read_term = [&line]() -> std::optional<Term> {
        while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        if (line.empty()) return std::nullopt;
        if (line.front() == '<') {
            const auto end = line.find('>');
            if (end == std::string_view::npos) return std::nullopt;
            Term t = iri(line.substr(1, end - 1));
            line.remove_prefix(end + 1);
            return t;
        }
        if (line.front() == '"') {
            const auto end = line.find('"', 1);
            if (end == std::string_view::npos) return std::nullopt;
            Term t = literal(line.substr(1, end - 1));
            line.remove_prefix(end + 1);
            return t;
        }
        return std::nullopt;
    };
    auto s = read_term();
    auto p = read_term();
    auto o = read_term();
    if (!s || !p || !o) return std::nullopt;
    return make_triple(*s, *p, *o);
}

TEST_P(GraphStoreTest, LoadsAndMatchesThePathQuestionKnowledgeBase) {
    const std::filesystem::path data =
        std::filesystem::path(GLASSBOX_SHARED_DATA) / "kg-pathquestion";
    if (!std::filesystem::exists(data / "kb.nt")) GTEST_SKIP() << "no shared data at " << data;
    std::vector<Triple> triples;
    for (const char* file : {"kb.nt", "labels.nt"}) {
        std::ifstream in(data / file);
        std::string line;
        for (int n = 0; n < 400 && std::getline(in, line); ++n) {
            if (auto t = split_ntriples_line(line)) triples.push_back(std::move(*t));
        }
    }
    ASSERT_GT(triples.size(), 700u);
    const auto counts = insert(source("file://" + (data / "kb.nt").string(), 2), triples);
    std::set<std::string> distinct;
    for (const auto& t : triples) distinct.insert(schema::to_nquads(t));
    EXPECT_EQ(counts.added, distinct.size());
    EXPECT_EQ(stats().quads, distinct.size());
    // Each triple is found from each bound position.
    for (std::size_t i = 0; i < triples.size(); i += 37) {
        const auto& t = triples[i];
        for (const auto& pattern : {TriplePattern{t.s, std::nullopt, std::nullopt, std::nullopt},
                                    TriplePattern{std::nullopt, t.p, t.o, std::nullopt},
                                    TriplePattern{t.s, t.p, std::nullopt, std::nullopt},
                                    TriplePattern{std::nullopt, std::nullopt, t.o, std::nullopt}}) {
            const auto found = match(pattern);
            EXPECT_NE(std::find(found.begin(), found.end(), t), found.end())
                << schema::to_ntriples(t);
            for (const auto& f : found) EXPECT_TRUE(matches(pattern, f)) << schema::to_ntriples(f);
        }
    }
    // Labels come from labels.nt where it covers the entity.
    const auto& first = triples.front();
    auto labels = store_->labels(std::span<const Term>(&first.s, 1));
    ASSERT_TRUE(labels);
    const auto label_rows =
        match(TriplePattern{first.s, iri(vocab::kRdfsLabel), std::nullopt, std::nullopt});
    if (!label_rows.empty()) {
        EXPECT_EQ((*labels)[0], label_rows[0].o.as_literal().value);
    }
}

// Issue 16: a byte budget ends a match (and a batch) before the answer outgrows it, and a stop
// check ends it too; without a budget the same batch reads everything.
TEST_P(GraphStoreTest, AMatchBudgetCutsTheBatchAtItsBytesAndStopsWhenAsked) {
    const auto src = source("file:///budget.nt");
    std::vector<Triple> triples;
    for (int i = 0; i < 2'000; ++i) {
        triples.push_back(make_triple(iri("urn:s" + std::to_string(i)), iri("urn:p"),
                                      literal(std::string(100, 'x'))));
    }
    insert(src, triples);
    const std::vector<TriplePattern> patterns(50, TriplePattern{});
    auto all = store_->match_batch(patterns, 1'000);
    ASSERT_TRUE(all) << all.error().message;
    ASSERT_EQ(all->size(), 50u);
    EXPECT_EQ(all->back().size(), 1'000u);

    MatchBudget budget;
    budget.bytes_left = 64 * 1024;
    auto cut = store_->match_batch(patterns, 1'000, &budget);
    ASSERT_TRUE(cut) << cut.error().message;
    EXPECT_TRUE(budget.over_bytes);
    EXPECT_FALSE(budget.stopped);
    std::size_t bytes = 0;
    std::size_t rows = 0;
    for (const auto& list : *cut) {
        rows += list.size();
        for (const auto& t : list) bytes += triple_wire_bytes(t);
    }
    EXPECT_LE(bytes, 64u * 1024);
    EXPECT_GT(rows, 0u);
    EXPECT_LT(rows, 1'000u) << "the budget holds fewer rows than one pattern's limit";
    EXPECT_LT(cut->size(), patterns.size());

    int asked = 0;
    MatchBudget stopping;
    stopping.should_stop = [&asked] { return ++asked >= 2; };
    auto stopped = store_->match_batch(patterns, 1'000, &stopping);
    ASSERT_TRUE(stopped) << stopped.error().message;
    EXPECT_TRUE(stopping.stopped);
    EXPECT_LT(stopped->size(), patterns.size());
}

// Issue 16: one long label asked for many times is not copied past the reply bound.
TEST_P(GraphStoreTest, LabelsAddingUpPastTheirByteBoundAreAnInvalidRequest) {
    const auto src = source("file:///labels.nt");
    insert(src, {make_triple(iri("urn:e"), iri(std::string(vocab::kRdfsLabel)),
                             literal(std::string(10'000, 'l')))});
    const std::vector<Term> terms(100, iri("urn:e"));
    auto all = store_->labels(terms);
    ASSERT_TRUE(all) << all.error().message;
    EXPECT_EQ(all->size(), 100u);
    auto bounded = store_->labels(terms, 50'000);
    ASSERT_FALSE(bounded);
    EXPECT_EQ(bounded.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(bounded.error().message.find("at term 5 of 100"), std::string::npos)
        << bounded.error().message;
    EXPECT_TRUE(store_->labels(std::vector<Term>(4, iri("urn:e")), 50'000));
}

GLASSBOX_KNOWLEDGE_BACKENDS(GraphStoreTest);

TEST(TripleWireBytes, CountsEveryStringOfTheTriple) {
    const auto small = triple_wire_bytes(make_triple(iri("urn:a"), iri("urn:p"), literal("x")));
    const auto big = triple_wire_bytes(
        make_triple(iri("urn:a"), iri("urn:p"), literal(std::string(10'000, 'x'))));
    EXPECT_EQ(big - small, 9'999u);
    auto in_graph = make_triple(iri("urn:a"), iri("urn:p"), literal("x"));
    in_graph.graph = "urn:graph:g";
    EXPECT_EQ(triple_wire_bytes(in_graph) - small, std::string("urn:graph:g").size());
}

}  // namespace
}  // namespace glassbox::store
