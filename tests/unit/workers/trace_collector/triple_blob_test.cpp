// An event's triples packed in one zstd frame, as records or as pieces: read back exactly, and
// every damaged blob (not zstd, cut short, a false size, the wrong count, bad records or pieces,
// pieces that write out over the bound) a typed error, not a crash.
#include "workers/trace_collector/triple_blob.hpp"

#include <zstd.h>

#include <gtest/gtest.h>

#include <stdexcept>
#include <tuple>

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

// The pieces layout: the skippable frame that says so, then a zstd frame of `content`.
std::string pieces_blob(std::string_view content) {
    return std::string("\x50\x2a\x4d\x18\x04\0\0\0\x02\0\0\0", 12) + frame_of(content);
}

TEST(TripleBlob, PiecesReadBackAsTheRecordsTheyStandFor) {
    const std::string a = R"({"t":"i","i":"urn:a"})";
    const std::string p = R"({"i":"urn:p","t":"i"})";
    const std::string cut = R"({"t":"l","v":""})";
    TripleBlobWriter writer;
    writer.add(1, "{}");
    writer.clear();
    const auto a_at = writer.add_piece(std::nullopt, a);
    const auto p_at = writer.add_piece(std::nullopt, p);
    const auto cut_at = writer.add_piece(9, cut);
    const auto g_at = writer.add_piece(std::nullopt, "\"urn:g\"");
    writer.add_triple(a_at, p_at, cut_at, g_at);
    writer.add_triple(a_at, p_at, a_at, std::nullopt);
    writer.add_triple(p_at, a_at, cut_at, std::nullopt);
    EXPECT_EQ(writer.count(), 3u);
    EXPECT_THROW(writer.add(std::nullopt, "{}"), std::logic_error) << "never both layouts";
    auto blob = writer.finish();
    ASSERT_TRUE(blob.ok()) << blob.error().describe();
    EXPECT_EQ(blob->substr(0, 4), std::string_view("\x50\x2a\x4d\x18", 4));
    const std::string packed(*blob);
    std::string records;
    std::vector<Record> expected;
    for (const auto& [text, g, o, pr, s] :
         {std::tuple{std::optional<std::int64_t>{9}, std::string("\"urn:g\""), cut, p, a},
          std::tuple{std::optional<std::int64_t>{}, std::string(), a, p, a},
          std::tuple{std::optional<std::int64_t>{9}, std::string(), cut, a, p}}) {
        std::string record;
        append_triple_record(record, g, o, pr, s);
        EXPECT_EQ(record.size(), triple_record_size(g.size(), o.size(), pr.size(), s.size()));
        expected.push_back({text, record});
    }
    EXPECT_EQ(
        expected[0].triple,
        R"({"g":"urn:g","o":{"t":"l","v":""},"p":{"i":"urn:p","t":"i"},"s":{"t":"i","i":"urn:a"}})");
    TripleBlobReader reader;
    auto read = reader.decode(bytes_of(packed), 3);
    ASSERT_TRUE(read.ok()) << read.error().describe();
    EXPECT_EQ(records_of(*read), expected);
    // One reader reads either layout, one after the other.
    const std::vector<Record> plain = {{3, "{}"}};
    auto other = reader.decode(bytes_of(pack(plain)), 1);
    ASSERT_TRUE(other.ok()) << other.error().describe();
    EXPECT_EQ(records_of(*other), plain);
    read = reader.decode(bytes_of(packed), 3);
    ASSERT_TRUE(read.ok()) << read.error().describe();
    EXPECT_EQ(records_of(*read), expected);
}

TEST(TripleBlob, DamagedPiecesAreATypedError) {
    TripleBlobReader reader;
    // Two pieces ({} with no text, {} with text 3), then s p o g: a good blob as laid out.
    const std::string two = std::string("\x02\0\x02{}\x03\x02{}", 9);
    ASSERT_TRUE(reader.decode(bytes_of(pieces_blob(two + std::string("\0\0\x01\0", 4))), 1).ok());
    ASSERT_TRUE(reader.decode(bytes_of(pieces_blob(two + std::string("\0\0\0\x01", 4))), 1).ok());
    for (const auto& [what, content] : std::vector<std::pair<std::string, std::string>>{
             {"an index past the pieces", two + std::string("\0\0\x02\0", 4)},
             {"a graph past the pieces", two + std::string("\0\0\0\x03", 4)},
             {"a text id on a subject", two + std::string("\x01\0\0\0", 4)},
             {"a text id on a graph", two + std::string("\0\0\0\x02", 4)},
             {"a triple cut short", two + std::string("\0\0\x01", 3)},
             {"more pieces than it holds", std::string("\x05\0\x02{}", 5)},
             {"a piece past the end", std::string("\x01\0\x09{}", 5)},
         }) {
        auto read = reader.decode(bytes_of(pieces_blob(content)), 1);
        ASSERT_FALSE(read.ok()) << what;
        EXPECT_EQ(read.error().type, ErrorType::kInternal) << what;
        EXPECT_NE(read.error().message.find("damaged triples blob: a malformed"), std::string::npos)
            << what << ": " << read.error().message;
    }
    auto garbage = reader.decode(bytes_of(pieces_blob("").substr(0, 12) + "not zstd"), 1);
    ASSERT_FALSE(garbage.ok());
    EXPECT_NE(garbage.error().message.find("not a zstd frame"), std::string::npos);
}

// A piece is written out in every triple that uses it: what the pieces stand for is bounded as
// records are, by the writer and by the reader, whatever the blob's own size.
TEST(TripleBlob, PiecesWrittenOutOverTheBoundAreRefused) {
    const std::string big = "\"" + std::string(std::size_t{1} << 20, 'x') + "\"";
    const std::size_t triples = (kMaxTripleBlobBytes >> 20) + 1;
    TripleBlobWriter writer;
    writer.clear();
    const auto at = writer.add_piece(std::nullopt, big);
    for (std::size_t i = 0; i < triples; ++i) writer.add_triple(at, at, at, std::nullopt);
    auto refused = writer.finish();
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().type, ErrorType::kInternal);

    std::string content = "\x01";
    content += '\0';
    content += std::string("\x82\x80\x40", 3);  // 1 MiB + 2, as a varint
    content += big;
    for (std::size_t i = 0; i < triples; ++i) content += std::string("\0\0\0\0", 4);
    TripleBlobReader reader;
    auto read = reader.decode(bytes_of(pieces_blob(content)), static_cast<std::int64_t>(triples));
    ASSERT_FALSE(read.ok());
    EXPECT_NE(read.error().message.find("over the bound"), std::string::npos)
        << read.error().message;
}

}  // namespace
}  // namespace glassbox::trace
