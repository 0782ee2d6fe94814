// Tests for the staged commit's sorts: the radix sort against std::stable_sort on random and
// adversarial keys (ties, duplicates, extremes, one value, few values far apart), and the SPO,
// POS and OSP orders against std::sort with the orders' comparators.
#include "workers/store/quad_sort.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

namespace glassbox::store {
namespace {

// A row with a key and its place in the input, so stability is visible.
struct Keyed {
    std::int64_t key;
    std::size_t place;
    bool operator==(const Keyed&) const = default;
};

std::vector<Keyed> keyed(const std::vector<std::int64_t>& keys) {
    std::vector<Keyed> rows;
    for (std::size_t i = 0; i < keys.size(); ++i) rows.push_back({keys[i], i});
    return rows;
}

// The radix sort's result equals std::stable_sort's by key.
void expect_like_stable_sort(const std::vector<std::int64_t>& keys) {
    auto rows = keyed(keys);
    auto expected = rows;
    std::stable_sort(expected.begin(), expected.end(),
                     [](const Keyed& a, const Keyed& b) { return a.key < b.key; });
    std::vector<Keyed> scratch;
    const auto& sorted = stable_radix_sort(rows, scratch, [](const Keyed& r) { return r.key; });
    EXPECT_EQ(sorted, expected);
}

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

TEST(RadixSortTest, SortsLikeAStableSortOnRandomKeysOfEveryWidth) {
    std::mt19937_64 rng(7);
    // Ranges taking no pass, one (up to 2^16) and two to four passes; small ranges tie often.
    for (const std::uint64_t range :
         {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{255}, std::uint64_t{65'536},
          std::uint64_t{65'537}, std::uint64_t{1} << 20, std::uint64_t{1} << 40,
          std::numeric_limits<std::uint64_t>::max()}) {
        SCOPED_TRACE("range " + std::to_string(range));
        std::vector<std::int64_t> keys;
        for (int i = 0; i < 5'000; ++i) {
            const std::uint64_t offset =
                range == std::numeric_limits<std::uint64_t>::max() ? rng() : rng() % range;
            keys.push_back(static_cast<std::int64_t>(offset + 12'345));
        }
        expect_like_stable_sort(keys);
    }
}

TEST(RadixSortTest, SortsAdversarialKeys) {
    expect_like_stable_sort({});
    expect_like_stable_sort({42});
    expect_like_stable_sort(std::vector<std::int64_t>(100, 7));  // all equal: no pass
    expect_like_stable_sort({kMax, kMin, 0, kMin, kMax, -1, 1, 0});
    std::vector<std::int64_t> ascending, descending, two_far_apart, sawtooth;
    for (std::int64_t i = 0; i < 3'000; ++i) {
        ascending.push_back(i * 1'000'003);
        descending.push_back(-i * 97);
        two_far_apart.push_back(i % 3 == 0 ? kMin : kMax);
        sawtooth.push_back(i % 70'000 + (i % 2) * (std::int64_t{1} << 33));
    }
    expect_like_stable_sort(ascending);
    expect_like_stable_sort(descending);
    expect_like_stable_sort(two_far_apart);
    expect_like_stable_sort(sawtooth);
}

TEST(RadixSortTest, APlanSplitsTheRangeIntoFewestPassesOfAtMost16Bits) {
    const auto plan_of = [](const std::vector<std::int64_t>& keys) {
        const auto rows = keyed(keys);
        return radix_plan(std::span<const Keyed>(rows), [](const Keyed& r) { return r.key; });
    };
    EXPECT_EQ(plan_of({}).passes, 0u);
    EXPECT_EQ(plan_of({5, 5, 5}).passes, 0u);
    const RadixPlan one = plan_of({100, 100 + 65'535});
    EXPECT_EQ(one.min, 100);
    EXPECT_EQ(one.passes, 1u);
    EXPECT_EQ(one.digit_bits, 16u);
    const RadixPlan two = plan_of({0, 65'536});  // 17 bits: two passes of 9
    EXPECT_EQ(two.passes, 2u);
    EXPECT_EQ(two.digit_bits, 9u);
    const RadixPlan widest = plan_of({kMin, kMax});
    EXPECT_EQ(widest.min, kMin);
    EXPECT_EQ(widest.passes, 4u);
    EXPECT_EQ(widest.digit_bits, 16u);
}

// A staged quad: the order sort_spo sorts by is (s, p, o, g, src).
struct Staged {
    std::int64_t s, p, o, g, src;
    bool operator==(const Staged&) const = default;
};

bool spo_less(const Staged& a, const Staged& b) {
    return std::tie(a.s, a.p, a.o, a.g, a.src) < std::tie(b.s, b.p, b.o, b.g, b.src);
}

// Quads with ids below `id_range` (few distinct values: many duplicates and ties).
std::vector<Staged> random_quads(std::mt19937_64& rng, std::size_t n, std::int64_t id_range,
                                 std::int64_t base = 1) {
    std::vector<Staged> quads;
    const auto id = [&] { return base + static_cast<std::int64_t>(rng() % id_range); };
    for (std::size_t i = 0; i < n; ++i) {
        quads.push_back({id(), id(), id(), static_cast<std::int64_t>(rng() % 3),
                         static_cast<std::int64_t>(1 + rng() % 4)});
    }
    return quads;
}

TEST(QuadSortTest, SortSpoEqualsAComparisonSort) {
    std::mt19937_64 rng(11);
    std::vector<std::vector<Staged>> inputs{
        {},
        random_quads(rng, 1, 10),
        random_quads(rng, 4'000, 5),                    // duplicates everywhere
        random_quads(rng, 4'000, 200'000),              // two passes by subject
        random_quads(rng, 4'000, 1'000, kMax - 2'000),  // ids near the top of int64
        random_quads(rng, 4'000, 3, 1)};                // few subjects, long runs
    auto in_subject_order = random_quads(rng, 4'000, 500);
    std::sort(in_subject_order.begin(), in_subject_order.end(),
              [](const Staged& a, const Staged& b) { return a.s < b.s; });  // no radix pass
    inputs.push_back(in_subject_order);
    for (auto& quads : inputs) {
        auto expected = quads;
        std::sort(expected.begin(), expected.end(), spo_less);
        sort_spo(quads);
        EXPECT_EQ(quads, expected);
    }
}

TEST(QuadSortTest, PosAndOspOfQuadsInSpoOrderEqualComparisonSorts) {
    std::mt19937_64 rng(13);
    // Predicates within one pass and spanning several (the comparison-sort fallback), objects
    // in one pass and in two, all equal, and an empty set.
    for (const auto& [n, p_range, o_range] :
         std::vector<std::tuple<std::size_t, std::int64_t, std::int64_t>>{
             {0, 1, 1},
             {1, 1, 1},
             {3'000, 1, 1},
             {3'000, 40, 50},
             {3'000, 40, 1'000'000},
             {3'000, 1'000'000, 60},
             {3'000, 1'000'000, 1'000'000}}) {
        SCOPED_TRACE(std::to_string(n) + " quads, p range " + std::to_string(p_range) +
                     ", o range " + std::to_string(o_range));
        std::vector<detail::Quad> quads;
        for (std::size_t i = 0; i < n; ++i) {
            quads.push_back(
                {static_cast<std::int64_t>(rng() % 700), static_cast<std::int64_t>(rng() % p_range),
                 static_cast<std::int64_t>(rng() % o_range), static_cast<std::int64_t>(rng() % 2)});
        }
        std::sort(quads.begin(), quads.end());  // SPO order, with duplicates kept
        auto pos = quads;
        std::sort(pos.begin(), pos.end(), [](const detail::Quad& a, const detail::Quad& b) {
            return std::tie(a.p, a.o, a.s, a.g) < std::tie(b.p, b.o, b.s, b.g);
        });
        auto osp = quads;
        std::sort(osp.begin(), osp.end(), [](const detail::Quad& a, const detail::Quad& b) {
            return std::tie(a.o, a.s, a.p, a.g) < std::tie(b.o, b.s, b.p, b.g);
        });
        const SortedOrders sorted = sort_pos_and_osp(QuadRows(quads.begin(), quads.end()));
        EXPECT_EQ(std::vector<detail::Quad>(sorted.pos.begin(), sorted.pos.end()), pos);
        EXPECT_EQ(std::vector<detail::Quad>(sorted.osp.begin(), sorted.osp.end()), osp);
    }
}

// The commit's buffers: past detail::kBulkMappingBytes a vector lives in its own mapping; it
// grows, copies and sorts as any other (the sort's scratch of the same size comes from there too).
TEST(QuadSortTest, SortSpoInBulkMemoryEqualsAComparisonSort) {
    std::mt19937_64 rng(17);
    const std::size_t n = detail::kBulkMappingBytes / sizeof(Staged) + 1'000;
    auto quads = random_quads(rng, n, 300'000);
    BulkVector<Staged> bulk;
    for (const auto& q : quads) bulk.push_back(q);  // grows through small and mapped buffers
    ASSERT_GE(bulk.capacity() * sizeof(Staged), detail::kBulkMappingBytes);
    std::sort(quads.begin(), quads.end(), spo_less);
    sort_spo(bulk);
    EXPECT_TRUE(std::equal(bulk.begin(), bulk.end(), quads.begin(), quads.end()));
    BulkVector<Staged> copy = bulk;
    copy.resize(copy.size() + 10);  // left unwritten: only the first rows are compared
    EXPECT_TRUE(std::equal(bulk.begin(), bulk.end(), copy.begin()));
}

}  // namespace
}  // namespace glassbox::store
