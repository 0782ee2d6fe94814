// The MCP transport: JSON-RPC errors, sessions and their expiry, headers, JSON and SSE answers.
#include "gateway/mcp/server.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <string>
#include <utility>

#include "tests/unit/gateway/mcp/fake_backend.hpp"

namespace glassbox::gateway::mcp {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class McpServerTest : public ::testing::Test {
protected:
    McpServerTest() { make_server({}); }

    void make_server(Options options, std::chrono::milliseconds idle = 1000ms) {
        options.session_idle = idle;
        options.clock = [this] { return now_; };
        server_ = std::make_unique<Server>(backend_, std::move(options));
    }

    // A server whose sessions expire after 60 s idle, `limit` of them at most: in all
    // (&Options::max_sessions) or of one client (&Options::max_sessions_per_client).
    void make_bounded_server(std::size_t Options::*bound, std::size_t limit) {
        Options options;
        options.*bound = limit;
        make_server(std::move(options), 60s);
    }

    HttpAnswer send(const std::string& method, const std::string& body,
                    std::map<std::string, std::string> headers = {}) {
        HttpExchange exchange{method, std::move(headers), body, client_};
        exchange.headers.emplace("accept", "application/json, text/event-stream");
        exchange.headers.emplace("content-type", "application/json");
        return server_->handle(exchange);
    }

    static json initialize_body(const std::string& version = "2025-11-25") {
        return {{"jsonrpc", "2.0"},
                {"id", 0},
                {"method", "initialize"},
                {"params",
                 {{"protocolVersion", version},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "unit"}, {"version", "1"}}}}}};
    }

    // A new session's id.
    std::string open(const std::string& version = "2025-11-25") {
        HttpAnswer a = send("POST", initialize_body(version).dump());
        EXPECT_EQ(a.status, 200) << a.body;
        return a.headers["Mcp-Session-Id"];
    }

    // A new session's id, opened by `client` (who sends from now on).
    std::string open_as(const std::string& client) {
        client_ = client;
        return open();
    }

    HttpAnswer call(const std::string& session, const json& body,
                    std::map<std::string, std::string> headers = {}) {
        headers.emplace("mcp-session-id", session);
        return send("POST", body.dump(), std::move(headers));
    }

    static json request(const std::string& method, json params = json::object(), json id = 1) {
        return {{"jsonrpc", "2.0"},
                {"id", std::move(id)},
                {"method", method},
                {"params", std::move(params)}};
    }

    static int error_code(const HttpAnswer& a) {
        return json::parse(a.body)["error"]["code"].get<int>();
    }

    // An HTTP-level refusal as docs/mcp.md §2 has it: the status, a JSON-RPC error without an id.
    static void expect_refusal(const HttpAnswer& a, int status) {
        EXPECT_EQ(a.status, status) << a.body;
        EXPECT_EQ(a.headers.count("Mcp-Session-Id"), 0u);
        const json reply = json::parse(a.body, nullptr, false);
        ASSERT_TRUE(reply.is_object()) << a.body;
        EXPECT_EQ(reply["jsonrpc"], "2.0");
        EXPECT_TRUE(reply.contains("id") && reply["id"].is_null()) << a.body;
        EXPECT_EQ(reply["error"]["code"], kInvalidRequest) << a.body;
        EXPECT_FALSE(reply["error"].value("message", "").empty());
    }

    std::string client_ = "address 127.0.0.1";  // HttpExchange::client of what send() sends
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
    for (const json& body :
         {json{{"jsonrpc", "1.0"}, {"id", 1}, {"method", "ping"}},
          json{{"jsonrpc", "2.0"}, {"id", nullptr}, {"method", "ping"}},
          json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}, {"params", json::array()}},
          json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", 5}}, json("ping")}) {
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
    EXPECT_EQ(error_code(call(s, request("tools/call", {{"name", "no_such_tool"}}))),
              kInvalidParams);
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

// Issue 30: PUT, PATCH, … are 405 with Allow and a JSON-RPC body, as GET is.
TEST_F(McpServerTest, EveryMethodButPostDeleteAndOptionsIs405WithAJsonRpcBody) {
    for (const char* method : {"GET", "HEAD", "PUT", "PATCH", "TRACE"}) {
        HttpAnswer a = send(method, initialize_body().dump());
        expect_refusal(a, 405);
        EXPECT_EQ(a.headers["Allow"], kAllowedMethods) << method;
    }
    EXPECT_EQ(server_->live_sessions(), 0u);
}

// Issue 30: initialize in a session opens none (docs/mcp.md §7): 400, -32600.
TEST_F(McpServerTest, InitializeCarryingASessionIdIsRefusedAndOpensNone) {
    const std::string s = open();
    expect_refusal(send("POST", initialize_body().dump(), {{"mcp-session-id", s}}), 400);
    const std::string unknown = "0123456789abcdef0123456789abcdef";
    expect_refusal(send("POST", initialize_body().dump(), {{"mcp-session-id", unknown}}), 400);
    EXPECT_EQ(server_->live_sessions(), 1u);
    EXPECT_EQ(call(s, request("ping")).status, 200) << "the session goes on";
}

TEST_F(McpServerTest, AnAllowedBrowserOriginMayReadTheAnswerAndTheSessionId) {
    HttpAnswer preflight = send("OPTIONS", "", {{"origin", "http://localhost:6274"}});
    EXPECT_EQ(preflight.status, 204);
    EXPECT_NE(preflight.headers["Access-Control-Allow-Headers"].find("Mcp-Session-Id"),
              std::string::npos);
    HttpAnswer a = send("POST", initialize_body().dump(), {{"origin", "http://localhost:6274"}});
    EXPECT_EQ(a.headers["Access-Control-Allow-Origin"], "http://localhost:6274");
    EXPECT_EQ(a.headers["Access-Control-Expose-Headers"], "Mcp-Session-Id");
    EXPECT_TRUE(
        send("POST", initialize_body().dump()).headers.count("Access-Control-Allow-Origin") == 0);
    EXPECT_EQ(send("OPTIONS", "", {{"origin", "http://evil.example"}}).status, 403);
}

TEST_F(McpServerTest, TheAnswerFollowsTheClientsAccept) {
    std::string s = open();
    HttpExchange only_sse{"POST",
                          {{"accept", "text/event-stream"},
                           {"content-type", "application/json"},
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
    EXPECT_EQ(replies[1]["result"]["tools"].size(), 6u);
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

// Issue 30: a full table answers as documented (503, -32600, id null) and says when the first
// idle session expires.
TEST_F(McpServerTest, AFullTableIs503WithoutAnIdAndRetryAfterTheFirstExpiry) {
    make_bounded_server(&Options::max_sessions, 2);
    const std::string first = open_as("address 10.0.0.1");
    now_ += 10s;
    open_as("address 10.0.0.2");
    now_ += 5s;
    client_ = "address 10.0.0.3";
    HttpAnswer full = send("POST", initialize_body().dump());
    expect_refusal(full, 503);
    EXPECT_EQ(full.headers["Retry-After"], "45")
        << "the first expires 60 s after its use, 15 s ago";
    // Used now, the first expires last: the second's expiry is the next.
    EXPECT_EQ(call(first, request("ping")).status, 200);
    EXPECT_EQ(send("POST", initialize_body().dump()).headers["Retry-After"], "55");
    now_ += 55s;
    EXPECT_FALSE(open().empty()) << "the second session expired, its slot is free";
}

// Issue 30: one client (one address, one token) cannot take every slot of the table.
TEST_F(McpServerTest, OneClientCannotTakeEverySlot) {
    make_bounded_server(&Options::max_sessions_per_client, 2);
    const std::string first = open_as("address 10.0.0.1");
    now_ += 20s;
    open();
    HttpAnswer refused = send("POST", initialize_body().dump());
    expect_refusal(refused, 429);
    EXPECT_EQ(refused.headers["Retry-After"], "40") << "its own first session expires in 40 s";
    const std::string message = json::parse(refused.body)["error"]["message"];
    EXPECT_NE(message.find("2 live MCP sessions"), std::string::npos) << message;
    // Others are still served.
    EXPECT_FALSE(open_as("address 10.0.0.2").empty());
    EXPECT_FALSE(open_as("token alice").empty());
    // The client ends one of its own and may open another.
    client_ = "address 10.0.0.1";
    EXPECT_EQ(send("DELETE", "", {{"mcp-session-id", first}}).status, 200);
    EXPECT_FALSE(open().empty());
    EXPECT_EQ(send("POST", initialize_body().dump()).status, 429);
    EXPECT_EQ(server_->live_sessions(), 4u);
}

TEST_F(McpServerTest, TheDefaultBoundsAreTheDocumentedOnes) {
    const Options defaults;
    EXPECT_EQ(defaults.max_sessions, 1024u);
    EXPECT_EQ(defaults.max_sessions_per_client, 16u);
    EXPECT_EQ(defaults.session_idle, 30min);
    EXPECT_EQ(kMaxClientNameBytes, 256u);
}

TEST_F(McpServerTest, ABackendThatThrowsFailsOneRequestNotTheServer) {
    std::string s = open();
    backend_.throws = true;
    json reply = json::parse(
        call(s, request("tools/call", {{"name", "list_traces"}, {"arguments", json::object()}}))
            .body);
    EXPECT_EQ(reply["error"]["code"], kInternalError);
    backend_.throws = false;
    reply = json::parse(
        call(s, request("tools/call", {{"name", "list_traces"}, {"arguments", json::object()}}))
            .body);
    EXPECT_FALSE(reply["result"]["isError"].get<bool>());
}

// Cancellation and progress (docs/mcp.md §6): a streamed tools/call, run with a sink that keeps
// what it is sent.
class McpCallTest : public McpServerTest {
protected:
    struct Streamed {
        bool ok = false;
        std::string text;
        std::vector<json> messages;  // the data of each `event: message`
    };

    Streamed run(const HttpAnswer& answer) {
        Streamed out;
        EXPECT_TRUE(answer.sse);
        EXPECT_TRUE(answer.body.empty());
        if (!answer.stream) {
            ADD_FAILURE() << "no stream";
            return out;
        }
        StreamSink sink{[&](std::string_view t) {
                            out.text += t;
                            return client_there_;
                        },
                        [&] { return client_there_; }};
        out.ok = answer.stream(sink);
        static const std::regex kEvent("event: message\ndata: ([^\n]*)\n\n");
        for (std::sregex_iterator it(out.text.begin(), out.text.end(), kEvent), end; it != end;
             ++it) {
            out.messages.push_back(json::parse((*it)[1].str()));
        }
        return out;
    }

    static json ask(json id, json meta = nullptr) {
        json params = {{"name", "resolve_intent"},
                       {"arguments", {{"question", "Who founded the yard?"}}}};
        if (!meta.is_null()) params["_meta"] = std::move(meta);
        return request("tools/call", std::move(params), std::move(id));
    }

    static json cancel(json id) {
        return {{"jsonrpc", "2.0"},
                {"method", "notifications/cancelled"},
                {"params", {{"requestId", std::move(id)}, {"reason", "the user gave up"}}}};
    }

    bool client_there_ = true;
};

TEST_F(McpCallTest, ACallWithAProgressTokenStreamsOneNotificationPerStepThenTheResult) {
    backend_.steps = {"query route decided: graph-rag", "graph-rag exploration: 42 edges",
                      "graph-rag synthesis"};
    backend_.answer_ = {
        {"response", "Oskar [1]"}, {"answer", "Oskar"}, {"session", "urn:glassbox:a:question"}};
    std::string s = open();
    // The client takes both and the server prefers JSON: asking for progress asks for a stream.
    HttpAnswer a = call(s, ask(7, {{"progressToken", "tok-7"}}));
    EXPECT_EQ(a.headers["Content-Type"], "text/event-stream");
    EXPECT_EQ(server_->calls_in_flight(), 1u) << "registered before the stream runs";
    Streamed out = run(a);
    EXPECT_TRUE(out.ok);
    ASSERT_EQ(out.messages.size(), 4u) << out.text;
    for (int i = 0; i < 3; ++i) {
        const json& n = out.messages[static_cast<std::size_t>(i)];
        EXPECT_EQ(n["method"], "notifications/progress");
        EXPECT_FALSE(n.contains("id"));
        EXPECT_EQ(n["params"]["progressToken"], "tok-7");
        EXPECT_EQ(n["params"]["progress"], i + 1);
        EXPECT_EQ(n["params"]["message"], backend_.steps[static_cast<std::size_t>(i)]);
        EXPECT_FALSE(n["params"].contains("total"));
    }
    EXPECT_EQ(out.messages[3]["id"], 7);
    EXPECT_EQ(out.messages[3]["result"]["structuredContent"]["answer"], "Oskar");
    EXPECT_EQ(out.text.find("id: "), std::string::npos) << "no event ids: nothing to resume";
    a = HttpAnswer{};
    EXPECT_EQ(server_->calls_in_flight(), 0u);
}

TEST_F(McpCallTest, NoProgressWithoutATokenOrWithAJsonAnswer) {
    backend_.steps = {"query route decided: graph-rag"};
    std::string s = open();
    HttpAnswer plain = call(s, ask(1));
    EXPECT_FALSE(plain.sse);
    EXPECT_FALSE(plain.stream);
    EXPECT_EQ(json::parse(plain.body)["id"], 1);

    HttpAnswer json_only =
        call(s, ask(2, {{"progressToken", 2}}), {{"accept", "application/json"}});
    ASSERT_FALSE(json_only.sse);
    EXPECT_EQ(json::parse(json_only.body)["result"]["isError"], false);

    // A stream without a token (the server prefers SSE): only the response.
    Options options;
    options.prefer_sse = true;
    make_server(options);
    s = open();
    Streamed out = run(call(s, ask(3)));
    ASSERT_EQ(out.messages.size(), 1u) << out.text;
    EXPECT_EQ(out.messages[0]["id"], 3);
    EXPECT_EQ(server_->calls_in_flight(), 0u);
}

TEST_F(McpCallTest, ACancelledNotificationStopsTheCallAndItsStreamEndsWithoutAResponse) {
    backend_.steps = {"query route decided: graph-rag"};
    std::string s = open();
    backend_.during = [&](RunControl& control) {
        EXPECT_FALSE(control.cancelled());
        EXPECT_EQ(call(s, cancel(7)).status, 202);
        EXPECT_TRUE(control.cancelled());
        control.progress("not sent: the call is cancelled");
    };
    Streamed out = run(call(s, ask(7, {{"progressToken", 7}})));
    EXPECT_TRUE(out.ok) << "the client is still there: the stream ends normally";
    EXPECT_TRUE(backend_.saw_cancel);
    ASSERT_EQ(out.messages.size(), 1u) << out.text;
    EXPECT_EQ(out.messages[0]["method"], "notifications/progress");
    // The session goes on; the id is free again.
    backend_.during = nullptr;
    backend_.saw_cancel = false;
    Streamed again = run(call(s, ask(7, {{"progressToken", 7}})));
    ASSERT_EQ(again.messages.size(), 2u);
    EXPECT_EQ(again.messages[1]["id"], 7);
}

TEST_F(McpCallTest, ACancelledJsonCallIsAnsweredAcceptedWithoutABody) {
    std::string s = open();
    backend_.during = [&](RunControl&) { EXPECT_EQ(call(s, cancel("r-1")).status, 202); };
    HttpAnswer a = call(s, ask("r-1"));
    EXPECT_EQ(a.status, 202);
    EXPECT_TRUE(a.body.empty());
    EXPECT_TRUE(backend_.saw_cancel);
    EXPECT_EQ(server_->calls_in_flight(), 0u);
}

TEST_F(McpCallTest, ACancellationOfAnUnknownFinishedOrOtherSessionsRequestIsIgnored) {
    std::string s = open();
    std::string other = open();
    EXPECT_EQ(call(s, cancel(99)).status, 202);  // never sent
    EXPECT_EQ(json::parse(call(s, ask(1)).body)["id"], 1);
    EXPECT_EQ(call(s, cancel(1)).status, 202);  // finished
    EXPECT_EQ(call(s, {{"jsonrpc", "2.0"},
                       {"method", "notifications/cancelled"},
                       {"params", {{"reason", "x"}}}})
                  .status,
              202);
    backend_.during = [&](RunControl& control) {
        EXPECT_EQ(call(other, cancel(2)).status, 202);  // the same id in another session
        EXPECT_EQ(call(s, cancel("2")).status, 202);    // a string is another id than the integer
        EXPECT_FALSE(control.cancelled());
    };
    HttpAnswer a = call(s, ask(2));
    EXPECT_EQ(a.status, 200);
    EXPECT_FALSE(backend_.saw_cancel);
    EXPECT_EQ(json::parse(a.body)["result"]["isError"], false);
}

TEST_F(McpCallTest, DeletingTheSessionCancelsItsCalls) {
    std::string s = open();
    backend_.during = [&](RunControl& control) {
        EXPECT_EQ(send("DELETE", "", {{"mcp-session-id", s}}).status, 200);
        EXPECT_TRUE(control.cancelled());
    };
    Streamed out = run(call(s, ask(4, {{"progressToken", 4}})));
    EXPECT_TRUE(backend_.saw_cancel);
    EXPECT_TRUE(out.messages.empty()) << out.text;
    EXPECT_EQ(server_->calls_in_flight(), 0u);
    EXPECT_EQ(call(s, request("ping")).status, 404);
}

TEST_F(McpCallTest, AStreamWhoseClientLeftCancelsItsCall) {
    std::string s = open();
    backend_.during = [&](RunControl& control) {
        EXPECT_FALSE(control.cancelled());
        client_there_ = false;
        EXPECT_TRUE(control.cancelled());
    };
    Streamed out = run(call(s, ask(5, {{"progressToken", 5}})));
    EXPECT_FALSE(out.ok) << "the HTTP layer closes the connection";
    EXPECT_TRUE(backend_.saw_cancel);
}

TEST_F(McpCallTest, AnIdInFlightCannotBeReusedInItsSession) {
    std::string s = open();
    json reused;
    bool inner = false;
    backend_.during = [&](RunControl&) {
        if (std::exchange(inner, true)) return;  // the inner call must not recurse
        reused = json::parse(call(s, ask(6)).body);
    };
    EXPECT_EQ(json::parse(call(s, ask(6)).body)["result"]["isError"], false);
    EXPECT_EQ(reused["id"], 6);
    EXPECT_EQ(reused["error"]["code"], kInvalidRequest);
}

TEST_F(McpCallTest, ASessionWithACallInFlightDoesNotExpire) {
    std::string s = open();
    backend_.during = [&](RunControl&) {
        now_ += 5s;  // far beyond the idle timeout (1 s)
        EXPECT_EQ(server_->live_sessions(), 1u);
    };
    EXPECT_EQ(call(s, ask(1)).status, 200);
    // The idle clock restarted when the call ended.
    now_ += 900ms;
    EXPECT_EQ(call(s, request("ping")).status, 200);
    now_ += 1000ms;
    EXPECT_EQ(call(s, request("ping")).status, 404);
}

TEST_F(McpCallTest, AQuietStreamWritesKeepAlives) {
    Options options;
    options.keep_alive = 1000ms;
    make_server(options);
    std::string s = open();
    backend_.during = [&](RunControl& control) {
        EXPECT_FALSE(control.cancelled());
        now_ += 1000ms;
        EXPECT_FALSE(control.cancelled());
        EXPECT_FALSE(control.cancelled());  // just written: not due again
    };
    Streamed out = run(call(s, ask(8, {{"progressToken", 8}})));
    EXPECT_EQ(out.text.rfind(": keep-alive\n\n", 0), 0u) << out.text;
    EXPECT_EQ(out.text.find(": keep-alive", 1), std::string::npos) << out.text;
    ASSERT_EQ(out.messages.size(), 1u);
}

TEST_F(McpCallTest, ACallInABatchIsCancellableToo) {
    std::string s = open("2025-03-26");
    backend_.during = [&](RunControl&) {
        EXPECT_EQ(call(s, cancel(2), {{"mcp-protocol-version", "2025-03-26"}}).status, 202);
    };
    HttpAnswer a = call(s, json::array({request("ping", json::object(), 1), ask(2)}),
                        {{"mcp-protocol-version", "2025-03-26"}});
    ASSERT_EQ(a.status, 200) << a.body;
    json replies = json::parse(a.body);
    ASSERT_EQ(replies.size(), 1u) << "the cancelled call has no response";
    EXPECT_EQ(replies[0]["id"], 1);
}

}  // namespace
}  // namespace glassbox::gateway::mcp
