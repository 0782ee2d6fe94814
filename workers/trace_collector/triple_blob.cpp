// The triples of one stored event packed into one zstd frame and read back (triple_blob.hpp).
#include "workers/trace_collector/triple_blob.hpp"

#include <zstd.h>

#include <array>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>

namespace glassbox::trace {

using base::Error;
using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

// Level 1: the fastest, and over 20x on a graph-RAG trace's events (the PathQuestion KB: 18.3 MB
// of records in 250 events to 601 KB; level 3 gives 592 KB for about twice the time).
constexpr int kLevel = 1;

void put_varint(std::string& out, std::uint64_t value) {
    while (value >= 0x80) {
        out += static_cast<char>((value & 0x7f) | 0x80);
        value >>= 7;
    }
    out += static_cast<char>(value);
}

// Reads a varint at `at`, advancing it; nullopt when it runs past the end or over 64 bits.
std::optional<std::uint64_t> get_varint(std::string_view in, std::size_t& at) {
    std::uint64_t value = 0;
    for (unsigned shift = 0; shift < 64 && at < in.size(); shift += 7) {
        const auto byte = static_cast<unsigned char>(in[at++]);
        if (shift == 63 && byte > 1) return std::nullopt;
        value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) return value;
    }
    return std::nullopt;
}

// The skippable frame (zstd's magic 0x184D2A50, 4 bytes of content) before the zstd frame of a
// blob of pieces: its content is the layout's number, 2, as a little-endian 32-bit word. A
// blob of records starts with the zstd frame itself (0x28 0xB5 0x2F 0xFD).
constexpr std::array<unsigned char, 12> kPiecesTag = {0x50, 0x2a, 0x4d, 0x18, 4, 0,
                                                      0,    0,    2,    0,    0, 0};

Error damaged(std::string why) {
    return make_error(ErrorType::kInternal, "damaged triples blob: " + std::move(why));
}

}  // namespace

void TripleBlobWriter::FreeContext::operator()(ZSTD_CCtx_s* context) const noexcept {
    ZSTD_freeCCtx(context);
}

void TripleBlobReader::FreeContext::operator()(ZSTD_DCtx_s* context) const noexcept {
    ZSTD_freeDCtx(context);
}

void append_triple_record(std::string& out, std::string_view graph, std::string_view o,
                          std::string_view p, std::string_view s) {
    out += '{';
    if (!graph.empty()) {
        out += "\"g\":";
        out += graph;
        out += ',';
    }
    out += "\"o\":";
    out += o;
    out += ",\"p\":";
    out += p;
    out += ",\"s\":";
    out += s;
    out += '}';
}

TripleBlobWriter::TripleBlobWriter() : context_(ZSTD_createCCtx()) {
    if (!context_) throw std::bad_alloc();
    // The content checksum (4 bytes a frame) makes a damaged blob an error, not other triples.
    if (ZSTD_isError(ZSTD_CCtx_setParameter(context_.get(), ZSTD_c_compressionLevel, kLevel)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(context_.get(), ZSTD_c_checksumFlag, 1)))
        throw std::logic_error("zstd refuses the trace store's compression parameters");
}

TripleBlobWriter::~TripleBlobWriter() = default;

void TripleBlobWriter::clear() noexcept {
    records_.clear();
    triples_.clear();
    piece_sizes_.clear();
    count_ = 0;
    record_bytes_ = 0;
    pieces_ = false;
}

void TripleBlobWriter::add(std::optional<std::int64_t> text_id, std::string_view triple) {
    if (pieces_) throw std::logic_error("a record added to an event of pieces");
    put_varint(records_, text_id ? static_cast<std::uint64_t>(*text_id) : 0);
    put_varint(records_, triple.size());
    records_ += triple;
    record_bytes_ = records_.size();
    ++count_;
}

std::uint32_t TripleBlobWriter::add_piece(std::optional<std::int64_t> text_id,
                                          std::string_view text) {
    if (!pieces_ && !records_.empty()) throw std::logic_error("a piece added to records");
    pieces_ = true;
    put_varint(records_, text_id ? static_cast<std::uint64_t>(*text_id) : 0);
    put_varint(records_, text.size());
    records_ += text;
    piece_sizes_.push_back(static_cast<std::uint32_t>(text.size()));
    return static_cast<std::uint32_t>(piece_sizes_.size() - 1);
}

void TripleBlobWriter::add_triple(std::uint32_t s, std::uint32_t p, std::uint32_t o,
                                  std::optional<std::uint32_t> graph) {
    put_varint(triples_, s);
    put_varint(triples_, p);
    put_varint(triples_, o);
    put_varint(triples_, graph ? std::uint64_t{*graph} + 1 : 0);
    record_bytes_ += triple_record_size(graph ? piece_sizes_.at(*graph) : 0, piece_sizes_.at(o),
                                        piece_sizes_.at(p), piece_sizes_.at(s));
    ++count_;
}

Result<std::string_view> TripleBlobWriter::finish() {
    if (count_ == 0) return std::string_view{};
    if (record_bytes_ > kMaxTripleBlobBytes) {
        return make_error(ErrorType::kInternal,
                          "an event's triples take " + std::to_string(record_bytes_) +
                              " bytes, over the " + std::to_string(kMaxTripleBlobBytes) +
                              " a stored event may hold");
    }
    std::string_view content = records_;
    std::size_t at = 0;
    if (pieces_) {
        // The piece count, the pieces, the triples: one buffer to compress.
        staged_.clear();
        put_varint(staged_, piece_sizes_.size());
        staged_ += records_;
        staged_ += triples_;
        content = staged_;
        at = kPiecesTag.size();
    }
    compressed_.resize(at + ZSTD_compressBound(content.size()));
    if (pieces_) std::memcpy(compressed_.data(), kPiecesTag.data(), kPiecesTag.size());
    const std::size_t size =
        ZSTD_compress2(context_.get(), compressed_.data() + at, compressed_.size() - at,
                       content.data(), content.size());
    if (ZSTD_isError(size) != 0)
        return make_error(ErrorType::kInternal,
                          std::string("zstd compression failed: ") + ZSTD_getErrorName(size));
    return std::string_view{compressed_.data(), at + size};
}

TripleBlobReader::TripleBlobReader() : context_(ZSTD_createDCtx()) {
    if (!context_) throw std::bad_alloc();
}

TripleBlobReader::~TripleBlobReader() = default;

Result<std::span<const StoredTriple>> TripleBlobReader::decode(std::span<const std::byte> blob,
                                                               std::int64_t count) {
    triples_.clear();
    if (blob.empty()) {
        if (count != 0) return damaged("empty, and " + std::to_string(count) + " triples expected");
        return std::span<const StoredTriple>{};
    }
    const bool pieces = blob.size() >= kPiecesTag.size() &&
                        std::memcmp(blob.data(), kPiecesTag.data(), kPiecesTag.size()) == 0;
    if (pieces) blob = blob.subspan(kPiecesTag.size());
    const unsigned long long size = ZSTD_getFrameContentSize(blob.data(), blob.size());
    if (size == ZSTD_CONTENTSIZE_ERROR) return damaged("not a zstd frame");
    if (size == ZSTD_CONTENTSIZE_UNKNOWN) return damaged("the frame does not say its size");
    if (size > kMaxTripleBlobBytes)
        return damaged("the frame says " + std::to_string(size) + " bytes, over the bound of " +
                       std::to_string(kMaxTripleBlobBytes));
    if (ZSTD_findFrameCompressedSize(blob.data(), blob.size()) != blob.size())
        return damaged("not exactly one whole zstd frame");
    content_.resize(static_cast<std::size_t>(size));
    const std::size_t read = ZSTD_decompressDCtx(context_.get(), content_.data(), content_.size(),
                                                 blob.data(), blob.size());
    if (ZSTD_isError(read) != 0) return damaged(ZSTD_getErrorName(read));
    if (read != content_.size()) return damaged("shorter than its frame says");
    if (auto r = pieces ? read_pieces(content_) : read_records(content_); !r) return r.error();
    if (static_cast<std::int64_t>(triples_.size()) != count)
        return damaged(std::to_string(triples_.size()) + " triples, " + std::to_string(count) +
                       " expected");
    return std::span<const StoredTriple>{triples_};
}

namespace {

// Reads one text id, length and that many bytes from `in` at `at` into `out`, its view into
// `in`; false when they are malformed.
bool read_text(std::string_view in, std::size_t& at, StoredTriple& out) {
    const auto text = get_varint(in, at);
    const auto length = get_varint(in, at);
    if (!text || !length || *length > in.size() - at ||
        *text > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return false;
    out.text_id = *text == 0 ? std::nullopt : std::optional<std::int64_t>(*text);
    out.triple = in.substr(at, static_cast<std::size_t>(*length));
    at += static_cast<std::size_t>(*length);
    return true;
}

}  // namespace

Result<void> TripleBlobReader::read_records(std::string_view in) {
    std::size_t at = 0;
    while (at < in.size()) {
        if (!read_text(in, at, triples_.emplace_back()))
            return damaged("a malformed record after " + std::to_string(triples_.size() - 1));
    }
    return {};
}

// The pieces, then the triples: checked and their written-out size summed, then written out.
Result<void> TripleBlobReader::read_pieces(std::string_view in) {
    std::size_t at = 0;
    pieces_.clear();
    const auto count = get_varint(in, at);
    if (!count || *count > in.size()) return damaged("a malformed piece count");
    for (std::uint64_t i = 0; i < *count; ++i) {
        if (!read_text(in, at, pieces_.emplace_back()))
            return damaged("a malformed piece after " + std::to_string(i));
    }
    const std::size_t first = at;
    std::size_t bytes = 0;
    std::size_t triples = 0;
    // A triple names its pieces by index; only its object's may carry a text id.
    const auto next = [&](bool text_allowed, std::uint64_t offset) -> std::optional<StoredTriple> {
        const auto index = get_varint(in, at);
        if (!index || *index < offset || *index - offset >= pieces_.size()) return std::nullopt;
        const StoredTriple& piece = pieces_[static_cast<std::size_t>(*index - offset)];
        if (piece.text_id && !text_allowed) return std::nullopt;
        return piece;
    };
    for (const bool write : {false, true}) {
        at = first;
        if (write) {
            written_.clear();
            written_.reserve(bytes);
        }
        while (at < in.size()) {
            const auto s = next(false, 0);
            const auto p = next(false, 0);
            const auto o = next(true, 0);
            const std::size_t graph_at = at;
            const auto g = next(false, 1);
            const bool no_graph = !g && graph_at + 1 == at && in[graph_at] == 0;
            if (!s || !p || !o || (!g && !no_graph))
                return damaged("a malformed triple after " + std::to_string(triples));
            const std::string_view graph = g ? g->triple : std::string_view{};
            if (!write) {
                bytes += triple_record_size(graph.size(), o->triple.size(), p->triple.size(),
                                            s->triple.size());
                if (bytes > kMaxTripleBlobBytes)
                    return damaged("its triples written out are over the bound of " +
                                   std::to_string(kMaxTripleBlobBytes) + " bytes");
                ++triples;
                continue;
            }
            const std::size_t start = written_.size();
            append_triple_record(written_, graph, o->triple, p->triple, s->triple);
            // No reallocation: the buffer was reserved for every record.
            triples_.push_back({o->text_id, std::string_view(written_).substr(start)});
        }
    }
    return {};
}

}  // namespace glassbox::trace
