// ExplainSpool: append/ack/read order, bounds, reopen with stable ids, owner-only files, recovery
// of torn and damaged segments, segment deletion and compaction, failed commits and rolls,
// legacy import.
#include "broker/detail/explain_spool.hpp"
#include "tests/support/file_size_limit.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace glassbox::broker {
namespace {

using test_support::FileSizeLimit;

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

std::vector<std::filesystem::path> segment_files(const std::string& directory) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(directory)) {
        if (entry.path().extension() == ".log") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

std::uint64_t total_size(const std::vector<std::filesystem::path>& files) {
    std::uint64_t total = 0;
    for (const auto& file : files) total += std::filesystem::file_size(file);
    return total;
}

unsigned mode_of(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return info.st_mode & 0777;
}

std::vector<std::uint64_t> ids_of(ExplainSpool& spool) {
    auto records = spool.read_after(0, 1'000'000);
    EXPECT_TRUE(records.ok()) << (records.ok() ? "" : records.error().describe());
    std::vector<std::uint64_t> ids;
    if (records.ok()) {
        for (const auto& r : records.value()) ids.push_back(r.delivery_id);
    }
    return ids;
}

std::string contents_of(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::filesystem::path& file, const std::string& bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// On-disk size of record("urn:s", seq, body): the 48-byte header and the four fields.
std::uint64_t disk_size(const std::string& body) { return 48 + record("urn:s", 0, body).bytes(); }

std::unique_ptr<ExplainSpool> open_spool(const std::string& path, SpoolLimits limits = {}) {
    auto spool = ExplainSpool::open(path, limits);
    EXPECT_TRUE(spool.ok()) << (spool.ok() ? "" : spool.error().describe());
    return spool.ok() ? std::move(spool).value() : nullptr;
}

// Limits under which every commit begins a new segment.
SpoolLimits segment_per_commit() {
    SpoolLimits limits;
    limits.segment_bytes = 1;
    return limits;
}

// The file of the segment whose first id is `first` in the spool directory `directory`.
std::filesystem::path segment_file(const std::string& directory, std::uint64_t first) {
    std::string name = std::to_string(first);
    name.insert(0, 20 - name.size(), '0');
    return std::filesystem::path(directory) / (name + ".log");
}

// Appends records seq 0..count-1 of session urn:s (bodies `body_prefix` + seq, or "{}"), then
// commits them as one batch.
void append_committed(ExplainSpool& spool, std::uint64_t count,
                      const std::string& body_prefix = "") {
    for (std::uint64_t seq = 0; seq < count; ++seq) {
        const std::string body = body_prefix.empty() ? "{}" : body_prefix + std::to_string(seq);
        ASSERT_TRUE(spool.append(record("urn:s", seq, body)).ok()) << "seq " << seq;
    }
    ASSERT_TRUE(spool.commit().ok());
}

// Appends `r` and expects it to get delivery id `id` (ids continue where they stopped).
void expect_appended_as(ExplainSpool& spool, const SpoolRecord& r, std::uint64_t id) {
    auto appended = spool.append(r);
    ASSERT_TRUE(appended.ok()) << appended.error().describe();
    EXPECT_EQ(appended.value(), id);
}

// Opens the spool at `path` under `limits`, hands it to `use` and closes it; false when the open
// or `use` failed.
template <typename Use>
bool use_and_close(const std::string& path, const SpoolLimits& limits, Use use) {
    auto spool = open_spool(path, limits);
    if (!spool) return false;
    use(*spool);
    return !::testing::Test::HasFatalFailure();
}

// The spool at `path` opened again after a first life in use_and_close(); null when that or the
// reopen failed.
template <typename FirstLife>
std::unique_ptr<ExplainSpool> reopen_after(const std::string& path, FirstLife first_life,
                                           const SpoolLimits& limits = {}) {
    if (!use_and_close(path, limits, first_life)) return nullptr;
    return open_spool(path, limits);
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
    EXPECT_EQ(spool->bytes(),
              record("urn:s", 0, "abc").bytes() + record("urn:s", 1, "defg").bytes());
    EXPECT_EQ(spool->last_id(), 2u);
}

TEST(ExplainSpool, AckRemovesOnlyTheAcknowledgedRecord) {
    auto spool = open_spool("");
    ASSERT_TRUE(spool);
    ASSERT_NO_FATAL_FAILURE(append_committed(*spool, 3));
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
    // A cache of 2 forces reads of older records from the segments.
    SpoolLimits limits;
    limits.cache_max_messages = 2;
    auto spool = open_spool("", limits);
    ASSERT_TRUE(spool);
    ASSERT_NO_FATAL_FAILURE(append_committed(*spool, 6, "body"));
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

// take_after hands records out once: from the cache they are moved, the cache is released up
// to what was taken, and later reads of those ids (a redelivery) come from the file intact.
TEST(ExplainSpool, TakeAfterMovesCachedRecordsOutAndReleasesThem) {
    SpoolLimits limits;
    limits.cache_max_messages = 4;  // ids 3..6 cached, 1..2 only in the file
    auto spool = open_spool("", limits);
    ASSERT_TRUE(spool);
    ASSERT_NO_FATAL_FAILURE(append_committed(*spool, 6, "body"));
    auto from_file = spool->take_after(0, 2);
    ASSERT_TRUE(from_file.ok());
    ASSERT_EQ(from_file.value().records.size(), 2u);
    EXPECT_EQ(from_file.value().records[1].body, "body1");
    EXPECT_EQ(from_file.value().through, 2u);
    auto cached = spool->take_after(2, 3);
    ASSERT_TRUE(cached.ok());
    ASSERT_EQ(cached.value().records.size(), 3u);
    EXPECT_EQ(cached.value().records[0].delivery_id, 3u);
    EXPECT_EQ(cached.value().records[2].body, "body4");
    EXPECT_EQ(cached.value().through, 5u);
    auto rest = spool->take_after(5, 10);  // fewer than asked: through the last id
    ASSERT_TRUE(rest.ok());
    ASSERT_EQ(rest.value().records.size(), 1u);
    EXPECT_EQ(rest.value().records[0].body, "body5");
    EXPECT_EQ(rest.value().through, 6u);
    for (std::uint64_t id = 3; id <= 6; ++id) {  // released from the cache, whole in the file
        auto again = spool->read(id);
        ASSERT_TRUE(again.ok());
        ASSERT_TRUE(again.value().has_value()) << id;
        EXPECT_EQ(again.value()->body, "body" + std::to_string(id - 1));
        EXPECT_EQ(again.value()->session, "urn:s");
    }
    EXPECT_EQ(spool->messages(), 6u);  // taking is not acknowledging
    auto none = spool->take_after(6, 10);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none.value().records.empty());
    EXPECT_EQ(none.value().through, 6u);
    // The cache still takes new records and hands them out moved.
    ASSERT_NO_FATAL_FAILURE(expect_appended_as(*spool, record("urn:s", 6, "body6"), 7));
    ASSERT_TRUE(spool->commit().ok());
    auto fresh = spool->take_after(6, 10);
    ASSERT_TRUE(fresh.ok());
    ASSERT_EQ(fresh.value().records.size(), 1u);
    EXPECT_EQ(fresh.value().records[0].body, "body6");
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
    EXPECT_EQ(refused.error().type, base::ErrorType::kSpoolFull);
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
    EXPECT_EQ(refused.error().type, base::ErrorType::kSpoolFull);
    EXPECT_TRUE(spool->append(record("urn:s", 1, "small")).ok());
}

TEST(ExplainSpool, ReopenKeepsPendingRecordsAndNeverReusesIds) {
    TempDir dir;
    auto spool = reopen_after(dir.file("spool"), [](ExplainSpool& first) {
        ASSERT_NO_FATAL_FAILURE(append_committed(first, 3, "b"));
        ASSERT_TRUE(first.ack(1).ok());
        ASSERT_TRUE(first.ack(3).ok());  // the highest id: it must not come back after reopen
        ASSERT_TRUE(first.commit().ok());
    });
    ASSERT_TRUE(spool);
    EXPECT_EQ(spool->messages(), 1u);
    EXPECT_EQ(spool->bytes(), record("urn:s", 1, "b1").bytes());
    auto pending = spool->read_after(0, 10);
    ASSERT_TRUE(pending.ok());
    ASSERT_EQ(pending.value().size(), 1u);
    EXPECT_EQ(pending.value()[0].delivery_id, 2u);
    EXPECT_EQ(pending.value()[0].body, "b1");
    expect_appended_as(*spool, record("urn:t", 0), 4u);
}

TEST(ExplainSpool, DestructionCommitsTheOpenBatch) {
    TempDir dir;
    auto spool = reopen_after(dir.file("spool"), [](ExplainSpool& first) {
        ASSERT_TRUE(first.append(record("urn:s", 0)).ok());
        // Destruction commits the open batch.
    });
    ASSERT_TRUE(spool);
    EXPECT_EQ(spool->messages(), 1u);
}

TEST(ExplainSpool, FileIsOwnerOnlyAndExclusive) {
    TempDir dir;
    const std::string path = dir.file("spool");
    auto spool = reopen_after(path, [&](ExplainSpool& first) {
        ASSERT_NO_FATAL_FAILURE(append_committed(first, 1));
        EXPECT_EQ(mode_of(path), 0700u);
        EXPECT_EQ(mode_of(path + "/LOCK"), 0600u);
        const auto segments = segment_files(path);
        ASSERT_EQ(segments.size(), 1u);
        EXPECT_EQ(segments[0].filename(), "00000000000000000001.log");
        EXPECT_EQ(mode_of(segments[0].string()), 0600u);
        auto second = ExplainSpool::open(path, {});
        ASSERT_FALSE(second.ok()) << "a second spool on the same directory must fail";
        EXPECT_NE(second.error().message.find("in use"), std::string::npos)
            << second.error().message;
    });
    ASSERT_TRUE(spool);
    EXPECT_EQ(spool->messages(), 1u);
}

TEST(ExplainSpool, UnopenablePathIsAnError) {
    auto spool = ExplainSpool::open("/nonexistent-dir/sub/spool.db", {});
    ASSERT_FALSE(spool.ok());
    EXPECT_NE(spool.error().message.find("spool"), std::string::npos);
}

TEST(ExplainSpool, PathThatIsAFileIsAnError) {
    TempDir dir;
    const std::string path = dir.file("spool");
    write_file(path, "not a directory");
    auto spool = ExplainSpool::open(path, {});
    ASSERT_FALSE(spool.ok());
    EXPECT_NE(spool.error().message.find("not a directory"), std::string::npos)
        << spool.error().message;
}

TEST(ExplainSpool, TornTailIsCutAndCompleteRecordsKept) {
    TempDir dir;
    const std::string path = dir.file("spool");
    std::uint64_t committed = 0;
    ASSERT_TRUE(use_and_close(path, SpoolLimits{}, [&](ExplainSpool& spool) {
        ASSERT_NO_FATAL_FAILURE(append_committed(spool, 3, "b"));
        committed = total_size(segment_files(path));
    }));
    const auto segment = segment_files(path).at(0);
    // Garbage after the last complete record: a header's first bytes, then noise.
    write_file(segment, contents_of(segment) + std::string("GSP1\x00\x00\x00\x00garbage", 15));
    ASSERT_TRUE(use_and_close(path, SpoolLimits{}, [&](ExplainSpool& spool) {
        EXPECT_EQ(std::filesystem::file_size(segment), committed) << "the torn tail is cut";
        EXPECT_EQ(ids_of(spool), (std::vector<std::uint64_t>{1, 2, 3}));
        EXPECT_EQ(spool.messages(), 3u);
        expect_appended_as(spool, record("urn:t", 0, "fourth"), 4u);
        ASSERT_TRUE(spool.commit().ok());
    }));
    // A record cut in the middle: the records before it stay, its id comes again (it was
    // never complete on disk, so never delivered).
    std::filesystem::resize_file(segment, std::filesystem::file_size(segment) - 3);
    auto spool = open_spool(path);
    ASSERT_TRUE(spool);
    EXPECT_EQ(std::filesystem::file_size(segment), committed);
    EXPECT_EQ(ids_of(*spool), (std::vector<std::uint64_t>{1, 2, 3}));
    auto third = spool->read(3);
    ASSERT_TRUE(third.ok());
    ASSERT_TRUE(third.value().has_value());
    EXPECT_EQ(third.value()->body, "b2");
    expect_appended_as(*spool, record("urn:t", 1), 4u);
}

TEST(ExplainSpool, DamagedMiddleSegmentKeepsTheRecordsBeforeTheDamage) {
    TempDir dir;
    const std::string path = dir.file("spool");
    const SpoolLimits limits = segment_per_commit();
    ASSERT_TRUE(use_and_close(path, limits, [&](ExplainSpool& spool) {
        ASSERT_TRUE(spool.append(record("urn:s", 0, "one")).ok());
        ASSERT_TRUE(spool.commit().ok());
        ASSERT_TRUE(spool.append(record("urn:s", 1, "two")).ok());
        ASSERT_TRUE(spool.append(record("urn:s", 2, "three")).ok());
        ASSERT_TRUE(spool.commit().ok());
        ASSERT_TRUE(spool.append(record("urn:s", 3, "four")).ok());
        ASSERT_TRUE(spool.commit().ok());
    }));
    auto files = segment_files(path);
    ASSERT_EQ(files.size(), 4u);  // 1: {1}, 2: {2, 3}, 4: {4}, 5: empty and active
    EXPECT_EQ(files[1].filename(), "00000000000000000002.log");
    // The last byte of record 3's body: its checksum no longer matches.
    std::string bytes = contents_of(files[1]);
    bytes.back() = 'X';
    write_file(files[1], bytes);
    auto spool = open_spool(path, limits);
    ASSERT_TRUE(spool);
    EXPECT_EQ(ids_of(*spool), (std::vector<std::uint64_t>{1, 2, 4}));
    EXPECT_EQ(spool->messages(), 3u);
    EXPECT_EQ(std::filesystem::file_size(files[1]), bytes.size()) << "only the last is cut";
    auto four = spool->read(4);
    ASSERT_TRUE(four.ok() && four.value().has_value());
    EXPECT_EQ(four.value()->body, "four");
    expect_appended_as(*spool, record("urn:t", 0), 5u);
}

TEST(ExplainSpool, AckOfACommittedRecordSurvivesReopen) {
    TempDir dir;
    auto spool = reopen_after(dir.file("spool"), [](ExplainSpool& first) {
        ASSERT_NO_FATAL_FAILURE(append_committed(first, 3));
        ASSERT_TRUE(first.ack(2).value());
    });
    ASSERT_TRUE(spool);
    EXPECT_EQ(ids_of(*spool), (std::vector<std::uint64_t>{1, 3}));
    EXPECT_EQ(spool->messages(), 2u);
    EXPECT_EQ(spool->bytes(), 2 * record("urn:s", 0).bytes());
    EXPECT_FALSE(spool->ack(2).value());
}

TEST(ExplainSpool, AckOfAPendingRecord) {
    TempDir dir;
    const std::string path = dir.file("spool");
    SpoolLimits limits;
    limits.cache_max_messages = 0;  // reads come from the pending batch, not the cache
    ASSERT_TRUE(use_and_close(path, limits, [&](ExplainSpool& spool) {
        ASSERT_TRUE(spool.append(record("urn:s", 0, "first")).ok());
        ASSERT_TRUE(spool.append(record("urn:s", 1, "second")).ok());
        auto second = spool.read(2);
        ASSERT_TRUE(second.ok() && second.value().has_value());
        EXPECT_EQ(second.value()->body, "second");
        EXPECT_TRUE(spool.ack(1).value());
        EXPECT_FALSE(spool.ack(1).value());
        auto gone = spool.read(1);
        ASSERT_TRUE(gone.ok());
        EXPECT_FALSE(gone.value().has_value());
        EXPECT_EQ(spool.messages(), 1u);
        ASSERT_TRUE(spool.commit().ok());
        EXPECT_EQ(ids_of(spool), (std::vector<std::uint64_t>{2}));
    }));
    auto spool = open_spool(path, limits);
    ASSERT_TRUE(spool);
    EXPECT_EQ(ids_of(*spool), (std::vector<std::uint64_t>{2}));
    EXPECT_EQ(spool->messages(), 1u);
    EXPECT_EQ(spool->last_id(), 2u);
}

TEST(ExplainSpool, SegmentsRollAndFullyAcknowledgedOnesAreDeleted) {
    TempDir dir;
    const std::string path = dir.file("spool");
    SpoolLimits limits;
    limits.segment_bytes = 2 * disk_size(std::string(100, 'x'));
    ASSERT_TRUE(use_and_close(path, limits, [&](ExplainSpool& spool) {
        for (std::uint64_t seq = 0; seq < 10; ++seq) {
            ASSERT_TRUE(spool.append(record("urn:s", seq, std::string(100, 'x'))).ok());
            ASSERT_TRUE(spool.commit().ok());
        }
        // Two records per segment: 1, 3, 5, 7, 9 full, 11 active and empty.
        EXPECT_EQ(segment_files(path).size(), 6u);
        for (std::uint64_t id = 1; id <= 4; ++id) ASSERT_TRUE(spool.ack(id).value());
        auto files = segment_files(path);
        ASSERT_EQ(files.size(), 4u);
        EXPECT_EQ(files[0].filename(), "00000000000000000005.log");
        EXPECT_EQ(ids_of(spool).front(), 5u);
        for (std::uint64_t id = 5; id <= 10; ++id) ASSERT_TRUE(spool.ack(id).value());
        files = segment_files(path);
        ASSERT_EQ(files.size(), 1u) << "the active segment is kept";
        EXPECT_EQ(files[0].filename(), "00000000000000000011.log");
        EXPECT_EQ(spool.messages(), 0u);
    }));
    auto spool = open_spool(path, limits);
    ASSERT_TRUE(spool);
    EXPECT_EQ(spool->messages(), 0u);
    EXPECT_EQ(spool->last_id(), 10u);
    expect_appended_as(*spool, record("urn:t", 0), 11u);
}

TEST(ExplainSpool, CompactionMovesAStuckRecordForward) {
    TempDir dir;
    const std::string path = dir.file("spool");
    const std::string body(100, 'x');
    SpoolLimits limits;
    limits.segment_bytes = 6 * disk_size(body);
    ASSERT_TRUE(use_and_close(path, limits, [&](ExplainSpool& spool) {
        // Id 1 is never acknowledged; every other record is, right after its commit.
        ASSERT_TRUE(spool.append(record("urn:stuck", 0, "stuck body")).ok());
        ASSERT_TRUE(spool.commit().ok());
        std::size_t most_files = 0;
        for (std::uint64_t seq = 0; seq < 200; ++seq) {
            auto id = spool.append(record("urn:s", seq, body));
            ASSERT_TRUE(id.ok());
            ASSERT_TRUE(spool.commit().ok());
            ASSERT_TRUE(spool.ack(id.value()).value());
            most_files = std::max(most_files, segment_files(path).size());
        }
        EXPECT_LE(most_files, 3u);
        const auto files = segment_files(path);
        EXPECT_NE(files.front().filename(), "00000000000000000001.log")
            << "the first segment is kept for one record";
        EXPECT_LE(total_size(files), 3 * limits.segment_bytes);
        EXPECT_EQ(ids_of(spool), (std::vector<std::uint64_t>{1}));
    }));
    auto spool = open_spool(path, limits);
    ASSERT_TRUE(spool);
    EXPECT_EQ(spool->messages(), 1u);
    auto stuck = spool->read(1);
    ASSERT_TRUE(stuck.ok() && stuck.value().has_value());
    EXPECT_EQ(stuck.value()->session, "urn:stuck");
    EXPECT_EQ(stuck.value()->body, "stuck body");
    EXPECT_EQ(spool->last_id(), 201u);
}

TEST(ExplainSpool, CopyLeftByACrashDuringCompactionIsOneRecord) {
    // A crash between compaction's copy and the deletion of the old file leaves the same
    // records in two segments; simulated by copying a segment file to a later name.
    TempDir dir;
    const std::string path = dir.file("spool");
    const SpoolLimits limits = segment_per_commit();
    ASSERT_TRUE(use_and_close(path, limits, [&](ExplainSpool& spool) {
        ASSERT_NO_FATAL_FAILURE(append_committed(spool, 3));  // 1: {1, 2, 3}; 4: empty and active
        ASSERT_TRUE(spool.ack(2).value());
        ASSERT_TRUE(spool.ack(3).value());
    }));
    const auto original = segment_file(path, 1);
    const auto copy = segment_file(path, 4);
    write_file(copy, contents_of(original));
    ASSERT_TRUE(use_and_close(path, limits, [&](ExplainSpool& spool) {
        EXPECT_EQ(ids_of(spool), (std::vector<std::uint64_t>{1}));
        EXPECT_EQ(spool.messages(), 1u);
        EXPECT_EQ(spool.bytes(), record("urn:s", 0).bytes());
        EXPECT_FALSE(std::filesystem::exists(original)) << "every record of it has a later copy";
        EXPECT_TRUE(spool.ack(1).value());
        EXPECT_FALSE(spool.ack(1).value());
    }));
    auto spool = open_spool(path, limits);
    ASSERT_TRUE(spool);
    EXPECT_EQ(spool->messages(), 0u);
    EXPECT_EQ(spool->append(record("urn:t", 0)).value(), 4u);
}

TEST(ExplainSpool, AcknowledgedCopyAnywhereMeansAcknowledged) {
    TempDir dir;
    const std::string path = dir.file("spool");
    const SpoolLimits limits = segment_per_commit();
    ASSERT_TRUE(use_and_close(path, limits, [&](ExplainSpool& spool) {
        ASSERT_TRUE(spool.append(record("urn:s", 0)).ok());
        ASSERT_TRUE(spool.append(record("urn:s", 1)).ok());
        ASSERT_TRUE(spool.commit().ok());  // 1: {1, 2}; 3: empty and active
    }));
    const auto original = segment_file(path, 1);
    std::string copied = contents_of(original);
    copied[4] = 1;  // record 1's flag byte: acknowledged in the copy only
    write_file(segment_file(path, 3), copied);
    auto spool = open_spool(path, limits);
    ASSERT_TRUE(spool);
    EXPECT_EQ(ids_of(*spool), (std::vector<std::uint64_t>{2}));
    EXPECT_EQ(spool->messages(), 1u);
}

TEST(ExplainSpool, FailedCommitKeepsTheBatchPendingAndWritesItLater) {
    TempDir dir;
    const std::string path = dir.file("spool");
    auto spool = open_spool(path);
    ASSERT_TRUE(spool);
    ASSERT_TRUE(spool->append(record("urn:s", 0, "kept 1")).ok());
    ASSERT_TRUE(spool->append(record("urn:s", 1, "kept 2")).ok());
    ASSERT_TRUE(spool->commit().ok());
    const auto segment = segment_files(path).at(0);
    const auto size = std::filesystem::file_size(segment);
    const auto messages = spool->messages();
    {
        // Room for part of the next batch only: a partial write, then EFBIG (a full disk).
        FileSizeLimit limit(size + 60);
        ASSERT_TRUE(spool->append(record("urn:s", 2, std::string(500, 'y'))).ok());
        ASSERT_TRUE(spool->append(record("urn:s", 3, std::string(500, 'z'))).ok());
        ASSERT_TRUE(spool->ack(2).value());  // a committed record: applied at once
        auto committed = spool->commit();
        ASSERT_FALSE(committed.ok()) << "the write must fail under the file size limit";
        EXPECT_EQ(std::filesystem::file_size(segment), size) << "the partial write is cut";
        // The batch is still there, counted, but not handed out before it is written.
        EXPECT_EQ(spool->messages(), messages + 1);
        EXPECT_EQ(spool->last_id(), 4u);
        EXPECT_EQ(spool->committed_id(), 2u);
        auto taken = spool->take_after(0, 10);
        ASSERT_TRUE(taken.ok());
        ASSERT_EQ(taken.value().records.size(), 1u);
        EXPECT_EQ(taken.value().records[0].delivery_id, 1u);
        EXPECT_EQ(taken.value().through, 2u) << "the cursor must not pass unwritten records";
        // A second try while the disk is still full fails the same way.
        ASSERT_FALSE(spool->commit().ok());
        EXPECT_EQ(std::filesystem::file_size(segment), size);
    }
    // Room again: the next commit writes the batch, ids unchanged, and the spool goes on.
    ASSERT_TRUE(spool->commit().ok());
    EXPECT_EQ(spool->committed_id(), 4u);
    EXPECT_EQ(ids_of(*spool), (std::vector<std::uint64_t>{1, 3, 4}));
    expect_appended_as(*spool, record("urn:s", 4, "after"), 5u);
    ASSERT_TRUE(spool->commit().ok());
    spool.reset();
    spool = open_spool(path);
    ASSERT_TRUE(spool);
    EXPECT_EQ(ids_of(*spool), (std::vector<std::uint64_t>{1, 3, 4, 5}));
    auto later = spool->read(4);
    ASSERT_TRUE(later.ok() && later.value().has_value());
    EXPECT_EQ(later.value()->body, std::string(500, 'z'));
}

TEST(ExplainSpool, FailedRollKeepsTheBatchAndIsTriedAgain) {
    TempDir dir;
    const std::string path = dir.file("spool");
    const SpoolLimits limits = segment_per_commit();
    auto spool = open_spool(path, limits);
    ASSERT_TRUE(spool);
    ASSERT_TRUE(spool->append(record("urn:s", 0, "first")).ok());
    {
        // A directory where the new segment's file would go: the segment cannot be created.
        // (Not a lowered RLIMIT_NOFILE: the sanitizers' runtime needs descriptors of its own.)
        const auto squatter = segment_file(path, 2);
        std::filesystem::create_directory(squatter);
        auto committed = spool->commit();
        std::filesystem::remove(squatter);
        EXPECT_TRUE(committed.ok()) << "the batch is written; only the roll failed";
    }
    EXPECT_EQ(spool->messages(), 1u);
    EXPECT_EQ(segment_files(path).size(), 1u);
    ASSERT_TRUE(spool->append(record("urn:s", 1, "second")).ok());
    ASSERT_TRUE(spool->commit().ok());
    EXPECT_EQ(segment_files(path).size(), 2u) << "the roll is tried again";
    spool.reset();
    spool = open_spool(path, limits);
    ASSERT_TRUE(spool);
    EXPECT_EQ(ids_of(*spool), (std::vector<std::uint64_t>{1, 2}));
}

// The table the SQLite spool of earlier versions kept.
void write_legacy_spool(const std::string& file, int rows, int deleted_from) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "PRAGMA journal_mode=WAL;"
                           "CREATE TABLE explain (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                           " service BLOB NOT NULL, session BLOB NOT NULL, seq INTEGER NOT NULL,"
                           " state BLOB NOT NULL, body BLOB NOT NULL);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    for (int i = 1; i <= rows; ++i) {
        const std::string sql =
            "INSERT INTO explain (service, session, seq, state, body) VALUES"
            " (CAST('echo' AS BLOB), CAST('urn:old' AS BLOB), " +
            std::to_string(i) + ", CAST('open' AS BLOB), CAST('{\"n\":" + std::to_string(i) +
            "}' AS BLOB))";
        ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    }
    const std::string remove = "DELETE FROM explain WHERE id >= " + std::to_string(deleted_from);
    ASSERT_EQ(sqlite3_exec(db, remove.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
}

TEST(ExplainSpool, ImportsALegacySqliteSpool) {
    TempDir dir;
    const std::string legacy = dir.file("spool.db");
    // Ids 1-4 written, 4 acknowledged: 1-3 are imported and the next id is 5, not 4.
    write_legacy_spool(legacy, 4, 4);
    const std::string path = dir.file("spool");
    ASSERT_TRUE(use_and_close(path, SpoolLimits{}, [&](ExplainSpool& spool) {
        EXPECT_EQ(ids_of(spool), (std::vector<std::uint64_t>{1, 2, 3}));
        EXPECT_EQ(spool.messages(), 3u);
        EXPECT_EQ(spool.last_id(), 4u);
        auto second = spool.read(2);
        ASSERT_TRUE(second.ok() && second.value().has_value());
        EXPECT_EQ(second.value()->session, "urn:old");
        EXPECT_EQ(second.value()->seq, 2u);
        EXPECT_EQ(second.value()->body, "{\"n\":2}");
        EXPECT_FALSE(std::filesystem::exists(legacy));
        EXPECT_TRUE(std::filesystem::exists(legacy + ".imported"));
        EXPECT_FALSE(std::filesystem::exists(path + ".importing"));
        EXPECT_EQ(mode_of(path), 0700u);
        EXPECT_EQ(spool.append(record("urn:new", 0)).value(), 5u);
        ASSERT_TRUE(spool.ack(1).value());
    }));
    // Imported once: the renamed file is not read again.
    auto spool = open_spool(path);
    ASSERT_TRUE(spool);
    EXPECT_EQ(ids_of(*spool), (std::vector<std::uint64_t>{2, 3, 5}));
}

TEST(ExplainSpool, InterruptedImportStartsAgain) {
    TempDir dir;
    const std::string legacy = dir.file("events.db");
    write_legacy_spool(legacy, 2, 3);
    const std::string path = dir.file("events");
    // What a crash during an import leaves: a staging directory with a partial segment.
    std::filesystem::create_directories(path + ".importing");
    write_file(segment_file(path + ".importing", 1), "partial");
    auto spool = open_spool(path);
    ASSERT_TRUE(spool);
    EXPECT_EQ(ids_of(*spool), (std::vector<std::uint64_t>{1, 2}));
    EXPECT_EQ(segment_files(path).size(), 1u);
    EXPECT_TRUE(std::filesystem::exists(legacy + ".imported"));
}

TEST(ExplainSpool, InMemorySpoolRollsAndCompactsWithoutFiles) {
    const std::string body(100, 'x');
    SpoolLimits limits;
    limits.segment_bytes = 3 * disk_size(body);
    limits.cache_max_messages = 1;  // reads come from the in-memory segments
    auto spool = open_spool("", limits);
    ASSERT_TRUE(spool);
    for (std::uint64_t seq = 0; seq < 50; ++seq) {
        ASSERT_TRUE(spool->append(record("urn:s", seq, body + std::to_string(seq))).ok());
        ASSERT_TRUE(spool->commit().ok());
        // Every record but each tenth is acknowledged: compaction copies the rest forward.
        if (seq % 10 != 0) {
            ASSERT_TRUE(spool->ack(seq + 1).value());
        }
    }
    EXPECT_EQ(ids_of(*spool), (std::vector<std::uint64_t>{1, 11, 21, 31, 41}));
    auto some = spool->read_after(11, 2);
    ASSERT_TRUE(some.ok());
    ASSERT_EQ(some.value().size(), 2u);
    EXPECT_EQ(some.value()[0].delivery_id, 21u);
    EXPECT_EQ(some.value()[0].body, body + "20");
    EXPECT_EQ(some.value()[1].body, body + "30");
    EXPECT_EQ(spool->messages(), 5u);
    EXPECT_EQ(spool->last_id(), 50u);
}

}  // namespace
}  // namespace glassbox::broker
