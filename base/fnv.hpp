// 64-bit FNV-1a (offset basis 14695981039346656037, prime 1099511628211): the one hash behind
// the graph dictionary's keys, the trace store's text digests, the feature-hashing embedder and
// graph-rag's lexical profiles. Some of its values are stored in files: it must never change.
#pragma once

#include <cstdint>
#include <string_view>

namespace glassbox::base {

inline constexpr std::uint64_t kFnvOffset = 14695981039346656037ull;

// Continues the hash `state` over `bytes` (start from kFnvOffset).
constexpr std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t state = kFnvOffset) noexcept {
    for (const char c : bytes) {
        state ^= static_cast<unsigned char>(c);
        state *= 1099511628211ull;
    }
    return state;
}

static_assert(fnv1a64("") == kFnvOffset);
static_assert(fnv1a64("a") == 0xaf63dc4c8601ec8cull);  // the published test vector

// splitmix64's finalizer: every input bit reaches every output bit (the embedder takes its sign
// bit from it; its values are part of the built-in embeddings, so it must never change).
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

}  // namespace glassbox::base
