// 64-bit FNV-1a (offset basis 14695981039346656037, prime 1099511628211): the one hash behind
// the graph dictionary's keys, the trace store's text digests, the feature-hashing embedder and
// graph-rag's lexical profiles. Some of its values are stored in files: it must never change.
#pragma once

#include <cstdint>
#include <string_view>

namespace glassbox::schema {

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

}  // namespace glassbox::schema
