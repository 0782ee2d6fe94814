// Freshness in the knowledge store (issue 35), on SQLite and on PostgreSQL: a source's own date
// and a collection's revalidation age round-trip, are seen by another registry (another
// process), count stale sources on an injected clock, and a database made before the
// source_date columns gains them.
#include "workers/store/source_freshness.hpp"

#include "tests/support/knowledge_site.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "base/time_format.hpp"
#include "workers/store/collection_catalog.hpp"
#include "workers/store/knowledge_base.hpp"

namespace glassbox::store {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;

std::chrono::system_clock::time_point at(const char* datetime) {
    return std::chrono::system_clock::time_point{
        std::chrono::milliseconds{base::parse_xsd_datetime_ms(datetime).value_or(0)}};
}

class SourceFreshnessTest : public store_testing::KnowledgeTest {
protected:
    void SetUp() override {
        KnowledgeTest::SetUp();
        if (IsSkipped()) return;
        home = site_->dir();
        fs::create_directories(home / "knowledge");
    }

    std::string dsn() const { return on_postgres() ? site_->dsn() : std::string(); }

    // A file dated 2020 but loaded recently, and a document loaded long ago that says it was
    // written yesterday.
    static void fill(KnowledgeBase& kb) {
        auto held = kb.lock();
        ASSERT_TRUE(held);
        SourceRecord file;
        file.uri = "file:///ships.ttl";
        file.tier = 1;
        file.loaded_at = "2026-11-29T10:00:00Z";
        file.source_date = "2020-01-01";
        auto id = kb.graph().register_source(file);
        ASSERT_TRUE(id) << id.error().describe();
        DocumentRecord document;
        document.uri = "urn:glassbox:doc:note";
        document.loaded_at = "2024-01-01T00:00:00Z";
        document.source_date = "2026-11-29T12:00:00Z";
        document.text = "First part.";
        auto put =
            kb.documents().put(document, std::vector<ChunkRecord>{{0, 0, 11, "First part."}});
        ASSERT_TRUE(put) << put.error().describe();
    }

    fs::path home;
};

GLASSBOX_KNOWLEDGE_BACKENDS(SourceFreshnessTest);

TEST_P(SourceFreshnessTest, TheDateAndTheMaxAgeRoundTripAndAnotherProcessSeesThem) {
    {
        KnowledgeBases bases(home, dsn());
        auto kb = bases.get("fresh", true);
        ASSERT_TRUE(kb) << kb.error().describe();
        fill(**kb);
        auto held = (*kb)->lock();
        ASSERT_TRUE(held);
        ASSERT_TRUE(write_max_age((*kb)->db(), hours{24}));
    }
    KnowledgeBases other(home, dsn());
    auto kb = other.get("fresh", false);
    ASSERT_TRUE(kb) << kb.error().describe();
    auto held = (*kb)->lock();
    ASSERT_TRUE(held);
    const std::int64_t first = 1;
    auto sources = read_sources((*kb)->db(), std::span<const std::int64_t>(&first, 1));
    ASSERT_TRUE(sources) << sources.error().describe();
    ASSERT_EQ(sources->size(), 1u);
    EXPECT_EQ(sources->front().source_date, "2020-01-01");
    auto document = (*kb)->documents().document("urn:glassbox:doc:note");
    ASSERT_TRUE(document) << document.error().describe();
    EXPECT_EQ(document->record.source_date, "2026-11-29T12:00:00Z");
    auto age = read_max_age((*kb)->db());
    ASSERT_TRUE(age) << age.error().describe();
    EXPECT_EQ(*age, std::optional<std::chrono::seconds>{hours{24}});

    auto summary = summarize_collection(**kb, at("2026-11-30T00:00:00Z"));
    ASSERT_TRUE(summary) << summary.error().describe();
    EXPECT_EQ(summary->max_age, "1d");
    EXPECT_EQ(summary->stale_sources, 1u)
        << "the file by its own 2020 date; the document is 12 hours old by its own";

    ASSERT_TRUE(write_max_age((*kb)->db(), std::nullopt));
    summary = summarize_collection(**kb, at("2026-11-30T00:00:00Z"));
    ASSERT_TRUE(summary);
    EXPECT_EQ(summary->max_age, "");
    EXPECT_EQ(summary->stale_sources, 0u) << "no revalidation age, nothing stale";
}

TEST_P(SourceFreshnessTest, FactSourcesAndChunksAreMarkedOnlyUnderAMaxAge) {
    std::vector<schema::FactSource> sources(1);
    sources[0].loaded_at = "2026-11-29T23:00:00Z";
    sources[0].date = "2020-01-01";
    const auto now = at("2026-11-30T00:00:00Z");
    mark_freshness(sources, std::nullopt, now);
    EXPECT_FALSE(sources[0].stale.has_value());
    EXPECT_FALSE(sources[0].max_age.has_value());
    mark_freshness(sources, hours{24 * 90}, now);
    EXPECT_EQ(sources[0].max_age, "90d");
    EXPECT_EQ(sources[0].stale, true);
    schema::Chunk chunk;
    chunk.loaded_at = "2026-11-29T23:00:00Z";
    mark_freshness(chunk, hours{24}, now);
    EXPECT_EQ(chunk.stale, false);
}

TEST_P(SourceFreshnessTest, ADatabaseMadeBeforeTheDateColumnsGainsThem) {
    {
        KnowledgeBases bases(home, dsn());
        auto kb = bases.get("old", true);
        ASSERT_TRUE(kb) << kb.error().describe();
        auto held = (*kb)->lock();
        ASSERT_TRUE(held);
        // As an older glassbox left it: no source_date anywhere, no settings.
        for (const char* sql :
             {"ALTER TABLE graph_sources DROP COLUMN source_date",
              "ALTER TABLE graph_staged_sources DROP COLUMN source_date",
              "ALTER TABLE documents DROP COLUMN source_date", "DROP TABLE kb_settings"}) {
            ASSERT_TRUE((*kb)->db().exec(sql)) << sql;
        }
    }
    KnowledgeBases again(home, dsn());
    auto kb = again.get("old", false);
    ASSERT_TRUE(kb) << kb.error().describe();
    fill(**kb);
    auto held = (*kb)->lock();
    ASSERT_TRUE(held);
    ASSERT_TRUE(write_max_age((*kb)->db(), hours{1}));
    auto summary = summarize_collection(**kb, at("2026-11-30T00:00:00Z"));
    ASSERT_TRUE(summary) << summary.error().describe();
    EXPECT_EQ(summary->stale_sources, 2u);
}

// A file's date is found while it is read: the batches before the one that states it send none,
// and the date stays with the file once a later batch brought it.
TEST_P(SourceFreshnessTest, AStagedLoadKeepsTheDateALaterBatchBrought) {
    KnowledgeBases bases(home, dsn());
    auto kb = bases.get("staged", true);
    ASSERT_TRUE(kb) << kb.error().describe();
    auto held = (*kb)->lock();
    ASSERT_TRUE(held);
    SourceRecord file;
    file.uri = "file:///big.ttl";
    file.loaded_at = "2026-11-29T10:00:00Z";
    const auto fact = [](const char* s) {
        return std::vector<schema::Triple>{{schema::iri(std::string("https://example.org/") + s),
                                            schema::iri("https://example.org/p"),
                                            schema::literal("v"), std::nullopt}};
    };
    ASSERT_TRUE((*kb)->graph().stage("load-1", file, fact("a")));
    file.source_date = "2020-01-01";
    ASSERT_TRUE((*kb)->graph().stage("load-1", file, fact("b")));
    file.source_date.clear();
    ASSERT_TRUE((*kb)->graph().stage("load-1", file, fact("c")));
    auto committed = (*kb)->graph().commit_staged("load-1");
    ASSERT_TRUE(committed) << committed.error().describe();
    auto sources = (*kb)->graph().sources_of(fact("a").front());
    ASSERT_TRUE(sources) << sources.error().describe();
    ASSERT_EQ(sources->size(), 1u);
    EXPECT_EQ(sources->front().source_date, "2020-01-01");
}

TEST_P(SourceFreshnessTest, ASourceDateThatIsNoDateIsRefused) {
    KnowledgeBases bases(home, dsn());
    auto kb = bases.get("bad", true);
    ASSERT_TRUE(kb);
    auto held = (*kb)->lock();
    ASSERT_TRUE(held);
    SourceRecord file;
    file.uri = "file:///x.ttl";
    file.source_date = "last spring";
    auto id = (*kb)->graph().register_source(file);
    ASSERT_FALSE(id);
    EXPECT_EQ(id.error().type, base::ErrorType::kInvalidRequest);
}

}  // namespace
}  // namespace glassbox::store
