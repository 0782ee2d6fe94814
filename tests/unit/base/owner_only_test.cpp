// Owner-only folders and files: created 0700/0600, existing folders never chmodded, shared or
// linked ones refused with their targets untouched.
#include "base/owner_only.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

namespace glassbox::base {
namespace {

namespace fs = std::filesystem;

class OwnerOnlyTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir = fs::temp_directory_path() /
              ("glassbox-owner-only-" + std::to_string(std::random_device{}()));
        fs::create_directory(dir);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    static unsigned mode_of(const fs::path& path) {
        struct stat st {};
        EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
        return st.st_mode & 07777;
    }
    static std::string text_of(const fs::path& path) {
        std::ifstream in(path);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }
    fs::path dir;
};

TEST_F(OwnerOnlyTest, AMissingHomeIsCreatedOwnerOnlyWithItsParents) {
    const auto home = dir / "a" / "b" / "home";
    ASSERT_TRUE(ensure_home_folder(home));
    EXPECT_EQ(mode_of(home), 0700u);
    EXPECT_EQ(mode_of(dir / "a"), 0700u);
    ASSERT_TRUE(ensure_home_folder(home)) << "an existing own home is fine";
    ASSERT_TRUE(ensure_owner_only_folder(home / "logs"));
    EXPECT_EQ(mode_of(home / "logs"), 0700u);
}

TEST_F(OwnerOnlyTest, AnExistingHomeKeepsItsModeOrIsRefusedWhenOthersCanWriteIt) {
    const auto readable = dir / "readable";
    fs::create_directory(readable);
    ::chmod(readable.c_str(), 0755);
    ASSERT_TRUE(ensure_home_folder(readable));
    EXPECT_EQ(mode_of(readable), 0755u) << "never chmodded";

    for (const unsigned shared : {0777u, 01777u, 0770u}) {
        const auto home = dir / ("shared-" + std::to_string(shared));
        fs::create_directory(home);
        ::chmod(home.c_str(), shared);
        const auto made = ensure_home_folder(home);
        ASSERT_FALSE(made) << std::oct << shared;
        EXPECT_EQ(made.error().type, ErrorType::kInvalidRequest);
        EXPECT_NE(made.error().message.find("other users can write"), std::string::npos)
            << made.error().message;
        EXPECT_NE(made.error().message.find(home.string()), std::string::npos);
        EXPECT_EQ(mode_of(home), shared) << "a refused home is left as it was";
    }

    std::ofstream(dir / "file") << "x";
    EXPECT_EQ(ensure_home_folder(dir / "file").error().type, ErrorType::kInvalidRequest);
}

TEST_F(OwnerOnlyTest, AFolderOfAnotherUserIsRefused) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a folder to another user";
    const auto theirs = dir / "theirs";
    fs::create_directory(theirs);
    ::chmod(theirs.c_str(), 0700);
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    const auto made = ensure_home_folder(theirs);
    ASSERT_FALSE(made);
    EXPECT_NE(made.error().message.find("owned by another user"), std::string::npos)
        << made.error().message;
}

TEST_F(OwnerOnlyTest, ALinkedFolderInsideTheHomeIsRefusedAndItsTargetUntouched) {
    const auto target = dir / "elsewhere";
    fs::create_directory(target);
    ::chmod(target.c_str(), 0755);
    fs::create_directory_symlink(target, dir / "knowledge");
    const auto made = ensure_owner_only_folder(dir / "knowledge");
    ASSERT_FALSE(made);
    EXPECT_EQ(made.error().type, ErrorType::kInvalidRequest);
    EXPECT_NE(made.error().message.find("symbolic link"), std::string::npos);
    EXPECT_EQ(mode_of(target), 0755u);
}

TEST_F(OwnerOnlyTest, FilesAreCreatedOwnerOnlyAndNeverOpenedThroughALink) {
    const auto log = dir / "broker.log";
    auto fd = open_owner_only_file(log, OpenFor::kAppend);
    ASSERT_TRUE(fd) << fd.error().describe();
    ASSERT_EQ(::write(*fd, "one\n", 4), 4);
    ::close(*fd);
    EXPECT_EQ(mode_of(log), 0600u);
    fd = open_owner_only_file(log, OpenFor::kAppend);
    ASSERT_TRUE(fd);
    ASSERT_EQ(::write(*fd, "two\n", 4), 4);
    ::close(*fd);
    EXPECT_EQ(text_of(log), "one\ntwo\n") << "appended";

    // An older file others could read is made owner-only through its descriptor.
    const auto old = dir / "old.log";
    std::ofstream(old) << "kept";
    ::chmod(old.c_str(), 0644);
    fd = open_owner_only_file(old, OpenFor::kAppend);
    ASSERT_TRUE(fd);
    ::close(*fd);
    EXPECT_EQ(mode_of(old), 0600u);
    EXPECT_EQ(text_of(old), "kept");

    const auto target = dir / "target";
    std::ofstream(target) << "target text";
    ::chmod(target.c_str(), 0644);
    const auto link = dir / "linked.log";
    fs::create_symlink(target, link);
    for (const auto how : {OpenFor::kAppend, OpenFor::kTruncate}) {
        const auto refused = open_owner_only_file(link, how);
        ASSERT_FALSE(refused);
        EXPECT_EQ(refused.error().type, ErrorType::kInvalidRequest);
        EXPECT_NE(refused.error().message.find("symbolic link"), std::string::npos);
        EXPECT_NE(refused.error().message.find(link.string()), std::string::npos);
    }
    EXPECT_EQ(text_of(target), "target text");
    EXPECT_EQ(mode_of(target), 0644u);

    const auto hard = dir / "hard.log";
    fs::create_hard_link(target, hard);
    const auto refused = open_owner_only_file(hard, OpenFor::kTruncate);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("hard links"), std::string::npos);
    EXPECT_EQ(text_of(target), "target text");
    EXPECT_EQ(mode_of(target), 0644u);
}

TEST_F(OwnerOnlyTest, AWrittenFileIsOwnerOnlyAndReplacesALinkWithoutFollowingIt) {
    const auto config = dir / "config.json";
    ASSERT_TRUE(write_owner_only_file(config, "{}\n"));
    EXPECT_EQ(mode_of(config), 0600u);
    EXPECT_EQ(text_of(config), "{}\n");

    const auto target = dir / "target";
    std::ofstream(target) << "target text";
    const auto ready = dir / "broker.ready";
    fs::create_symlink(target, ready);
    ASSERT_TRUE(write_owner_only_file(ready, "ready"));
    EXPECT_FALSE(fs::is_symlink(ready));
    EXPECT_EQ(text_of(ready), "ready");
    EXPECT_EQ(text_of(target), "target text");
    EXPECT_EQ(mode_of(ready), 0600u);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 3)
        << "no temporary file left behind";
}

TEST_F(OwnerOnlyTest, ErrorTextsAreValidUtf8WhateverThePath) {
    const auto odd = dir / std::string("caf\xff");
    fs::create_directory(odd);
    ::chmod(odd.c_str(), 0777);
    const auto made = ensure_home_folder(odd);
    ASSERT_FALSE(made);
    EXPECT_NE(made.error().message.find("caf\\xFF"), std::string::npos) << made.error().message;
}

}  // namespace
}  // namespace glassbox::base
