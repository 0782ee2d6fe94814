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
    answer_into(HttpAnswer{202, {}, "", false}, accepted);
    EXPECT_EQ(accepted.status, 202);
    EXPECT_TRUE(accepted.body.empty());
    EXPECT_FALSE(accepted.has_header("Content-Type"));
}

}  // namespace
}  // namespace glassbox::gateway::mcp
