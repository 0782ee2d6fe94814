// Tests for staged (bulk) loads of the graph store: a staged load gives exactly what inserting
// the same batches gives (quads, first sources, links, counts, every pattern shape, provenance),
// is invisible until committed, and leaves nothing behind when aborted, interrupted or failed;
// files from before the POS/OSP tables are migrated on open.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "schema/indexed_quads.hpp"
#include "tests/support/knowledge_site.hpp"
#include "tests/unit/workers/store/graph_terms.hpp"
#include "workers/store/graph_store.hpp"
#include "workers/store/term_batch.hpp"

namespace glassbox::store {
namespace {

using namespace graph_terms;

// One store on its own knowledge base (a connection and its GraphStore).
struct Store {
    std::unique_ptr<storage::sql::Connection> db;
    std::unique_ptr<GraphStore> graph;

    std::int64_t count(const std::string& table) {
        auto st = db->prepare("SELECT count(*) FROM " + table);
        EXPECT_TRUE(st);
        auto n = st->first([](const storage::sql::Row& row) { return row.int64(0); });
        EXPECT_TRUE(n && *n);
        return n && *n ? **n : -1;
    }

    // Makes every insert into `table` whose row satisfies `when` (SQL over NEW) fail with
    // "refused", as a write failing midway would; refuse(table, {}) lifts it.
    void refuse(const std::string& table, const std::string& when) {
        const std::string name = "refuse_" + table;
        const bool lite = db->dialect() == storage::sql::Dialect::kSqlite;
        std::string sql;
        if (when.empty()) {
            sql = lite ? "DROP TRIGGER " + name : "DROP TRIGGER " + name + " ON " + table;
        } else if (lite) {
            sql = "CREATE TRIGGER " + name + " BEFORE INSERT ON " + table + " WHEN " + when +
                  " BEGIN SELECT RAISE(ABORT, 'refused'); END";
        } else {
            sql = "CREATE OR REPLACE FUNCTION " + name +
                  "() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN IF " + when +
                  " THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END$$; CREATE TRIGGER " +
                  name + " BEFORE INSERT ON " + table + " FOR EACH ROW EXECUTE FUNCTION " + name +
                  "()";
        }
        auto r = db->exec(sql);
        ASSERT_TRUE(r) << r.error().message;
    }
};

// A load: files (sources) with their batches.
struct FileLoad {
    SourceRecord source;
    std::vector<std::vector<Triple>> batches;
};

SourceRecord file_source(const std::string& name, std::uint32_t tier) {
    return SourceRecord{"file:///data/" + name, SourceKind::kFile,    {}, tier,
                        "2026-11-24T10:00:00Z", "application/n-quads"};
}

// Facts in every shape: IRIs, blank nodes, plain/typed/language literals, named graphs, a
// quoted triple as object, repeats inside a batch and across batches and files.
std::vector<FileLoad> sample_load(int salt) {
    std::vector<FileLoad> files;
    for (int f = 0; f < 3; ++f) {
        FileLoad file{file_source("part" + std::to_string(f) + "-" + std::to_string(salt) + ".nq",
                                  static_cast<std::uint32_t>(1 + f)),
                      {}};
        for (int b = 0; b < 4; ++b) {
            std::vector<Triple> batch;
            for (int i = 0; i < 60; ++i) {
                const int n = (f * 37 + b * 11 + i * 7 + salt) % 90;
                // A third of the subjects are this load's own; the rest every load shares.
                const std::string tag = n % 3 == 0 ? "-" + std::to_string(salt) : "";
                const Term s = n % 13 == 0
                                   ? Term(schema::BlankNode{"b" + std::to_string(n % 5) + tag})
                                   : ex("s" + std::to_string(n % 23) + tag);
                const Term p = ex("p" + std::to_string(n % 4));
                Term o = ex("o" + std::to_string(n % 17));
                if (n % 5 == 1) o = literal("v" + std::to_string(n % 9));
                if (n % 5 == 2) o = lang_literal("w" + std::to_string(n % 7), n % 2 ? "en" : "fr");
                if (n % 5 == 3) o = schema::xsd_integer(n % 11);
                if (n % 29 == 4)
                    o = schema::quoted(make_triple(ex("q" + std::to_string(n % 3)), p, ex("o1")));
                std::optional<std::string> graph;
                if (n % 7 == 3) graph = "http://example.org/g" + std::to_string(n % 2);
                batch.push_back(make_triple(s, p, o, graph));
                if (i % 17 == 0) batch.push_back(batch.back());  // a repeat in the batch
            }
            file.batches.push_back(std::move(batch));
        }
        files.push_back(std::move(file));
    }
    return files;
}

// Each store a test opens by name is a knowledge base of its own on the test's backend (a
// SQLite file, or a PostgreSQL schema); opening a name again is another connection to it (another
// process).
class StagedLoadTest : public store_testing::KnowledgeTest {
protected:
    void TearDown() override {
        sites_.clear();
        KnowledgeTest::TearDown();
    }

    Store open_store(const std::string& name, GraphStoreOptions options = {}) {
        auto& site = sites_[name];
        if (!site) site = std::make_unique<store_testing::KnowledgeSite>(GetParam());
        Store store;
        auto db = site->connect();
        EXPECT_TRUE(db) << db.error().message;
        if (!db) return store;
        store.db = std::move(*db);
        auto graph = GraphStore::open(*store.db, options);
        EXPECT_TRUE(graph) << graph.error().message;
        if (graph) store.graph = std::move(*graph);
        return store;
    }

    static InsertCounts insert_all(Store& store, const std::vector<FileLoad>& files) {
        InsertCounts total;
        for (const auto& file : files) {
            auto id = store.graph->register_source(file.source);
            EXPECT_TRUE(id) << id.error().message;
            for (const auto& batch : file.batches) {
                auto counts = store.graph->insert(*id, batch);
                EXPECT_TRUE(counts) << counts.error().message;
                total.added += counts->added;
                total.already_present += counts->already_present;
            }
        }
        return total;
    }

    // The sample load `salt` without its quoted triples (the batches a whole-batch intern
    // takes), and two stores that already hold sample load 5: the first has the files inserted
    // (the counts it gave are `expected`), the second is left for the test to stage them into.
    struct InsertedAndStaged {
        std::vector<FileLoad> files;
        Store incremental;
        Store staged;
        InsertCounts expected;
    };
    InsertedAndStaged without_quoted_triples(int salt) {
        auto files = sample_load(salt);
        for (auto& file : files) {
            for (auto& batch : file.batches) {
                std::erase_if(batch, [](const Triple& t) { return t.o.is_triple(); });
            }
        }
        auto incremental = open_store("incremental.db");
        auto staged = open_store("staged.db");
        insert_all(incremental, sample_load(5));
        insert_all(staged, sample_load(5));  // some terms and facts are stored already
        const auto expected = insert_all(incremental, files);
        return {std::move(files), std::move(incremental), std::move(staged), expected};
    }

    // Commits `load` in `staged` and expects what inserting gave `incremental`: the counts, the
    // quads, their sources and the stats (no term stored twice or left over).
    static void expect_commit_as_inserted(Store& staged, const std::string& load,
                                          Store& incremental, const InsertCounts& expected) {
        auto counts = staged.graph->commit_staged(load);
        ASSERT_TRUE(counts) << counts.error().message;
        EXPECT_EQ(*counts, expected);
        EXPECT_GT(expected.added, 20u);
        EXPECT_EQ(all_quads(staged), all_quads(incremental));
        EXPECT_EQ(all_sources(staged), all_sources(incremental));
        auto a = incremental.graph->stats();
        auto b = staged.graph->stats();
        ASSERT_TRUE(a && b);
        EXPECT_EQ(*b, *a) << "no term stored twice, none left over";
        EXPECT_EQ(all_terms(staged), all_terms(incremental)) << "the same ids for the same terms";
    }

    // Every stored term with its id, in id order.
    static std::vector<std::string> all_terms(Store& store) {
        auto st = store.db->prepare(
            "SELECT id, hash, kind, value, qualifier, COALESCE(CAST(qs AS TEXT), 'NULL'), "
            "COALESCE(CAST(qp AS TEXT), 'NULL'), COALESCE(CAST(qo AS TEXT), 'NULL') FROM "
            "graph_terms ORDER BY id");
        EXPECT_TRUE(st);
        auto rows = st->collect([](const storage::sql::Row& row) {
            std::string out = std::to_string(row.int64(0)) + " " + std::to_string(row.int64(1)) +
                              " " + std::to_string(row.int64(2));
            for (int i = 3; i < 8; ++i) out += " [" + std::string(row.text(i)) + "]";
            return out;
        });
        EXPECT_TRUE(rows) << rows.error().message;
        return rows ? *rows : std::vector<std::string>{};
    }

    static void stage_all(Store& store, const std::string& load,
                          const std::vector<FileLoad>& files) {
        for (const auto& file : files) {
            for (const auto& batch : file.batches) {
                auto staged = store.graph->stage(load, file.source, batch);
                ASSERT_TRUE(staged) << staged.error().message;
                EXPECT_EQ(*staged, batch.size());
            }
        }
    }

    static std::vector<std::string> all_quads(Store& store) {
        std::vector<std::string> out;
        auto r = store.graph->match_each(TriplePattern{}, 0, [&](std::span<const Triple> batch) {
            for (const auto& t : batch) out.push_back(schema::to_nquads(t));
            return true;
        });
        EXPECT_TRUE(r) << r.error().message;
        std::sort(out.begin(), out.end());
        return out;
    }

    // Every source of every fact, as "fact -> uri tier".
    static std::multiset<std::string> all_sources(Store& store) {
        std::multiset<std::string> out;
        auto r = store.graph->match_each(TriplePattern{}, 0, [&](std::span<const Triple> batch) {
            for (const auto& t : batch) {
                auto sources = store.graph->sources_of(t);
                EXPECT_TRUE(sources) << sources.error().message;
                for (const auto& s : *sources) {
                    out.insert(schema::to_nquads(t) + " -> " + s.uri + " " +
                               std::to_string(s.tier));
                }
            }
            return true;
        });
        EXPECT_TRUE(r) << r.error().message;
        return out;
    }

    static std::multiset<std::string> provenance(Store& store) {
        std::multiset<std::string> out;
        auto r = store.graph->export_provenance(0, [&](std::span<const Triple> batch) {
            for (const auto& t : batch) out.insert(schema::to_nquads(t));
            return true;
        });
        EXPECT_TRUE(r) << r.error().message;
        return out;
    }

    // Both stores answer every pattern shape built from `probes` the same.
    static void expect_same_answers(Store& a, Store& b, const std::vector<Triple>& probes) {
        for (const auto& t : probes) {
            for (int mask = 1; mask < 8; ++mask) {
                TriplePattern pattern;
                if (mask & 1) pattern.s = t.s;
                if (mask & 2) pattern.p = t.p;
                if (mask & 4) pattern.o = t.o;
                auto x = a.graph->match(pattern);
                auto y = b.graph->match(pattern);
                ASSERT_TRUE(x && y);
                EXPECT_EQ(*x, *y) << "mask " << mask << " around " << schema::to_nquads(t);
                EXPECT_FALSE(x->empty());
            }
        }
    }

    std::map<std::string, std::unique_ptr<store_testing::KnowledgeSite>> sites_;
};

TEST_P(StagedLoadTest, AStagedLoadStoresExactlyWhatInsertingTheSameBatchesStores) {
    // One group or many; into an empty graph (SPO written from the feed) or onto an earlier load,
    // so the commit meets facts already stored from another source and from the same one.
    for (const std::size_t group : {std::size_t{2'000'000}, std::size_t{50}})
        for (const bool onto_earlier : {false, true}) {
            const std::string name = std::to_string(group) + (onto_earlier ? "-onto" : "-fresh");
            SCOPED_TRACE("commit group " + std::to_string(group) +
                         (onto_earlier ? ", onto an earlier load" : ", fresh"));
            GraphStoreOptions options;
            options.staged_commit_group = group;
            auto incremental = open_store(("incremental-" + name + ".db"), options);
            auto staged = open_store(("staged-" + name + ".db"), options);
            const auto earlier = sample_load(5);
            auto files = sample_load(0);
            if (onto_earlier) {
                insert_all(incremental, earlier);
                insert_all(staged, earlier);
                files.push_back(earlier[1]);  // a reload of one earlier file: all present
            }
            const auto expected = insert_all(incremental, files);
            stage_all(staged, "load-1", files);
            auto counts = staged.graph->commit_staged("load-1");
            ASSERT_TRUE(counts) << counts.error().message;
            EXPECT_EQ(*counts, expected);
            EXPECT_GT(expected.added, 20u);
            EXPECT_GT(expected.already_present, 50u);

            EXPECT_EQ(all_quads(staged), all_quads(incremental));
            EXPECT_EQ(all_sources(staged), all_sources(incremental));
            EXPECT_EQ(provenance(staged), provenance(incremental));
            auto a = incremental.graph->stats();
            auto b = staged.graph->stats();
            ASSERT_TRUE(a && b);
            EXPECT_EQ(*b, *a);
            std::vector<Triple> probes;
            for (std::size_t i = 0; i < files[0].batches[0].size(); i += 9)
                probes.push_back(files[0].batches[0][i]);
            expect_same_answers(incremental, staged, probes);
            EXPECT_EQ(staged.count("graph_staged_quads"), 0);
            EXPECT_EQ(staged.count("graph_staged_sources"), 0);

            // Committing again, or loading the same files again staged, adds nothing.
            auto again = staged.graph->commit_staged("load-1");
            ASSERT_TRUE(again);
            EXPECT_EQ(*again, InsertCounts{});
            stage_all(staged, "load-2", files);
            auto reload = staged.graph->commit_staged("load-2");
            ASSERT_TRUE(reload);
            EXPECT_EQ(reload->added, 0u);
            EXPECT_EQ(reload->already_present, expected.added + expected.already_present);
            EXPECT_EQ(all_sources(staged), all_sources(incremental));
        }
}

TEST_P(StagedLoadTest, BatchesWithoutQuotedTriplesInternedWholeStoreWhatInsertingStores) {
    // Without a quoted triple a batch's distinct terms are interned at once (TermBatch), new
    // ones in hash order: the same facts, sources and answers as the incremental path.
    auto [files, incremental, staged, expected] = without_quoted_triples(3);
    stage_all(staged, "whole", files);
    expect_commit_as_inserted(staged, "whole", incremental, expected);
    std::vector<Triple> probes;
    for (std::size_t i = 0; i < files[0].batches[0].size(); i += 7)
        probes.push_back(files[0].batches[0][i]);
    expect_same_answers(incremental, staged, probes);
}

TEST_P(StagedLoadTest, ALoadWhoseIdsSpanSeveralRadixPassesStoresWhatInsertingStores) {
    // 70,000 terms: subject and object ids take two radix passes, and the second predicate is
    // interned 70,000 ids after the first (more than one pass apart: POS by comparison sort). Facts
    // repeat within a file and across two files, so the commit must keep each fact's lowest source
    // and link the other; into an empty graph and onto an earlier load.
    std::vector<FileLoad> files{{file_source("wide-a.nt", 2), {{}, {}}},
                                {file_source("wide-b.nt", 1), {{}}}};
    for (int i = 0; i < 35'000; ++i) {
        files[0].batches[0].push_back(make_triple(ex("s" + std::to_string((i * 7'919) % 35'000)),
                                                  ex("p0"), ex("o" + std::to_string(i))));
    }
    for (int i = 0; i < 6'000; ++i) {
        files[0].batches[1].push_back(make_triple(ex("s" + std::to_string((i * 31) % 35'000)),
                                                  ex("p1"), ex("o" + std::to_string(i % 4'000))));
        // Every third: a fact of the first batch again, from the other file.
        if (i % 3 == 0) files[1].batches[0].push_back(files[0].batches[0][(i * 13) % 35'000]);
    }
    files[1].batches[0].push_back(files[0].batches[1][5]);
    for (const bool onto_earlier : {false, true}) {
        SCOPED_TRACE(onto_earlier ? "onto an earlier load" : "fresh");
        const std::string name = onto_earlier ? "onto" : "fresh";
        auto incremental = open_store(("incremental-" + name + ".db"));
        auto staged = open_store(("staged-" + name + ".db"));
        if (onto_earlier) {
            insert_all(incremental, sample_load(5));
            insert_all(staged, sample_load(5));
        }
        const auto expected = insert_all(incremental, files);
        stage_all(staged, "wide", files);
        auto counts = staged.graph->commit_staged("wide");
        ASSERT_TRUE(counts) << counts.error().message;
        EXPECT_EQ(*counts, expected);
        EXPECT_GT(expected.already_present, 2'000u);
        EXPECT_EQ(all_quads(staged), all_quads(incremental));
        // Every fact with every source it came from (one pass; sources_of per fact is slow).
        EXPECT_EQ(provenance(staged), provenance(incremental));
        auto a = incremental.graph->stats();
        auto b = staged.graph->stats();
        ASSERT_TRUE(a && b);
        EXPECT_EQ(*b, *a);
        expect_same_answers(incremental, staged,
                            {files[0].batches[0][0], files[0].batches[1][7],
                             files[0].batches[0][34'999], files[1].batches[0][3]});
    }
}

TEST_P(StagedLoadTest, DictionaryEncodedBatchesStoreWhatInsertingTheSameBatchesStores) {
    // `glassbox load`'s wire form: each batch written and read back as indexes into its distinct
    // terms, then staged: the same facts, sources, counts and answers as inserting the triples.
    auto [files, incremental, staged, expected] = without_quoted_triples(4);
    schema::IndexedQuadsWriter writer;
    std::string terms;
    std::string statements;
    for (const auto& file : files) {
        for (const auto& triples : file.batches) {
            ASSERT_TRUE(writer.write(triples, terms, statements));
            auto quads = schema::parse_indexed_quads(terms, statements);
            ASSERT_TRUE(quads) << quads.error().message;
            auto batch = TermBatch::build(std::move(*quads));
            ASSERT_TRUE(batch) << batch.error().message;
            EXPECT_EQ(batch->size(), triples.size());
            auto done = staged.graph->stage("encoded", file.source, *batch);
            ASSERT_TRUE(done) << done.error().message;
            EXPECT_EQ(*done, triples.size());
        }
    }
    expect_commit_as_inserted(staged, "encoded", incremental, expected);
    EXPECT_EQ(provenance(staged), provenance(incremental));
}

TEST_P(StagedLoadTest, ADictionaryEncodedBatchWithABadTermIsRefusedWhole) {
    // A term the N-Quads reader takes but the store does not (not an absolute IRI by the
    // store's rule), used by the second statement: the batch is refused, nothing of it stored.
    auto store = open_store("kb.db");
    const auto source = file_source("bad.nt", 3);
    for (const auto& [bad, position, statements] :
         std::vector<std::tuple<Term, std::string, std::vector<std::array<std::uint32_t, 4>>>>{
             {iri("http://example.org/a b"), "subject", {{0, 1, 2, ~0U}, {3, 1, 2, ~0U}}},
             {iri("not-an-iri"), "object", {{0, 1, 2, ~0U}, {0, 1, 3, ~0U}}},
             {iri("x"), "graph", {{0, 1, 2, ~0U}, {0, 1, 2, 3}}},
             {schema::typed_literal("5", "int"), "object", {{0, 1, 2, ~0U}, {0, 1, 3, ~0U}}}}) {
        schema::IndexedQuads quads{{ex("a"), ex("p"), ex("b"), bad}, statements};
        auto batch = TermBatch::build(std::move(quads));
        ASSERT_FALSE(batch) << position;
        EXPECT_EQ(batch.error().type, base::ErrorType::kInvalidRequest);
        EXPECT_EQ(batch.error().message.rfind("statement 1: " + position + ":", 0), 0u)
            << batch.error().message;
    }
    // A term no statement uses is not checked, and not stored.
    schema::IndexedQuads unused{{ex("a"), ex("p"), ex("b"), iri("unused")}, {{0, 1, 2, ~0U}}};
    auto batch = TermBatch::build(std::move(unused));
    ASSERT_TRUE(batch) << batch.error().message;
    EXPECT_EQ(batch->terms().size(), 3u);
    const auto terms_before = store.count("graph_terms");
    ASSERT_TRUE(store.graph->stage("one", source, *batch));
    auto counts = store.graph->commit_staged("one");
    ASSERT_TRUE(counts) << counts.error().message;
    EXPECT_EQ(counts->added, 1u);
    EXPECT_EQ(store.count("graph_terms"), terms_before + 3);
}

TEST_P(StagedLoadTest, ManyNewTermsInOneBatchEachGetTheirOwnId) {
    // 304 new terms (150 subjects, 150 literals, 4 predicates; 3 predicates are known): new
    // terms go in by groups of rows, the rest one by one; every fact comes back with its terms.
    FileLoad file{file_source("many.nt", 2), {{}}};
    for (int i = 0; i < 150; ++i) {
        file.batches[0].push_back(make_triple(ex("n" + std::to_string(i)),
                                              ex("p" + std::to_string(i % 7)),
                                              literal("value " + std::to_string(i))));
    }
    auto incremental = open_store("incremental.db");
    auto staged = open_store("staged.db");
    const std::vector<FileLoad> known = {
        {file_source("known.nt", 1), {{make_triple(ex("p0"), ex("p1"), ex("p2"))}}}};
    insert_all(incremental, known);
    insert_all(staged, known);
    const auto expected = insert_all(incremental, {file});
    stage_all(staged, "many", {file});
    auto counts = staged.graph->commit_staged("many");
    ASSERT_TRUE(counts) << counts.error().message;
    EXPECT_EQ(*counts, expected);
    EXPECT_EQ(expected.added, 150u);
    EXPECT_EQ(all_quads(staged), all_quads(incremental));
    auto a = incremental.graph->stats();
    auto b = staged.graph->stats();
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*b, *a);
    for (int i = 0; i < 150; i += 13) {
        TriplePattern pattern;
        pattern.s = ex("n" + std::to_string(i));
        auto found = staged.graph->match(pattern);
        ASSERT_TRUE(found) << found.error().message;
        ASSERT_EQ(found->size(), 1u);
        EXPECT_EQ((*found)[0], file.batches[0][static_cast<std::size_t>(i)]);
    }
}

TEST_P(StagedLoadTest, ATermInsertFailingMidBatchLeavesNoTermWrittenOrCached) {
    // A trigger refuses one new term of a batch, after others of it were written: the stage
    // fails and none of the batch's terms stays, in the file or cached. Then another term takes
    // the ids the refused batch had, and the batch staged again gets the ids inserting gives.
    FileLoad file{file_source("mid.nt", 2), {{}}};
    for (int i = 0; i < 40; ++i) {
        file.batches[0].push_back(make_triple(ex("m" + std::to_string(i)), ex("p0"),
                                              literal("v" + std::to_string(i % 9))));
    }
    file.batches[0].push_back(make_triple(ex("m1"), ex("p0"), ex("boom")));
    const std::vector<FileLoad> known = {
        {file_source("known.nt", 1), {{make_triple(ex("p0"), ex("p1"), ex("m3"))}}}};
    const FileLoad other{file_source("other.nt", 1), {{make_triple(ex("x"), ex("y"), ex("z"))}}};
    auto incremental = open_store("incremental.db");
    auto staged = open_store("staged.db");
    insert_all(incremental, known);
    insert_all(staged, known);
    const auto terms_before = staged.count("graph_terms");
    staged.refuse("graph_terms", "NEW.value = 'http://example.org/boom'");
    auto refused = staged.graph->stage("mid", file.source, file.batches[0]);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("refused"), std::string::npos)
        << refused.error().message;
    EXPECT_EQ(staged.count("graph_terms"), terms_before);
    EXPECT_EQ(staged.count("graph_staged_quads"), 0);
    staged.refuse("graph_terms", {});
    insert_all(incremental, {other});
    insert_all(staged, {other});  // its terms take the ids the refused terms had
    const auto expected = insert_all(incremental, {file});
    stage_all(staged, "mid", {file});
    expect_commit_as_inserted(staged, "mid", incremental, expected);
}

TEST_P(StagedLoadTest, NothingIsVisibleBeforeTheCommitAndAnAbortLeavesNothing) {
    auto store = open_store("kb.db");
    const auto before = store.graph->stats();
    ASSERT_TRUE(before);
    const auto files = sample_load(1);
    stage_all(store, "pending", files);
    EXPECT_GT(store.count("graph_staged_quads"), 0);
    // Staged, not stored: no fact, no source, no provenance.
    auto during = store.graph->stats();
    ASSERT_TRUE(during);
    EXPECT_EQ(during->quads, 0u);
    EXPECT_EQ(during->sources, 0u);
    EXPECT_TRUE(all_quads(store).empty());
    EXPECT_TRUE(provenance(store).empty());
    auto found = store.graph->match(
        TriplePattern{files[0].batches[0][0].s, std::nullopt, std::nullopt, std::nullopt});
    ASSERT_TRUE(found);
    EXPECT_TRUE(found->empty());

    ASSERT_TRUE(store.graph->abort_staged("pending"));
    EXPECT_EQ(store.count("graph_staged_quads"), 0);
    EXPECT_EQ(store.count("graph_staged_sources"), 0);
    auto committed = store.graph->commit_staged("pending");
    ASSERT_TRUE(committed);
    EXPECT_EQ(*committed, InsertCounts{}) << "an aborted load has nothing left to commit";
    auto after = store.graph->stats();
    ASSERT_TRUE(after);
    EXPECT_EQ(after->quads, 0u);
    EXPECT_EQ(after->sources, 0u);
    EXPECT_TRUE(store.graph->abort_staged("never-staged"))
        << "aborting an unknown load is not an error";
}

// A commit stopped midway (here its last write refused, as a killed process or a lost server
// would stop it) leaves no fact, source or link visible to anyone, keeps the staging, and the
// same load commits whole afterwards.
TEST_P(StagedLoadTest, ACommitStoppedMidwayLeavesNothingVisibleAndCommitsWholeLater) {
    const auto files = sample_load(6);
    for (const bool onto_earlier : {false, true}) {
        SCOPED_TRACE(onto_earlier ? "onto an earlier load" : "fresh");
        const std::string name = onto_earlier ? "onto" : "fresh";
        auto store = open_store("kb-" + name);
        auto expected = open_store("expected-" + name);
        if (onto_earlier) {
            insert_all(store, sample_load(5));
            insert_all(expected, sample_load(5));
        }
        auto before = store.graph->stats();
        ASSERT_TRUE(before);
        const auto links_before = store.count("graph_fact_sources");
        stage_all(store, "halted", files);
        const auto batches = store.count("graph_staged_quads");
        // OSP is the last order a group writes: SPO, the sources and the links are written by then.
        store.refuse("graph_osp", "NEW.o > 0");
        auto failed = store.graph->commit_staged("halted");
        ASSERT_FALSE(failed);
        EXPECT_NE(failed.error().message.find("refused"), std::string::npos)
            << failed.error().message;
        auto watcher = open_store("kb-" + name);  // another process
        for (Store* reader : {&store, &watcher}) {
            auto stats = reader->graph->stats();
            ASSERT_TRUE(stats) << stats.error().message;
            EXPECT_EQ(stats->quads, before->quads);
            EXPECT_EQ(stats->sources, before->sources);
            EXPECT_EQ(reader->count("graph_fact_sources"), links_before);
            EXPECT_EQ(reader->count("graph_pos"), static_cast<std::int64_t>(before->quads));
        }
        EXPECT_EQ(store.count("graph_staged_quads"), batches) << "the staging is kept";
        store.refuse("graph_osp", {});
        auto done = watcher.graph->commit_staged("halted");
        ASSERT_TRUE(done) << done.error().message;
        const auto inserted = insert_all(expected, files);
        EXPECT_EQ(*done, inserted);
        EXPECT_EQ(all_quads(store), all_quads(expected));
        EXPECT_EQ(all_sources(store), all_sources(expected));
    }
}

TEST_P(StagedLoadTest, AnInterruptedLoadStaysInvisibleAndAnotherConnectionCanFinishIt) {
    const auto files = sample_load(2);
    {
        auto first = open_store("kb.db");
        stage_all(first, "interrupted", files);
    }  // the process that staged it is gone
    auto reopened = open_store("kb.db");
    auto stats = reopened.graph->stats();
    ASSERT_TRUE(stats);
    EXPECT_EQ(stats->quads, 0u);
    EXPECT_EQ(stats->sources, 0u);
    // A separate load commits on its own, without the interrupted one.
    const std::vector<Triple> other = {make_triple(ex("x"), ex("p"), ex("y"))};
    ASSERT_TRUE(reopened.graph->stage("other", file_source("other.nt", 2), other));
    auto counts = reopened.graph->commit_staged("other");
    ASSERT_TRUE(counts);
    EXPECT_EQ(counts->added, 1u);
    EXPECT_EQ(all_quads(reopened).size(), 1u);
    // Another connection may finish the interrupted load: then it is all there.
    auto expected_store = open_store("expected.db");
    insert_all(expected_store, files);
    auto finishing = open_store("kb.db");
    auto finished = finishing.graph->commit_staged("interrupted");
    ASSERT_TRUE(finished) << finished.error().message;
    auto all = all_quads(reopened);
    all.erase(std::find(all.begin(), all.end(), schema::to_nquads(other[0])));
    EXPECT_EQ(all, all_quads(expected_store));
}

TEST_P(StagedLoadTest, ABadBatchStagesNothingAndBadNamesAreRefused) {
    auto store = open_store("kb.db");
    const auto source = file_source("bad.nt", 3);
    const std::vector<Triple> good = {make_triple(ex("a"), ex("p"), ex("b"))};
    ASSERT_TRUE(store.graph->stage("mixed", source, good));
    const std::vector<Triple> bad = {make_triple(ex("c"), ex("p"), ex("d")),
                                     make_triple(literal("x"), ex("p"), ex("e"))};
    auto refused = store.graph->stage("mixed", source, bad);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(refused.error().message.find("triple 1"), std::string::npos)
        << refused.error().message;
    auto counts = store.graph->commit_staged("mixed");
    ASSERT_TRUE(counts);
    EXPECT_EQ(counts->added, 1u) << "only the good batch was staged";
    EXPECT_EQ(all_quads(store).size(), 1u);

    for (const std::string& name :
         std::vector<std::string>{"", "has space", "slash/no", std::string(65, 'a')}) {
        auto r = store.graph->stage(name, source, good);
        ASSERT_FALSE(r) << name;
        EXPECT_EQ(r.error().type, base::ErrorType::kInvalidRequest);
        EXPECT_FALSE(store.graph->commit_staged(name));
        EXPECT_FALSE(store.graph->abort_staged(name));
    }
    SourceRecord bad_tier = source;
    bad_tier.tier = 9;
    EXPECT_FALSE(store.graph->stage("tier", bad_tier, good));
}

TEST_P(StagedLoadTest, AFileWithPosAndOspIndexesIsMigratedToTablesOnOpen) {
    if (on_postgres()) GTEST_SKIP() << "SQLite files only: PostgreSQL never had the old layout";
    const std::string path = "old.db";
    const auto files = sample_load(3);
    std::vector<std::string> quads_before;
    std::vector<Triple> probes;
    {
        auto store = open_store(path);
        insert_all(store, files);
        quads_before = all_quads(store);
        for (std::size_t i = 0; i < files[1].batches[1].size(); i += 7)
            probes.push_back(files[1].batches[1][i]);
        // The earlier layout: POS and OSP as indexes of graph_quads.
        ASSERT_TRUE(
            store.db->exec("DROP TABLE graph_pos; DROP TABLE graph_osp;"
                           "CREATE INDEX graph_quads_pos ON graph_quads(p, o, s, g);"
                           "CREATE INDEX graph_quads_osp ON graph_quads(o, s, p, g);"));
    }
    auto migrated = open_store(path);
    EXPECT_EQ(migrated.count("sqlite_master WHERE type = 'index' AND name IN ('graph_quads_pos', "
                             "'graph_quads_osp')"),
              0);
    EXPECT_EQ(migrated.count("graph_pos"), static_cast<std::int64_t>(quads_before.size()));
    EXPECT_EQ(migrated.count("graph_osp"), static_cast<std::int64_t>(quads_before.size()));
    EXPECT_EQ(all_quads(migrated), quads_before);
    auto reference = open_store("reference.db");
    insert_all(reference, files);
    expect_same_answers(reference, migrated, probes);
}

// A first load into an empty graph (on PostgreSQL written into bare tables, its keys built
// after the rows) leaves every quad order keyed as before: a repeated row is refused by each,
// the named graphs' GSPO index is in place, and a second load onto it stores what inserting does.
TEST_P(StagedLoadTest, AFirstLoadLeavesEveryQuadOrderKeyedForTheLoadsAfterIt) {
    auto store = open_store("keyed");
    stage_all(store, "first", sample_load(8));
    ASSERT_TRUE(store.graph->commit_staged("first"));
    const std::string first_row = " ORDER BY 1, 2, 3, 4 LIMIT 1";
    for (const auto& [table, columns] :
         std::vector<std::pair<std::string, std::string>>{{"graph_quads", "s, p, o, g, src"},
                                                          {"graph_pos", "p, o, s, g"},
                                                          {"graph_osp", "o, s, p, g"}}) {
        SCOPED_TRACE(table);
        auto repeat = store.db->exec("INSERT INTO " + table + "(" + columns + ") SELECT " +
                                     columns + " FROM " + table + first_row);
        EXPECT_FALSE(repeat) << "a repeated row must break the table's key";
    }
    const std::string index_count =
        on_postgres() ? "pg_indexes WHERE schemaname = current_schema() AND indexname IN "
                        "('graph_quads_gspo', 'graph_quads_pkey', 'graph_pos_pkey', "
                        "'graph_osp_pkey')"
                      : "sqlite_master WHERE type = 'index' AND name = 'graph_quads_gspo'";
    EXPECT_EQ(store.count(index_count), on_postgres() ? 4 : 1);
    auto reference = open_store("reference");
    insert_all(reference, sample_load(8));
    stage_all(store, "second", sample_load(9));
    const auto inserted = insert_all(reference, sample_load(9));
    expect_commit_as_inserted(store, "second", reference, inserted);
}

GLASSBOX_KNOWLEDGE_BACKENDS(StagedLoadTest);

}  // namespace
}  // namespace glassbox::store
