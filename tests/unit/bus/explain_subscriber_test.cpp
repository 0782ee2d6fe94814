// The explain topic subscriber: frame checks, topic filtering over a real PUB socket.
#include "bus/explain_subscriber.hpp"

#include <thread>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "bus/detail/frame_io.hpp"

namespace glassbox::bus {
namespace {

using namespace std::chrono_literals;

TEST(DecodeExplainEventTest, DecodesAWellFormedMessage) {
    auto event = decode_explain_event({"explain.echo", "urn:s", "3", "complete", R"({"seq":3})"});
    ASSERT_TRUE(event);
    EXPECT_EQ(event->topic, "explain.echo");
    EXPECT_EQ(event->service, "echo");
    EXPECT_EQ(event->session, "urn:s");
    EXPECT_EQ(event->seq, 3u);
    EXPECT_EQ(event->state, "complete");
    EXPECT_EQ(event->body["seq"], 3);
}

TEST(DecodeExplainEventTest, RejectsMalformedMessages) {
    const std::vector<Frames> bad = {
        {"explain.echo", "urn:s", "3", "open"},
        {"other.echo", "urn:s", "3", "open", "{}"},
        {"explain.echo", "urn:s", "-3", "open", "{}"},
        {"explain.echo", "urn:s", "3", "closed", "{}"},
        {"explain.echo", "urn:s", "3", "open", "{bad"},
        {"explain.echo", "urn:s", "3", "open", "[]"},
    };
    for (const auto& frames : bad)
        EXPECT_FALSE(decode_explain_event(frames)) << frames[0] << " " << frames[2];
}

TEST(ExplainSubscriberTest, ReceivesOnlyItsTopic) {
    zmq::context_t context{1};
    zmq::socket_t pub(context, zmq::socket_type::pub);
    set_socket_limits(pub, 0ms, 1000, 1000);
    pub.bind("inproc://explain-topic-test");
    ExplainSubscriber subscriber(
        context, {"inproc://explain-topic-test", "explain.echo", 0ms, 1000, std::nullopt});
    // PUB/SUB joins late: publish until the first message gets through, bounded.
    std::optional<ExplainEvent> first;
    const auto until = std::chrono::steady_clock::now() + 3s;
    while (!first && std::chrono::steady_clock::now() < until) {
        send_frames(pub, {"explain.graph-rag", "urn:g", "0", "open", "{}"});
        send_frames(pub, {"explain.echo", "urn:e", "0", "open", "{}"});
        if (auto event = subscriber.next(20ms)) first = std::move(event).value();
    }
    ASSERT_TRUE(first);
    EXPECT_EQ(first->service, "echo");
    send_frames(pub, {"explain.echo", "urn:e", "bad", "open", "{}"});     // skipped
    send_frames(pub, {"explain.graph-rag", "urn:g", "1", "open", "{}"});  // filtered
    send_frames(pub, {"explain.echo", "urn:e", "1", "complete", "{}"});
    for (;;) {
        auto event = subscriber.next(1s);
        ASSERT_TRUE(event);
        EXPECT_EQ(event->service, "echo");
        if (event->seq == 1) {
            EXPECT_EQ(event->state, "complete");
            break;
        }
    }
    auto none = subscriber.next(50ms);
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().type, base::ErrorType::kTimeout);
}

}  // namespace
}  // namespace glassbox::bus
