// The triples of one stored event packed into one zstd frame and read back (triple_blob.hpp).
#include "workers/trace_collector/triple_blob.hpp"

#include <zstd.h>

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
    count_ = 0;
}

void TripleBlobWriter::add(std::optional<std::int64_t> text_id, std::string_view triple) {
    put_varint(records_, text_id ? static_cast<std::uint64_t>(*text_id) : 0);
    put_varint(records_, triple.size());
    records_ += triple;
    ++count_;
}

Result<std::string_view> TripleBlobWriter::finish() {
    if (records_.empty()) return std::string_view{};
    if (records_.size() > kMaxTripleBlobBytes) {
        return make_error(ErrorType::kInternal,
                          "an event's triples take " + std::to_string(records_.size()) +
                              " bytes, over the " + std::to_string(kMaxTripleBlobBytes) +
                              " a stored event may hold");
    }
    compressed_.resize(ZSTD_compressBound(records_.size()));
    const std::size_t size = ZSTD_compress2(context_.get(), compressed_.data(), compressed_.size(),
                                            records_.data(), records_.size());
    if (ZSTD_isError(size) != 0)
        return make_error(ErrorType::kInternal,
                          std::string("zstd compression failed: ") + ZSTD_getErrorName(size));
    return std::string_view{compressed_.data(), size};
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
    const unsigned long long size = ZSTD_getFrameContentSize(blob.data(), blob.size());
    if (size == ZSTD_CONTENTSIZE_ERROR) return damaged("not a zstd frame");
    if (size == ZSTD_CONTENTSIZE_UNKNOWN) return damaged("the frame does not say its size");
    if (size > kMaxTripleBlobBytes)
        return damaged("the frame says " + std::to_string(size) + " bytes, over the bound of " +
                       std::to_string(kMaxTripleBlobBytes));
    if (ZSTD_findFrameCompressedSize(blob.data(), blob.size()) != blob.size())
        return damaged("not exactly one whole zstd frame");
    records_.resize(static_cast<std::size_t>(size));
    const std::size_t read = ZSTD_decompressDCtx(context_.get(), records_.data(), records_.size(),
                                                 blob.data(), blob.size());
    if (ZSTD_isError(read) != 0) return damaged(ZSTD_getErrorName(read));
    if (read != records_.size()) return damaged("shorter than its frame says");

    const std::string_view in = records_;
    std::size_t at = 0;
    while (at < in.size()) {
        const auto text = get_varint(in, at);
        const auto length = get_varint(in, at);
        if (!text || !length || *length > in.size() - at ||
            *text > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return damaged("a malformed record after " + std::to_string(triples_.size()));
        StoredTriple& t = triples_.emplace_back();
        if (*text != 0) t.text_id = static_cast<std::int64_t>(*text);
        t.triple = in.substr(at, static_cast<std::size_t>(*length));
        at += static_cast<std::size_t>(*length);
    }
    if (static_cast<std::int64_t>(triples_.size()) != count)
        return damaged(std::to_string(triples_.size()) + " triples, " + std::to_string(count) +
                       " expected");
    return std::span<const StoredTriple>{triples_};
}

}  // namespace glassbox::trace
