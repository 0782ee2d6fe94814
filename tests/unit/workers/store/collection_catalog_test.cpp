// Collections as wholes (issue 31): KnowledgeBases::names and remove, the counts of
// summarize_collection, refusing a delete while a staged load is in progress, and deleting while
// other threads (and another registry, as another process) use the collection.
#include "workers/store/collection_catalog.hpp"

#include "tests/support/knowledge_site.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace glassbox::store {
namespace {

namespace fs = std::filesystem;
using base::ErrorType;
using schema::iri;
using schema::literal;

// On each backend: collections as SQLite files in the site's home, or as schemas of the site's
// PostgreSQL database (with their vector index caches in the home).
class CollectionCatalogTest : public store_testing::KnowledgeTest {
protected:
    void SetUp() override {
        KnowledgeTest::SetUp();
        if (IsSkipped()) return;
        home = site_->dir();
        fs::create_directories(home / "knowledge");
    }

    // The DSN a registry is given: none on SQLite.
    std::string dsn() const { return on_postgres() ? site_->dsn() : std::string(); }

    // Whether a collection of that name is stored, as a fresh registry (another process) sees it.
    bool stored(const std::string& name) const {
        KnowledgeBases fresh(home, dsn());
        const auto names = fresh.names();
        return std::find(names.begin(), names.end(), name) != names.end();
    }

    // PostgreSQL: the collection schemas left in the database (<site schema>_kb_<id>).
    std::int64_t collection_schemas() const {
        auto db = site_->connect();
        EXPECT_TRUE(db) << db.error().message;
        if (!db) return -1;
        auto st = (*db)->prepare(
            "SELECT count(*) FROM pg_namespace WHERE starts_with(nspname, current_schema() || "
            "'_kb_')");
        EXPECT_TRUE(st);
        auto n = st->first([](const storage::sql::Row& row) { return row.int64(0); });
        EXPECT_TRUE(n && *n);
        return n && *n ? **n : -1;
    }

    // `facts` facts about as many subjects (tier 1), and one document of tier 2 with two chunks.
    static void fill(KnowledgeBase& kb, int facts) {
        auto held = kb.lock();
        ASSERT_TRUE(held);
        SourceRecord source;
        source.uri = "file:///facts.nt";
        source.tier = 1;
        source.loaded_at = "2026-11-01T10:00:00Z";
        auto id = kb.graph().register_source(source);
        ASSERT_TRUE(id) << id.error().describe();
        std::vector<schema::Triple> triples;
        for (int i = 0; i < facts; ++i)
            triples.push_back({iri("https://example.org/s" + std::to_string(i)),
                               iri("https://example.org/p"), literal("v" + std::to_string(i)),
                               std::nullopt});
        ASSERT_TRUE(kb.graph().insert(*id, triples));
        DocumentRecord document;
        document.uri = "urn:glassbox:doc:note";
        document.tier = 2;
        document.loaded_at = "2026-11-02T09:30:00Z";
        document.text = "First part. Second part.";
        const std::vector<ChunkRecord> chunks = {{0, 0, 11, "First part."},
                                                 {1, 12, 12, "Second part."}};
        auto put = kb.documents().put(document, chunks);
        ASSERT_TRUE(put) << put.error().describe();
    }

    // The files under the home (databases, their WAL, vector index caches), by name.
    std::vector<std::string> files() const {
        std::vector<std::string> out;
        std::error_code ec;
        for (const auto& entry : fs::recursive_directory_iterator(home, ec)) {
            if (entry.is_regular_file()) out.push_back(entry.path().filename());
        }
        std::sort(out.begin(), out.end());
        return out;
    }

    static base::Result<void> keep_going(KnowledgeBase&) { return {}; }

    fs::path home;
};

GLASSBOX_KNOWLEDGE_BACKENDS(CollectionCatalogTest);

TEST_P(CollectionCatalogTest, NamesAreTheCollectionFilesOnly) {
    KnowledgeBases bases(home, dsn());
    EXPECT_TRUE(bases.names().empty()) << "no knowledge folder yet";
    ASSERT_TRUE(bases.get("beta", true));
    ASSERT_TRUE(bases.get("alpha.v2", true));
    // Files that are not collections: another suffix, a name the rule refuses.
    std::ofstream(home / "knowledge" / "notes.txt") << "x";
    std::ofstream(home / "knowledge" / ".hidden.db") << "x";
    EXPECT_EQ(bases.names(), (std::vector<std::string>{"alpha.v2", "beta"}));
}

TEST_P(CollectionCatalogTest, ASummaryCountsFactsEntitiesDocumentsAndChunksPerTier) {
    KnowledgeBases bases(home, dsn());
    auto kb = bases.get("kg", true);
    ASSERT_TRUE(kb);
    fill(**kb, 5);
    auto held = (*kb)->lock();
    ASSERT_TRUE(held);
    auto summary = summarize_collection(**kb);
    ASSERT_TRUE(summary) << summary.error().describe();
    EXPECT_EQ(summary->collection, "kg");
    EXPECT_EQ(summary->facts, 5u);
    EXPECT_EQ(summary->entities, 5u);
    EXPECT_EQ(summary->documents, 1u);
    EXPECT_EQ(summary->chunks, 2u);
    EXPECT_EQ(summary->documents_per_tier, (std::map<std::string, std::uint64_t>{{"2", 1}}));
    EXPECT_EQ(summary->chunks_per_tier, (std::map<std::string, std::uint64_t>{{"2", 2}}));
    EXPECT_GT(summary->bytes_on_disk, 0u);
    EXPECT_EQ(summary->last_loaded, "2026-11-02T09:30:00Z")
        << "the newer of the source and the document";
}

TEST_P(CollectionCatalogTest, RemoveDeletesEveryFileAndTheNameIsNotFoundThenFreeAgain) {
    KnowledgeBases bases(home, dsn());
    {
        auto kb = bases.get("kg", true);
        ASSERT_TRUE(kb);
        fill(**kb, 3);
        auto other = bases.get("other", true);
        ASSERT_TRUE(other);
    }
    ASSERT_TRUE(stored("kg"));
    // `check` runs twice: first while the collection is still served, then once the name is
    // taken (new requests are NotFound); `before` once, last.
    std::vector<std::string> steps;
    const auto check = [&](KnowledgeBase& kb) -> base::Result<void> {
        EXPECT_EQ(kb.collection(), "kg");
        steps.push_back(bases.get("kg", false) ? "check, served" : "check, taken");
        return {};
    };
    const auto before = [&](KnowledgeBase&) -> base::Result<void> {
        steps.push_back("before");
        return {};
    };
    auto removed = bases.remove("kg", check, before);
    ASSERT_TRUE(removed) << removed.error().describe();
    EXPECT_EQ(steps, (std::vector<std::string>{"check, served", "check, taken", "before"}));
    for (const auto& file : files())
        EXPECT_NE(file.rfind("kg.", 0), 0u) << file << " was left behind";
    EXPECT_TRUE(stored("other")) << "only the named collection goes";
    if (on_postgres()) {
        EXPECT_EQ(collection_schemas(), 1) << "its schema went, the other's stayed";
    }
    EXPECT_EQ(bases.names(), (std::vector<std::string>{"other"}));
    auto gone = bases.get("kg", false);
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().type, ErrorType::kNotFound);
    // Loading into the name again makes an empty collection: nothing of the old one comes back.
    auto again = bases.get("kg", true);
    ASSERT_TRUE(again) << again.error().describe();
    auto held = (*again)->lock();
    ASSERT_TRUE(held);
    auto summary = summarize_collection(**again);
    ASSERT_TRUE(summary);
    EXPECT_EQ(summary->facts, 0u);
    EXPECT_EQ(summary->documents, 0u);
}

TEST_P(CollectionCatalogTest, RemovingAnUnknownCollectionIsNotFoundNamingItWithoutAPath) {
    KnowledgeBases bases(home, dsn());
    auto removed = bases.remove("nope", keep_going, keep_going);
    ASSERT_FALSE(removed);
    EXPECT_EQ(removed.error().type, ErrorType::kNotFound);
    EXPECT_NE(removed.error().message.find("\"nope\""), std::string::npos)
        << removed.error().message;
    EXPECT_EQ(removed.error().message.find(home.string()), std::string::npos)
        << removed.error().message;
    auto bad = bases.remove("../nope", keep_going, keep_going);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().type, ErrorType::kInvalidRequest);
}

TEST_P(CollectionCatalogTest, AStagedLoadInProgressRefusesTheDeleteAndAnAbandonedOneDoesNot) {
    KnowledgeBases bases(home, dsn());
    auto kb = bases.get("kg", true);
    ASSERT_TRUE(kb);
    fill(**kb, 2);
    {
        auto held = (*kb)->lock();
        ASSERT_TRUE(held);
        SourceRecord source;
        source.uri = "file:///big.nt";
        const std::vector<schema::Triple> batch = {{iri("https://example.org/x"),
                                                    iri("https://example.org/p"), literal("y"),
                                                    std::nullopt}};
        ASSERT_TRUE((*kb)->graph().stage("load-1", source, batch));
    }
    const auto now = std::chrono::system_clock::now();
    const std::chrono::seconds idle{600};
    bool served_meanwhile = false;
    const auto loading = [&](KnowledgeBase& base) {
        // A refused delete never takes the name: the load's next batch is served meanwhile.
        served_meanwhile = static_cast<bool>(bases.get("kg", true));
        return refuse_if_loading(base, idle, now);
    };
    auto refused = bases.remove("kg", loading, keep_going);
    EXPECT_TRUE(served_meanwhile);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().type, ErrorType::kInvalidRequest);
    EXPECT_NE(refused.error().message.find("load-1"), std::string::npos) << refused.error().message;
    // Nothing went: the collection is served as before, by the same instance.
    EXPECT_TRUE(stored("kg"));
    auto same = bases.get("kg", false);
    ASSERT_TRUE(same);
    EXPECT_EQ(same->get(), kb->get());
    EXPECT_TRUE((*same)->lock());
    // An hour later nothing has been staged since: the load was abandoned, the delete goes.
    const auto abandoned = [&](KnowledgeBase& base) {
        return refuse_if_loading(base, idle, now + std::chrono::hours{1});
    };
    auto removed = bases.remove("kg", abandoned, keep_going);
    EXPECT_TRUE(removed) << removed.error().describe();
    EXPECT_FALSE(stored("kg"));
}

TEST_P(CollectionCatalogTest, ARequestHoldingTheCollectionFinishesOnTheOldDataAndThenSeesNotFound) {
    KnowledgeBases bases(home, dsn());
    auto kb = bases.get("kg", true);
    ASSERT_TRUE(kb);
    fill(**kb, 4);
    // A reader holds the lock: the delete waits for it, and the reader's data stays whole.
    auto held = (*kb)->lock();
    ASSERT_TRUE(held);
    std::atomic<bool> removed{false};
    std::thread deleter([&] {
        auto r = bases.remove("kg", keep_going, keep_going);
        EXPECT_TRUE(r) << r.error().describe();
        removed = true;
    });
    auto facts = (*kb)->graph().match({}, 0);
    ASSERT_TRUE(facts);
    EXPECT_EQ(facts->size(), 4u) << "the reader sees the old data, whole";
    EXPECT_FALSE(removed) << "the delete waits for the request that holds the lock";
    EXPECT_TRUE(stored("kg"));
    held->unlock();
    deleter.join();
    EXPECT_TRUE(removed);
    // The reader's next use of its reference is NotFound, not a closed connection.
    auto after = (*kb)->lock();
    ASSERT_FALSE(after);
    EXPECT_EQ(after.error().type, ErrorType::kNotFound);
}

TEST_P(CollectionCatalogTest, ReadersRacingADeleteGetTheOldDataOrNotFoundNeverAnythingElse) {
    KnowledgeBases bases(home, dsn());
    {
        auto kb = bases.get("kg", true);
        ASSERT_TRUE(kb);
        fill(**kb, 50);
    }
    std::atomic<bool> stop{false};
    std::atomic<int> whole{0}, not_found{0}, other{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t) {
        readers.emplace_back([&] {
            while (!stop) {
                auto kb = bases.get("kg", false);
                if (!kb) {
                    (kb.error().type == ErrorType::kNotFound ? not_found : other)++;
                    continue;
                }
                auto held = (*kb)->lock();
                if (!held) {
                    (held.error().type == ErrorType::kNotFound ? not_found : other)++;
                    continue;
                }
                auto facts = (*kb)->graph().match({}, 0);
                (facts && facts->size() == 50 ? whole : other)++;
            }
        });
    }
    while (whole < 20) std::this_thread::yield();
    auto removed = bases.remove("kg", keep_going, keep_going);
    EXPECT_TRUE(removed) << removed.error().describe();
    while (not_found < 20) std::this_thread::yield();
    stop = true;
    for (auto& reader : readers) reader.join();
    EXPECT_EQ(other, 0) << "a reader saw neither the old data nor NotFound";
    EXPECT_GE(whole, 20);
    EXPECT_FALSE(stored("kg"));
}

TEST_P(CollectionCatalogTest, AnotherProcessesDeleteIsNoticedAndItsIndexFilesAreNotWrittenBack) {
    // Two registries on one home: two store processes.
    KnowledgeBases first(home / "one", dsn());
    KnowledgeBases second(on_postgres() ? home / "two" : home / "one", dsn());
    {
        auto kb = first.get("kg", true);
        ASSERT_TRUE(kb);
        fill(**kb, 3);
    }
    auto seen = second.get("kg", false);
    ASSERT_TRUE(seen) << seen.error().describe();
    {
        // An unsaved vector in the second one's index: its destructor would write the file.
        auto held = (*seen)->lock();
        ASSERT_TRUE(held);
        const std::vector<std::int64_t> keys = {1};
        const std::vector<std::vector<float>> vectors = {{1.0f, 0.0f, 0.0f}};
        ASSERT_TRUE((*seen)->entity_vectors().add(keys, vectors, "test-model"));
    }
    seen = base::make_error(ErrorType::kInternal, "dropped");
    ASSERT_TRUE(first.remove("kg", keep_going, keep_going));
    auto again = second.get("kg", false);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().type, ErrorType::kNotFound);
    EXPECT_TRUE(files().empty()) << "left or written back: " << files().front();
    if (on_postgres()) {
        EXPECT_EQ(collection_schemas(), 0);
    }
}

}  // namespace
}  // namespace glassbox::store
