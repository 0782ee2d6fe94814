// The MCP transport: JSON-RPC errors, sessions and their expiry, headers, JSON and SSE answers.
#include "gateway/mcp/server.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <string>

#include "tests/unit/gateway/mcp/fake_backend.hpp"

namespace glassbox::gateway::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class McpServerTest : public ::testing::Test {
protected:
    McpServerTest() { make_server({}); }

    void make_server(Options options) {
        options.session_idle = 1000ms;
        options.clock = [this] { return now_; };
        server_ = std::make_unique<Server>(backend_, std::move(options));
    }

    HttpAnswer send(const std::string& method, const std::string& body,
                    std::map<std::string, std::string> headers = {}) {
        HttpExchange exchange{method, std::move(headers), body};
        exchange.headers.emplace("accept", "application/json, text/event-stream");
        exchange.headers.emplace("content-type", "application/json");
        return server_->handle(exchange);
    }

    static json initialize_body(const std::string& version = "2025-11-25") {
        return {{"jsonrpc", "2.0"},
                {"id", 0},
                {"method", "initialize"},
                {"params", {{"protocolVersion", version},
                            {"capabilities", json::object()},
                            {"clientInfo", {{"name", "unit"}, {"version", "1"}}}}}};
    }

    // A new session's id.
    std::string open(const std::string& version = "2025-11-25") {
        HttpAnswer a = send("POST", initialize_body(version).dump());
        EXPECT_EQ(a.status, 200) << a.body;
        return a.headers["Mcp-Session-Id"];
    }

    HttpAnswer call(const std::string& session, const json& body,
                    std::map<std::string, std::string> headers = {}) {
        headers.emplace("mcp-session-id", session);
        return send("POST", body.dump(), std::move(headers));
    }

    static json request(const std::string& method, json params = json::object(), json id = 1) {
        return {{"jsonrpc", "2.0"}, {"id", std::move(id)}, {"method", method}, {"params", std::move(params)}};
    }

    static int error_code(const HttpAnswer& a) { return json::parse(a.body)["error"]["code"].get<int>(); }

    testing::FakeBackend backend_;
    std::chrono::steady_clock::time_point now_{std::chrono::hours(1)};
    std::unique_ptr<Server> server_;
};

TEST_F(McpServerTest, InitializeOpensASessionWithARandomIdAndTheNegotiatedVersion) {
    HttpAnswer a = send("POST", initialize_body().dump());
    ASSERT_EQ(a.status, 200);
    json reply = json::parse(a.body);
    EXPECT_EQ(reply["id"], 0);
    EXPECT_EQ(reply["result"]["protocolVersion"], "2025-11-25");
    EXPECT_TRUE(reply["result"]["capabilities"].contains("tools"));
    EXPECT_TRUE(reply["result"]["capabilities"].contains("resources"));
    EXPECT_EQ(reply["result"]["serverInfo"]["name"], "glassbox");
    EXPECT_FALSE(reply["result"]["serverInfo"]["version"].get<std::string>().empty());
    const std::string first = a.headers["Mcp-Session-Id"];
    EXPECT_TRUE(std::regex_match(first, std::regex("[0-9a-f]{32}"))) << first;
    EXPECT_NE(open(), first);
    EXPECT_EQ(server_->live_sessions(), 2u);
}

TEST_F(McpServerTest, AVersionTheServerLacksIsAnsweredWithItsLatest) {
    json older = json::parse(send("POST", initialize_body("2025-06-18").dump()).body);
    EXPECT_EQ(older["result"]["protocolVersion"], "2025-06-18");
    json unknown = json::parse(send("POST", initialize_body("1999-01-01").dump()).body);
    EXPECT_EQ(unknown["result"]["protocolVersion"], "2025-11-25");
    json bad = initialize_body();
    bad["params"].erase("protocolVersion");
    HttpAnswer a = send("POST", bad.dump());
    EXPECT_EQ(error_code(a), kInvalidParams);
    EXPECT_TRUE(a.headers.find("Mcp-Session-Id") == a.headers.end());
}

TEST_F(McpServerTest, NotificationsAndResponsesAreAcceptedWithoutABody) {
    std::string s = open();
    HttpAnswer a = call(s, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    EXPECT_EQ(a.status, 202);
    EXPECT_TRUE(a.body.empty());
    EXPECT_EQ(call(s, {{"jsonrpc", "2.0"}, {"id", 7}, {"result", json::object()}}).status, 202);
}

TEST_F(McpServerTest, ABodyThatIsNotJsonIsAParseError) {
    std::string s = open();
    HttpAnswer a = send("POST", "{\"jsonrpc\": ", {{"mcp-session-id", s}});
    EXPECT_EQ(a.status, 400);
    json reply = json::parse(a.body);
    EXPECT_EQ(reply["error"]["code"], kParseError);
    EXPECT_TRUE(reply["id"].is_null());
}

TEST_F(McpServerTest, MalformedMessagesAreInvalidRequests) {
    std::string s = open();
    for (const json& body : {json{{"jsonrpc", "1.0"}, {"id", 1}, {"method", "ping"}},
                             json{{"jsonrpc", "2.0"}, {"id", nullptr}, {"method", "ping"}},
                             json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}, {"params", json::array()}},
                             json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", 5}},
                             json("ping")}) {
        HttpAnswer a = call(s, body);
        EXPECT_EQ(a.status, 400) << body.dump();
        EXPECT_EQ(error_code(a), kInvalidRequest) << body.dump();
    }
    // The server still serves the session.
    EXPECT_EQ(json::parse(call(s, request("ping")).body)["result"], json::object());
}

TEST_F(McpServerTest, UnknownMethodsAndToolsAreJsonRpcErrorsWithTheRequestId) {
    std::string s = open();
    HttpAnswer a = call(s, request("prompts/list", json::object(), "abc"));
    EXPECT_EQ(a.status, 200);
    json reply = json::parse(a.body);
    EXPECT_EQ(reply["id"], "abc");
    EXPECT_EQ(reply["error"]["code"], kMethodNotFound);
    EXPECT_EQ(error_code(call(s, request("tools/call", {{"name", "no_such_tool"}}))), kInvalidParams);
    EXPECT_EQ(error_code(call(s, request("tools/call", json::object()))), kInvalidParams);
    EXPECT_TRUE(backend_.calls.empty());
}

TEST_F(McpServerTest, ARequestWithoutASessionIs400AndAnUnknownOneIs404) {
    EXPECT_EQ(send("POST", request("ping").dump()).status, 400);
    HttpAnswer a = call("0123456789abcdef0123456789abcdef", request("ping"));
    EXPECT_EQ(a.status, 404);
    EXPECT_EQ(error_code(a), kInvalidRequest);
}

TEST_F(McpServerTest, AnIdleSessionExpiresAndTheClientCanStartAnother) {
    std::string s = open();
    now_ += 999ms;
    EXPECT_EQ(call(s, request("ping")).status, 200);  // use restarts the idle clock
    now_ += 999ms;
    EXPECT_EQ(call(s, request("ping")).status, 200);
    now_ += 1000ms;
    EXPECT_EQ(call(s, request("ping")).status, 404);
    EXPECT_EQ(server_->live_sessions(), 0u);
    std::string again = open();
    EXPECT_NE(again, s);
    EXPECT_EQ(call(again, request("ping")).status, 200);
}

TEST_F(McpServerTest, DeleteEndsASession) {
    std::string s = open();
    EXPECT_EQ(send("DELETE", "", {{"mcp-session-id", s}}).status, 200);
    EXPECT_EQ(call(s, request("ping")).status, 404);
    EXPECT_EQ(send("DELETE", "", {{"mcp-session-id", s}}).status, 404);
    EXPECT_EQ(send("DELETE", "").status, 400);
}

TEST_F(McpServerTest, TheProtocolVersionHeaderMustBeTheSessionsOwn) {
    std::string s = open();
    EXPECT_EQ(call(s, request("ping"), {{"mcp-protocol-version", "2025-11-25"}}).status, 200);
    EXPECT_EQ(call(s, request("ping")).status, 200);  // absent: the client predates the header
    EXPECT_EQ(call(s, request("ping"), {{"mcp-protocol-version", "2099-01-01"}}).status, 400);
    EXPECT_EQ(call(s, request("ping"), {{"mcp-protocol-version", "2025-06-18"}}).status, 400);
}

TEST_F(McpServerTest, AForeignOriginIsForbiddenAndLoopbackOnesAreNot) {
    Options options;
    options.allowed_origins = {"https://app.example.org"};
    make_server(options);
    auto with_origin = [&](const std::string& origin) {
        return send("POST", initialize_body().dump(), {{"origin", origin}}).status;
    };
    EXPECT_EQ(with_origin("http://localhost:5173"), 200);
    EXPECT_EQ(with_origin("http://127.0.0.1"), 200);
    EXPECT_EQ(with_origin("https://[::1]:8080"), 200);
    EXPECT_EQ(with_origin("https://APP.example.org"), 200);
    EXPECT_EQ(with_origin("http://evil.example"), 403);
    EXPECT_EQ(with_origin("http://localhost.evil.example"), 403);
    EXPECT_EQ(with_origin("http://localhost:80x"), 403);
    EXPECT_EQ(with_origin("null"), 403);
    EXPECT_EQ(send("DELETE", "", {{"origin", "http://evil.example"}}).status, 403);
}

TEST_F(McpServerTest, GetIsNotAllowed) {
    HttpAnswer a = send("GET", "");
    EXPECT_EQ(a.status, 405);
    EXPECT_EQ(a.headers["Allow"], "POST, DELETE, OPTIONS");
}

TEST_F(McpServerTest, AnAllowedBrowserOriginMayReadTheAnswerAndTheSessionId) {
    HttpAnswer preflight = send("OPTIONS", "", {{"origin", "http://localhost:6274"}});
    EXPECT_EQ(preflight.status, 204);
    EXPECT_NE(preflight.headers["Access-Control-Allow-Headers"].find("Mcp-Session-Id"), std::string::npos);
    HttpAnswer a = send("POST", initialize_body().dump(), {{"origin", "http://localhost:6274"}});
    EXPECT_EQ(a.headers["Access-Control-Allow-Origin"], "http://localhost:6274");
    EXPECT_EQ(a.headers["Access-Control-Expose-Headers"], "Mcp-Session-Id");
    EXPECT_TRUE(send("POST", initialize_body().dump()).headers.count("Access-Control-Allow-Origin") == 0);
    EXPECT_EQ(send("OPTIONS", "", {{"origin", "http://evil.example"}}).status, 403);
}

TEST_F(McpServerTest, TheAnswerFollowsTheClientsAccept) {
    std::string s = open();
    HttpExchange only_sse{"POST",
                          {{"accept", "text/event-stream"}, {"content-type", "application/json"},
                           {"mcp-session-id", s}},
                          request("ping", json::object(), 42).dump()};
    HttpAnswer a = server_->handle(only_sse);
    ASSERT_EQ(a.status, 200);
    EXPECT_TRUE(a.sse);
    EXPECT_EQ(a.headers["Content-Type"], "text/event-stream");
    std::smatch m;
    ASSERT_TRUE(std::regex_match(a.body, m, std::regex("event: message\ndata: (.*)\n\n")));
    EXPECT_EQ(json::parse(m[1].str())["id"], 42);

    only_sse.headers["accept"] = "text/html";
    EXPECT_EQ(server_->handle(only_sse).status, 406);
    only_sse.headers["accept"] = "application/json";
    only_sse.headers["content-type"] = "text/plain";
    EXPECT_EQ(server_->handle(only_sse).status, 415);
}

TEST_F(McpServerTest, PreferSseAnswersAStreamWhenTheClientTakesBoth) {
    Options options;
    options.prefer_sse = true;
    make_server(options);
    HttpAnswer init = send("POST", initialize_body().dump());
    EXPECT_TRUE(init.sse);
    EXPECT_FALSE(init.headers["Mcp-Session-Id"].empty());
    HttpAnswer a = call(init.headers["Mcp-Session-Id"], request("tools/list"));
    EXPECT_TRUE(a.sse);
    EXPECT_NE(a.body.find("\"resolve_intent\""), std::string::npos);
}

TEST_F(McpServerTest, ABodyOverTheLimitIs413) {
    Options options;
    options.max_body_bytes = 256;
    make_server(options);
    std::string s = open();
    json big = request("ping", {{"pad", std::string(300, 'x')}});
    EXPECT_EQ(call(s, big).status, 413);
}

TEST_F(McpServerTest, BatchesOnlyInTheVersionThatHasThem) {
    std::string modern = open();
    json batch = json::array({request("ping", json::object(), 1),
                              {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                              request("tools/list", json::object(), 2),
                              {{"jsonrpc", "2.0"}, {"id", 3}}});
    HttpAnswer refused = call(modern, batch);
    EXPECT_EQ(refused.status, 400);
    EXPECT_EQ(error_code(refused), kInvalidRequest);

    std::string old = open("2025-03-26");
    HttpAnswer a = call(old, batch, {{"mcp-protocol-version", "2025-03-26"}});
    ASSERT_EQ(a.status, 200) << a.body;
    json replies = json::parse(a.body);
    ASSERT_TRUE(replies.is_array());
    ASSERT_EQ(replies.size(), 3u);  // ping, tools/list, and the malformed last one
    EXPECT_EQ(replies[0]["id"], 1);
    EXPECT_EQ(replies[1]["result"]["tools"].size(), 4u);
    EXPECT_EQ(replies[2]["error"]["code"], kInvalidRequest);
    EXPECT_EQ(replies[2]["id"], 3);
    EXPECT_EQ(call(old, json::array()).status, 400);
}

TEST_F(McpServerTest, SessionsAreBounded) {
    Options options;
    options.max_sessions = 2;
    make_server(options);
    open();
    std::string second = open();
    EXPECT_EQ(send("POST", initialize_body().dump()).status, 503);
    EXPECT_EQ(send("DELETE", "", {{"mcp-session-id", second}}).status, 200);
    EXPECT_FALSE(open().empty());
}

TEST_F(McpServerTest, ABackendThatThrowsFailsOneRequestNotTheServer) {
    std::string s = open();
    backend_.throws = true;
    json reply = json::parse(call(s, request("tools/call", {{"name", "list_traces"}, {"arguments", json::object()}})).body);
    EXPECT_EQ(reply["error"]["code"], kInternalError);
    backend_.throws = false;
    reply = json::parse(call(s, request("tools/call", {{"name", "list_traces"}, {"arguments", json::object()}})).body);
    EXPECT_FALSE(reply["result"]["isError"].get<bool>());
}

}  // namespace
}  // namespace glassbox::gateway::mcp
