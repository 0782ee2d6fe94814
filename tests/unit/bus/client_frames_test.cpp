// The MDPC01/GBC01 codec: every encoder read back by its decoder, and malformed frames refused
// with a ProtocolError.
#include "bus/detail/client_frames.hpp"

#include <gtest/gtest.h>

#include "bus/detail/frame_io.hpp"

namespace glassbox::bus {
namespace {

using base::ErrorType;
using namespace std::chrono_literals;

Frames frames_of(std::initializer_list<std::string> list) { return Frames(list); }

void expect_protocol_error(const base::Error& error) {
    EXPECT_EQ(error.type, ErrorType::kProtocolError) << error.message;
    EXPECT_FALSE(error.message.empty());
}

TEST(ClientFrames, RequestRoundTrip) {
    Frames frames;
    put_client_request(AppendFrames{frames}, "graph-rag", "r-7", 2500ms, "{\"q\":1}");
    EXPECT_EQ(frames, frames_of({"", "GBC01", "\x01", "graph-rag", "r-7", "2500", "{\"q\":1}"}));
    const auto views = views_of(frames);
    ASSERT_TRUE(decode_client_command(views).ok());
    EXPECT_EQ(decode_client_command(views).value(), schema::protocol::client_cmd::kRequest);
    const auto request = decode_client_request(views);
    ASSERT_TRUE(request.ok()) << request.error().message;
    EXPECT_EQ(request.value().service, "graph-rag");
    EXPECT_EQ(request.value().request_id, "r-7");
    EXPECT_EQ(request.value().deadline_ms, 2500u);
    EXPECT_EQ(request.value().body, "{\"q\":1}");
    EXPECT_EQ(frames[kClientRequestBodyFrame], "{\"q\":1}");
}

// §4.1: the options frame sits before the body, which stays the last frame.
TEST(ClientFrames, RequestWithOptionsRoundTrip) {
    Frames frames;
    put_client_request(AppendFrames{frames}, "graph-rag", "r-8", 0ms, "{\"q\":2}",
                       encode_request_options({ExplainDelivery::kNone}));
    EXPECT_EQ(frames, frames_of({"", "GBC01", "\x01", "graph-rag", "r-8", "0", "explain=none",
                                 "{\"q\":2}"}));
    const auto request = decode_client_request(views_of(frames));
    ASSERT_TRUE(request.ok()) << request.error().message;
    EXPECT_EQ(request.value().options.explain, ExplainDelivery::kNone);
    EXPECT_EQ(request.value().body, "{\"q\":2}");
    EXPECT_EQ(request.value().body_frame, 7u);
    EXPECT_EQ(request.value().request_id, "r-8");

    // The defaults need no frame: the request every broker reads.
    Frames plain;
    put_client_request(AppendFrames{plain}, "graph-rag", "r-9", 0ms, "{}",
                       encode_request_options({}));
    ASSERT_EQ(plain.size(), 7u);
    const auto decoded = decode_client_request(views_of(plain));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(decoded.value().options, RequestOptions{});
    EXPECT_EQ(decoded.value().body_frame, kClientRequestBodyFrame);

    // An empty options frame is the same as none.
    const Frames with_empty = frames_of({"", "GBC01", "\x01", "s", "r", "0", "", "{}"});
    const auto empty = decode_client_request(views_of(with_empty));  // views into with_empty
    ASSERT_TRUE(empty.ok()) << empty.error().message;
    EXPECT_TRUE(empty.value().options.defaults());
    EXPECT_EQ(empty.value().body, "{}");
}

TEST(ClientFrames, RequestOptionsAreReadStrictly) {
    EXPECT_EQ(encode_request_options({}), "");
    EXPECT_EQ(encode_request_options({ExplainDelivery::kNone}), "explain=none");
    EXPECT_EQ(encode_request_options({ExplainDelivery::kStream}), "");
    for (const auto& [text, explain] :
         {std::pair<std::string, ExplainDelivery>{"", ExplainDelivery::kStream},
          {"explain=stream", ExplainDelivery::kStream},
          {"explain=none", ExplainDelivery::kNone}}) {
        const auto options = decode_request_options(text);
        ASSERT_TRUE(options.ok()) << text << ": " << options.error().message;
        EXPECT_EQ(options.value().explain, explain) << text;
    }
    for (const std::string& bad : std::vector<std::string>{
             "explain", "explain=", "=none", "explain=all", "explain=None", "Explain=none",
             "explain = none", "explain=none,", ",explain=none", "explain=none,,x=y",
             "explain=none;x=y", "explain=none,explain=none", "explain=none,explain=stream",
             "explain==none", "explain=no\x01ne", "explain=" + std::string(33, 'a'),
             std::string(257, 'a')}) {
        const auto options = decode_request_options(bad);
        ASSERT_FALSE(options.ok()) << bad;
        expect_protocol_error(options.error());
        EXPECT_TRUE(options.error().message.starts_with("request options: ")) << bad;
    }
    // What is wrong is named.
    const auto unknown = decode_request_options("colour=red");
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message.find("unknown option \"colour\""), std::string::npos)
        << unknown.error().message;
    const auto value = decode_request_options("explain=some");
    ASSERT_FALSE(value.ok());
    EXPECT_NE(value.error().message.find("explain=some"), std::string::npos)
        << value.error().message;
    // A request whose options are refused is a ProtocolError, its request id still readable.
    const Frames bad_request = frames_of({"", "GBC01", "\x01", "s", "r-1", "0", "x=y", "{}"});
    ASSERT_TRUE(decode_client_request_id(views_of(bad_request)).ok());
    EXPECT_EQ(decode_client_request_id(views_of(bad_request)).value().request_id, "r-1");
    expect_protocol_error(decode_client_request(views_of(bad_request)).error());
}

// trace=: the OTel trace id of the top-level run a worker's call is made for (§4.1).
TEST(ClientFrames, TraceOptionCarriesAnOtelTraceId) {
    const std::string id = "4bf92f3577b34da6a3ce929d0e0e4736";
    RequestOptions options;
    options.trace = id;
    EXPECT_FALSE(options.defaults());
    EXPECT_EQ(encode_request_options(options), "trace=" + id);
    options.explain = ExplainDelivery::kNone;
    EXPECT_EQ(encode_request_options(options), "explain=none,trace=" + id);
    const auto both = decode_request_options("trace=" + id + ",explain=none");
    ASSERT_TRUE(both.ok()) << both.error().message;
    EXPECT_EQ(both.value(), options);
    for (const std::string& bad :
         std::vector<std::string>{"trace=off", "trace=" + std::string(32, '0'),
                                  "trace=" + id.substr(1), "trace=" + id + ",trace=" + id}) {
        const auto refused = decode_request_options(bad);
        ASSERT_FALSE(refused.ok()) << bad;
        expect_protocol_error(refused.error());
    }
}

TEST(ClientFrames, NegativeDeadlineIsWrittenAsZero) {
    Frames frames;
    put_client_request(AppendFrames{frames}, "s", "r", -5ms, "{}");
    EXPECT_EQ(frames[5], "0");
}

TEST(ClientFrames, MalformedRequestIsAProtocolError) {
    for (const Frames& bad :
         {frames_of({"", "GBC01", "\x01", "s"}),
          frames_of({"", "GBC01", "\x01", "s", "", "0", "{}"}),
          frames_of({"", "GBC01", "\x01", "s", std::string(65, 'r'), "0", "{}"}),
          frames_of({"", "GBC01", "\x01", "s", "r", "0"}),
          frames_of({"", "GBC01", "\x01", "s", "r", "0", "{}", "extra"}),
          frames_of({"", "GBC01", "\x01", "s", "r", "0", "explain=none", "{}", "extra"}),
          frames_of({"", "GBC01", "\x01", "bad service!", "r", "0", "{}"}),
          frames_of({"", "GBC01", "\x01", "s", "r", "-1", "{}"})}) {
        const auto request = decode_client_request(views_of(bad));
        ASSERT_FALSE(request.ok()) << bad.size();
        expect_protocol_error(request.error());
    }
    expect_protocol_error(decode_client_command(views_of(frames_of({"", "GBC01"}))).error());
    expect_protocol_error(
        decode_client_command(views_of(frames_of({"", "MDPC01", "\x01"}))).error());
}

TEST(ClientFrames, CancelAndHeartbeatRoundTrip) {
    Frames cancel;
    put_client_cancel(AppendFrames{cancel}, "r-1");
    ASSERT_TRUE(decode_client_cancel(views_of(cancel)).ok());
    EXPECT_EQ(decode_client_cancel(views_of(cancel)).value(), "r-1");
    expect_protocol_error(decode_client_cancel(views_of(frames_of({"", "GBC01", "\x04"}))).error());

    Frames heartbeat;
    put_client_heartbeat(AppendFrames{heartbeat}, std::vector<std::string>{"a", "b"});
    EXPECT_EQ(heartbeat, frames_of({"", "GBC01", "\x06", "a", "b"}));
    EXPECT_EQ(heartbeat.size() - kClientHeartbeatIdFrame, 2u);
}

TEST(ClientFrames, MdpRequestAndReplyRoundTrip) {
    Frames frames;
    put_mdp_request(AppendFrames{frames}, "echo");
    frames.push_back("a");
    frames.push_back("b");
    const auto service = decode_mdp_request(views_of(frames));
    ASSERT_TRUE(service.ok());
    EXPECT_EQ(service.value(), "echo");
    EXPECT_EQ(frames.size() - kMdpBodyFrame, 2u);
    expect_protocol_error(decode_mdp_request(views_of(frames_of({"", "MDPC01"}))).error());

    Frames reply;
    put_mdp_reply(AppendFrames{reply}, "echo");
    EXPECT_EQ(reply, frames_of({"", "MDPC01", "echo"}));
}

TEST(ClientFrames, RepliesRoundTrip) {
    Frames partial;
    put_client_partial(AppendFrames{partial}, "r", schema::protocol::kKindExplain);
    partial.push_back("{}");
    auto reply = decode_client_reply(views_of(partial));
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(reply.value().kind, ClientReplyKind::kExplain);
    EXPECT_EQ(reply.value().request_id, "r");
    EXPECT_EQ(partial[reply.value().body], "{}");

    Frames final_reply;
    put_client_final(AppendFrames{final_reply}, "r");
    final_reply.push_back("\"x\"");
    reply = decode_client_reply(views_of(final_reply));
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(reply.value().kind, ClientReplyKind::kFinal);
    EXPECT_EQ(final_reply[reply.value().body], "\"x\"");

    Frames error;
    put_client_error(AppendFrames{error}, "r", base::make_error(ErrorType::kQueueFull, "full"));
    reply = decode_client_reply(views_of(error));
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(reply.value().kind, ClientReplyKind::kError);
    EXPECT_EQ(reply.value().error.type, ErrorType::kQueueFull);
    EXPECT_EQ(reply.value().error.message, "full");

    // §4.3: an ERROR before a request id is known has an empty id.
    Frames early;
    put_client_error(AppendFrames{early}, "", base::make_error(ErrorType::kProtocolError, "no id"));
    ASSERT_TRUE(decode_client_reply(views_of(early)).ok());
}

TEST(ClientFrames, MalformedRepliesAreProtocolErrors) {
    for (const Frames& bad :
         {frames_of({"", "GBC01", "\x03"}), frames_of({"x", "GBC01", "\x03", "r", "{}"}),
          frames_of({"", "MDPC01", "\x03", "r", "{}"}),
          frames_of({"", "GBC01", "\x03", std::string(65, 'r'), "{}"}),
          frames_of({"", "GBC01", "\x03", "r"}),
          frames_of({"", "GBC01", "\x02", "r", "other", "{}"}),
          frames_of({"", "GBC01", "\x05", "r", "Internal"}),
          frames_of({"", "GBC01", "\x03", "", "{}"}),
          frames_of({"", "GBC01", "\x09", "r", "{}"})}) {
        const auto reply = decode_client_reply(views_of(bad));
        ASSERT_FALSE(reply.ok()) << bad.size();
        expect_protocol_error(reply.error());
    }
}

}  // namespace
}  // namespace glassbox::bus
