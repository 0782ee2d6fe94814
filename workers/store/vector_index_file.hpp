// The vector index file's format: its header, the checksum over header and payload, and the
// small stdio helpers that read and write it. (Serialising the hnswlib graph itself stays in
// vector_index.cpp, the one translation unit that may include hnswlib.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace glassbox::store::detail {

inline constexpr std::uint32_t kFormatVersion = 1;
inline constexpr char kMagic[8] = {'G', 'B', 'H', 'N', 'S', 'W', '\r', '\n'};

// A checksum for the index file: four 64-bit multiply-rotate lanes (the xxHash64 round).
std::uint64_t hash_bytes(const void* data, std::size_t size, std::uint64_t seed);

// Pieces of the payload are hashed one by one and chained, so writing and reading can stream.
struct Checksum {
    std::uint64_t value = 0x676C617373626F78ULL;
    void add(const void* data, std::size_t size);
};

// [FileHeader][model bytes][payload]; payload = hnswlib's level-0 block (cur_element_count *
// size_data_per_element_: links, vector, label per element), then per element a u32 level and
// its upper-level link lists (level * size_links_per_element_ bytes). Host byte order; the
// header records what the file covers so a stale file is told from a fresh one.
struct FileHeader {
    char magic[8];
    std::uint32_t format_version;
    std::uint32_t kind;
    std::uint32_t dim;
    std::uint32_t model_bytes;
    std::uint64_t m;
    std::uint64_t ef_construction;
    std::int64_t instance;
    std::int64_t seq;
    std::uint64_t live;
    std::uint64_t elements;
    std::uint64_t size_data_per_element;
    std::int32_t max_level;
    std::uint32_t entry_point;
    std::uint64_t payload_bytes;
    std::uint64_t payload_checksum;
    std::uint64_t header_checksum;  // of the bytes above and the model name
};
static_assert(std::is_trivially_copyable_v<FileHeader>);

std::uint64_t header_checksum(const FileHeader& header, std::string_view model);

struct FileCloser {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::string errno_text();

// A new file for writing, owner-only (0600: index files hold the collection's vectors), never
// through a symbolic link and never an existing file (O_EXCL); nullptr with errno set on failure.
std::FILE* create_owner_only(const char* path);

// Reads exactly `size` bytes; false on a short file or an error.
bool read_exact(std::FILE* f, void* out, std::size_t size);

}  // namespace glassbox::store::detail
