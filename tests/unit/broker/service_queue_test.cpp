// ServiceQueue: order, bound, both overflow policies, and turns between clients.
#include "broker/service_queue.hpp"

#include <gtest/gtest.h>

namespace glassbox::broker {
namespace {

TEST(ServiceQueue, KeepsArrivalOrder) {
    ServiceQueue queue{10, OverflowPolicy::kReject};
    for (std::uint64_t id = 1; id <= 3; ++id) EXPECT_TRUE(queue.push_back(id, "a").accepted);
    EXPECT_EQ(queue.size(), 3u);
    EXPECT_EQ(queue.pop_front(), 1u);
    EXPECT_EQ(queue.pop_front(), 2u);
    EXPECT_EQ(queue.pop_front(), 3u);
    EXPECT_EQ(queue.pop_front(), std::nullopt);
    EXPECT_TRUE(queue.empty());
}

TEST(ServiceQueue, RejectPolicyRefusesTheNewRequest) {
    ServiceQueue queue{2, OverflowPolicy::kReject};
    EXPECT_TRUE(queue.push_back(1, "a").accepted);
    EXPECT_TRUE(queue.push_back(2, "a").accepted);
    const auto outcome = queue.push_back(3, "a");
    EXPECT_FALSE(outcome.accepted);
    EXPECT_FALSE(outcome.evicted.has_value());
    EXPECT_EQ(queue.size(), 2u);
    EXPECT_FALSE(queue.contains(3));
    EXPECT_EQ(queue.pop_front(), 1u);
}

TEST(ServiceQueue, DropOldestPolicyEvictsTheFront) {
    ServiceQueue queue{2, OverflowPolicy::kDropOldest};
    EXPECT_TRUE(queue.push_back(1, "a").accepted);
    EXPECT_TRUE(queue.push_back(2, "a").accepted);
    const auto outcome = queue.push_back(3, "a");
    EXPECT_TRUE(outcome.accepted);
    ASSERT_TRUE(outcome.evicted.has_value());
    EXPECT_EQ(*outcome.evicted, 1u);
    EXPECT_EQ(queue.size(), 2u);
    EXPECT_EQ(queue.pop_front(), 2u);
    EXPECT_EQ(queue.pop_front(), 3u);
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
    EXPECT_EQ(queue.pop_front(), 7u);
    EXPECT_EQ(queue.pop_front(), 1u);
}

TEST(ServiceQueue, RemoveFromTheMiddle) {
    ServiceQueue queue{10, OverflowPolicy::kReject};
    for (std::uint64_t id = 1; id <= 4; ++id) ASSERT_TRUE(queue.push_back(id, "a").accepted);
    EXPECT_TRUE(queue.remove(2));
    EXPECT_FALSE(queue.remove(2));
    EXPECT_FALSE(queue.remove(99));
    EXPECT_EQ(queue.size(), 3u);
    EXPECT_EQ(queue.pop_front(), 1u);
    EXPECT_EQ(queue.pop_front(), 3u);
    EXPECT_EQ(queue.pop_front(), 4u);
}

TEST(ServiceQueue, ServesClientsInTurn) {
    ServiceQueue queue{100, OverflowPolicy::kReject};
    for (std::uint64_t id = 1; id <= 10; ++id) ASSERT_TRUE(queue.push_back(id, "flood").accepted);
    ASSERT_TRUE(queue.push_back(11, "single").accepted);
    ASSERT_TRUE(queue.push_back(12, "other").accepted);
    ASSERT_TRUE(queue.push_back(13, "other").accepted);
    EXPECT_EQ(queue.clients(), 3u);
    EXPECT_EQ(queue.queued_by("flood"), 10u);
    // Turns in the order the clients first queued; each client oldest first.
    EXPECT_EQ(queue.pop_front(), 1u);
    EXPECT_EQ(queue.pop_front(), 11u);
    EXPECT_EQ(queue.pop_front(), 12u);
    EXPECT_EQ(queue.pop_front(), 2u);
    EXPECT_EQ(queue.pop_front(), 13u);
    EXPECT_EQ(queue.clients(), 1u);
    for (std::uint64_t id = 3; id <= 10; ++id) EXPECT_EQ(queue.pop_front(), id);
    EXPECT_TRUE(queue.empty());
    EXPECT_EQ(queue.clients(), 0u);
}

TEST(ServiceQueue, ALateClientWaitsForOneTurnOfTheFlood) {
    ServiceQueue queue{2000, OverflowPolicy::kReject};
    for (std::uint64_t id = 1; id <= 1000; ++id) ASSERT_TRUE(queue.push_back(id, "flood").accepted);
    EXPECT_EQ(queue.pop_front(), 1u);  // the flood is being served when the late one comes
    ASSERT_TRUE(queue.push_back(5000, "late").accepted);
    EXPECT_EQ(queue.pop_front(), 2u);
    EXPECT_EQ(queue.pop_front(), 5000u);
}

TEST(ServiceQueue, BoundCountsAllClientsTogether) {
    ServiceQueue queue{3, OverflowPolicy::kReject};
    EXPECT_TRUE(queue.push_back(1, "a").accepted);
    EXPECT_TRUE(queue.push_back(2, "b").accepted);
    EXPECT_TRUE(queue.push_back(3, "c").accepted);
    EXPECT_FALSE(queue.push_back(4, "d").accepted);
    EXPECT_EQ(queue.size(), 3u);
    EXPECT_EQ(queue.queued_by("d"), 0u);
}

TEST(ServiceQueue, DropOldestEvictsTheOldestOfTheDeepestClient) {
    ServiceQueue queue{5, OverflowPolicy::kDropOldest};
    ASSERT_TRUE(queue.push_back(1, "quiet").accepted);  // the oldest overall, but quiet's only
    for (std::uint64_t id = 2; id <= 5; ++id) ASSERT_TRUE(queue.push_back(id, "flood").accepted);
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
    ASSERT_TRUE(queue.push_back(1, "a").accepted);
    ASSERT_TRUE(queue.push_back(2, "b").accepted);
    ASSERT_TRUE(queue.push_back(3, "b").accepted);
    ASSERT_TRUE(queue.push_back(4, "a").accepted);
    const auto outcome = queue.push_back(5, "c");
    ASSERT_TRUE(outcome.evicted.has_value());
    EXPECT_EQ(*outcome.evicted, 1u);
}

TEST(ServiceQueue, ARetryIsServedNextAndKeepsItsClientsTurn) {
    ServiceQueue queue{10, OverflowPolicy::kReject};
    ASSERT_TRUE(queue.push_back(1, "a").accepted);
    ASSERT_TRUE(queue.push_back(2, "b").accepted);
    queue.push_front(9, "b");
    EXPECT_EQ(queue.queued_by("b"), 2u);
    EXPECT_EQ(queue.pop_front(), 9u);
    EXPECT_EQ(queue.pop_front(), 1u);
    EXPECT_EQ(queue.pop_front(), 2u);
}

TEST(ServiceQueue, RemovingAClientsLastRequestEndsItsTurns) {
    ServiceQueue queue{10, OverflowPolicy::kReject};
    ASSERT_TRUE(queue.push_back(1, "a").accepted);
    ASSERT_TRUE(queue.push_back(2, "b").accepted);
    ASSERT_TRUE(queue.push_back(3, "a").accepted);
    EXPECT_TRUE(queue.remove(2));
    EXPECT_EQ(queue.clients(), 1u);
    EXPECT_EQ(queue.pop_front(), 1u);
    EXPECT_EQ(queue.pop_front(), 3u);
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
