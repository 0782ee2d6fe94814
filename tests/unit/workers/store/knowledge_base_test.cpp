// KnowledgeBase::open and the knowledge/ folder: created owner-only, a linked one refused
// untouched.
#include "workers/store/knowledge_base.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>

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

}  // namespace
}  // namespace glassbox::store
