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
// message the broker takes by default (16 MiB), so no stored event comes near it. A blob of
// pieces is also refused when the records it writes out would be over it.
inline constexpr std::size_t kMaxTripleBlobBytes = std::size_t{256} << 20;

// One stored triple record: the triple's JSON as the store keeps it (its long literal value cut
// out when text_id is set) and the id of that value in `texts`.
struct StoredTriple {
    std::optional<std::int64_t> text_id;
    std::string_view triple;
};

// Appends the canonical triple object a dictionary body's triple stands for (docs/protocol.md
// §8.1), keys in schema::encode's order: {"g":G,"o":O,"p":P,"s":S}, "g" left out when `graph`
// is empty. `graph` is a JSON string token (quotes included), the others term objects, as
// received.
void append_triple_record(std::string& out, std::string_view graph, std::string_view o,
                          std::string_view p, std::string_view s);

// The bytes append_triple_record appends.
constexpr std::size_t triple_record_size(std::size_t graph, std::size_t o, std::size_t p,
                                         std::size_t s) noexcept {
    return (graph == 0 ? 0 : graph + 5) + o + p + s + 16;
}

// Writes an event's triples in one of two layouts (docs/traces.md, "Storage layout"):
//  - records: each a LEB128 varint (0: no text, else the text id, which SQLite assigns from 1),
//    a LEB128 varint byte length and that many bytes of the triple's JSON (which may hold raw
//    newlines: a body may be laid out with any whitespace), compressed as one zstd frame;
//  - pieces (a body in the dictionary form): each term or graph token once, and each triple as
//    the indexes of its pieces, compressed as one zstd frame after a 12-byte zstd skippable
//    frame saying so. The reader writes the records out again (append_triple_record): the
//    same records the first layout would hold, read in a fraction of the bytes compressed.
// Either frame has its content size in its header and a content checksum. One writer per
// ingest batch: its buffers and compression context are reused for every event.
class TripleBlobWriter {
public:
    TripleBlobWriter();
    ~TripleBlobWriter();
    TripleBlobWriter(const TripleBlobWriter&) = delete;
    TripleBlobWriter& operator=(const TripleBlobWriter&) = delete;

    // Starts a new event (records, until a piece is added).
    void clear() noexcept;
    // Appends one record; text ids are positive.
    void add(std::optional<std::int64_t> text_id, std::string_view triple);
    // Pieces: a term object or (no text id) a graph's string token; its index. An event's
    // pieces and triples are never mixed with records.
    std::uint32_t add_piece(std::optional<std::int64_t> text_id, std::string_view text);
    // Appends a triple of pieces; only `o` may be a piece with a text id (the record's).
    void add_triple(std::uint32_t s, std::uint32_t p, std::uint32_t o,
                    std::optional<std::uint32_t> graph);
    std::size_t count() const noexcept { return count_; }
    // The event compressed: a view valid until the next clear() or finish(). Internal when
    // the records are over kMaxTripleBlobBytes (no reader would take them) or zstd fails.
    base::Result<std::string_view> finish();

private:
    struct FreeContext {
        void operator()(ZSTD_CCtx_s* context) const noexcept;
    };
    std::unique_ptr<ZSTD_CCtx_s, FreeContext> context_;
    std::string records_;  // the records, or the pieces
    std::string triples_;  // the triples of pieces
    std::vector<std::uint32_t> piece_sizes_;
    std::string staged_;  // a blob of pieces' content: their count, the pieces, the triples
    std::string compressed_;
    std::size_t count_ = 0;
    std::size_t record_bytes_ = 0;  // the records' bytes (written out, for pieces)
    bool pieces_ = false;
};

// Reads blobs back; one per read operation (its buffers and decompression context reused).
class TripleBlobReader {
public:
    TripleBlobReader();
    ~TripleBlobReader();
    TripleBlobReader(const TripleBlobReader&) = delete;
    TripleBlobReader& operator=(const TripleBlobReader&) = delete;

    // The `count` records of `blob` (empty: none), in order, their views valid until the next
    // decode. A blob that is not a zstd frame (after the skippable frame of the pieces layout),
    // says it holds more than kMaxTripleBlobBytes or does not hold exactly `count` well-formed
    // records or triples of pieces: Internal, saying so (the caller adds which event).
    base::Result<std::span<const StoredTriple>> decode(std::span<const std::byte> blob,
                                                       std::int64_t count);

private:
    base::Result<void> read_records(std::string_view in);
    base::Result<void> read_pieces(std::string_view in);

    struct FreeContext {
        void operator()(ZSTD_DCtx_s* context) const noexcept;
    };
    std::unique_ptr<ZSTD_DCtx_s, FreeContext> context_;
    std::string content_;
    std::string written_;  // the pieces layout's records, written out
    std::vector<StoredTriple> pieces_;
    std::vector<StoredTriple> triples_;
};

}  // namespace glassbox::trace
