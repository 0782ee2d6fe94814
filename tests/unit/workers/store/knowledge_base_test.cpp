// KnowledgeBase::open and the knowledge/ folder: created owner-only, a linked one refused
// untouched. KnowledgeBases on both backends: two registries (two store workers, or two hosts on
// one PostgreSQL database) see each other's collections, loads and deletes.
#include "workers/store/knowledge_base.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "tests/support/knowledge_site.hpp"

namespace glassbox::store {
namespace {

namespace fs = std::filesystem;

class KnowledgeBaseFolderTest : public ::testing::Test {
protected:
    void SetUp() override {
        root = fs::temp_directory_path() / ("gb-kb-" + std::to_string(::getpid()) + "-" +
                                            std::to_string(std::random_device{}()));
        fs::create_directories(root);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
    fs::path root;
};

TEST_F(KnowledgeBaseFolderTest, ANewCollectionCreatesKnowledgeOwnerOnly) {
    const fs::path home = root / "home";
    auto kb = KnowledgeBase::open(home, "kg", true);
    ASSERT_TRUE(kb) << kb.error().describe();
    EXPECT_EQ(fs::status(home / "knowledge").permissions() & fs::perms::all, fs::perms::owner_all);
}

TEST_F(KnowledgeBaseFolderTest, ALinkedKnowledgeFolderIsRefusedAndItsTargetLeftAsItWas) {
    const fs::path home = root / "home";
    const fs::path target = root / "elsewhere";
    fs::create_directories(home);
    fs::create_directories(target);
    fs::permissions(target, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
    fs::create_directory_symlink(target, home / "knowledge");
    auto kb = KnowledgeBase::open(home, "kg", true);
    ASSERT_FALSE(kb);
    EXPECT_EQ(kb.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(kb.error().message.find("link"), std::string::npos) << kb.error().message;
    EXPECT_EQ(fs::status(target).permissions() & fs::perms::all,
              fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                  fs::perms::others_read | fs::perms::others_exec);
    EXPECT_TRUE(fs::is_empty(target));
}

// ---- the registry on both backends ------------------------------------------------------------

using schema::iri;
using schema::literal;

class RegistryTest : public store_testing::KnowledgeTest {
protected:
    // A registry as a store worker opens it: a home of its own (its index caches), and the
    // site's database on PostgreSQL.
    std::unique_ptr<KnowledgeBases> registry(const std::string& home_name) {
        const fs::path home = site_->dir() / home_name;
        fs::create_directories(home / "knowledge");
        // On SQLite two workers share one home; on PostgreSQL each host has its own.
        if (!on_postgres()) return std::make_unique<KnowledgeBases>(site_->dir());
        return std::make_unique<KnowledgeBases>(home, site_->dsn());
    }

    static void add_facts(KnowledgeBase& kb, int from, int count) {
        auto held = kb.lock();
        ASSERT_TRUE(held) << held.error().describe();
        SourceRecord source;
        source.uri = "file:///facts-" + std::to_string(from) + ".nt";
        source.tier = 1;
        source.loaded_at = "2026-11-30T06:00:00Z";
        auto id = kb.graph().register_source(source);
        ASSERT_TRUE(id) << id.error().describe();
        std::vector<schema::Triple> triples;
        for (int i = from; i < from + count; ++i) {
            triples.push_back({iri("https://example.org/s" + std::to_string(i)),
                               iri("https://example.org/p"), literal("v" + std::to_string(i)),
                               std::nullopt});
        }
        auto added = kb.graph().insert(*id, triples);
        ASSERT_TRUE(added) << added.error().describe();
    }

    static std::size_t fact_count(KnowledgeBase& kb) {
        auto held = kb.lock();
        EXPECT_TRUE(held);
        auto all = kb.graph().match(schema::TriplePattern{}, 10'000);
        EXPECT_TRUE(all) << all.error().describe();
        return all ? all->size() : 0;
    }
};

TEST_P(RegistryTest, ACollectionMadeThroughOneRegistryIsServedByTheOther) {
    auto a = registry("host-a");
    auto b = registry("host-b");
    auto none = b->get("kg", false);
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().type, base::ErrorType::kNotFound);

    auto kb_a = a->get("kg", true);
    ASSERT_TRUE(kb_a) << kb_a.error().describe();
    add_facts(**kb_a, 0, 5);
    auto kb_b = b->get("kg", false);
    ASSERT_TRUE(kb_b) << kb_b.error().describe();
    EXPECT_EQ(fact_count(**kb_b), 5u);
    // Facts added through B, some already there, are seen through A once each.
    add_facts(**kb_b, 3, 4);
    EXPECT_EQ(fact_count(**kb_a), 7u);
    EXPECT_EQ(a->names(), std::vector<std::string>{"kg"});
    EXPECT_EQ(b->names(), std::vector<std::string>{"kg"});
}

TEST_P(RegistryTest, ADeleteThroughOneIsSeenByTheOtherAndANewCollectionIsToldApart) {
    auto a = registry("host-a");
    auto b = registry("host-b");
    auto first = a->get("kg", true);
    ASSERT_TRUE(first) << first.error().describe();
    add_facts(**first, 0, 3);
    auto seen = b->get("kg", false);
    ASSERT_TRUE(seen) << seen.error().describe();
    ASSERT_EQ(fact_count(**seen), 3u);
    first->reset();

    const auto keep = [](KnowledgeBase&) -> base::Result<void> { return {}; };
    ASSERT_TRUE(a->remove("kg", keep, keep));
    auto gone = b->get("kg", false);
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().type, base::ErrorType::kNotFound);
    EXPECT_TRUE(b->names().empty());
    // B's old instance refuses, as after a delete in this process.
    EXPECT_FALSE((*seen)->lock());

    auto again = a->get("kg", true);
    ASSERT_TRUE(again) << again.error().describe();
    add_facts(**again, 100, 1);
    auto fresh = b->get("kg", false);
    ASSERT_TRUE(fresh) << fresh.error().describe();
    EXPECT_EQ(fact_count(**fresh), 1u);
}

GLASSBOX_KNOWLEDGE_BACKENDS(RegistryTest);

class RegistryOnPostgresTest : public store_testing::KnowledgeTest {};

TEST_P(RegistryOnPostgresTest,
       AServerThatCannotBeReachedIsStoreUnavailableNamingItNeverThePassword) {
    // Port 1 on loopback: privileged, and no test or server of ours listens there.
    const int port = 1;
    KnowledgeBases bases(site_->dir(), "host=127.0.0.1 port=" + std::to_string(port) +
                                           " user=glassbox password=hunter2 dbname=postgres");
    auto kb = bases.get("kg", true);
    ASSERT_FALSE(kb);
    EXPECT_EQ(kb.error().type, base::ErrorType::kStoreUnavailable);
    EXPECT_NE(kb.error().message.find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << kb.error().message;
    EXPECT_EQ(kb.error().message.find("hunter2"), std::string::npos) << kb.error().message;
    auto listed = bases.list();
    ASSERT_FALSE(listed);
    EXPECT_EQ(listed.error().type, base::ErrorType::kStoreUnavailable);
}

TEST_P(RegistryOnPostgresTest, ASearchPathWithoutAnExistingSchemaIsRefusedClearly) {
    KnowledgeBases bases(site_->dir(), site_->dsn() + " options='-c search_path=no_such_schema'");
    auto kb = bases.get("kg", true);
    ASSERT_FALSE(kb);
    EXPECT_EQ(kb.error().type, base::ErrorType::kInvalidRequest);
    EXPECT_NE(kb.error().message.find("search_path"), std::string::npos) << kb.error().message;
}

INSTANTIATE_TEST_SUITE_P(OnPostgres, RegistryOnPostgresTest,
                         ::testing::Values(store_testing::Backend::kPostgres));

}  // namespace
}  // namespace glassbox::store
