// ServiceQueue: order, bound, both overflow policies, and turns between clients.
#include "broker/service_queue.hpp"

#include <initializer_list>
#include <utility>

#include <gtest/gtest.h>

namespace glassbox::broker {
namespace {

// Queues ids first..last of one client; true if every one was accepted.
bool queue_range(ServiceQueue& queue, std::uint64_t first, std::uint64_t last, const char* client) {
    bool accepted = true;
    for (std::uint64_t id = first; id <= last; ++id) {
        accepted = queue.push_back(id, client).accepted && accepted;
    }
    return accepted;
}

// The ids pop_front gives next, in order.
void expect_pops(ServiceQueue& queue, std::initializer_list<std::uint64_t> ids) {
    for (const auto id : ids) EXPECT_EQ(queue.pop_front(), id);
}

// Queues each (id, client) in order; true if every one was accepted.
bool queue_all(ServiceQueue& queue,
               std::initializer_list<std::pair<std::uint64_t, const char*>> requests) {
    bool accepted = true;
    for (const auto& [id, client] : requests)
        accepted = queue.push_back(id, client).accepted && accepted;
    return accepted;
}

TEST(ServiceQueue, KeepsArrivalOrder) {
    ServiceQueue queue{10, OverflowPolicy::kReject};
    EXPECT_TRUE(queue_range(queue, 1, 3, "a"));
    EXPECT_EQ(queue.size(), 3u);
    expect_pops(queue, {1, 2, 3});
    EXPECT_EQ(queue.pop_front(), std::nullopt);
    EXPECT_TRUE(queue.empty());
}

TEST(ServiceQueue, RejectPolicyRefusesTheNewRequest) {
    ServiceQueue queue{2, OverflowPolicy::kReject};
    EXPECT_TRUE(queue_all(queue, {{1, "a"}, {2, "a"}}));
    const auto outcome = queue.push_back(3, "a");
    EXPECT_FALSE(outcome.accepted);
    EXPECT_FALSE(outcome.evicted.has_value());
    EXPECT_EQ(queue.size(), 2u);
    EXPECT_FALSE(queue.contains(3));
    EXPECT_EQ(queue.pop_front(), 1u);
}

TEST(ServiceQueue, DropOldestPolicyEvictsTheFront) {
    ServiceQueue queue{2, OverflowPolicy::kDropOldest};
    EXPECT_TRUE(queue_all(queue, {{1, "a"}, {2, "a"}}));
    const auto outcome = queue.push_back(3, "a");
    EXPECT_TRUE(outcome.accepted);
    ASSERT_TRUE(outcome.evicted.has_value());
    EXPECT_EQ(*outcome.evicted, 1u);
    EXPECT_EQ(queue.size(), 2u);
    expect_pops(queue, {2, 3});
}

TEST(ServiceQueue, ZeroBoundRejectsEverythingUnderBothPolicies) {
    ServiceQueue reject{0, OverflowPolicy::kReject};
    EXPECT_FALSE(reject.push_back(1, "a").accepted);
    ServiceQueue drop{0, OverflowPolicy::kDropOldest};
    EXPECT_FALSE(drop.push_back(1, "a").accepted);
}

TEST(ServiceQueue, PushFrontIgnoresTheBoundForRetries) {
    ServiceQueue queue{1, OverflowPolicy::kReject};
    EXPECT_TRUE(queue.push_back(1, "a").accepted);
    queue.push_front(7, "a");
    EXPECT_EQ(queue.size(), 2u);
    expect_pops(queue, {7, 1});
}

TEST(ServiceQueue, RemoveFromTheMiddle) {
    ServiceQueue queue{10, OverflowPolicy::kReject};
    ASSERT_TRUE(queue_range(queue, 1, 4, "a"));
    EXPECT_TRUE(queue.remove(2));
    EXPECT_FALSE(queue.remove(2));
    EXPECT_FALSE(queue.remove(99));
    EXPECT_EQ(queue.size(), 3u);
    expect_pops(queue, {1, 3, 4});
}

TEST(ServiceQueue, ServesClientsInTurn) {
    ServiceQueue queue{100, OverflowPolicy::kReject};
    ASSERT_TRUE(queue_range(queue, 1, 10, "flood"));
    ASSERT_TRUE(queue_all(queue, {{11, "single"}, {12, "other"}, {13, "other"}}));
    EXPECT_EQ(queue.clients(), 3u);
    EXPECT_EQ(queue.queued_by("flood"), 10u);
    // Turns in the order the clients first queued; each client oldest first.
    expect_pops(queue, {1, 11, 12, 2, 13});
    EXPECT_EQ(queue.clients(), 1u);
    for (std::uint64_t id = 3; id <= 10; ++id) EXPECT_EQ(queue.pop_front(), id);
    EXPECT_TRUE(queue.empty());
    EXPECT_EQ(queue.clients(), 0u);
}

TEST(ServiceQueue, ALateClientWaitsForOneTurnOfTheFlood) {
    ServiceQueue queue{2000, OverflowPolicy::kReject};
    ASSERT_TRUE(queue_range(queue, 1, 1000, "flood"));
    EXPECT_EQ(queue.pop_front(), 1u);  // the flood is being served when the late one comes
    ASSERT_TRUE(queue.push_back(5000, "late").accepted);
    expect_pops(queue, {2, 5000});
}

TEST(ServiceQueue, BoundCountsAllClientsTogether) {
    ServiceQueue queue{3, OverflowPolicy::kReject};
    EXPECT_TRUE(queue_all(queue, {{1, "a"}, {2, "b"}, {3, "c"}}));
    EXPECT_FALSE(queue.push_back(4, "d").accepted);
    EXPECT_EQ(queue.size(), 3u);
    EXPECT_EQ(queue.queued_by("d"), 0u);
}

TEST(ServiceQueue, DropOldestEvictsTheOldestOfTheDeepestClient) {
    ServiceQueue queue{5, OverflowPolicy::kDropOldest};
    ASSERT_TRUE(queue.push_back(1, "quiet").accepted);  // the oldest overall, but quiet's only
    ASSERT_TRUE(queue_range(queue, 2, 5, "flood"));
    const auto outcome = queue.push_back(6, "quiet");
    EXPECT_TRUE(outcome.accepted);
    ASSERT_TRUE(outcome.evicted.has_value());
    EXPECT_EQ(*outcome.evicted, 2u);
    EXPECT_FALSE(queue.contains(2));
    EXPECT_TRUE(queue.contains(1));
    EXPECT_EQ(queue.size(), 5u);
    EXPECT_EQ(queue.queued_by("flood"), 3u);
    EXPECT_EQ(queue.queued_by("quiet"), 2u);
}

TEST(ServiceQueue, DropOldestBreaksDepthTiesByTheOldestRequest) {
    ServiceQueue queue{4, OverflowPolicy::kDropOldest};
    ASSERT_TRUE(queue_all(queue, {{1, "a"}, {2, "b"}, {3, "b"}, {4, "a"}}));
    const auto outcome = queue.push_back(5, "c");
    ASSERT_TRUE(outcome.evicted.has_value());
    EXPECT_EQ(*outcome.evicted, 1u);
}

TEST(ServiceQueue, ARetryIsServedNextAndKeepsItsClientsTurn) {
    ServiceQueue queue{10, OverflowPolicy::kReject};
    ASSERT_TRUE(queue_all(queue, {{1, "a"}, {2, "b"}}));
    queue.push_front(9, "b");
    EXPECT_EQ(queue.queued_by("b"), 2u);
    expect_pops(queue, {9, 1, 2});
}

TEST(ServiceQueue, RemovingAClientsLastRequestEndsItsTurns) {
    ServiceQueue queue{10, OverflowPolicy::kReject};
    ASSERT_TRUE(queue_all(queue, {{1, "a"}, {2, "b"}, {3, "a"}}));
    EXPECT_TRUE(queue.remove(2));
    EXPECT_EQ(queue.clients(), 1u);
    expect_pops(queue, {1, 3});
    EXPECT_EQ(queue.pop_front(), std::nullopt);
}

TEST(ServiceQueue, DeepestListsTheClientsWithTheMostQueued) {
    ServiceQueue queue{100, OverflowPolicy::kReject};
    std::uint64_t id = 1;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(queue.push_back(id++, "three").accepted);
    for (int i = 0; i < 7; ++i) ASSERT_TRUE(queue.push_back(id++, "seven").accepted);
    ASSERT_TRUE(queue.push_back(id++, "one").accepted);
    const auto top = queue.deepest(2);
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(top[0].client, "seven");
    EXPECT_EQ(top[0].queued, 7u);
    EXPECT_EQ(top[1].client, "three");
    EXPECT_EQ(top[1].queued, 3u);
    EXPECT_EQ(queue.deepest(10).size(), 3u);
    // Depths follow pops: the turn order is three, seven, one.
    for (int i = 0; i < 3; ++i) queue.pop_front();
    const auto after = queue.deepest(1);
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0].client, "seven");
    EXPECT_EQ(after[0].queued, 6u);
}

TEST(ServiceQueue, PolicyNamesRoundTrip) {
    EXPECT_EQ(to_string(OverflowPolicy::kReject), "reject");
    EXPECT_EQ(to_string(OverflowPolicy::kDropOldest), "drop-oldest");
    EXPECT_EQ(overflow_policy_from_string("drop-oldest"), OverflowPolicy::kDropOldest);
    EXPECT_EQ(overflow_policy_from_string("reject"), OverflowPolicy::kReject);
    EXPECT_EQ(overflow_policy_from_string("block"), std::nullopt);
    EXPECT_EQ(to_string(SpoolPolicy::kFailRequest), "fail-request");
    EXPECT_EQ(to_string(SpoolPolicy::kDropNewest), "drop-newest");
    EXPECT_EQ(spool_policy_from_string("drop-newest"), SpoolPolicy::kDropNewest);
    EXPECT_EQ(spool_policy_from_string("fail-request"), SpoolPolicy::kFailRequest);
    EXPECT_EQ(spool_policy_from_string("spill"), std::nullopt);
}

}  // namespace
}  // namespace glassbox::broker
