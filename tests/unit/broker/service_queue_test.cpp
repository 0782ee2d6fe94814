// ServiceQueue: order, bound, and both overflow policies.
#include "broker/service_queue.hpp"

#include <gtest/gtest.h>

namespace glassbox::broker {
namespace {

TEST(ServiceQueue, KeepsArrivalOrder) {
    ServiceQueue queue{10, OverflowPolicy::kReject};
    for (std::uint64_t id = 1; id <= 3; ++id) EXPECT_TRUE(queue.push_back(id).accepted);
    EXPECT_EQ(queue.size(), 3u);
    EXPECT_EQ(queue.pop_front(), 1u);
    EXPECT_EQ(queue.pop_front(), 2u);
    EXPECT_EQ(queue.pop_front(), 3u);
    EXPECT_EQ(queue.pop_front(), std::nullopt);
    EXPECT_TRUE(queue.empty());
}

TEST(ServiceQueue, RejectPolicyRefusesTheNewRequest) {
    ServiceQueue queue{2, OverflowPolicy::kReject};
    EXPECT_TRUE(queue.push_back(1).accepted);
    EXPECT_TRUE(queue.push_back(2).accepted);
    const auto outcome = queue.push_back(3);
    EXPECT_FALSE(outcome.accepted);
    EXPECT_FALSE(outcome.evicted.has_value());
    EXPECT_EQ(queue.size(), 2u);
    EXPECT_FALSE(queue.contains(3));
    EXPECT_EQ(queue.pop_front(), 1u);
}

TEST(ServiceQueue, DropOldestPolicyEvictsTheFront) {
    ServiceQueue queue{2, OverflowPolicy::kDropOldest};
    EXPECT_TRUE(queue.push_back(1).accepted);
    EXPECT_TRUE(queue.push_back(2).accepted);
    const auto outcome = queue.push_back(3);
    EXPECT_TRUE(outcome.accepted);
    ASSERT_TRUE(outcome.evicted.has_value());
    EXPECT_EQ(*outcome.evicted, 1u);
    EXPECT_EQ(queue.size(), 2u);
    EXPECT_EQ(queue.pop_front(), 2u);
    EXPECT_EQ(queue.pop_front(), 3u);
}

TEST(ServiceQueue, ZeroBoundRejectsEverythingUnderBothPolicies) {
    ServiceQueue reject{0, OverflowPolicy::kReject};
    EXPECT_FALSE(reject.push_back(1).accepted);
    ServiceQueue drop{0, OverflowPolicy::kDropOldest};
    EXPECT_FALSE(drop.push_back(1).accepted);
}

TEST(ServiceQueue, PushFrontIgnoresTheBoundForRetries) {
    ServiceQueue queue{1, OverflowPolicy::kReject};
    EXPECT_TRUE(queue.push_back(1).accepted);
    queue.push_front(7);
    EXPECT_EQ(queue.size(), 2u);
    EXPECT_EQ(queue.pop_front(), 7u);
    EXPECT_EQ(queue.pop_front(), 1u);
}

TEST(ServiceQueue, RemoveFromTheMiddle) {
    ServiceQueue queue{10, OverflowPolicy::kReject};
    for (std::uint64_t id = 1; id <= 4; ++id) ASSERT_TRUE(queue.push_back(id).accepted);
    EXPECT_TRUE(queue.remove(2));
    EXPECT_FALSE(queue.remove(2));
    EXPECT_FALSE(queue.remove(99));
    EXPECT_EQ(queue.size(), 3u);
    EXPECT_EQ(queue.pop_front(), 1u);
    EXPECT_EQ(queue.pop_front(), 3u);
    EXPECT_EQ(queue.pop_front(), 4u);
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
