// The one HTTP client (libcurl): JSON POSTs and Server-Sent-Event streams with deadlines and
// retries.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"

namespace glassbox::http {

using Clock = std::chrono::steady_clock;

// Request or response headers, in order. Response header names are lower-cased.
using Headers = std::vector<std::pair<std::string, std::string>>;

// Every bound of the client, with its default.
struct HttpOptions {
    // One TCP (+TLS) connect; a connect that takes longer counts as a connection failure.
    std::chrono::milliseconds connect_timeout{5'000};
    // A whole call, all attempts and waits included, unless CallOptions::deadline is sooner.
    std::chrono::milliseconds timeout{60'000};
    // Attempts after the first, for 408, 429, 5xx and connection failures.
    int max_retries = 3;
    // Backoff without Retry-After: initial * 2^n, capped at max, with full jitter in [d/2, d].
    std::chrono::milliseconds initial_backoff{250};
    std::chrono::milliseconds max_backoff{8'000};
    std::string user_agent = "glassbox/0.1";
    // A larger answer (or SSE line) is abandoned with kUpstreamError: bounds memory per call.
    std::size_t max_response_bytes = std::size_t{64} << 20;
};

struct HttpResponse {
    long status = 0;
    Headers headers;   // of the final response; names lower-cased
    std::string body;  // empty for a stream (its data went to the callback)

    // The first header named `name` (case-insensitive).
    std::optional<std::string> header(std::string_view name) const;
};

// Per call: the caller's deadline (e.g. its bus request's) and a way to abandon the call.
struct CallOptions {
    // Bounds every attempt and every wait between attempts; the sooner of this and
    // now + HttpOptions::timeout applies.
    std::optional<Clock::time_point> deadline;
    // Polled during transfers and backoff waits (on the calling thread); true ends the call
    // with kCancelled. Within a backoff wait it is seen in 20 ms; during a stalled transfer
    // curl polls about once a second, so the deadline, not this, is the tight bound there.
    std::function<bool()> cancelled;
};

// A request of any method (HttpClient::request): the general form of post_json and get.
struct HttpRequest {
    std::string method = "GET";  // GET, POST, PUT or DELETE
    std::string url;
    std::string content_type;  // of `body`; empty: no Content-Type header
    std::string body;          // sent with POST and PUT (and DELETE when not empty)
    std::string accept = "application/json";
    Headers headers;
    // HTTP authentication when `user` is not empty: digest or basic, whichever the server asks
    // for (curl's CURLAUTH_ANY). Never logged.
    std::string user;
    std::string password;
    // A non-2xx final answer (after the retries that apply) is returned as a response, its body
    // whole, instead of kUpstreamError: for callers that read the server's own error text.
    bool http_errors_as_responses = false;
};

// What a stream callback wants next.
enum class StreamControl { kContinue, kStop };

// Called once per SSE `data:` line, with the text after "data:" (one leading space removed).
// `[DONE]` is not passed on: it ends the stream.
using ChunkCallback = std::function<StreamControl(std::string_view data)>;

// Thread-safe: any number of threads may call at once; curl handles (and their connection
// caches, for keep-alive) are pooled and reused. Errors, as values:
//   kTimeout            the deadline passed (during a transfer, or a retry would pass it)
//   kUpstreamError      a non-2xx answer, after retries where they apply:
//                       "HTTP 401 from http://host/v1/embeddings: <error.message of the body>"
//   kServiceUnavailable the server could not be reached (refused, no route, DNS) after retries
//   kCancelled          CallOptions::cancelled said so
//   kInvalidRequest     a URL curl cannot use
// Retries: 408, 429, 5xx and connection failures, up to max_retries, waiting Retry-After
// (seconds or an HTTP-date) when given, else exponential backoff with jitter; never other 4xx;
// never a stream that already delivered data. Header values (API keys) are never logged.
class HttpClient {
public:
    explicit HttpClient(HttpOptions options = {});
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // POST `body` as application/json; a 2xx answer with its body, else a typed error.
    base::Result<HttpResponse> post_json(const std::string& url, const nlohmann::json& body,
                                         const Headers& headers = {}, const CallOptions& call = {});

    // POST `body` and read the answer as Server-Sent Events, calling `on_chunk` per data line
    // until `[DONE]`, the end of the body, or kStop (all three are success). A non-2xx answer is
    // read whole and reported as post_json would.
    base::Result<HttpResponse> post_stream(const std::string& url, const nlohmann::json& body,
                                           const Headers& headers, const ChunkCallback& on_chunk,
                                           const CallOptions& call = {});

    // GET; a 2xx answer with its body, else a typed error (same retries).
    base::Result<HttpResponse> get(const std::string& url, const Headers& headers = {},
                                   const CallOptions& call = {});

    // Any method, content type, accept type and authentication; a 2xx answer with its body, else
    // a typed error (or the answer itself with http_errors_as_responses). Same retries.
    base::Result<HttpResponse> request(const HttpRequest& request, const CallOptions& call = {});

    const HttpOptions& options() const noexcept { return options_; }

    struct Pool;  // curl handles (implementation detail, kept out of this header)

private:
    base::Result<HttpResponse> send(const HttpRequest& request, const ChunkCallback* on_chunk,
                                    const CallOptions& call);

    HttpOptions options_;
    std::unique_ptr<Pool> pool_;
};

namespace detail {

// Retry-After as a wait from `now_utc`: delta-seconds or an HTTP-date (RFC 9110 §10.2.3);
// nullopt when unparseable. A date in the past is zero.
std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now_utc);

// "HTTP 401 from <url>: <error.message>" (or the start of a non-JSON body).
std::string describe_http_error(long status, std::string_view url, std::string_view body);

}  // namespace detail

}  // namespace glassbox::http
