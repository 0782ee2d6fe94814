// The allocator of a staged commit's large buffers (a group's quads, their sort buffers and the
// POS/OSP orders: tens of MB each): such memory is asked of the kernel in 2 MiB pages, and
// resize() leaves it unwritten instead of zero-filling it first.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace glassbox::store {

namespace detail {

// From this size on a buffer is mapped on its own, in 2 MiB pages when the kernel grants them
// (transparent huge pages in `madvise` mode, as Debian ships them). A commit of a million quads
// touches ~150 MB of fresh memory: in 4 KiB pages that is ~37,000 page faults, which took a
// quarter of the commit's CPU under a paravirtualised kernel (perf: exc_page_fault and the
// zero-fill of vector::resize); in 2 MiB pages, ~75.
inline constexpr std::size_t kBulkMappingBytes = std::size_t{4} << 20;
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

inline std::size_t bulk_mapping_size(std::size_t bytes) noexcept {
    return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

inline void* map_bulk(std::size_t bytes) {
    const std::size_t size = bulk_mapping_size(bytes);
    void* memory =
        ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::bad_alloc();
    // A kernel without transparent huge pages refuses: the mapping is then in small pages.
    (void)::madvise(memory, size, MADV_HUGEPAGE);
    return memory;
}

inline void unmap_bulk(void* memory, std::size_t bytes) noexcept {
    (void)::munmap(memory, bulk_mapping_size(bytes));
}

}  // namespace detail

// For trivially copyable rows only (quads): resize() default-initialises, i.e. leaves them
// unwritten, since every caller writes each row before reading it.
template <class T>
class BulkAllocator {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

public:
    using value_type = T;

    BulkAllocator() noexcept = default;
    template <class U>
    explicit BulkAllocator(const BulkAllocator<U>& /*other*/) noexcept {}

    T* allocate(std::size_t n) {
        if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
        const std::size_t bytes = n * sizeof(T);
        if (bytes < detail::kBulkMappingBytes)
            return static_cast<T*>(::operator new (bytes, std::align_val_t{alignof(T)}));
        return static_cast<T*>(detail::map_bulk(bytes));
    }

    void deallocate(T* memory, std::size_t n) noexcept {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < detail::kBulkMappingBytes) {
            ::operator delete (memory, std::align_val_t{alignof(T)});
        } else {
            detail::unmap_bulk(memory, bytes);
        }
    }

    // No arguments: default-initialised (left as the memory was), not zeroed.
    template <class U>
    void construct(U* at) noexcept {
        ::new (static_cast<void*>(at)) U;
    }
    template <class U, class... Args>
    void construct(U* at, Args&&... args) {
        ::new (static_cast<void*>(at)) U(std::forward<Args>(args)...);
    }

    template <class U>
    bool operator==(const BulkAllocator<U>& /*other*/) const noexcept {
        return true;
    }
};

// A vector of rows in bulk memory.
template <class T>
using BulkVector = std::vector<T, BulkAllocator<T>>;

}  // namespace glassbox::store
