// Tests for the term dictionary's in-memory tables: the key → id cache and the set of key hashes.
#include "workers/store/term_cache.hpp"

#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include <gtest/gtest.h>

#include "base/fnv.hpp"

namespace glassbox::store {
namespace {

// A stand-in for GraphStore's key hash: any well-mixed 64-bit value will do.
std::uint64_t mix(std::uint64_t x) { return base::mix64(x); }

std::string key_of(int i) { return "Ihttp://example.org/entity/" + std::to_string(i); }

TEST(TermIdCache, FindsWhatWasPutAndNothingElse) {
    TermIdCache cache(100);
    cache.put(key_of(1), mix(1), 11);
    cache.put(key_of(2), mix(2), 22);
    EXPECT_EQ(cache.find(key_of(1), mix(1)), 11);
    EXPECT_EQ(cache.find(key_of(2), mix(2)), 22);
    EXPECT_EQ(cache.find(key_of(3), mix(3)), std::nullopt);
    // Same hash, other key: a collision is not a hit.
    EXPECT_EQ(cache.find(key_of(3), mix(1)), std::nullopt);
    // Same key, other hash: not found either (the caller always passes the key's own hash).
    EXPECT_EQ(cache.find(key_of(1), mix(2)), std::nullopt);
    // A key that is a prefix of a stored one is a different key.
    EXPECT_EQ(cache.find(key_of(1).substr(0, 10), mix(1)), std::nullopt);
}

TEST(TermIdCache, KeysThatShareOneHashAreKeptApart) {
    TermIdCache cache(100);
    for (int i = 0; i < 20; ++i) cache.put(key_of(i), 42, 100 + i);  // all collide
    for (int i = 0; i < 20; ++i) EXPECT_EQ(cache.find(key_of(i), 42), 100 + i) << i;
    EXPECT_EQ(cache.size(), 20u);
}

TEST(TermIdCache, StaysBoundedAndKeepsTheRecentGeneration) {
    TermIdCache cache(10);
    for (int i = 1; i <= 35; ++i) cache.put(key_of(i), mix(i), i);
    EXPECT_LE(cache.size(), 20u);
    // The last 10 put are certainly there; the first ones are gone.
    for (int i = 26; i <= 35; ++i) EXPECT_EQ(cache.find(key_of(i), mix(i)), i) << i;
    EXPECT_EQ(cache.find(key_of(1), mix(1)), std::nullopt);
}

TEST(TermIdCache, AHitInTheOlderGenerationSurvivesTheNextRotation) {
    TermIdCache cache(4);
    for (int i = 1; i <= 4; ++i) cache.put(key_of(i), mix(i), i);
    cache.put(key_of(5), mix(5), 5);              // 1..4 are now the older generation
    EXPECT_EQ(cache.find(key_of(2), mix(2)), 2);  // moved to the newer one
    for (int i = 6; i <= 7; ++i) cache.put(key_of(i), mix(i), i);  // fills the newer: 5, 2, 6, 7
    cache.put(key_of(8), mix(8), 8);                               // rotates: 1, 3, 4 dropped
    EXPECT_EQ(cache.find(key_of(2), mix(2)), 2);
    EXPECT_EQ(cache.find(key_of(1), mix(1)), std::nullopt);
    EXPECT_EQ(cache.find(key_of(3), mix(3)), std::nullopt);
    EXPECT_EQ(cache.find(key_of(8), mix(8)), 8);
}

TEST(TermIdCache, TheByteBudgetBoundsTheKeysHeld) {
    TermIdCache cache(1000, 200);
    const std::string long_key(150, 'x');
    cache.put(long_key + "a", 1, 1);
    cache.put(long_key + "b", 2, 2);  // past 200 bytes: the first moves to the older generation
    cache.put(long_key + "c", 3, 3);  // and is dropped now
    EXPECT_EQ(cache.find(long_key + "a", 1), std::nullopt);
    EXPECT_EQ(cache.find(long_key + "c", 3), 3);
    EXPECT_LE(cache.size(), 2u);
}

TEST(TermIdCache, HugeKeysZeroCapacityAndClearCacheNothing) {
    TermIdCache cache(100);
    const std::string huge(TermIdCache::kMaxKeyBytes + 1, 'L');
    cache.put(huge, 7, 7);
    EXPECT_EQ(cache.find(huge, 7), std::nullopt);
    cache.put(key_of(1), mix(1), 1);
    cache.clear();
    EXPECT_EQ(cache.find(key_of(1), mix(1)), std::nullopt);
    cache.put(key_of(1), mix(1), 1);  // usable again after clear()
    EXPECT_EQ(cache.find(key_of(1), mix(1)), 1);

    TermIdCache none(0);
    none.put(key_of(1), mix(1), 1);
    EXPECT_EQ(none.find(key_of(1), mix(1)), std::nullopt);
}

TEST(TermHashSet, NeverMissesAnInsertedHashAndRarelyClaimsOthers) {
    TermHashSet set(1'000'000);
    std::mt19937_64 random(7);
    std::vector<std::uint64_t> inserted;
    for (int i = 0; i < 100'000; ++i) {
        inserted.push_back(random());
        ASSERT_TRUE(set.insert(inserted.back()));
    }
    for (const auto h : inserted)
        ASSERT_TRUE(set.maybe_contains(h));  // it grew many times meanwhile
    int claimed = 0;
    for (int i = 0; i < 100'000; ++i) claimed += set.maybe_contains(random()) ? 1 : 0;
    // 32-bit fingerprints: about 100k / 2^32 of unrelated hashes match; allow far more.
    EXPECT_LT(claimed, 20);
    EXPECT_EQ(set.size(), 100'000u);
}

TEST(TermHashSet, RefusesToGrowPastItsLimitAndClears) {
    TermHashSet set(3);
    EXPECT_FALSE(set.maybe_contains(mix(1)));
    EXPECT_TRUE(set.insert(mix(1)));
    EXPECT_TRUE(set.insert(mix(2)));
    EXPECT_TRUE(set.insert(mix(3)));
    EXPECT_FALSE(set.insert(mix(4)));
    EXPECT_FALSE(set.maybe_contains(mix(4)));
    EXPECT_TRUE(set.maybe_contains(mix(3)));
    // A hash whose top 32 bits are zero is kept too (zero marks an empty slot inside).
    set.clear();
    EXPECT_EQ(set.size(), 0u);
    EXPECT_TRUE(set.insert(0x00000000deadbeefULL));
    EXPECT_TRUE(set.maybe_contains(0x00000000deadbeefULL));
}

}  // namespace
}  // namespace glassbox::store
