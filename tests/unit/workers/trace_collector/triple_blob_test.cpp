// An event's triples packed in one zstd frame: records read back exactly, and every damaged blob
// (not zstd, cut short, a false size, the wrong count, bad records) a typed error, not a crash.
#include "workers/trace_collector/triple_blob.hpp"

#include <zstd.h>

#include <gtest/gtest.h>

namespace glassbox::trace {
namespace {

using base::ErrorType;

std::span<const std::byte> bytes_of(std::string_view s) {
    return std::as_bytes(std::span{s.data(), s.size()});
}

struct Record {
    std::optional<std::int64_t> text_id;
    std::string triple;
    bool operator==(const Record&) const = default;
};

std::vector<Record> records_of(std::span<const StoredTriple> triples) {
    std::vector<Record> out;
    for (const auto& t : triples) out.push_back({t.text_id, std::string(t.triple)});
    return out;
}

// A blob of `records`, as the store writes it.
std::string pack(const std::vector<Record>& records) {
    TripleBlobWriter writer;
    writer.clear();
    for (const auto& r : records) writer.add(r.text_id, r.triple);
    auto blob = writer.finish();
    EXPECT_TRUE(blob.ok()) << blob.error().describe();
    return blob.ok() ? std::string(*blob) : std::string();
}

TEST(TripleBlob, RecordsReadBackExactlyInOrder) {
    const std::vector<Record> records = {
        {std::nullopt,
         R"({"s":{"t":"i","i":"urn:a"},"p":{"t":"i","i":"urn:p"},"o":{"t":"i","i":"urn:b"},"g":"urn:g"})"},
        {7,
         R"({"g":"urn:g","s":{"t":"i","i":"urn:a"},"p":{"t":"i","i":"urn:p"},"o":{"t":"l","v":""}})"},
        // A body laid out with whitespace keeps it, newlines included; an empty record too.
        {std::nullopt, "{\n  \"s\": {\"t\": \"i\", \"i\": \"urn:a\"}\n}"},
        {std::int64_t{1} << 40, ""},
        {std::nullopt, std::string(300'000, 'x')},
    };
    const std::string blob = pack(records);
    EXPECT_LT(blob.size(), 2'000u) << "300 KB of one byte compresses";
    TripleBlobReader reader;
    auto read = reader.decode(bytes_of(blob), static_cast<std::int64_t>(records.size()));
    ASSERT_TRUE(read.ok()) << read.error().describe();
    EXPECT_EQ(records_of(*read), records);
    // The reader and the writer are reused: the next blob reads back as itself alone.
    const std::vector<Record> next = {{3, "{}"}};
    auto again = reader.decode(bytes_of(pack(next)), 1);
    ASSERT_TRUE(again.ok()) << again.error().describe();
    EXPECT_EQ(records_of(*again), next);
}

TEST(TripleBlob, NoRecordsIsAnEmptyBlob) {
    TripleBlobWriter writer;
    writer.add(1, "{}");
    writer.clear();
    auto blob = writer.finish();
    ASSERT_TRUE(blob.ok());
    EXPECT_TRUE(blob->empty());
    EXPECT_EQ(writer.count(), 0u);
    TripleBlobReader reader;
    auto read = reader.decode({}, 0);
    ASSERT_TRUE(read.ok());
    EXPECT_TRUE(read->empty());
    auto missing = reader.decode({}, 2);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().type, ErrorType::kInternal);
}

TEST(TripleBlob, ADamagedBlobIsATypedErrorNeverACrash) {
    const std::vector<Record> records = {{std::nullopt, std::string(5'000, 'a') + "b"},
                                         {2, "{\"o\":{\"t\":\"l\",\"v\":\"\"}}"}};
    const std::string blob = pack(records);
    // A frame header saying 1 GiB (magic, single-segment descriptor, 8-byte content size).
    std::string huge = std::string("\x28\xb5\x2f\xfd\xe0", 5) + std::string(8, '\0');
    huge[5 + 3] = '\x40';
    std::string flipped = blob;
    flipped[blob.size() / 2] = static_cast<char>(flipped[blob.size() / 2] ^ 0x5a);
    const std::vector<std::pair<std::string, std::string>> damaged = {
        {"not zstd", "this is not a zstd frame at all"},
        {"cut short", blob.substr(0, blob.size() - 3)},
        {"one frame and more", blob + blob},
        {"a false size", huge},
        {"bytes flipped", flipped},
    };
    TripleBlobReader reader;
    for (const auto& [what, bytes] : damaged) {
        auto read = reader.decode(bytes_of(bytes), 2);
        ASSERT_FALSE(read.ok()) << what;
        EXPECT_EQ(read.error().type, ErrorType::kInternal) << what;
        EXPECT_NE(read.error().message.find("damaged triples blob"), std::string::npos)
            << what << ": " << read.error().message;
    }
    auto bound = reader.decode(bytes_of(huge), 2);
    EXPECT_NE(bound.error().message.find("over the bound"), std::string::npos)
        << bound.error().message;
    auto fewer = reader.decode(bytes_of(blob), 3);
    ASSERT_FALSE(fewer.ok());
    EXPECT_NE(fewer.error().message.find("2 triples, 3 expected"), std::string::npos)
        << fewer.error().message;
}

// A whole zstd frame of `content`, which need not be records.
std::string frame_of(std::string_view content) {
    std::string out(ZSTD_compressBound(content.size()), '\0');
    const std::size_t size =
        ZSTD_compress(out.data(), out.size(), content.data(), content.size(), 1);
    EXPECT_EQ(ZSTD_isError(size), 0u);
    out.resize(size);
    return out;
}

TEST(TripleBlob, RecordsThatDoNotParseAreATypedError) {
    TripleBlobReader reader;
    // text 0, length 2, "{}": a good record, as the writer lays it out.
    ASSERT_TRUE(reader.decode(bytes_of(frame_of(std::string("\0\x02{}", 4))), 1).ok());
    for (const std::string& records : {
             std::string("\0\x09{}", 4),  // a length past the end
             std::string("\x80", 1),      // a varint cut short
             std::string(11, '\xff'),     // a varint over 64 bits
             std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\0", 11),  // text id over int64
         }) {
        auto read = reader.decode(bytes_of(frame_of(records)), 1);
        ASSERT_FALSE(read.ok()) << records.size();
        EXPECT_EQ(read.error().type, ErrorType::kInternal);
        EXPECT_NE(read.error().message.find("malformed record"), std::string::npos)
            << read.error().message;
    }
}

}  // namespace
}  // namespace glassbox::trace
