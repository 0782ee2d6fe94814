// In-memory helpers of the graph store's term dictionary: a bounded key → id cache and the set
// of key hashes the dictionary holds. Both are flat open-addressing tables: a lookup touches one
// or two cache lines instead of a chain of heap nodes, which is what a bulk load spends its time
// on (three lookups per triple).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workers/store/bulk_allocator.hpp"

namespace glassbox::store {

// Dictionary key → term id, for keys already hashed (GraphStore's key_hash, well mixed). Two
// generations: when the newer one holds `capacity` keys, or its keys take `byte_budget` bytes,
// the older is dropped and the newer becomes the older; a hit in the older moves the key to the
// newer. Memory is bounded, hot keys survive. Ids must be non-zero (SQLite rowids are).
class TermIdCache {
public:
    // capacity 0: caches nothing.
    // byte_budget is capped at 1 GiB (arena offsets are 32-bit).
    explicit TermIdCache(std::size_t capacity = 0, std::size_t byte_budget = 64u << 20);

    std::optional<std::int64_t> find(std::string_view key, std::uint64_t hash);
    // Asks the CPU to fetch the slot find(…, hash) reads first: a caller that knows its next
    // keys hides the memory latency of a probe (tens of MB of table: most probes miss every cache).
    void prefetch(std::uint64_t hash) const noexcept { current_.prefetch(hash); }
    // For a key find() just missed (the callers' pattern): it is not checked for again.
    void put(std::string_view key, std::uint64_t hash, std::int64_t id);
    void clear() noexcept;
    std::size_t size() const noexcept { return current_.size() + previous_.size(); }

    // Keys longer than this are not cached (a huge literal would only push out useful keys).
    static constexpr std::size_t kMaxKeyBytes = 4096;

private:
    class Generation {
    public:
        // Room for `capacity` keys, their entries taking up to `byte_budget` bytes.
        void reset(std::size_t capacity, std::size_t byte_budget);
        // The id stored for `key`, or 0.
        std::int64_t find(std::string_view key, std::uint64_t hash) const noexcept;
        void prefetch(std::uint64_t hash) const noexcept {
            if (!slots_.empty()) __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
        }
        // The key must not be present; the caller keeps size() < capacity.
        void insert(std::string_view key, std::uint64_t hash, std::int64_t id);
        std::size_t size() const noexcept { return size_; }
        std::size_t key_bytes() const noexcept { return arena_.size(); }
        bool allocated() const noexcept { return !slots_.empty(); }
        void clear() noexcept;

    private:
        // 8 bytes a slot, so the probes stay in cache: 32 bits of the hash (0: empty) and where
        // the entry starts in the arena. An entry is the id (8 bytes), the key's length
        // (4 bytes) and the key; it is read only when the hash bits match.
        struct Slot {
            std::uint32_t tag = 0;
            std::uint32_t offset = 0;
        };
        static std::uint32_t tag_of(std::uint64_t hash) noexcept;
        // Both in bulk memory, the arena reserved whole at reset: growing it by doubling copied
        // every entry again and touched twice the memory (a first load fills a generation).
        BulkVector<Slot> slots_;  // a power of two, at most half full
        std::basic_string<char, std::char_traits<char>, BulkAllocator<char>> arena_;
        std::size_t size_ = 0;
    };

    void rotate();

    std::size_t capacity_;
    std::size_t byte_budget_;
    Generation current_;
    Generation previous_;
};

// The hashes of every key in the dictionary, kept complete by the graph store inside its write
// transactions (synchronised from the file, plus what it inserts). "Not contained" proves a key
// is new, so interning it needs no SELECT; "contained" may be a false positive (only 32 bits of
// each hash are kept) and is checked against the file. Grows as needed up to `max_entries`;
// beyond that the caller stops using it (it would cost more memory than it saves).
class TermHashSet {
public:
    explicit TermHashSet(std::size_t max_entries) : max_entries_(max_entries) {}

    bool maybe_contains(std::uint64_t hash) const noexcept;
    // False when the set would exceed max_entries (nothing inserted).
    bool insert(std::uint64_t hash);
    void clear() noexcept;
    std::size_t size() const noexcept { return size_; }
    std::size_t max_entries() const noexcept { return max_entries_; }

private:
    static std::uint32_t fingerprint(std::uint64_t hash) noexcept;
    static std::size_t slot_of(std::uint32_t fingerprint, std::size_t mask) noexcept;
    void grow();

    std::size_t max_entries_;
    std::vector<std::uint32_t> slots_;  // 0: empty; a power of two, at most half full
    std::size_t size_ = 0;
};

}  // namespace glassbox::store
