// Sorting a staged commit's quads into the SPO, POS and OSP key orders: a stable LSD radix sort
// by one int64 key (a few linear passes over a million quads instead of a comparison sort).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "workers/store/bulk_allocator.hpp"
#include "workers/store/term_dictionary.hpp"

namespace glassbox::store {

// The passes a radix sort by a key takes over some rows: the key minus its minimum, split into
// `passes` digits of `digit_bits` bits each (lowest digit first). No pass: all keys are equal.
struct RadixPlan {
    std::int64_t min = 0;
    unsigned passes = 0;
    unsigned digit_bits = 0;
};

// At most 2^16 buckets a pass: the counts stay in the L2 cache, and term ids below 65,536 apart
// (e.g. a load's predicates) take one pass.
inline constexpr unsigned kMaxRadixDigitBits = 16;

template <class T, class Key>
RadixPlan radix_plan(std::span<const T> rows, Key key) {
    if (rows.empty()) return {};
    std::int64_t lo = key(rows[0]);
    std::int64_t hi = lo;
    for (const T& row : rows) {
        const std::int64_t k = key(row);
        lo = std::min(lo, k);
        hi = std::max(hi, k);
    }
    // The range as unsigned: hi - lo can exceed INT64_MAX.
    const auto range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    const auto bits = static_cast<unsigned>(std::bit_width(range));
    if (bits == 0) return {lo, 0, 0};
    const unsigned passes = (bits + kMaxRadixDigitBits - 1) / kMaxRadixDigitBits;
    return {lo, passes, (bits + passes - 1) / passes};
}

// One stable counting pass: `to` gets `from` ordered by digit `pass` of the plan (the order of
// `from` kept among equal digits). `to` has from.size() rows.
template <class T, class Key>
void radix_pass(std::span<const T> from, std::span<T> to, Key key, const RadixPlan& plan,
                unsigned pass) {
    const unsigned shift = pass * plan.digit_bits;
    const std::uint64_t mask = (std::uint64_t{1} << plan.digit_bits) - 1;
    const auto digit = [&](const T& row) {
        const auto offset =
            static_cast<std::uint64_t>(key(row)) - static_cast<std::uint64_t>(plan.min);
        return static_cast<std::size_t>((offset >> shift) & mask);
    };
    std::vector<std::size_t> start(std::size_t{1} << plan.digit_bits, 0);
    for (const T& row : from) ++start[digit(row)];
    std::size_t at = 0;
    for (std::size_t& bucket : start) at += std::exchange(bucket, at);
    for (const T& row : from) to[start[digit(row)]++] = row;
}

// Sorts `rows` stably by key, `scratch` serving as the other buffer of the passes; returns the
// one that holds the result (rows or scratch, whichever the last pass wrote). `scratch` is
// resized to rows.size() when a pass is needed.
template <class T, class Allocator, class Key>
std::vector<T, Allocator>& stable_radix_sort(std::vector<T, Allocator>& rows,
                                             std::vector<T, Allocator>& scratch, Key key) {
    const RadixPlan plan = radix_plan(std::span<const T>(rows), key);
    if (plan.passes == 0) return rows;
    scratch.resize(rows.size());
    std::array<std::vector<T, Allocator>*, 2> buffers{&rows, &scratch};
    for (unsigned pass = 0; pass < plan.passes; ++pass) {
        radix_pass(std::span<const T>(*buffers[pass % 2]), std::span<T>(*buffers[(pass + 1) % 2]),
                   key, plan, pass);
    }
    return *buffers[plan.passes % 2];
}

// Sorts `rows` (quads with a source: members s, p, o, g, src) by (s, p, o, g, src): stably by
// subject in a few linear passes (none when they already come in subject order), then the quads
// of each subject (a handful, most often) by the rest.
template <class Row, class Allocator>
void sort_spo(std::vector<Row, Allocator>& rows) {
    const auto by_s = [](const Row& q) { return q.s; };
    if (!std::is_sorted(rows.begin(), rows.end(),
                        [](const Row& a, const Row& b) { return a.s < b.s; })) {
        std::vector<Row, Allocator> scratch;
        if (&stable_radix_sort(rows, scratch, by_s) != &rows) rows.swap(scratch);
    }
    const auto rest_less = [](const Row& a, const Row& b) {
        return std::tie(a.p, a.o, a.g, a.src) < std::tie(b.p, b.o, b.g, b.src);
    };
    for (auto run = rows.begin(); run != rows.end();) {
        const auto end =
            std::find_if(run + 1, rows.end(), [s = run->s](const Row& q) { return q.s != s; });
        std::sort(run, end, rest_less);
        run = end;
    }
}

// Quads in one key order, in bulk memory (a commit's orders are tens of MB).
using QuadRows = BulkVector<detail::Quad>;

// Quads sorted into POS and OSP key order.
struct SortedOrders {
    QuadRows pos;
    QuadRows osp;
};

// `rows` must be in SPO order (s, p, o, g). A stable sort by o keeps (s, p, g) among equal
// objects: OSP order. A stable sort of that by p keeps (o, s, g) among equal predicates: POS
// order. So each order is a radix sort by one key. Two buffers of rows.size() quads at most:
// when predicate ids span more than one pass (2^16), POS is a comparison sort of a copy of OSP.
inline SortedOrders sort_pos_and_osp(QuadRows rows) {
    QuadRows other;
    auto& osp = stable_radix_sort(rows, other, [](const detail::Quad& q) { return q.o; });
    auto& pos = &osp == &rows ? other : rows;
    const auto by_p = [](const detail::Quad& q) { return q.p; };
    const RadixPlan plan = radix_plan(std::span<const detail::Quad>(osp), by_p);
    if (plan.passes == 1) {
        pos.resize(osp.size());
        radix_pass(std::span<const detail::Quad>(osp), std::span<detail::Quad>(pos), by_p, plan, 0);
    } else {
        pos.assign(osp.begin(), osp.end());
        if (plan.passes > 1) {
            std::sort(pos.begin(), pos.end(), [](const detail::Quad& a, const detail::Quad& b) {
                return std::tie(a.p, a.o, a.s, a.g) < std::tie(b.p, b.o, b.s, b.g);
            });
        }
    }
    return SortedOrders{std::move(pos), std::move(osp)};
}

}  // namespace glassbox::store
