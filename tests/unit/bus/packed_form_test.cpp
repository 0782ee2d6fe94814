// The packed form (docs/protocol.md §1.4): every classic layout packs into [envelope] [last] and
// unpacks to the same frames, long fields included; malformed envelopes are ProtocolErrors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bus/bus_client.hpp"
#include "bus/detail/client_frames.hpp"
#include "bus/detail/frame_io.hpp"
#include "bus/frame_codec.hpp"
#include "bus/worker_frames.hpp"

namespace glassbox::bus {
namespace {

using base::ErrorType;
using namespace std::chrono_literals;

Frames unpacked(Frames packed) {
    auto done = unpack_frames(packed);
    EXPECT_TRUE(done.ok()) << (done.ok() ? "" : done.error().message);
    return packed;
}

TEST(PackedForm, RequestPacksIntoTwoFramesAndBack) {
    Frames classic;
    put_client_request(AppendFrames{classic}, "graph-rag", "r-7", 2500ms, "{\"q\":1}");
    Frames packed = classic;
    pack_frames(packed);
    ASSERT_EQ(packed.size(), 2u);
    EXPECT_TRUE(is_packed(packed[0]));
    EXPECT_EQ(packed[0][0], kPackedVersion);
    // version, then each field as a one-byte length and its bytes
    EXPECT_EQ(packed[0], std::string("\x01\x05GBC01\x01\x01\x09graph-rag\x03r-7\x04"
                                     "2500",
                                     28));
    EXPECT_EQ(packed[1], "{\"q\":1}");
    EXPECT_EQ(unpacked(packed), classic);
    const Frames classic_again = unpacked(packed);  // the views below point into it
    const auto request = decode_client_request(views_of(classic_again));
    ASSERT_TRUE(request.ok());
    EXPECT_EQ(request.value().service, "graph-rag");
    EXPECT_EQ(request.value().body, "{\"q\":1}");
}

TEST(PackedForm, EncodersPackOnRequest) {
    const Frames request = encode_request("s", "r-1", 0ms, "{}", true);
    ASSERT_EQ(request.size(), 2u);
    EXPECT_EQ(unpacked(request), encode_request("s", "r-1", 0ms, "{}", false));
    const Frames cancel = encode_cancel("r-1", true);
    ASSERT_EQ(cancel.size(), 2u);
    EXPECT_EQ(cancel[1], "r-1");  // the last frame travels beside the envelope
    EXPECT_EQ(unpacked(cancel), encode_cancel("r-1"));
    const Frames heartbeat = encode_heartbeat({"a", "b", "c"}, true);
    ASSERT_EQ(heartbeat.size(), 2u);
    EXPECT_EQ(unpacked(heartbeat), encode_heartbeat({"a", "b", "c"}));
}

// The options frame goes into the envelope; the body is still the frame beside it (§4.1).
TEST(PackedForm, RequestOptionsTravelInTheEnvelope) {
    const RequestOptions none{ExplainDelivery::kNone};
    const Frames request = encode_request("s", "r-1", 0ms, "{\"q\":1}", true, none);
    ASSERT_EQ(request.size(), 2u);
    EXPECT_EQ(request[1], "{\"q\":1}");
    EXPECT_NE(request[0].find("explain=none"), std::string::npos);
    const Frames classic = unpacked(request);
    EXPECT_EQ(classic, encode_request("s", "r-1", 0ms, "{\"q\":1}", false, none));
    const auto decoded = decode_client_request(views_of(classic));
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(decoded.value().options, none);
    EXPECT_EQ(decoded.value().body, "{\"q\":1}");
    // The defaults add no frame: byte for byte the request before options.
    EXPECT_EQ(encode_request("s", "r-1", 0ms, "{}", true, RequestOptions{}),
              encode_request("s", "r-1", 0ms, "{}", true));
}

TEST(PackedForm, FieldsLongerThan127BytesUseSeveralLengthBytes) {
    const std::string long_id(300, 'x');
    const std::string huge(70'000, 'y');
    Frames classic{"", "MDPW01", "\x07", long_id, huge, "7", "open", "{}"};
    Frames packed = classic;
    pack_frames(packed);
    ASSERT_EQ(packed.size(), 2u);
    // 300 = 0xAC 0x02 in LEB128; 70,000 = 0xF0 0xA2 0x04
    const std::string& envelope = packed[0];
    EXPECT_EQ(envelope.substr(1, 7), std::string("\x06MDPW01", 7));
    EXPECT_EQ(envelope.substr(10, 2), std::string("\xAC\x02", 2));
    EXPECT_EQ(envelope.substr(12 + 300, 3), std::string("\xF0\xA2\x04", 3));
    EXPECT_EQ(unpacked(packed), classic);
}

TEST(PackedForm, EmptyFieldsAndAnEmptyLastFrameSurvive) {
    Frames classic{"", "MDPW01", "\x03", "tok", "", ""};
    Frames packed = classic;
    pack_frames(packed);
    ASSERT_EQ(packed.size(), 2u);
    EXPECT_EQ(unpacked(packed), classic);
}

TEST(PackedForm, MessagesPackAfterTheRoutingId) {
    std::vector<zmq::message_t> frames;
    frames.emplace_back(std::string_view{"peer-1"});
    put_worker_token_head(AppendMessages{frames}, schema::protocol::worker_cmd::kRequest, "42",
                          WorkerLayout::kCompact);
    frames.emplace_back(std::string_view{"{\"request_id\":\"r\"}"});
    frames.emplace_back(std::string_view{"{\"body\":true}"});
    pack_messages(frames, 1);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(view_of(frames[0]), "peer-1");
    EXPECT_EQ(view_of(frames[2]), "{\"body\":true}");
    FrameViews views;
    ASSERT_TRUE(unpack_views(view_of(frames[1]), view_of(frames[2]), views).ok());
    const auto request = decode_gbw_request(views);
    ASSERT_TRUE(request.ok()) << request.error().message;
    EXPECT_EQ(request.value().token, "42");
    EXPECT_EQ(request.value().layout, WorkerLayout::kCompact);
    EXPECT_EQ(request.value().meta, "{\"request_id\":\"r\"}");
    EXPECT_EQ(request.value().body, "{\"body\":true}");
}

TEST(PackedForm, ClassicMessagesAreLeftAlone) {
    Frames classic{"", "GBC01", "\x03", "r", "{}"};
    Frames copy = classic;
    ASSERT_TRUE(unpack_frames(copy).ok());
    EXPECT_EQ(copy, classic);
    Frames short_message{"", "X"};  // nothing to pack beside the last frame
    pack_frames(short_message);
    EXPECT_EQ(short_message, (Frames{"", "X"}));
}

TEST(PackedForm, ReadyDeclaresGbw03AndDecodesPacked) {
    Frames ready;
    put_worker_ready(AppendFrames{ready}, "rag", true, 4, WorkerLayout::kCompact, true);
    EXPECT_EQ(ready[4], kGbWorkerPackedCapability);
    const auto decoded = decode_worker_ready(views_of(ready));
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_TRUE(decoded.value().gbw01);
    EXPECT_TRUE(decoded.value().packed);
    EXPECT_EQ(decoded.value().layout, WorkerLayout::kCompact);
    EXPECT_EQ(decoded.value().credit, 4u);
    Frames gbw02;
    put_worker_ready(AppendFrames{gbw02}, "rag", true, 0, WorkerLayout::kCompact);
    EXPECT_FALSE(decode_worker_ready(views_of(gbw02)).value().packed);
}

void expect_refused(const std::string& envelope, const std::string& why) {
    FrameViews views;
    const auto result = unpack_views(envelope, "last", views);
    ASSERT_FALSE(result.ok()) << "accepted: " << why;
    EXPECT_EQ(result.error().type, ErrorType::kProtocolError);
    EXPECT_NE(result.error().message.find("packed"), std::string::npos) << result.error().message;
}

TEST(PackedForm, MalformedEnvelopesAreProtocolErrors) {
    expect_refused(std::string("\x02\x05GBC01", 7), "unknown version");
    expect_refused(std::string("\x01", 1), "no field");
    expect_refused(std::string("\x01\x09GBC01", 7), "a field past the end");
    expect_refused(std::string("\x01\x80", 2), "a length cut short");
    expect_refused(std::string("\x01\xFF\xFF\xFF\xFF\xFF\x01", 7), "a length of more than 28 bits");
    std::string many(1, kPackedVersion);
    for (int i = 0; i < 63; ++i) append_packed_field(many, "f");
    expect_refused(many, "64 frames and the last: more than 64");
    std::string sixty_two(1, kPackedVersion);
    for (int i = 0; i < 62; ++i) append_packed_field(sixty_two, "f");
    FrameViews views;
    ASSERT_TRUE(unpack_views(sixty_two, "last", views).ok());
    EXPECT_EQ(views.size(), 64u);  // the empty delimiter, 62 fields, the last frame
    Frames three{"\x01\x01x", "a", "b"};
    EXPECT_FALSE(unpack_frames(three).ok());
}

TEST(PackedForm, DecodeReplyReadsPackedReplies) {
    Frames final_frames{"", "GBC01", "\x03", "r-9", "{\"answer\":42}"};
    pack_frames(final_frames);
    auto reply = decode_reply(final_frames);
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply.value().request_id, "r-9");
    EXPECT_EQ(reply.value().body["answer"], 42);
    auto broken = decode_reply(Frames{"\x07junk", "x"});
    ASSERT_FALSE(broken.ok());
    EXPECT_EQ(broken.error().type, ErrorType::kProtocolError);
}

}  // namespace
}  // namespace glassbox::bus
