// ExplainSpool: append/ack/read order, bounds, reopen with stable ids, owner-only file.
#include "broker/explain_spool.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace glassbox::broker {
namespace {

SpoolRecord record(std::string session, std::uint64_t seq, std::string body = "{}") {
    SpoolRecord r;
    r.service = "echo";
    r.session = std::move(session);
    r.seq = seq;
    r.state = "open";
    r.body = std::move(body);
    return r;
}

class TempDir {
public:
    TempDir() {
        path_ = std::filesystem::temp_directory_path() /
                ("gb-spool-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    std::string file(const char* name) const { return (path_ / name).string(); }

private:
    static inline int counter_ = 0;
    std::filesystem::path path_;
};

std::unique_ptr<ExplainSpool> open_spool(const std::string& path, SpoolLimits limits = {}) {
    auto spool = ExplainSpool::open(path, limits);
    EXPECT_TRUE(spool.ok()) << (spool.ok() ? "" : spool.error().describe());
    return spool.ok() ? std::move(spool).value() : nullptr;
}

TEST(ExplainSpool, AppendAssignsIncreasingIdsAndCounts) {
    auto spool = open_spool("");
    ASSERT_TRUE(spool);
    auto first = spool->append(record("urn:s", 0, "abc"));
    auto second = spool->append(record("urn:s", 1, "defg"));
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(first.value(), 1u);
    EXPECT_EQ(second.value(), 2u);
    ASSERT_TRUE(spool->commit().ok());
    EXPECT_EQ(spool->messages(), 2u);
    EXPECT_EQ(spool->bytes(), record("urn:s", 0, "abc").bytes() + record("urn:s", 1, "defg").bytes());
    EXPECT_EQ(spool->last_id(), 2u);
}

TEST(ExplainSpool, AckRemovesOnlyTheAcknowledgedRecord) {
    auto spool = open_spool("");
    ASSERT_TRUE(spool);
    for (std::uint64_t seq = 0; seq < 3; ++seq) ASSERT_TRUE(spool->append(record("urn:s", seq)).ok());
    ASSERT_TRUE(spool->commit().ok());
    auto removed = spool->ack(2);
    ASSERT_TRUE(removed.ok());
    EXPECT_TRUE(removed.value());
    auto again = spool->ack(2);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again.value());
    EXPECT_FALSE(spool->ack(99).value());
    ASSERT_TRUE(spool->commit().ok());
    EXPECT_EQ(spool->messages(), 2u);
    auto pending = spool->read_after(0, 10);
    ASSERT_TRUE(pending.ok());
    ASSERT_EQ(pending.value().size(), 2u);
    EXPECT_EQ(pending.value()[0].delivery_id, 1u);
    EXPECT_EQ(pending.value()[1].delivery_id, 3u);
    EXPECT_EQ(pending.value()[1].seq, 2u);
    auto gone = spool->read(2);
    ASSERT_TRUE(gone.ok());
    EXPECT_FALSE(gone.value().has_value());
}

TEST(ExplainSpool, ReadAfterHonoursTheLimitAndOrderFromTheFile) {
    // A cache of 2 forces reads of older records from SQLite.
    SpoolLimits limits;
    limits.cache_max_messages = 2;
    auto spool = open_spool("", limits);
    ASSERT_TRUE(spool);
    for (std::uint64_t seq = 0; seq < 6; ++seq) {
        ASSERT_TRUE(spool->append(record("urn:s", seq, "body" + std::to_string(seq))).ok());
    }
    ASSERT_TRUE(spool->commit().ok());
    auto some = spool->read_after(1, 3);
    ASSERT_TRUE(some.ok());
    ASSERT_EQ(some.value().size(), 3u);
    EXPECT_EQ(some.value()[0].delivery_id, 2u);
    EXPECT_EQ(some.value()[0].body, "body1");
    EXPECT_EQ(some.value()[2].delivery_id, 4u);
    auto cached = spool->read_after(4, 10);
    ASSERT_TRUE(cached.ok());
    ASSERT_EQ(cached.value().size(), 2u);
    EXPECT_EQ(cached.value()[1].body, "body5");
    EXPECT_EQ(cached.value()[1].service, "echo");
    EXPECT_EQ(cached.value()[1].state, "open");
}

TEST(ExplainSpool, MessageBoundGivesSpoolFull) {
    SpoolLimits limits;
    limits.max_messages = 2;
    auto spool = open_spool("", limits);
    ASSERT_TRUE(spool);
    ASSERT_TRUE(spool->append(record("urn:s", 0)).ok());
    ASSERT_TRUE(spool->append(record("urn:s", 1)).ok());
    EXPECT_FALSE(spool->has_room(10));
    auto refused = spool->append(record("urn:s", 2));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().type, schema::ErrorType::kSpoolFull);
    ASSERT_TRUE(spool->ack(1).ok());
    EXPECT_TRUE(spool->append(record("urn:s", 2)).ok());
}

TEST(ExplainSpool, ByteBoundGivesSpoolFull) {
    SpoolLimits limits;
    limits.max_bytes = 100;
    auto spool = open_spool("", limits);
    ASSERT_TRUE(spool);
    ASSERT_TRUE(spool->append(record("urn:s", 0, std::string(60, 'x'))).ok());
    auto refused = spool->append(record("urn:s", 1, std::string(60, 'y')));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().type, schema::ErrorType::kSpoolFull);
    EXPECT_TRUE(spool->append(record("urn:s", 1, "small")).ok());
}

TEST(ExplainSpool, ReopenKeepsPendingRecordsAndNeverReusesIds) {
    TempDir dir;
    const std::string path = dir.file("spool.db");
    {
        auto spool = open_spool(path);
        ASSERT_TRUE(spool);
        for (std::uint64_t seq = 0; seq < 3; ++seq) {
            ASSERT_TRUE(spool->append(record("urn:s", seq, "b" + std::to_string(seq))).ok());
        }
        ASSERT_TRUE(spool->commit().ok());
        ASSERT_TRUE(spool->ack(1).ok());
        ASSERT_TRUE(spool->ack(3).ok());  // the highest id: it must not come back after reopen
        ASSERT_TRUE(spool->commit().ok());
    }
    auto spool = open_spool(path);
    ASSERT_TRUE(spool);
    EXPECT_EQ(spool->messages(), 1u);
    EXPECT_EQ(spool->bytes(), record("urn:s", 1, "b1").bytes());
    auto pending = spool->read_after(0, 10);
    ASSERT_TRUE(pending.ok());
    ASSERT_EQ(pending.value().size(), 1u);
    EXPECT_EQ(pending.value()[0].delivery_id, 2u);
    EXPECT_EQ(pending.value()[0].body, "b1");
    auto next = spool->append(record("urn:t", 0));
    ASSERT_TRUE(next.ok());
    EXPECT_EQ(next.value(), 4u);
}

TEST(ExplainSpool, DestructionCommitsTheOpenBatch) {
    TempDir dir;
    const std::string path = dir.file("spool.db");
    {
        auto spool = open_spool(path);
        ASSERT_TRUE(spool);
        ASSERT_TRUE(spool->append(record("urn:s", 0)).ok());
        // Destruction commits the open batch.
    }
    auto spool = open_spool(path);
    ASSERT_TRUE(spool);
    EXPECT_EQ(spool->messages(), 1u);
}

TEST(ExplainSpool, FileIsOwnerOnlyAndExclusive) {
    TempDir dir;
    const std::string path = dir.file("spool.db");
    auto spool = open_spool(path);
    ASSERT_TRUE(spool);
    struct stat info {};
    ASSERT_EQ(::stat(path.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
    auto second = ExplainSpool::open(path, {});
    ASSERT_FALSE(second.ok()) << "a second spool on the same file must fail";
    EXPECT_NE(second.error().message.find("in use"), std::string::npos) << second.error().message;
    // Exclusive locking is set before the first read, so WAL keeps its index in memory: no
    // -shm file, also when an existing spool (already in WAL mode) is reopened.
    ASSERT_TRUE(spool->append(record("urn:s", 0)).ok());
    ASSERT_TRUE(spool->commit().ok());
    EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
    spool.reset();
    spool = open_spool(path);
    ASSERT_TRUE(spool);
    EXPECT_EQ(spool->messages(), 1u);
    EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
}

TEST(ExplainSpool, UnopenablePathIsAnError) {
    auto spool = ExplainSpool::open("/nonexistent-dir/sub/spool.db", {});
    ASSERT_FALSE(spool.ok());
    EXPECT_NE(spool.error().message.find("spool"), std::string::npos);
}

}  // namespace
}  // namespace glassbox::broker
