// TermIdCache and TermHashSet: flat, linearly probed tables.
#include "workers/store/term_cache.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace glassbox::store {

namespace {

// An arena entry's id and key length, before the key.
constexpr std::size_t kEntryHeader = sizeof(std::int64_t) + sizeof(std::uint32_t);

// Slots for `entries` at a load factor of at most one half.
std::size_t slots_for(std::size_t entries) {
    return std::bit_ceil(std::max<std::size_t>(entries * 2, 16));
}

}  // namespace

// ---- TermIdCache ---------------------------------------------------------------------------

void TermIdCache::Generation::reset(std::size_t capacity, std::size_t byte_budget) {
    slots_.assign(slots_for(capacity), Slot{});
    arena_.clear();
    // The memory is only touched as entries come (a dictionary key is some 40-60 bytes).
    arena_.reserve(std::min(byte_budget, capacity * (kEntryHeader + 128)));
    size_ = 0;
}

void TermIdCache::Generation::clear() noexcept {
    slots_.clear();
    slots_.shrink_to_fit();
    arena_.clear();
    arena_.shrink_to_fit();
    size_ = 0;
}

std::uint32_t TermIdCache::Generation::tag_of(std::uint64_t hash) noexcept {
    // The high half: the slot index comes from the low bits, so the two are independent.
    const auto tag = static_cast<std::uint32_t>(hash >> 32);
    return tag == 0 ? 1u : tag;
}

std::int64_t TermIdCache::Generation::find(std::string_view key,
                                           std::uint64_t hash) const noexcept {
    if (size_ == 0) return 0;
    const std::uint32_t tag = tag_of(hash);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
        const Slot slot = slots_[i];
        if (slot.tag == 0) return 0;
        if (slot.tag != tag) continue;
        const char* entry = arena_.data() + slot.offset;
        std::uint32_t length = 0;
        std::memcpy(&length, entry + sizeof(std::int64_t), sizeof length);
        if (length != key.size()) continue;
        if (std::memcmp(entry + kEntryHeader, key.data(), key.size()) != 0) continue;
        std::int64_t id = 0;
        std::memcpy(&id, entry, sizeof id);
        return id;
    }
}

void TermIdCache::Generation::insert(std::string_view key, std::uint64_t hash, std::int64_t id) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = hash & mask;
    while (slots_[i].tag != 0) i = (i + 1) & mask;
    slots_[i] = Slot{tag_of(hash), static_cast<std::uint32_t>(arena_.size())};
    const auto length = static_cast<std::uint32_t>(key.size());
    arena_.append(reinterpret_cast<const char*>(&id), sizeof id);
    arena_.append(reinterpret_cast<const char*>(&length), sizeof length);
    arena_.append(key);
    ++size_;
}

TermIdCache::TermIdCache(std::size_t capacity, std::size_t byte_budget)
    : capacity_(capacity), byte_budget_(std::min<std::size_t>(byte_budget, std::size_t{1} << 30)) {}

std::optional<std::int64_t> TermIdCache::find(std::string_view key, std::uint64_t hash) {
    if (const std::int64_t id = current_.find(key, hash); id != 0) return id;
    const std::int64_t id = previous_.find(key, hash);
    if (id == 0) return std::nullopt;
    put(key, hash, id);
    return id;
}

void TermIdCache::put(std::string_view key, std::uint64_t hash, std::int64_t id) {
    if (capacity_ == 0 || id == 0 || key.size() > kMaxKeyBytes) return;
    if (!current_.allocated())
        current_.reset(capacity_, byte_budget_);  // on first use: an unused cache costs nothing
    if (current_.size() >= capacity_ ||
        current_.key_bytes() + kEntryHeader + key.size() > byte_budget_)
        rotate();
    current_.insert(key, hash, id);
}

void TermIdCache::rotate() {
    std::swap(previous_, current_);
    current_.reset(capacity_, byte_budget_);
}

void TermIdCache::clear() noexcept {
    current_.clear();
    previous_.clear();
}

// ---- TermHashSet ---------------------------------------------------------------------------

std::uint32_t TermHashSet::fingerprint(std::uint64_t hash) noexcept {
    const auto high = static_cast<std::uint32_t>(hash >> 32);
    return high == 0 ? 1u : high;  // 0 marks an empty slot
}

std::size_t TermHashSet::slot_of(std::uint32_t fingerprint, std::size_t mask) noexcept {
    // The fingerprint is 32 bits of a well-mixed hash: its low bits place it. The slot comes from
    // the fingerprint alone, so the table can grow without the full hashes.
    return static_cast<std::size_t>(fingerprint) & mask;
}

bool TermHashSet::maybe_contains(std::uint64_t hash) const noexcept {
    if (size_ == 0) return false;
    const std::uint32_t fp = fingerprint(hash);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = slot_of(fp, mask);; i = (i + 1) & mask) {
        if (slots_[i] == 0) return false;
        if (slots_[i] == fp) return true;
    }
}

bool TermHashSet::insert(std::uint64_t hash) {
    if (size_ >= max_entries_) return false;
    if (slots_.empty() || (size_ + 1) * 2 > slots_.size()) grow();
    const std::uint32_t fp = fingerprint(hash);
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = slot_of(fp, mask);
    for (; slots_[i] != 0; i = (i + 1) & mask) {
        if (slots_[i] == fp) return true;  // a set: equal fingerprints are one entry
    }
    slots_[i] = fp;
    ++size_;
    return true;
}

void TermHashSet::grow() {
    std::vector<std::uint32_t> old = std::move(slots_);
    slots_.assign(slots_for(std::max<std::size_t>(size_ + 1, old.size())), 0);
    const std::size_t mask = slots_.size() - 1;
    for (const std::uint32_t fp : old) {
        if (fp == 0) continue;
        std::size_t i = slot_of(fp, mask);
        while (slots_[i] != 0) i = (i + 1) & mask;
        slots_[i] = fp;
    }
}

void TermHashSet::clear() noexcept {
    slots_.clear();
    slots_.shrink_to_fit();
    size_ = 0;
}

}  // namespace glassbox::store
