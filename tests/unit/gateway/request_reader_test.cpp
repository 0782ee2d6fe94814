// The strict request reader: framing (RFC 9112), field syntax (RFC 9110 §5), the bounds, and the
// canonical copy the router reads.
#include "gateway/request_reader.hpp"

#include <gtest/gtest.h>

#include <string>

namespace glassbox::gateway {
namespace {

using Progress = RequestReader::Progress;

struct Read {
    Progress progress;
    RequestReader reader;
};

// Feeds `bytes` in one piece.
Read read(const std::string& bytes, RequestLimits limits = {}) {
    RequestReader reader(limits);
    reader.append(bytes);
    const auto progress = reader.advance();
    return {progress, std::move(reader)};
}

// The status a request is refused with (0: it was read whole).
int refusal(const std::string& bytes, RequestLimits limits = {}) {
    auto r = read(bytes, limits);
    if (r.progress == Progress::kFailed) return r.reader.error().status;
    return r.progress == Progress::kComplete ? 0 : -1;
}

TEST(RequestReaderTest, ASimpleRequestIsReadWholeAndCopiedCanonically) {
    auto r = read("GET /api/v1/health?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n");
    ASSERT_EQ(r.progress, Progress::kComplete);
    EXPECT_EQ(r.reader.head().method, "GET");
    EXPECT_EQ(r.reader.head().path(), "/api/v1/health");
    EXPECT_TRUE(r.reader.head().keep_alive);
    EXPECT_EQ(r.reader.take(), "GET /api/v1/health?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n");
    EXPECT_FALSE(r.reader.has_more());
}

TEST(RequestReaderTest, BytesThatArriveOneByOneMakeTheSameRequest) {
    const std::string request = "POST /q HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
    RequestReader reader;
    for (std::size_t i = 0; i + 1 < request.size(); ++i) {
        reader.append(request.substr(i, 1));
        ASSERT_EQ(reader.advance(), Progress::kNeedMore) << "at byte " << i;
        EXPECT_TRUE(reader.started());
    }
    reader.append(request.substr(request.size() - 1));
    ASSERT_EQ(reader.advance(), Progress::kComplete);
    EXPECT_EQ(reader.take(), "POST /q HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello");
}

TEST(RequestReaderTest, PipelinedRequestsAreReadInTurn) {
    auto r = read("GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n");
    ASSERT_EQ(r.progress, Progress::kComplete);
    EXPECT_EQ(r.reader.head().target, "/a");
    r.reader.take();
    ASSERT_TRUE(r.reader.has_more());
    ASSERT_EQ(r.reader.advance(), Progress::kComplete);
    EXPECT_EQ(r.reader.head().target, "/b");
}

TEST(RequestReaderTest, AChunkedBodyIsDecodedAndGivenItsLength) {
    auto r = read(
        "POST /q HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer-Field: x\r\n\r\n");
    ASSERT_EQ(r.progress, Progress::kComplete);
    EXPECT_EQ(r.reader.take(),
              "POST /q HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world");
}

TEST(RequestReaderTest, BrokenChunkedFramingIs400) {
    const std::string head = "POST /q HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
    EXPECT_EQ(refusal(head + "-1\r\nx\r\n0\r\n\r\n"), 400);    // a negative size
    EXPECT_EQ(refusal(head + "zz\r\n"), 400);                  // not hexadecimal
    EXPECT_EQ(refusal(head + "3\r\nabcX\r\n0\r\n\r\n"), 400);  // data without its CRLF
    EXPECT_EQ(refusal(head + "3\nabc\r\n0\r\n\r\n"), 400);     // a size line ended by LF alone
    EXPECT_EQ(refusal(head + "1000000000000000\r\n"), 400);    // more digits than any body
}

TEST(RequestReaderTest, TransferEncodingsOtherThanOneChunkedAreRefused) {
    const std::string start = "POST /q HTTP/1.1\r\nHost: a\r\n";
    EXPECT_EQ(refusal(start + "Transfer-Encoding: gzip\r\n\r\n"), 501);
    EXPECT_EQ(refusal(start + "Transfer-Encoding: gzip, chunked\r\n\r\n"), 501);
    EXPECT_EQ(refusal(start + "Transfer-Encoding: chunked, chunked\r\n\r\n"), 400);
    EXPECT_EQ(refusal(start + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
              400);
    EXPECT_EQ(refusal(start + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc"), 400);
    EXPECT_EQ(refusal(start + "Transfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n"), 0);
}

TEST(RequestReaderTest, ContentLengthMustBeOneNumber) {
    const std::string start = "POST /q HTTP/1.1\r\nHost: a\r\n";
    EXPECT_EQ(refusal(start + "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"), 400);
    EXPECT_EQ(refusal(start + "Content-Length: 3, 4\r\n\r\nabcd"), 400);
    EXPECT_EQ(refusal(start + "Content-Length: -3\r\n\r\n"), 400);
    EXPECT_EQ(refusal(start + "Content-Length: 0x3\r\n\r\n"), 400);
    EXPECT_EQ(refusal(start + "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc"), 0);
}

TEST(RequestReaderTest, MalformedHeaderLinesAre400) {
    const std::string start = "GET /q HTTP/1.1\r\nHost: a\r\n";
    EXPECT_EQ(refusal(start + "X-A: 1\r\n  folded\r\n\r\n"), 400);  // obs-fold
    EXPECT_EQ(refusal(start + "X-A: a" + std::string(1, '\0') + "b\r\n\r\n"), 400);
    EXPECT_EQ(refusal(start + "no colon here\r\n\r\n"), 400);
    EXPECT_EQ(refusal(start + "X-A : 1\r\n\r\n"), 400);    // whitespace before the colon
    EXPECT_EQ(refusal(start + "X-A: a\rb\r\n\r\n"), 400);  // a bare CR
    EXPECT_EQ(refusal("GET /q HTTP/1.1\r\n\r\n"), 400);    // no Host
    EXPECT_EQ(refusal(start + "Host: b\r\n\r\n"), 400);    // two
}

TEST(RequestReaderTest, TheRequestLineIsChecked) {
    EXPECT_EQ(refusal("GET /q HTTP/2.0\r\nHost: a\r\n\r\n"), 505);
    EXPECT_EQ(refusal("GET /q FTP\r\nHost: a\r\n\r\n"), 400);
    EXPECT_EQ(refusal("GET http://x/q HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
    EXPECT_EQ(refusal("G(T /q HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
    EXPECT_EQ(refusal("GET /q\r\n\r\n"), 400);
    EXPECT_EQ(refusal("\r\nGET /q HTTP/1.1\r\nHost: a\r\n\r\n"),
              0);                                      // one empty line before is allowed
    EXPECT_EQ(refusal("GET /q HTTP/1.0\r\n\r\n"), 0);  // 1.0 needs no Host
}

TEST(RequestReaderTest, HeadsPastTheirBoundsAre414Or431AtOnce) {
    RequestLimits limits{
        .max_request_line = 100, .max_field_line = 100, .max_head_bytes = 1000, .max_fields = 5};
    // Refused once the bytes show it, before the head is whole.
    EXPECT_EQ(refusal("GET /" + std::string(200, 'a'), limits), 414);
    EXPECT_EQ(refusal("GET / HTTP/1.1\r\nX: " + std::string(200, 'a'), limits), 431);
    std::string many = "GET / HTTP/1.1\r\nHost: a\r\n";
    for (int i = 0; i < 5; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
    EXPECT_EQ(refusal(many, limits), 431);
    std::string big = "GET / HTTP/1.1\r\nHost: a\r\n";
    for (int i = 0; i < 20; ++i) big += "X: " + std::string(90, 'b') + "\r\n";
    limits.max_fields = 100;
    EXPECT_EQ(refusal(big, limits), 431);
}

TEST(RequestReaderTest, BodiesPastTheBoundAre413) {
    RequestLimits limits;
    limits.max_body_bytes = 10;
    EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n", limits), 413);
    EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
                      "chunked\r\n\r\n8\r\n12345678\r\n8\r\n",
                      limits),
              413);
    EXPECT_EQ(refusal("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789", limits),
              0);
}

TEST(RequestReaderTest, AFormContentTypeDoesNotReachTheRouter) {
    auto r = read(
        "POST /api/v1/load/docs HTTP/1.1\r\nHost: a\r\nContent-Type: "
        "application/x-www-form-urlencoded\r\n"
        "Content-Length: 7\r\n\r\na=1&b=2");
    ASSERT_EQ(r.progress, Progress::kComplete);
    const std::string copy = r.reader.take();
    EXPECT_NE(copy.find("Content-Type: application/octet-stream\r\n"), std::string::npos) << copy;
    EXPECT_NE(copy.find("\r\n\r\na=1&b=2"), std::string::npos);
    // Marked as form-encoded for the one route that takes a form (POST /api/v1/sparql).
    EXPECT_NE(copy.find("Content-Type: application/octet-stream\r\nX-Glassbox-Form-Body: "
                        "urlencoded\r\n"),
              std::string::npos)
        << copy;
}

TEST(RequestReaderTest, ConnectionAndExpectAreRead) {
    auto close = read("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\n");
    EXPECT_FALSE(close.reader.head().keep_alive);
    auto old = read("GET / HTTP/1.0\r\n\r\n");
    EXPECT_FALSE(old.reader.head().keep_alive);
    auto old_kept = read("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    EXPECT_TRUE(old_kept.reader.head().keep_alive);
    auto expect =
        read("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
    EXPECT_EQ(expect.progress, Progress::kNeedMore);
    EXPECT_TRUE(expect.reader.head_done());
    EXPECT_TRUE(expect.reader.head().expect_continue);
    EXPECT_EQ(refusal("GET / HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n"), 417);
}

}  // namespace
}  // namespace glassbox::gateway
