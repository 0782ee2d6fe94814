// The MDPW01/GBW01 codec: every encoder read back by its decoder, and malformed frames refused
// with a ProtocolError.
#include "bus/worker_frames.hpp"

#include <gtest/gtest.h>

#include "bus/detail/frame_io.hpp"

namespace glassbox::bus {
namespace {

namespace cmd = schema::protocol::worker_cmd;
using base::ErrorType;

Frames frames_of(std::initializer_list<std::string> list) { return Frames(list); }

void expect_protocol_error(const base::Error& error) {
    EXPECT_EQ(error.type, ErrorType::kProtocolError) << error.message;
    EXPECT_FALSE(error.message.empty());
}

TEST(WorkerFrames, CommandRoundTrip) {
    Frames frames;
    put_worker_command(AppendFrames{frames}, cmd::kHeartbeat);
    EXPECT_EQ(frames, frames_of({"", "MDPW01", "\x04"}));
    const auto decoded = decode_worker_command(views_of(frames));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(decoded.value(), cmd::kHeartbeat);
}

TEST(WorkerFrames, MalformedCommandIsAProtocolError) {
    for (const Frames& bad : {frames_of({"", "MDPW01"}), frames_of({"x", "MDPW01", "\x04"}),
                              frames_of({"", "MDPW02", "\x04"}),
                              frames_of({"", "MDPW01", "\x04\x04"}), frames_of({})}) {
        const auto decoded = decode_worker_command(views_of(bad));
        ASSERT_FALSE(decoded.ok());
        expect_protocol_error(decoded.error());
    }
}

TEST(WorkerFrames, ReadyRoundTripsWithAndWithoutCredit) {
    Frames plain;
    put_worker_ready(AppendFrames{plain}, "echo", false);
    EXPECT_EQ(plain, frames_of({"", "MDPW01", "\x01", "echo"}));
    auto ready = decode_worker_ready(views_of(plain));
    ASSERT_TRUE(ready.ok());
    EXPECT_EQ(ready.value().service, "echo");
    EXPECT_FALSE(ready.value().gbw01);
    EXPECT_EQ(ready.value().credit, 1u);

    Frames credit;
    put_worker_ready(AppendFrames{credit}, "rag", true, 64);
    EXPECT_EQ(credit, frames_of({"", "MDPW01", "\x01", "rag", "GBW01", "64"}));
    ready = decode_worker_ready(views_of(credit));
    ASSERT_TRUE(ready.ok());
    EXPECT_TRUE(ready.value().gbw01);
    EXPECT_EQ(ready.value().credit, 64u);
}

TEST(WorkerFrames, BadReadyIsAProtocolError) {
    for (const Frames& bad :
         {frames_of({"", "MDPW01", "\x01"}), frames_of({"", "MDPW01", "\x01", "mmi.service"}),
          frames_of({"", "MDPW01", "\x01", "rag", "GBW01", "0"}),
          frames_of({"", "MDPW01", "\x01", "rag", "GBW01", "1025"}),
          frames_of({"", "MDPW01", "\x01", "rag", "XYZ01", "4"}),
          frames_of({"", "MDPW01", "\x01", "rag", "GBW01", "4", "x"})}) {
        const auto ready = decode_worker_ready(views_of(bad));
        ASSERT_FALSE(ready.ok()) << bad.size();
        expect_protocol_error(ready.error());
    }
}

TEST(WorkerFrames, GbwRequestRoundTrip) {
    Frames frames;
    put_worker_token_head(AppendFrames{frames}, cmd::kRequest, "17");
    frames.push_back(encode_request_meta("r-1", "rag", 2500, 1, "GBC01"));
    frames.push_back("{}");
    const auto request = decode_gbw_request(views_of(frames));
    ASSERT_TRUE(request.ok()) << request.error().message;
    EXPECT_EQ(request.value().token, "17");
    EXPECT_EQ(request.value().body, "{}");
    const auto meta = decode_request_meta(request.value().meta);
    ASSERT_TRUE(meta.ok());
    EXPECT_EQ(meta.value(), (RequestMetaFrame{"r-1", "rag", 2500, 1, "GBC01", ""}));
}

TEST(WorkerFrames, MalformedRequestIsAProtocolError) {
    // No token, a token above 64 bytes, no empty frame, a missing body.
    for (const Frames& bad :
         {frames_of({"", "MDPW01", "\x02"}),
          frames_of({"", "MDPW01", "\x02", std::string(65, 't'), "", "{}", "{}"}),
          frames_of({"", "MDPW01", "\x02", "1", "x", "{}", "{}"}),
          frames_of({"", "MDPW01", "\x02", "1", "", "{}"})}) {
        const auto request = decode_gbw_request(views_of(bad));
        ASSERT_FALSE(request.ok());
        expect_protocol_error(request.error());
    }
}

TEST(WorkerFrames, MetaKeepsOpaqueRequestIdsValidJson) {
    // Overlong, surrogate and above-U+10FFFF bytes: the frame stays JSON a decoder accepts.
    for (const std::string id : {"\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"}) {
        const auto meta = decode_request_meta(encode_request_meta(id, "s", 0, 1, "MDPC01"));
        ASSERT_TRUE(meta.ok()) << meta.error().message;
        EXPECT_FALSE(meta.value().request_id.empty());
    }
}

// §5.1: "trace" for a client that gave option trace= (§4.1), absent otherwise; both readers.
TEST(WorkerFrames, MetaCarriesTheClientsTraceId) {
    const std::string id = "4bf92f3577b34da6a3ce929d0e0e4736";
    const std::string text = encode_request_meta("r-1", "rag", 2500, 1, "GBC01", "", id);
    EXPECT_EQ(text, R"({"request_id":"r-1","service":"rag","deadline_ms":2500,"attempt":1,)"
                    R"("client":"GBC01","trace":")" +
                        id + R"("})");
    const auto meta = decode_request_meta(text);
    ASSERT_TRUE(meta.ok()) << meta.error().message;
    EXPECT_EQ(meta.value(), (RequestMetaFrame{"r-1", "rag", 2500, 1, "GBC01", "", id}));
    EXPECT_EQ(encode_request_meta(meta.value()), text);
    const auto tree = decode_request_meta(
        R"({"request\u005fid":"r","service":"s","deadline_ms":5,"attempt":2,"trace":")" + id +
        R"("})");
    ASSERT_TRUE(tree.ok()) << tree.error().message;
    EXPECT_EQ(tree.value().trace, id);
    EXPECT_FALSE(decode_request_meta(
                     R"({"request_id":"r","service":"s","deadline_ms":5,"attempt":2,"trace":1})")
                     .ok());
}

// §5.1: "explain": "none" for a client that asked explain=none (§4.1), absent otherwise.
TEST(WorkerFrames, MetaCarriesTheClientsExplainChoice) {
    const std::string none = encode_request_meta("r-1", "rag", 2500, 1, "GBC01", "none");
    EXPECT_EQ(none, R"({"request_id":"r-1","service":"rag","deadline_ms":2500,"attempt":1,)"
                    R"("client":"GBC01","explain":"none"})");
    const auto meta = decode_request_meta(none);
    ASSERT_TRUE(meta.ok()) << meta.error().message;
    EXPECT_EQ(meta.value(), (RequestMetaFrame{"r-1", "rag", 2500, 1, "GBC01", "none"}));
    EXPECT_EQ(encode_request_meta(meta.value()), none);
    // Left out, the frame is the one before the option: byte for byte.
    const std::string plain = encode_request_meta("r-1", "rag", 2500, 1, "GBC01");
    EXPECT_EQ(plain, encode_request_meta("r-1", "rag", 2500, 1, "GBC01", ""));
    EXPECT_EQ(plain.find("explain"), std::string::npos);
    EXPECT_EQ(decode_request_meta(plain).value().explain, "");
    // The tree reader agrees (an escaped key sends it there); a non-string is refused.
    const auto tree = decode_request_meta(
        R"({"request\u005fid":"r","service":"s","deadline_ms":5,"attempt":2,"explain":"none"})");
    ASSERT_TRUE(tree.ok()) << tree.error().message;
    EXPECT_EQ(tree.value().explain, "none");
    const auto bad = decode_request_meta(
        R"({"request_id":"r","service":"s","deadline_ms":5,"attempt":2,"explain":false})");
    ASSERT_FALSE(bad.ok());
    expect_protocol_error(bad.error());
}

TEST(WorkerFrames, BadMetaIsAProtocolError) {
    for (const std::string bad :
         {"", "[]", "{\"request_id\":1,\"service\":\"s\",\"deadline_ms\":0,\"attempt\":1}",
          "{\"request_id\":\"r\",\"service\":\"s\",\"deadline_ms\":-1,\"attempt\":1}",
          "{\"request_id\":\"r\",\"service\":\"s\",\"deadline_ms\":0}",
          "{\"request_id\":\"r\",\"service\":\"s\",\"deadline_ms\":0,\"attempt\":1,\"client\":"
          "2}"}) {
        const auto meta = decode_request_meta(bad);
        ASSERT_FALSE(meta.ok()) << bad;
        expect_protocol_error(meta.error());
    }
}

TEST(WorkerFrames, MetaOfAnyShapeReadsAsItsTree) {
    // The one-pass reader takes the encoder's shape; every other input is the tree's to read,
    // with the tree's result: an escaped or repeated key (the last wins), -0, unknown keys.
    const std::string tail = R"("service":"s","deadline_ms":5,"attempt":2)";
    struct Case {
        std::string text;
        std::string request_id;
        std::uint64_t deadline_ms;
    };
    for (const auto& [text, request_id, deadline_ms] : std::vector<Case>{
             {R"({"request\u005fid":"r",)" + tail + "}", "r", 5},
             {R"({"request_id":"a","request_id":"b",)" + tail + "}", "b", 5},
             {R"({"request_id":"r","service":"s","deadline_ms":-0,"attempt":2})", "r", 0},
             {R"( {"x":{"y":[1,2.5e3,{"z":null}]},"request_id":"r\"\u00e9",)" + tail + "} ",
              "r\"\xC3\xA9", 5}}) {
        const auto meta = decode_request_meta(text);
        ASSERT_TRUE(meta.ok()) << text << ": " << meta.error().message;
        EXPECT_EQ(meta.value().request_id, request_id) << text;
        EXPECT_EQ(meta.value().service, "s") << text;
        EXPECT_EQ(meta.value().deadline_ms, deadline_ms) << text;
        EXPECT_EQ(meta.value().attempt, 2u) << text;
    }
    for (const std::string& bad : std::vector<std::string>{
             R"({"request_id":"r",)" + tail + "} x", R"({"request_id":"r",)" + tail + ",}",
             R"({"request_id":"r","service":"s","deadline_ms":1e3,"attempt":2})",
             R"({"request_id":"r","service":"s","deadline_ms":18446744073709551616,"attempt":2})",
             R"({"request_id":"r","service":"s","deadline_ms":5,"attempt":2,"client":null})"}) {
        const auto meta = decode_request_meta(bad);
        ASSERT_FALSE(meta.ok()) << bad;
        expect_protocol_error(meta.error());
    }
}

TEST(WorkerFrames, AnswersRoundTrip) {
    Frames partial;
    put_worker_token_head(AppendFrames{partial}, cmd::kPartial, "9");
    partial.push_back("\"chunk\"");
    auto views = views_of(partial);
    ASSERT_TRUE(decode_worker_token(views).ok());
    EXPECT_EQ(decode_worker_token(views).value(), "9");
    ASSERT_TRUE(decode_worker_partial(views).ok());
    EXPECT_EQ(decode_worker_partial(views).value(), "\"chunk\"");

    Frames explain;
    put_worker_explain(AppendFrames{explain}, "9", "urn:q:1", 3, "complete");
    explain.push_back("{}");
    const auto decoded = decode_worker_explain(views_of(explain), 2048);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(decoded.value().session, "urn:q:1");
    EXPECT_EQ(decoded.value().seq, 3u);
    EXPECT_EQ(decoded.value().state, "complete");
    EXPECT_EQ(explain[decoded.value().body], "{}");

    Frames error;
    put_worker_error(AppendFrames{error}, "9",
                     base::make_error(ErrorType::kInvalidJson, "bad body"));
    const base::Error read = decode_worker_error(views_of(error));
    EXPECT_EQ(read.type, ErrorType::kInvalidJson);
    EXPECT_EQ(read.message, "bad body");

    Frames cancel;
    put_worker_cancel(AppendFrames{cancel}, "9");
    EXPECT_EQ(cancel, frames_of({"", "MDPW01", "\x09", "9"}));
    ASSERT_TRUE(decode_worker_cancel(views_of(cancel)).ok());
    EXPECT_EQ(decode_worker_cancel(views_of(cancel)).value(), "9");
}

TEST(WorkerFrames, MalformedAnswersAreProtocolErrors) {
    expect_protocol_error(
        decode_worker_token(views_of(frames_of({"", "MDPW01", "\x03", "1"}))).error());
    expect_protocol_error(
        decode_worker_token(views_of(frames_of({"", "MDPW01", "\x03", "1", "x"}))).error());
    expect_protocol_error(
        decode_worker_partial(views_of(frames_of({"", "MDPW01", "\x06", "1", "", "a", "b"})))
            .error());
    for (const Frames& bad :
         {frames_of({"", "MDPW01", "\x07", "1", "", "s", "0", "open"}),
          frames_of({"", "MDPW01", "\x07", "1", "", "", "0", "open", "{}"}),
          frames_of({"", "MDPW01", "\x07", "1", "", "s", "x", "open", "{}"}),
          frames_of({"", "MDPW01", "\x07", "1", "", "s", "0", "closed", "{}"}),
          frames_of({"", "MDPW01", "\x07", "1", "", std::string(9, 's'), "0", "open", "{}"})}) {
        const auto explain = decode_worker_explain(views_of(bad), 8);
        ASSERT_FALSE(explain.ok());
        expect_protocol_error(explain.error());
    }
    expect_protocol_error(
        decode_worker_cancel(views_of(frames_of({"", "MDPW01", "\x09"}))).error());
    // An unknown error type word still reads, as Internal with the word kept.
    const base::Error unknown =
        decode_worker_error(views_of(frames_of({"", "MDPW01", "\x08", "1", "", "Weird", "m"})));
    EXPECT_EQ(unknown.type, ErrorType::kInternal);
    EXPECT_NE(unknown.message.find("Weird"), std::string::npos);
}

// ---- the compact layout (GBW02, docs/protocol.md §5.4) ----------------------------------------

TEST(WorkerFrames, CompactReadyDeclaresGbw02) {
    Frames plain;
    put_worker_ready(AppendFrames{plain}, "rag", true, 0, WorkerLayout::kCompact);
    EXPECT_EQ(plain, frames_of({"", "MDPW01", "\x01", "rag", "GBW02"}));
    auto ready = decode_worker_ready(views_of(plain));
    ASSERT_TRUE(ready.ok()) << ready.error().message;
    EXPECT_TRUE(ready.value().gbw01);
    EXPECT_EQ(ready.value().layout, WorkerLayout::kCompact);
    EXPECT_EQ(ready.value().credit, 1u);

    Frames credit;
    put_worker_ready(AppendFrames{credit}, "rag", true, 8, WorkerLayout::kCompact);
    EXPECT_EQ(credit, frames_of({"", "MDPW01", "\x01", "rag", "GBW02", "8"}));
    ready = decode_worker_ready(views_of(credit));
    ASSERT_TRUE(ready.ok());
    EXPECT_EQ(ready.value().layout, WorkerLayout::kCompact);
    EXPECT_EQ(ready.value().credit, 8u);

    // GBW01 stays classic; a plain 7/MDP worker is classic and not extended.
    ready = decode_worker_ready(views_of(frames_of({"", "MDPW01", "\x01", "rag", "GBW01"})));
    ASSERT_TRUE(ready.ok());
    EXPECT_EQ(ready.value().layout, WorkerLayout::kClassic);
    ready = decode_worker_ready(views_of(frames_of({"", "MDPW01", "\x01", "rag", "GBW09"})));
    ASSERT_TRUE(ready.ok());
    EXPECT_FALSE(ready.value().gbw01);
    EXPECT_EQ(ready.value().layout, WorkerLayout::kClassic);
    EXPECT_FALSE(
        decode_worker_ready(views_of(frames_of({"", "MDPW01", "\x01", "rag", "GBW09", "4"}))).ok());
}

TEST(WorkerFrames, CompactRequestRoundTripsAndIsToldApartFromClassic) {
    Frames compact;
    put_worker_token_head(AppendFrames{compact}, cmd::kRequest, "17", WorkerLayout::kCompact);
    compact.push_back(encode_request_meta("r-1", "rag", 2500, 1, "GBC01"));
    compact.push_back("{}");
    EXPECT_EQ(compact.size(), 6u);  // one frame less than classic
    auto request = decode_gbw_request(views_of(compact));
    ASSERT_TRUE(request.ok()) << request.error().message;
    EXPECT_EQ(request.value().layout, WorkerLayout::kCompact);
    EXPECT_EQ(request.value().token, "17");
    EXPECT_EQ(request.value().body, "{}");
    const auto meta = decode_request_meta(request.value().meta);
    ASSERT_TRUE(meta.ok());
    EXPECT_EQ(meta.value(), (RequestMetaFrame{"r-1", "rag", 2500, 1, "GBC01", ""}));

    Frames classic;
    put_worker_token_head(AppendFrames{classic}, cmd::kRequest, "17");
    classic.push_back(compact[4]);
    classic.push_back("{}");
    request = decode_gbw_request(views_of(classic));
    ASSERT_TRUE(request.ok());
    EXPECT_EQ(request.value().layout, WorkerLayout::kClassic);
    EXPECT_EQ(request.value().meta, compact[4]);

    // An empty meta frame fits neither layout, nor does a compact REQUEST without its body.
    for (const Frames& bad : {frames_of({"", "MDPW01", "\x02", "1", "", "{}"}),
                              frames_of({"", "MDPW01", "\x02", "1", "{}"}),
                              frames_of({"", "MDPW01", "\x02", "1", "{}", "{}", "{}"})}) {
        const auto decoded = decode_gbw_request(views_of(bad));
        ASSERT_FALSE(decoded.ok()) << bad.size();
        expect_protocol_error(decoded.error());
    }
}

TEST(WorkerFrames, CompactAnswersRoundTrip) {
    constexpr auto kCompact = WorkerLayout::kCompact;
    Frames reply;
    put_worker_token_head(AppendFrames{reply}, cmd::kReply, "9", kCompact);
    reply.push_back("{\"ok\":true}");
    EXPECT_EQ(reply, frames_of({"", "MDPW01", "\x03", "9", "{\"ok\":true}"}));
    ASSERT_TRUE(decode_worker_token(views_of(reply), kCompact).ok());
    EXPECT_EQ(decode_worker_token(views_of(reply), kCompact).value(), "9");
    EXPECT_EQ(worker_payload_frame(kCompact), 4u);
    // Read as classic, the body stands where the empty frame belongs.
    EXPECT_FALSE(decode_worker_token(views_of(reply)).ok());

    Frames partial;
    put_worker_token_head(AppendFrames{partial}, cmd::kPartial, "9", kCompact);
    partial.push_back("\"chunk\"");
    ASSERT_TRUE(decode_worker_partial(views_of(partial), kCompact).ok());
    EXPECT_EQ(decode_worker_partial(views_of(partial), kCompact).value(), "\"chunk\"");
    EXPECT_FALSE(decode_worker_partial(views_of(partial)).ok());

    Frames explain;
    put_worker_explain(AppendFrames{explain}, "9", "urn:q:1", 3, "open", kCompact);
    explain.push_back("{}");
    EXPECT_EQ(explain.size(), 8u);
    const auto decoded = decode_worker_explain(views_of(explain), 2048, kCompact);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(decoded.value().session, "urn:q:1");
    EXPECT_EQ(decoded.value().seq, 3u);
    EXPECT_EQ(decoded.value().state, "open");
    EXPECT_EQ(explain[decoded.value().body], "{}");
    EXPECT_FALSE(decode_worker_explain(views_of(explain), 2048).ok());

    Frames error;
    put_worker_error(AppendFrames{error}, "9", base::make_error(ErrorType::kCancelled, "stop"),
                     kCompact);
    EXPECT_EQ(error, frames_of({"", "MDPW01", "\x08", "9", "Cancelled", "stop"}));
    const base::Error read = decode_worker_error(views_of(error), kCompact);
    EXPECT_EQ(read.type, ErrorType::kCancelled);
    EXPECT_EQ(read.message, "stop");
}

TEST(WorkerFrames, MetaIntoABufferMatchesTheStringForm) {
    std::string buffer = "left over from the last request";
    encode_request_meta(buffer, "r-\xC0", "rag", 18446744073709551615ull, 0, "");
    EXPECT_EQ(buffer, encode_request_meta("r-\xC0", "rag", 18446744073709551615ull, 0, ""));
    const auto meta = decode_request_meta(buffer);
    ASSERT_TRUE(meta.ok()) << buffer;
    EXPECT_EQ(meta.value().deadline_ms, 18446744073709551615ull);
    EXPECT_EQ(meta.value().attempt, 0u);
    EXPECT_EQ(meta.value().client, "");
}

}  // namespace
}  // namespace glassbox::bus
