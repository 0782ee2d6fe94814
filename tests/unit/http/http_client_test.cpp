// HttpClient against the fake OpenAI server: success, retries, Retry-After, typed errors, SSE,
// deadlines.
#include "http/http_client.hpp"

#include <atomic>
#include <chrono>
#include <ctime>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/closed_port.hpp"
#include "tests/support/fake_openai_server.hpp"
#include "tests/support/wait_until.hpp"

namespace glassbox::http {
namespace {

using namespace std::chrono_literals;
using base::ErrorType;
using nlohmann::json;
using testing::FakeOpenAiServer;

// Quick retries: a test waits milliseconds, not seconds, for a client to give up.
HttpOptions fast_options(int max_retries = 3) {
    HttpOptions o;
    o.timeout = 10s;
    o.initial_backoff = 10ms;
    o.max_backoff = 50ms;
    o.max_retries = max_retries;
    return o;
}

json embeddings_body() { return {{"model", "m"}, {"input", json::array({"alpha", "beta"})}}; }

json chat_body(const std::string& text, bool stream) {
    return {{"model", "chat"},
            {"stream", stream},
            {"messages", json::array({{{"role", "user"}, {"content", text}}})}};
}

long long elapsed_ms(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 since)
        .count();
}

class HttpClientTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(server.ok()) << "could not start " << GLASSBOX_FAKE_OPENAI;
    }
    FakeOpenAiServer server;
};

TEST_F(HttpClientTest, PostJsonReturnsStatusHeadersAndBody) {
    HttpClient client(fast_options());
    auto answer =
        client.post_json(server.url("/v1/embeddings"), embeddings_body(), {{"X-Trace", "t-1"}});
    ASSERT_TRUE(answer) << answer.error().describe();
    EXPECT_EQ(answer->status, 200);
    EXPECT_EQ(answer->header("content-type"), "application/json");
    EXPECT_EQ(answer->header("Content-Type"), "application/json");
    const auto body = json::parse(answer->body);
    ASSERT_EQ(body["data"].size(), 2u);
    const auto sent = server.requests_to("/v1/embeddings");
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0]["headers"]["X-Trace"], "t-1");
    EXPECT_EQ(sent[0]["headers"]["Content-Type"], "application/json");
    EXPECT_EQ(sent[0]["body"], embeddings_body());
}

TEST_F(HttpClientTest, RetriesAfter429WaitingRetryAfter) {
    ASSERT_TRUE(server.control({{"fail_first", 1}, {"fail_status", 429}, {"retry_after", "1"}}));
    HttpClient client(fast_options());
    const auto start = std::chrono::steady_clock::now();
    auto answer = client.post_json(server.url("/v1/embeddings"), embeddings_body());
    const auto took = elapsed_ms(start);
    ASSERT_TRUE(answer) << answer.error().describe();
    // The wait is this test's subject: a lower bound, which load can only make easier to meet.
    EXPECT_GE(took, 1000) << "Retry-After: 1 must be honoured, not the 10 ms backoff";
    EXPECT_EQ(server.requests_to("/v1/embeddings").size(), 2u);
}

TEST_F(HttpClientTest, RetryAfterAsAnHttpDateIsHonoured) {
    // Two seconds ahead, in whole seconds (IMF-fixdate): the wait is at least one second.
    const std::time_t when =
        std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()) + 2;
    std::tm utc{};
    gmtime_r(&when, &utc);
    char date[64];
    ASSERT_GT(std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &utc), 0u);
    ASSERT_TRUE(server.control({{"fail_first", 1}, {"fail_status", 503}, {"retry_after", date}}));
    HttpClient client(fast_options());
    const auto start = std::chrono::steady_clock::now();
    auto answer = client.post_json(server.url("/v1/embeddings"), embeddings_body());
    ASSERT_TRUE(answer) << answer.error().describe();
    // The wait is this test's subject: a lower bound, which load can only make easier to meet.
    EXPECT_GE(elapsed_ms(start), 1000) << "Retry-After: " << date;
    EXPECT_EQ(server.requests_to("/v1/embeddings").size(), 2u);
}

TEST_F(HttpClientTest, RetriesAfter500ThenSucceeds) {
    ASSERT_TRUE(server.control({{"fail_first", 2}, {"fail_status", 500}}));
    HttpClient client(fast_options());
    auto answer = client.post_json(server.url("/v1/embeddings"), embeddings_body());
    ASSERT_TRUE(answer) << answer.error().describe();
    EXPECT_EQ(answer->status, 200);
    EXPECT_EQ(server.requests_to("/v1/embeddings").size(), 3u);
}

TEST_F(HttpClientTest, ExhaustedRetriesAreAnUpstreamError) {
    ASSERT_TRUE(server.control({{"fail_first", 10}, {"fail_status", 503}}));
    HttpClient client(fast_options(2));
    auto answer = client.post_json(server.url("/v1/embeddings"), embeddings_body());
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, ErrorType::kUpstreamError);
    EXPECT_NE(answer.error().message.find("HTTP 503 from " + server.url("/v1/embeddings") +
                                          ": fake failure with HTTP 503"),
              std::string::npos)
        << answer.error().message;
    EXPECT_EQ(server.requests_to("/v1/embeddings").size(), 3u);
}

TEST_F(HttpClientTest, DoesNotRetry401OrOther4xx) {
    ASSERT_TRUE(server.control({{"api_key", "sk-right"}}));
    HttpClient client(fast_options());
    auto unauthorised = client.post_json(server.url("/v1/embeddings"), embeddings_body(),
                                         {{"Authorization", "Bearer sk-wrong"}});
    ASSERT_FALSE(unauthorised);
    EXPECT_EQ(unauthorised.error().type, ErrorType::kUpstreamError);
    EXPECT_EQ(unauthorised.error().message,
              "HTTP 401 from " + server.url("/v1/embeddings") + ": Incorrect API key provided.");
    EXPECT_EQ(unauthorised.error().message.find("sk-wrong"), std::string::npos);
    EXPECT_EQ(server.requests_to("/v1/embeddings").size(), 1u);

    ASSERT_TRUE(server.control({{"api_key", nullptr}, {"fail_first", 1}, {"fail_status", 400}}));
    auto bad = client.post_json(server.url("/v1/embeddings"), embeddings_body());
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("HTTP 400"), std::string::npos);
    EXPECT_EQ(server.requests_to("/v1/embeddings").size(), 2u) << "one more request, no retry";
}

TEST_F(HttpClientTest, SlowAnswerIsATimeout) {
    // The server is slow on purpose (its subject): without the timeout the call would succeed.
    ASSERT_TRUE(server.control({{"delay_ms", 3000}}));
    auto options = fast_options();
    options.timeout = 300ms;
    HttpClient client(options);
    auto answer = client.post_json(server.url("/v1/embeddings"), embeddings_body());
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, ErrorType::kTimeout) << answer.error().describe();
}

TEST_F(HttpClientTest, CallerDeadlineBoundsRetries) {
    ASSERT_TRUE(server.control({{"fail_first", 1000}, {"fail_status", 500}}));
    auto options = fast_options();
    options.max_retries = 1000;
    options.initial_backoff = 50ms;
    options.max_backoff = 100ms;
    HttpClient client(options);
    const auto start = std::chrono::steady_clock::now();
    CallOptions call;
    call.deadline = start + 600ms;
    auto answer = client.post_json(server.url("/v1/embeddings"), embeddings_body(), {}, call);
    ASSERT_FALSE(answer);
    // Without the deadline it would end after 3 retries with the HTTP 500, not a timeout.
    EXPECT_EQ(answer.error().type, ErrorType::kTimeout) << answer.error().describe();
    EXPECT_GE(server.requests_to("/v1/embeddings").size(), 2u) << "it did retry until the deadline";
}

TEST_F(HttpClientTest, RetryAfterBeyondTheDeadlineFailsAtOnce) {
    ASSERT_TRUE(server.control({{"fail_first", 1}, {"fail_status", 429}, {"retry_after", "30"}}));
    HttpClient client(fast_options());
    const auto start = std::chrono::steady_clock::now();
    CallOptions call;
    call.deadline = start + 2s;
    auto answer = client.post_json(server.url("/v1/embeddings"), embeddings_body(), {}, call);
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, ErrorType::kTimeout);
    EXPECT_NE(answer.error().message.find("HTTP 429"), std::string::npos) << answer.error().message;
    // No point waiting 30 s for a 2 s deadline: it says so instead of running into the deadline.
    EXPECT_NE(answer.error().message.find("would pass the deadline"), std::string::npos)
        << answer.error().message;
    EXPECT_EQ(server.requests_to("/v1/embeddings").size(), 1u);
}

TEST_F(HttpClientTest, CancelStopsTheBackoffWait) {
    ASSERT_TRUE(server.control({{"fail_first", 1}, {"fail_status", 429}, {"retry_after", "5"}}));
    HttpClient client(fast_options());
    std::atomic<bool> cancel{false};
    CallOptions call;
    call.cancelled = [&] { return cancel.load(); };
    // Cancelled once the first attempt got its 429: during the 5 s wait, after which the retry
    // would succeed (the outcome tells the two apart).
    std::thread canceller([&] {
        (void)test_support::wait_until(
            [&] { return server.requests_to("/v1/embeddings").size() >= 1; },
            test_support::kHangGuard, 20ms);
        cancel = true;
    });
    auto answer = client.post_json(server.url("/v1/embeddings"), embeddings_body(), {}, call);
    canceller.join();
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, ErrorType::kCancelled);
    EXPECT_EQ(server.requests_to("/v1/embeddings").size(), 1u) << "no retry after the cancel";
}

TEST(HttpClient, ConnectionRefusedIsServiceUnavailableAfterRetries) {
    const int port = test_support::closed_loopback_port();
    ASSERT_NE(port, 0);
    HttpClient client(fast_options(2));
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/v1/embeddings";
    auto answer = client.post_json(url, embeddings_body());
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, ErrorType::kServiceUnavailable) << answer.error().describe();
    EXPECT_NE(answer.error().message.find("cannot connect to " + url), std::string::npos)
        << answer.error().message;
    EXPECT_NE(answer.error().message.find("after 2 retries"), std::string::npos)
        << answer.error().message;
}

TEST(HttpClient, CredentialsInTheUrlAreNotRepeatedInErrors) {
    const int port = test_support::closed_loopback_port();
    ASSERT_NE(port, 0);
    HttpClient client(fast_options(0));
    auto answer = client.post_json(
        "http://user:secret@127.0.0.1:" + std::to_string(port) + "/v1/x?key=secret2", {});
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().message.find("secret"), std::string::npos) << answer.error().message;
}

TEST_F(HttpClientTest, StreamDeliversEachDataLineThenEndsAtDone) {
    HttpClient client(fast_options());
    std::vector<std::string> lines;
    auto answer =
        client.post_stream(server.url("/v1/chat/completions"), chat_body("hello there world", true),
                           {}, [&](std::string_view data) {
                               lines.emplace_back(data);
                               return StreamControl::kContinue;
                           });
    ASSERT_TRUE(answer) << answer.error().describe();
    EXPECT_EQ(answer->status, 200);
    EXPECT_EQ(answer->header("content-type"), "text/event-stream");
    // "echo:", " hello", " there", " world", then the final chunk with usage; [DONE] is not passed.
    ASSERT_EQ(lines.size(), 5u);
    std::string text;
    for (const auto& line : lines) {
        const auto chunk = json::parse(line, nullptr, false);
        ASSERT_TRUE(chunk.is_object()) << line;
        const auto& delta = chunk["choices"][0]["delta"];
        if (delta.contains("content")) text += delta["content"].get<std::string>();
    }
    EXPECT_EQ(text, "echo: hello there world");
    EXPECT_EQ(json::parse(lines.back())["usage"]["completion_tokens"], 4);
}

TEST_F(HttpClientTest, StreamStopsWhenTheCallbackSaysSo) {
    // 2 s after each event (the first data chunk comes after a comment): the remaining chunks
    // take 14 s more, past the client's 10 s timeout, so a client that awaited them would end
    // with a timeout, not an answer.
    ASSERT_TRUE(server.control({{"stream_delay_ms", 2'000}}));
    HttpClient client(fast_options());
    int calls = 0;
    auto answer = client.post_stream(server.url("/v1/chat/completions"),
                                     chat_body("a b c d e f", true), {}, [&](std::string_view) {
                                         ++calls;
                                         return StreamControl::kStop;
                                     });
    ASSERT_TRUE(answer) << answer.error().describe();
    EXPECT_EQ(calls, 1);
}

TEST_F(HttpClientTest, BrokenStreamIsNotRetriedOnceDataWasDelivered) {
    ASSERT_TRUE(server.control({{"drop_after_chunks", 2}}));
    HttpClient client(fast_options());
    int calls = 0;
    auto answer = client.post_stream(server.url("/v1/chat/completions"),
                                     chat_body("one two three", true), {}, [&](std::string_view) {
                                         ++calls;
                                         return StreamControl::kContinue;
                                     });
    ASSERT_FALSE(answer);
    EXPECT_EQ(answer.error().type, ErrorType::kUpstreamError) << answer.error().describe();
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(server.requests_to("/v1/chat/completions").size(), 1u);
}

TEST_F(HttpClientTest, StreamRetriesBeforeDataAndReportsErrorStatusWithoutCallingBack) {
    ASSERT_TRUE(server.control({{"fail_first", 1}, {"fail_status", 500}}));
    HttpClient client(fast_options());
    int calls = 0;
    const auto count = [&](std::string_view) {
        ++calls;
        return StreamControl::kContinue;
    };
    auto retried =
        client.post_stream(server.url("/v1/chat/completions"), chat_body("x", true), {}, count);
    ASSERT_TRUE(retried) << retried.error().describe();
    EXPECT_EQ(calls, 3);  // "echo:", " x", the final chunk: the failed first attempt added none
    calls = 0;
    ASSERT_TRUE(server.control({{"api_key", "sk-1"}}));
    auto refused =
        client.post_stream(server.url("/v1/chat/completions"), chat_body("x", true), {}, count);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().type, ErrorType::kUpstreamError);
    EXPECT_NE(refused.error().message.find("HTTP 401"), std::string::npos);
    EXPECT_EQ(calls, 0);
}

TEST_F(HttpClientTest, ManyThreadsShareOneClient) {
    HttpClient client(fast_options());
    std::atomic<int> ok{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 5; ++i) {
                if (client.post_json(server.url("/v1/embeddings"), embeddings_body())) ++ok;
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(ok.load(), 20);
    EXPECT_EQ(server.requests_to("/v1/embeddings").size(), 20u);
}

TEST(HttpClientDetail, RetryAfterSecondsAndHttpDates) {
    const auto now =
        std::chrono::system_clock::from_time_t(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT
    EXPECT_EQ(detail::parse_retry_after("120", now), 120'000ms);
    EXPECT_EQ(detail::parse_retry_after(" 0 ", now), 0ms);
    EXPECT_EQ(detail::parse_retry_after("Wed, 21 Oct 2015 07:28:03 GMT", now), 3'000ms);
    EXPECT_EQ(detail::parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now), 0ms)
        << "a date in the past";
    EXPECT_FALSE(detail::parse_retry_after("soon", now));
    EXPECT_FALSE(detail::parse_retry_after("", now));
    EXPECT_FALSE(detail::parse_retry_after("-5", now));
    EXPECT_EQ(detail::parse_retry_after("99999999999999999999999", now), 86'400'000ms)
        << "capped, no overflow";
}

TEST(HttpClientDetail, ErrorMessagesQuoteTheServersMessage) {
    EXPECT_EQ(detail::describe_http_error(401, "http://h/v1/embeddings",
                                          R"({"error":{"message":"bad key"}})"),
              "HTTP 401 from http://h/v1/embeddings: bad key");
    EXPECT_EQ(detail::describe_http_error(502, "http://h/x", "<html>Bad gateway</html>"),
              "HTTP 502 from http://h/x: <html>Bad gateway</html>");
    EXPECT_EQ(detail::describe_http_error(500, "http://h/x?key=s", ""), "HTTP 500 from http://h/x");
    EXPECT_EQ(detail::describe_http_error(404, "http://h/x", R"({"error":"no such model"})"),
              "HTTP 404 from http://h/x: no such model");
    // A body nested past schema::kMaxJsonDepth is not read as JSON (issue 30): shown as text.
    const std::string deep =
        "{\"error\":" + std::string(500'000, '[') + std::string(500'000, ']') + "}";
    EXPECT_EQ(detail::describe_http_error(500, "http://h/x", deep)
                  .rfind("HTTP 500 from http://h/x: {\"error\":[[[", 0),
              0u);
}

}  // namespace
}  // namespace glassbox::http
