// The cpp-httplib mount: requests become HttpExchanges, HttpAnswers become responses.
#include "gateway/mcp/http_mount.hpp"

#include <gtest/gtest.h>

namespace glassbox::gateway::mcp {
namespace {

TEST(McpHttpMountTest, HeaderNamesAreLowerCasedAndRepeatsJoined) {
    httplib::Request request;
    request.method = "POST";
    request.body = "{}";
    request.headers.emplace("Mcp-Session-Id", "abc");
    request.headers.emplace("Accept", "application/json");
    request.headers.emplace("accept", "text/event-stream");
    HttpExchange exchange = exchange_of(request);
    EXPECT_EQ(exchange.method, "POST");
    EXPECT_EQ(exchange.body, "{}");
    EXPECT_EQ(exchange.headers.at("mcp-session-id"), "abc");
    const std::string accept = exchange.headers.at("accept");
    EXPECT_NE(accept.find("application/json"), std::string::npos);
    EXPECT_NE(accept.find(", "), std::string::npos);
    EXPECT_NE(accept.find("text/event-stream"), std::string::npos);
}

// Issue 30: sessions are bounded per client; the client is its address unless the HTTP layer
// says better (the gateway: a checked token's name). An unchecked token is not an identity.
TEST(McpHttpMountTest, TheClientIsItsAddressUnlessTheMountNamesIt) {
    httplib::Request request;
    request.method = "POST";
    request.remote_addr = "192.0.2.7";
    request.headers.emplace("Authorization", "Bearer secret-0123456789abcdef");
    EXPECT_EQ(exchange_of(request).client, "address 192.0.2.7");
    const auto alice = [](const httplib::Request&) { return std::string("token alice"); };
    EXPECT_EQ(exchange_of(request, alice).client, "token alice");
}

TEST(McpHttpMountTest, TheAnswerKeepsItsStatusHeadersAndContentType) {
    HttpAnswer answer;
    answer.status = 200;
    answer.headers = {{"Content-Type", "text/event-stream"}, {"Mcp-Session-Id", "abc"}};
    answer.body = "event: message\ndata: {}\n\n";
    httplib::Response response;
    answer_into(answer, response);
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.get_header_value("Content-Type"), "text/event-stream");
    EXPECT_EQ(response.get_header_value("Mcp-Session-Id"), "abc");
    EXPECT_EQ(response.body, answer.body);

    httplib::Response accepted;
    answer_into(HttpAnswer{202, {}, "", false, {}}, accepted);
    EXPECT_EQ(accepted.status, 202);
    EXPECT_TRUE(accepted.body.empty());
    EXPECT_FALSE(accepted.has_header("Content-Type"));
}

TEST(McpHttpMountTest, AStreamedAnswerIsWrittenByItsFunctionThroughAChunkedProvider) {
    HttpAnswer answer;
    answer.headers = {{"Content-Type", "text/event-stream"}};
    answer.sse = true;
    bool client_there = true;
    answer.stream = [&](StreamSink& sink) {
        if (!sink.connected()) return false;
        return sink.write("event: message\ndata: 1\n\n") &&
               sink.write("event: message\ndata: 2\n\n");
    };
    httplib::Response response;
    answer_into(answer, response);
    ASSERT_TRUE(static_cast<bool>(response.content_provider_));
    EXPECT_TRUE(response.body.empty());
    EXPECT_EQ(response.get_header_value("X-Accel-Buffering"), "no");

    std::string written;
    bool done = false;
    httplib::DataSink sink;
    sink.write = [&](const char* data, std::size_t size) {
        written.append(data, size);
        return true;
    };
    sink.is_writable = [&] { return client_there; };
    sink.done = [&] { done = true; };
    EXPECT_TRUE(response.content_provider_(0, 0, sink));
    EXPECT_EQ(written, "event: message\ndata: 1\n\nevent: message\ndata: 2\n\n");
    EXPECT_TRUE(done);

    // A client gone: the provider fails, so httplib closes the connection.
    client_there = false;
    done = false;
    EXPECT_FALSE(response.content_provider_(0, 0, sink));
    EXPECT_FALSE(done);
}

}  // namespace
}  // namespace glassbox::gateway::mcp
