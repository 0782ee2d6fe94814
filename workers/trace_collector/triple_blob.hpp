// The triples of one stored event packed into one zstd frame (the `triples` column of the trace
// store's `events` table, schema 4) and read back, bounded and checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace glassbox::trace {

// A blob whose frame says it holds more than this is refused unread: 16 times the largest
// message the broker takes by default (16 MiB), so no stored event comes near it.
inline constexpr std::size_t kMaxTripleBlobBytes = std::size_t{256} << 20;

// One stored triple record: the triple's JSON as the store keeps it (its long literal value cut
// out when text_id is set) and the id of that value in `texts`.
struct StoredTriple {
    std::optional<std::int64_t> text_id;
    std::string_view triple;
};

// The records of one event, one after another: each is a LEB128 varint (0: no text, else the
// text id, which SQLite assigns from 1), a LEB128 varint byte length and that many bytes of the
// triple's JSON (which may hold raw newlines: a body may be laid out with any whitespace), then
// compressed as one zstd frame with its content size in the header and a content checksum. One
// writer per ingest batch: its buffers and compression context are reused for every event.
class TripleBlobWriter {
public:
    TripleBlobWriter();
    ~TripleBlobWriter();
    TripleBlobWriter(const TripleBlobWriter&) = delete;
    TripleBlobWriter& operator=(const TripleBlobWriter&) = delete;

    // Starts a new event.
    void clear() noexcept;
    // Appends one record; text ids are positive.
    void add(std::optional<std::int64_t> text_id, std::string_view triple);
    std::size_t count() const noexcept { return count_; }
    // Bytes of the records added since clear(), before compression.
    std::size_t raw_bytes() const noexcept { return records_.size(); }
    // The records compressed: a view valid until the next clear() or finish(). Internal when
    // the records are over kMaxTripleBlobBytes (no reader would take them) or zstd fails.
    base::Result<std::string_view> finish();

private:
    struct FreeContext {
        void operator()(ZSTD_CCtx_s* context) const noexcept;
    };
    std::unique_ptr<ZSTD_CCtx_s, FreeContext> context_;
    std::string records_;
    std::string compressed_;
    std::size_t count_ = 0;
};

// Reads blobs back; one per read operation (its buffers and decompression context reused).
class TripleBlobReader {
public:
    TripleBlobReader();
    ~TripleBlobReader();
    TripleBlobReader(const TripleBlobReader&) = delete;
    TripleBlobReader& operator=(const TripleBlobReader&) = delete;

    // The `count` records of `blob` (empty: none), in order, their views valid until the next
    // decode. A blob that is not a zstd frame, says it holds more than kMaxTripleBlobBytes or
    // does not hold exactly `count` well-formed records: Internal, saying so (the caller adds
    // which event).
    base::Result<std::span<const StoredTriple>> decode(std::span<const std::byte> blob,
                                                       std::int64_t count);

private:
    struct FreeContext {
        void operator()(ZSTD_DCtx_s* context) const noexcept;
    };
    std::unique_ptr<ZSTD_DCtx_s, FreeContext> context_;
    std::string records_;
    std::vector<StoredTriple> triples_;
};

}  // namespace glassbox::trace
