// The vector index file's checksum and stdio helpers (files created owner-only).
#include "workers/store/vector_index_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

namespace glassbox::store::detail {

namespace {

constexpr std::uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t kPrime3 = 0x165667B19E3779F9ULL;

std::uint64_t round64(std::uint64_t acc, std::uint64_t input) {
    acc += input * kPrime2;
    return std::rotl(acc, 31) * kPrime1;
}

}  // namespace

std::uint64_t hash_bytes(const void* data, std::size_t size, std::uint64_t seed) {
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint64_t lanes[4] = {seed + kPrime1 + kPrime2, seed + kPrime2, seed, seed - kPrime1};
    std::size_t i = 0;
    for (; i + 32 <= size; i += 32) {
        for (int lane = 0; lane < 4; ++lane) {
            std::uint64_t word;
            std::memcpy(&word, p + i + static_cast<std::size_t>(lane) * 8, 8);
            lanes[lane] = round64(lanes[lane], word);
        }
    }
    std::uint64_t h = std::rotl(lanes[0], 1) + std::rotl(lanes[1], 7) + std::rotl(lanes[2], 12) +
                      std::rotl(lanes[3], 18) + size;
    for (; i < size; ++i) h = std::rotl(h ^ (p[i] * kPrime3), 11) * kPrime1;
    h ^= h >> 33;
    h *= kPrime2;
    h ^= h >> 29;
    return h;
}

void Checksum::add(const void* data, std::size_t size) {
    value = hash_bytes(data, size, value) ^ std::rotl(value, 17);
}

std::uint64_t header_checksum(const FileHeader& header, std::string_view model) {
    Checksum sum;
    sum.add(&header, offsetof(FileHeader, header_checksum));
    sum.add(model.data(), model.size());
    return sum.value;
}

std::string errno_text() { return std::strerror(errno); }

std::FILE* create_owner_only(const char* path) {
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return nullptr;
    std::FILE* file = ::fdopen(fd, "wb");
    if (file == nullptr) {
        const int saved = errno;
        ::close(fd);
        errno = saved;
    }
    return file;
}

bool read_exact(std::FILE* f, void* out, std::size_t size) {
    return std::fread(out, 1, size, f) == size;
}

}  // namespace glassbox::store::detail
