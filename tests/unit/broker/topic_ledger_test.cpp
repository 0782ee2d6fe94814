// TopicLedger: subscriptions counted per subscriber and in total, the bounds, and the tie of a
// ZAP name to its connection's fd through the monitor's events (fd reuse, concurrent connects).
#include "broker/topic_ledger.hpp"

#include <initializer_list>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace glassbox::broker {
namespace {

using Verdict = TopicLedger::Verdict;

TopicLimits limits(std::size_t per, std::size_t per_bytes, std::size_t total,
                   std::size_t total_bytes) {
    return TopicLimits{per, per_bytes, total, total_bytes};
}

// The verdicts of the subscriber's subscriptions to each topic, in order.
void expect_verdicts(TopicLedger& ledger, const std::string& name, int fd,
                     std::initializer_list<std::pair<const char*, Verdict>> expected) {
    for (const auto& [topic, verdict] : expected) {
        EXPECT_EQ(ledger.subscribe(name, fd, topic).verdict, verdict) << topic;
    }
}

// A subscription that passed `bound`: its subscriber is to be cut.
void expect_over(const TopicLedger::Outcome& outcome, TopicBound bound) {
    EXPECT_EQ(outcome.verdict, Verdict::kOverLimit);
    EXPECT_EQ(outcome.bound, bound);
}

// A connection accepted on `fd` and named by the ZAP handler right after.
std::string connect(TopicLedger& ledger, int fd) {
    ledger.accepted(fd);
    return ledger.admit();
}

TEST(TopicLedger, CountsEachSubscriberUpToItsBoundThenDropsIt) {
    TopicLedger ledger{limits(3, 1000, 100, 10'000)};
    const auto name = connect(ledger, 11);
    for (const char* topic : {"explain.a", "explain.b", "explain.c"}) {
        EXPECT_EQ(ledger.subscribe(name, 11, topic).verdict, Verdict::kCounted) << topic;
    }
    EXPECT_EQ(ledger.subscriptions_of(name), 3u);
    expect_over(ledger.subscribe(name, 11, "explain.d"), TopicBound::kSubscriberCount);
    EXPECT_EQ(ledger.dropped(), 1u);
    // Once dropped, what follows is not counted (its connection is being cut).
    EXPECT_EQ(ledger.subscribe(name, 11, "explain.e").verdict, Verdict::kIgnored);
    EXPECT_EQ(ledger.subscriptions(), 3u);
    EXPECT_EQ(ledger.dropped(), 1u);
    EXPECT_TRUE(ledger.holds(name, 11));
}

TEST(TopicLedger, ARepeatedSubscriptionCountsOnceAndAnUnsubscribeFreesItsSlot) {
    TopicLedger ledger{limits(2, 1000, 100, 10'000)};
    const auto name = connect(ledger, 4);
    expect_verdicts(ledger, name, 4,
                    {{"explain.", Verdict::kCounted},
                     {"explain.", Verdict::kRepeated},
                     {"explain.echo", Verdict::kCounted}});
    EXPECT_EQ(ledger.subscriptions(), 2u);
    // An unsubscribe of something never held changes nothing; a real one frees a slot.
    ledger.unsubscribe(name, "explain.never");
    EXPECT_EQ(ledger.subscriptions(), 2u);
    ledger.unsubscribe(name, "explain.");
    EXPECT_EQ(ledger.subscriptions(), 1u);
    EXPECT_EQ(ledger.bytes(), std::string{"explain.echo"}.size());
    EXPECT_EQ(ledger.subscribe(name, 4, "explain.rag").verdict, Verdict::kCounted);
    EXPECT_EQ(ledger.dropped(), 0u);
}

TEST(TopicLedger, BoundsTheBytesOfOneSubscriber) {
    TopicLedger ledger{limits(100, 20, 1000, 10'000)};
    const auto name = connect(ledger, 9);
    EXPECT_EQ(ledger.subscribe(name, 9, std::string(12, 'a')).verdict, Verdict::kCounted);
    EXPECT_EQ(ledger.subscribe(name, 9, std::string(8, 'b')).verdict, Verdict::kCounted);
    expect_over(ledger.subscribe(name, 9, "c"), TopicBound::kSubscriberBytes);
}

TEST(TopicLedger, TheTotalBoundsCutTheSubscriberThatPassesThem) {
    TopicLedger ledger{limits(10, 1000, 4, 10'000)};
    const auto first = connect(ledger, 20);
    const auto second = connect(ledger, 21);
    for (const char* topic : {"a", "b", "c"}) {
        EXPECT_EQ(ledger.subscribe(first, 20, topic).verdict, Verdict::kCounted);
    }
    EXPECT_EQ(ledger.subscribe(second, 21, "a").verdict, Verdict::kCounted);
    expect_over(ledger.subscribe(second, 21, "b"), TopicBound::kTotalCount);
    EXPECT_EQ(ledger.subscribers(), 2u);

    TopicLedger by_bytes{limits(10, 1000, 100, 10)};
    const auto one = connect(by_bytes, 30);
    const auto two = connect(by_bytes, 31);
    EXPECT_EQ(by_bytes.subscribe(one, 30, "123456").verdict, Verdict::kCounted);
    expect_over(by_bytes.subscribe(two, 31, "12345"), TopicBound::kTotalBytes);
}

TEST(TopicLedger, AClosedConnectionTakesItsSubscriptionsAlong) {
    TopicLedger ledger{limits(2, 1000, 100, 10'000)};
    const auto name = connect(ledger, 5);
    expect_verdicts(
        ledger, name, 5,
        {{"x", Verdict::kCounted}, {"y", Verdict::kCounted}, {"z", Verdict::kOverLimit}});
    const auto departed = ledger.disconnected(5);
    ASSERT_TRUE(departed.has_value());
    EXPECT_EQ(departed->name, name);
    EXPECT_EQ(departed->subscriptions, 2u);
    EXPECT_TRUE(departed->dropped);
    EXPECT_EQ(ledger.subscribers(), 0u);
    EXPECT_EQ(ledger.subscriptions(), 0u);
    EXPECT_EQ(ledger.bytes(), 0u);
    EXPECT_EQ(ledger.dropped(), 1u);  // a counter: stays
    EXPECT_FALSE(ledger.holds(name, 5));
    // Its late messages (read after the close) are not counted against anyone.
    EXPECT_EQ(ledger.subscribe(name, 5, "w").verdict, Verdict::kIgnored);
    EXPECT_EQ(ledger.subscriptions(), 0u);
}

TEST(TopicLedger, ANameIsNeverTiedToTheConnectionThatReusedItsFd) {
    TopicLedger ledger{limits(10, 1000, 100, 10'000)};
    const auto gone = connect(ledger, 7);
    EXPECT_FALSE(ledger.disconnected(7).has_value());  // it never subscribed
    const auto reused = connect(ledger, 7);
    // `gone`'s messages may still be read after fd 7 went to another connection.
    EXPECT_EQ(ledger.subscribe(gone, 7, "explain.").verdict, Verdict::kIgnored);
    EXPECT_FALSE(ledger.holds(gone, 7));
    EXPECT_EQ(ledger.subscribe(reused, 7, "explain.").verdict, Verdict::kCounted);
    EXPECT_TRUE(ledger.holds(reused, 7));
    EXPECT_FALSE(ledger.holds(gone, 7));

    // Bound first, then the fd closed and reused: the old name no longer holds it.
    EXPECT_TRUE(ledger.disconnected(7).has_value());
    const auto third = connect(ledger, 7);
    EXPECT_FALSE(ledger.holds(reused, 7));
    EXPECT_EQ(ledger.subscribe(reused, 7, "explain.b").verdict, Verdict::kIgnored);
    EXPECT_EQ(ledger.subscribe(third, 7, "explain.b").verdict, Verdict::kCounted);
    EXPECT_EQ(ledger.subscriptions(), 1u);
}

TEST(TopicLedger, ConcurrentConnectsAreEachTiedToTheirOwnFd) {
    TopicLedger ledger{limits(10, 1000, 100, 10'000)};
    // Two connections accepted before either is named; named in either order.
    ledger.accepted(12);
    ledger.accepted(13);
    const auto a = ledger.admit();
    const auto b = ledger.admit();
    EXPECT_EQ(ledger.subscribe(b, 12, "x").verdict, Verdict::kCounted);
    EXPECT_EQ(ledger.subscribe(a, 13, "y").verdict, Verdict::kCounted);
    EXPECT_TRUE(ledger.holds(b, 12));
    EXPECT_TRUE(ledger.holds(a, 13));
    EXPECT_FALSE(ledger.holds(a, 12));
    // A second name on a connection already named is not that connection.
    EXPECT_EQ(ledger.subscribe(a, 12, "z").verdict, Verdict::kIgnored);
    EXPECT_EQ(ledger.subscriptions(), 2u);
}

TEST(TopicLedger, ANameGivenBeforeItsFdWasAcceptedIsNotTied) {
    TopicLedger ledger{limits(10, 1000, 100, 10'000)};
    const auto early = ledger.admit();
    ledger.accepted(8);
    EXPECT_EQ(ledger.subscribe(early, 8, "x").verdict, Verdict::kIgnored);
    EXPECT_FALSE(ledger.holds(early, 8));
}

TEST(TopicLedger, NamesItDidNotGiveAreUnnamed) {
    TopicLedger ledger{limits(10, 1000, 100, 10'000)};
    ledger.accepted(3);
    for (const char* name : {"alice", "", "sub-", "sub-1-", "sub-1-x", "sub-1-2x"}) {
        EXPECT_EQ(ledger.subscribe(name, 3, "x").verdict, Verdict::kUnnamed) << name;
    }
    EXPECT_EQ(ledger.subscriptions(), 0u);
    EXPECT_EQ(ledger.subscribers(), 0u);
}

}  // namespace
}  // namespace glassbox::broker
