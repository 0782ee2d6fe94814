// Multipart helpers: copies and moved (zero-copy) frames arrive intact, parts forward unchanged,
// a refused send frees what it took; waits name the readable sockets and wake for a message that
// arrives while they sleep.
#include "bus/detail/frame_io.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace glassbox::bus {
namespace {

using namespace std::chrono_literals;

class FrameIoTest : public ::testing::Test {
protected:
    FrameIoTest() {
        a.bind("inproc://frame-io-a");
        b.connect("inproc://frame-io-a");
        c.bind("inproc://frame-io-c");
        d.connect("inproc://frame-io-c");
    }
    zmq::context_t context{1};
    zmq::socket_t a{context, zmq::socket_type::pair};
    zmq::socket_t b{context, zmq::socket_type::pair};
    zmq::socket_t c{context, zmq::socket_type::pair};
    zmq::socket_t d{context, zmq::socket_type::pair};
};

std::string big(std::size_t size, char seed) {
    std::string s(size, ' ');
    for (std::size_t i = 0; i < size; ++i)
        s[i] = static_cast<char>(seed + static_cast<char>(i % 23));
    return s;
}

TEST(MessageOf, SmallFramesAreCopiedLargeOnesKeepTheirBuffer) {
    std::string small = "tok";
    auto m1 = message_of(std::move(small));
    EXPECT_EQ(m1.to_string(), "tok");

    std::string large = big(kZeroCopyFrame, 'a');
    const std::string expected = large;
    const char* buffer = large.data();
    auto m2 = message_of(std::move(large));
    EXPECT_EQ(m2.data<char>(), buffer);  // the message owns the moved string's buffer
    EXPECT_EQ(m2.to_string(), expected);
}

TEST_F(FrameIoTest, MovedFramesArriveInOrderAndIntact) {
    const Frames sent = {
        "", "E", big(200'000, 'a'), "x", big(kZeroCopyFrame - 1, 'b'), big(kZeroCopyFrame, 'c')};
    Frames moving = sent;
    ASSERT_TRUE(send_frames(a, std::move(moving), true));
    ASSERT_TRUE(wait_readable(b, 1000ms));
    auto got = try_receive_frames(b);
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, sent);
    EXPECT_FALSE(try_receive_frames(b));
}

TEST_F(FrameIoTest, ForwardedMessagesKeepEveryPart) {
    const Frames sent = {"K", big(50'000, 'd'), "", big(3, 'e')};
    ASSERT_TRUE(send_frames(a, sent, true));
    ASSERT_TRUE(wait_readable(b, 1000ms));
    auto parts = try_receive_messages(b);
    ASSERT_TRUE(parts);
    ASSERT_EQ(parts->size(), sent.size());
    EXPECT_EQ((*parts)[1].to_string(), sent[1]);
    // Forward all but the first part behind a new header, as the worker's I/O loop does.
    Messages out;
    out.push_back(message_of("header"));
    for (std::size_t i = 1; i < parts->size(); ++i) out.push_back(std::move((*parts)[i]));
    ASSERT_TRUE(send_messages(c, out, true));
    ASSERT_TRUE(wait_readable(d, 1000ms));
    auto got = try_receive_frames(d);
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, (Frames{"header", sent[1], sent[2], sent[3]}));
    EXPECT_FALSE(try_receive_messages(d));
}

TEST_F(FrameIoTest, ARefusedSendReportsFalseAndFreesTheFrames) {
    zmq::socket_t lonely(context, zmq::socket_type::dealer);  // no peer: a send would block
    set_socket_limits(lonely, 0ms, 1, 1);
    EXPECT_FALSE(send_frames(lonely, Frames{"", big(100'000, 'f')}));  // ASan: nothing leaks
    Messages none;
    EXPECT_FALSE(send_messages(lonely, none));
    EXPECT_FALSE(send_frames(lonely, Frames{}));
}

TEST_F(FrameIoTest, WaitAnyReadableNamesTheReadableSocketsAndTimesOutOnNone) {
    zmq::socket_t* const both[] = {&b, &d};
    EXPECT_EQ(wait_any_readable(both, 20ms), 0U);
    ASSERT_TRUE(send_frames(c, Frames{"to d"}, true));
    EXPECT_EQ(wait_any_readable(both, 1000ms), 2U);
    ASSERT_TRUE(send_frames(a, Frames{"to b"}, true));
    EXPECT_EQ(wait_any_readable(both, 1000ms), 3U);
    EXPECT_EQ(*try_receive_frames(b), Frames{"to b"});
    EXPECT_EQ(wait_any_readable(both, 1000ms), 2U);  // d's message is still unread
    EXPECT_EQ(*try_receive_frames(d), Frames{"to d"});
    EXPECT_EQ(wait_any_readable(both, 0ms), 0U);
}

// Over TCP (messages come through the I/O thread, whose commands wake the socket's FD): after a
// drained read, a message sent while the wait sleeps still ends it, long before its timeout.
TEST(FrameIoTcp, AWaitWakesForAMessageSentWhileItSleeps) {
    zmq::context_t context{1};
    zmq::socket_t server(context, zmq::socket_type::pair);
    zmq::socket_t client(context, zmq::socket_type::pair);
    set_socket_limits(server, 0ms, 1000, 1000);
    set_socket_limits(client, 0ms, 1000, 1000);
    server.bind("tcp://127.0.0.1:*");
    client.connect(server.get(zmq::sockopt::last_endpoint));
    for (int round = 0; round < 20; ++round) {
        const std::string text = "round " + std::to_string(round);
        std::jthread sender([&] { ASSERT_TRUE(send_frames(client, Frames{text}, true)); });
        const auto start = std::chrono::steady_clock::now();
        ASSERT_TRUE(wait_readable(server, 60s)) << round;
        EXPECT_LT(std::chrono::steady_clock::now() - start, 30s) << round;
        sender.join();
        EXPECT_EQ(*try_receive_frames(server), Frames{text});
        EXPECT_FALSE(try_receive_frames(server));  // drained: the next wait starts from nothing
    }
}

}  // namespace
}  // namespace glassbox::bus
