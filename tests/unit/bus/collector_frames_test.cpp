// The GBE01 codec: every encoder read back by its decoder, and malformed frames refused with a
// ProtocolError.
#include "bus/collector_frames.hpp"

#include <gtest/gtest.h>

#include "bus/detail/frame_io.hpp"

namespace glassbox::bus {
namespace {

namespace cmd = schema::protocol::collector_cmd;
using base::ErrorType;

Frames frames_of(std::initializer_list<std::string> list) { return Frames(list); }

void expect_protocol_error(const base::Error& error) {
    EXPECT_EQ(error.type, ErrorType::kProtocolError) << error.message;
    EXPECT_FALSE(error.message.empty());
}

TEST(CollectorFrames, AttachRoundTrip) {
    Frames frames;
    put_collector_attach(AppendFrames{frames}, 128);
    EXPECT_EQ(frames, frames_of({"", "GBE01", "\x01", "128"}));
    const auto views = views_of(frames);
    ASSERT_TRUE(decode_collector_command(views).ok());
    EXPECT_EQ(decode_collector_command(views).value(), cmd::kAttach);
    const auto window = decode_collector_attach(views, 65536);
    ASSERT_TRUE(window.ok());
    EXPECT_EQ(window.value(), 128u);
}

TEST(CollectorFrames, BadAttachIsAProtocolError) {
    for (const Frames& bad :
         {frames_of({"", "GBE01", "\x01"}), frames_of({"", "GBE01", "\x01", "0"}),
          frames_of({"", "GBE01", "\x01", "65537"}), frames_of({"", "GBE01", "\x01", "x"}),
          frames_of({"", "GBE01", "\x01", "1", "2"})}) {
        const auto window = decode_collector_attach(views_of(bad), 65536);
        ASSERT_FALSE(window.ok());
        expect_protocol_error(window.error());
    }
    expect_protocol_error(decode_collector_command(views_of(frames_of({"", "GBE01"}))).error());
    expect_protocol_error(
        decode_collector_command(views_of(frames_of({"", "GBC01", "\x01"}))).error());
}

TEST(CollectorFrames, AckCarriesEveryId) {
    Frames frames;
    put_collector_ack(AppendFrames{frames}, std::vector<std::uint64_t>{3, 5, 8});
    EXPECT_EQ(frames, frames_of({"", "GBE01", "\x03", "3", "5", "8"}));
    EXPECT_EQ(frames.size() - kCollectorAckIdFrame, 3u);
}

TEST(CollectorFrames, DeliverRoundTrip) {
    Frames frames;
    put_collector_deliver(AppendFrames{frames}, 42, "rag", "urn:q:1", 7, "open");
    frames.push_back("{}");
    const auto deliver = decode_collector_deliver(views_of(frames));
    ASSERT_TRUE(deliver.ok()) << deliver.error().message;
    EXPECT_EQ(deliver.value().delivery_id, 42u);
    EXPECT_EQ(deliver.value().service, "rag");
    EXPECT_EQ(deliver.value().session, "urn:q:1");
    EXPECT_EQ(deliver.value().seq, "7");
    EXPECT_EQ(deliver.value().state, "open");
    EXPECT_EQ(deliver.value().body, "{}");
}

TEST(CollectorFrames, ShortDeliverKeepsItsIdButIsAProtocolError) {
    const Frames short_one = frames_of({"", "GBE01", "\x02", "42", "rag"});
    EXPECT_EQ(collector_delivery_id(views_of(short_one)), std::optional<std::uint64_t>{42});
    expect_protocol_error(decode_collector_deliver(views_of(short_one)).error());
    const Frames no_id = frames_of({"", "GBE01", "\x02", "x", "s", "q", "0", "open", "{}"});
    EXPECT_FALSE(collector_delivery_id(views_of(no_id)).has_value());
    expect_protocol_error(decode_collector_deliver(views_of(no_id)).error());
}

}  // namespace
}  // namespace glassbox::bus
