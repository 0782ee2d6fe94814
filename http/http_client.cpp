// HttpClient over libcurl easy handles: one attempt per curl_easy_perform, retries around it.
#include "http/http_client.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <exception>
#include <mutex>
#include <new>
#include <random>
#include <stdexcept>
#include <thread>

#include "base/ascii.hpp"
#include "base/log.hpp"
#include "http/curl_library.hpp"
#include "schema/messages.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::http {

using base::Error;
using base::ErrorType;
using base::make_error;
using std::chrono::milliseconds;

namespace {

// The only place curl handles are owned: RAII wrappers (STYLE: wrapped once, in one place).
struct CurlEasyDeleter {
    void operator()(CURL* handle) const noexcept { curl().easy_cleanup(handle); }
};
using CurlEasy = std::unique_ptr<CURL, CurlEasyDeleter>;

struct CurlSlistDeleter {
    void operator()(curl_slist* list) const noexcept { curl().slist_free_all(list); }
};
using CurlSlist = std::unique_ptr<curl_slist, CurlSlistDeleter>;

std::shared_ptr<spdlog::logger> log() { return base::component_logger("http"); }

constexpr std::size_t kMaxIdleHandles = 16;
constexpr milliseconds kWaitStep{20};
constexpr std::size_t kErrorSnippetBytes = 200;

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() &&
           (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
        s.remove_suffix(1);
    }
    return s;
}

// A URL fit for logs and error messages: no user:password@, no query (keys travel there in
// some APIs), no fragment.
std::string redact_url(std::string_view url) {
    if (const auto cut = url.find_first_of("?#"); cut != std::string_view::npos)
        url = url.substr(0, cut);
    std::string out(url);
    const auto scheme = out.find("://");
    if (scheme != std::string::npos) {
        const auto host_start = scheme + 3;
        const auto path_start = out.find('/', host_start);
        const auto at = out.find('@', host_start);
        if (at != std::string::npos && (path_start == std::string::npos || at < path_start)) {
            out.erase(host_start, at + 1 - host_start);
        }
    }
    return out;
}

long long to_ms(Clock::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

// State shared with the curl callbacks of one attempt.
struct Transfer {
    CURL* handle = nullptr;
    std::size_t max_bytes = 0;
    const ChunkCallback* on_chunk = nullptr;  // set for a stream
    const std::function<bool()>* cancelled = nullptr;

    Headers headers;
    std::string body;         // the whole body, or a stream's non-2xx body
    std::string line_buffer;  // a stream's unfinished SSE line
    bool delivered = false;   // a data line reached on_chunk: the attempt may not be repeated
    bool stopped = false;     // [DONE] or kStop: the abort that follows is a success
    bool too_large = false;
    bool was_cancelled = false;
    std::optional<Error> callback_error;  // on_chunk threw

    bool streaming_success() const {
        if (on_chunk == nullptr) return false;
        long status = 0;
        curl().easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
        return status >= 200 && status < 300;
    }

    // One SSE line (WHATWG HTML §9.2.6): only `data:` fields matter here; comments (":"),
    // event:, id:, retry: and blank lines are skipped.
    void sse_line(std::string_view line) {
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!line.starts_with("data:")) return;
        line.remove_prefix(5);
        if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        if (line == "[DONE]") {
            stopped = true;
            return;
        }
        delivered = true;
        try {
            if ((*on_chunk)(line) == StreamControl::kStop) stopped = true;
        } catch (const std::exception& e) {
            callback_error =
                make_error(ErrorType::kInternal, std::string("stream callback threw: ") + e.what());
        } catch (...) {
            callback_error = make_error(ErrorType::kInternal, "stream callback threw");
        }
    }

    // False to abort the transfer.
    bool feed_stream(std::string_view data) {
        line_buffer.append(data);
        std::size_t start = 0;
        for (;;) {
            const auto newline = line_buffer.find('\n', start);
            if (newline == std::string::npos) break;
            sse_line(std::string_view(line_buffer).substr(start, newline - start));
            start = newline + 1;
            if (stopped || callback_error) return false;
        }
        line_buffer.erase(0, start);
        if (line_buffer.size() > max_bytes) {
            too_large = true;
            return false;
        }
        return true;
    }

    // The last line of a stream that did not end in a newline.
    void finish_stream() {
        if (!line_buffer.empty() && !stopped && !callback_error) sse_line(line_buffer);
        line_buffer.clear();
    }
};

extern "C" std::size_t on_write(char* data, std::size_t size, std::size_t count, void* user) {
    auto& t = *static_cast<Transfer*>(user);
    const std::size_t bytes = size * count;
    if (t.streaming_success()) return t.feed_stream({data, bytes}) ? bytes : 0;
    if (t.body.size() + bytes > t.max_bytes) {
        t.too_large = true;
        return 0;
    }
    t.body.append(data, bytes);
    return bytes;
}

extern "C" std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    auto& t = *static_cast<Transfer*>(user);
    const std::size_t bytes = size * count;
    const std::string_view line = trim({data, bytes});
    if (line.starts_with("HTTP/")) {
        t.headers.clear();  // a new response (after 100 Continue or a redirect) starts over
        return bytes;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return bytes;
    std::string name = base::ascii_lower(line.substr(0, colon));
    t.headers.emplace_back(std::move(name), std::string(trim(line.substr(colon + 1))));
    return bytes;
}

extern "C" int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto& t = *static_cast<Transfer*>(user);
    if (t.cancelled != nullptr && *t.cancelled) {
        bool cancel = false;
        try {
            cancel = (*t.cancelled)();
        } catch (...) {
            cancel = true;
        }
        if (cancel) {
            t.was_cancelled = true;
            return 1;
        }
    }
    return 0;
}

// How one attempt ended, and whether another may follow.
struct Attempt {
    std::optional<HttpResponse> response;  // set on success
    std::optional<Error> error;
    std::optional<HttpResponse> error_response;  // the non-2xx answer behind `error`, if any
    bool retryable = false;
    std::optional<milliseconds> retry_after;
};

bool retryable_status(long status) {
    return status == 408 || status == 429 || (status >= 500 && status <= 599);
}

milliseconds backoff(const HttpOptions& options, int retry) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    const auto initial = std::max<long long>(options.initial_backoff.count(), 1);
    const auto cap = std::max<long long>(options.max_backoff.count(), initial);
    long long d = initial;
    for (int i = 0; i < retry && d < cap; ++i) d *= 2;
    d = std::min(d, cap);
    // Jitter in [d/2, d]: spreads clients that failed together, keeps a floor for the server.
    std::uniform_int_distribution<long long> jitter(d / 2, d);
    return milliseconds{jitter(rng)};
}

bool is_cancelled(const CallOptions& call) {
    if (!call.cancelled) return false;
    try {
        return call.cancelled();
    } catch (...) {
        return true;
    }
}

Error cancelled_error(std::string_view url) {
    return make_error(ErrorType::kCancelled, "request to " + redact_url(url) + " cancelled");
}

}  // namespace

std::optional<std::string> HttpResponse::header(std::string_view name) const {
    for (const auto& [key, value] : headers) {
        if (base::ascii_iequals(key, name)) return value;
    }
    return std::nullopt;
}

namespace detail {

std::optional<milliseconds> parse_retry_after(std::string_view value,
                                              std::chrono::system_clock::time_point now_utc) {
    value = trim(value);
    if (value.empty()) return std::nullopt;
    constexpr long long kMaxSeconds = 86'400;  // a day: beyond any deadline, and no overflow
    if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        long long seconds = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
        if (ec == std::errc::result_out_of_range)
            seconds = kMaxSeconds;
        else if (ec != std::errc{} || end != value.data() + value.size())
            return std::nullopt;
        return milliseconds{std::min(seconds, kMaxSeconds) * 1000};
    }
    const std::string text(value);
    const time_t when = curl().getdate(text.c_str(), nullptr);
    if (when == -1) return std::nullopt;
    const auto at = std::chrono::system_clock::from_time_t(when);
    if (at <= now_utc) return milliseconds{0};
    return std::min(std::chrono::duration_cast<milliseconds>(at - now_utc),
                    milliseconds{kMaxSeconds * 1000});
}

std::string describe_http_error(long status, std::string_view url, std::string_view body) {
    std::string out = "HTTP " + std::to_string(status) + " from " + redact_url(url);
    std::string detail;
    // An error body is the remote server's: read as untrusted as any other.
    auto read = schema::parse_untrusted_json(body);
    const nlohmann::json parsed = read ? std::move(read).value() : nlohmann::json();
    if (parsed.is_object()) {
        const auto error = parsed.find("error");
        if (error != parsed.end() && error->is_object()) {
            const auto message = error->find("message");
            if (message != error->end() && message->is_string())
                detail = message->get<std::string>();
        } else if (error != parsed.end() && error->is_string()) {
            detail = error->get<std::string>();
        } else if (const auto message = parsed.find("message");
                   message != parsed.end() && message->is_string()) {
            detail = message->get<std::string>();
        }
    } else if (parsed.is_string()) {
        detail = parsed.get<std::string>();
    } else {
        detail = std::string(trim(body.substr(0, kErrorSnippetBytes)));
        std::replace_if(
            detail.begin(), detail.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    }
    if (!detail.empty()) out += ": " + detail;
    return out;
}

}  // namespace detail

// Idle handles keep their connection caches, so consecutive calls reuse keep-alive connections.
struct HttpClient::Pool {
    std::mutex mutex;
    std::vector<CurlEasy> idle;

    CurlEasy acquire() {
        {
            std::lock_guard lock(mutex);
            if (!idle.empty()) {
                CurlEasy handle = std::move(idle.back());
                idle.pop_back();
                return handle;
            }
        }
        CurlEasy handle(curl().easy_init());
        if (!handle) throw std::bad_alloc();
        return handle;
    }

    void release(CurlEasy handle) {
        curl().easy_reset(handle.get());  // options go, connections stay
        std::lock_guard lock(mutex);
        if (idle.size() < kMaxIdleHandles) idle.push_back(std::move(handle));
    }
};

namespace {

// The options of one attempt: the request, its bounds (`remaining` ms of the deadline) and the
// callbacks filling `t`.
void set_attempt_options(CURL* handle, const HttpRequest& request, const curl_slist* headers,
                         const HttpOptions& options, long long remaining, Transfer& t) {
    curl().easy_setopt(handle, CURLOPT_URL, request.url.c_str());
    curl().easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
    curl().easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
    curl().easy_setopt(handle, CURLOPT_USERAGENT, options.user_agent.c_str());
    curl().easy_setopt(
        handle, CURLOPT_CONNECTTIMEOUT_MS,
        static_cast<long>(std::min<long long>(options.connect_timeout.count(), remaining)));
    curl().easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(remaining));
    curl().easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
    curl().easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L);  // a redirected POST is a config error
    if (t.on_chunk == nullptr) curl().easy_setopt(handle, CURLOPT_ACCEPT_ENCODING, "");
    const std::string& method = request.method;
    if (method == "POST" || method == "PUT" || (method == "DELETE" && !request.body.empty())) {
        curl().easy_setopt(handle, CURLOPT_POST, 1L);
        curl().easy_setopt(handle, CURLOPT_POSTFIELDS, request.body.data());
        curl().easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE,
                           static_cast<curl_off_t>(request.body.size()));
    } else {
        curl().easy_setopt(handle, CURLOPT_HTTPGET, 1L);
    }
    if (method != "GET" && method != "POST")
        curl().easy_setopt(handle, CURLOPT_CUSTOMREQUEST, method.c_str());
    if (!request.user.empty()) {
        curl().easy_setopt(handle, CURLOPT_HTTPAUTH, static_cast<unsigned long>(CURLAUTH_ANY));
        curl().easy_setopt(handle, CURLOPT_USERNAME, request.user.c_str());
        curl().easy_setopt(handle, CURLOPT_PASSWORD, request.password.c_str());
    }
    curl().easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
    curl().easy_setopt(handle, CURLOPT_WRITEFUNCTION, on_write);
    curl().easy_setopt(handle, CURLOPT_WRITEDATA, &t);
    curl().easy_setopt(handle, CURLOPT_HEADERFUNCTION, on_header);
    curl().easy_setopt(handle, CURLOPT_HEADERDATA, &t);
    curl().easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
    curl().easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl().easy_setopt(handle, CURLOPT_XFERINFODATA, &t);
}

// A transfer curl completed (or a stream that stopped): the response when 2xx, else the HTTP
// error, retryable for 408, 429 and 5xx unless a stream already delivered data.
Attempt answered(long status, Transfer& t, const std::string& url) {
    Attempt attempt;
    if (status >= 200 && status < 300) {
        attempt.response = HttpResponse{status, std::move(t.headers), std::move(t.body)};
        return attempt;
    }
    attempt.error =
        make_error(ErrorType::kUpstreamError, detail::describe_http_error(status, url, t.body));
    attempt.retryable = retryable_status(status) && !t.delivered;
    HttpResponse response{status, std::move(t.headers), std::move(t.body)};
    if (const auto value = response.header("retry-after")) {
        attempt.retry_after = detail::parse_retry_after(*value, std::chrono::system_clock::now());
    }
    attempt.error_response = std::move(response);
    return attempt;
}

// A transfer curl could not complete (`rc`, `curl_error` its message or ""): the typed error,
// retryable where another attempt may reach the server.
Attempt failed_transfer(CURLcode rc, const char* curl_error, const Transfer& t,
                        const std::string& url, const HttpOptions& options,
                        Clock::time_point deadline, long long remaining) {
    Attempt attempt;
    const std::string where = redact_url(url);
    const auto curl_reason = [&] {
        return curl_error[0] != '\0' ? std::string(curl_error) : curl().easy_strerror(rc);
    };
    if (rc == CURLE_ABORTED_BY_CALLBACK && t.was_cancelled) {
        attempt.error = cancelled_error(url);
        return attempt;
    }
    if (rc == CURLE_WRITE_ERROR && t.too_large) {
        attempt.error = make_error(ErrorType::kUpstreamError,
                                   "answer from " + where + " is larger than " +
                                       std::to_string(options.max_response_bytes) + " bytes");
        return attempt;
    }
    switch (rc) {
        case CURLE_OPERATION_TIMEDOUT:
            if (Clock::now() + milliseconds{5} >= deadline) {
                attempt.error =
                    make_error(ErrorType::kTimeout,
                               "no answer from " + where + " within the deadline (" +
                                   std::to_string(remaining) + " ms left at the attempt)");
            } else {  // the connect timeout, well before the deadline: the server is not reachable
                attempt.error = make_error(ErrorType::kServiceUnavailable,
                                           "cannot connect to " + where + ": " + curl_reason());
                attempt.retryable = !t.delivered;
            }
            return attempt;
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
            attempt.error = make_error(ErrorType::kServiceUnavailable,
                                       "cannot connect to " + where + ": " + curl_reason());
            attempt.retryable = true;
            return attempt;
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
            attempt.error = make_error(ErrorType::kUpstreamError,
                                       "connection to " + where + " failed: " + curl_reason());
            attempt.retryable = !t.delivered;
            return attempt;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL:
            attempt.error = make_error(ErrorType::kInvalidRequest,
                                       "cannot use URL " + where + ": " + curl_reason());
            return attempt;
        default:
            attempt.error = make_error(ErrorType::kUpstreamError,
                                       "request to " + where + " failed: " + curl_reason());
            return attempt;
    }
}

Attempt perform(CURL* handle, const HttpRequest& request, const curl_slist* headers,
                const HttpOptions& options, Clock::time_point deadline,
                const ChunkCallback* on_chunk, const CallOptions& call) {
    const std::string& url = request.url;
    // Rounded up: curl should not give up before the caller's deadline has really passed.
    const auto remaining =
        std::max<long long>(std::chrono::ceil<milliseconds>(deadline - Clock::now()).count(), 1);
    Transfer t;
    t.handle = handle;
    t.max_bytes = options.max_response_bytes;
    t.on_chunk = on_chunk;
    t.cancelled = &call.cancelled;
    set_attempt_options(handle, request, headers, options, remaining, t);
    char curl_error[CURL_ERROR_SIZE] = {};
    curl().easy_setopt(handle, CURLOPT_ERRORBUFFER, curl_error);

    const CURLcode rc = curl().easy_perform(handle);
    if (on_chunk != nullptr && rc == CURLE_OK && t.streaming_success()) t.finish_stream();
    curl().easy_setopt(handle, CURLOPT_ERRORBUFFER, nullptr);
    long status = 0;
    curl().easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);

    if (t.callback_error) {
        Attempt attempt;
        attempt.error = *t.callback_error;
        return attempt;
    }
    if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t.stopped)) return answered(status, t, url);
    return failed_transfer(rc, curl_error, t, url, options, deadline, remaining);
}

}  // namespace

namespace {

HttpRequest json_post(const std::string& url, const nlohmann::json& body, const Headers& headers) {
    HttpRequest request;
    request.method = "POST";
    request.url = url;
    request.content_type = "application/json";
    request.body = schema::dump(body);
    request.headers = headers;
    return request;
}

// The request's header list as curl takes it: its content type, accept and own headers (a name
// or value that could split the header block is refused), and no 100-continue round trip.
base::Result<CurlSlist> request_headers(const HttpRequest& request) {
    CurlSlist headers;
    const auto append = [&](const std::string& line) {
        curl_slist* next = curl().slist_append(headers.get(), line.c_str());
        if (next == nullptr) throw std::bad_alloc();
        (void)headers.release();
        headers.reset(next);
    };
    if (!request.content_type.empty()) append("Content-Type: " + request.content_type);
    if (!request.accept.empty()) append("Accept: " + request.accept);
    append("Expect:");  // no 100-continue round trip before larger bodies
    for (const auto& [name, value] : request.headers) {
        if (name.find_first_of(":\r\n") != std::string::npos ||
            value.find_first_of("\r\n") != std::string::npos) {
            return make_error(ErrorType::kInvalidRequest,
                              "header \"" + name + "\" has a character not allowed in a header");
        }
        append(std::string(name).append(": ").append(value));
    }
    return headers;
}

}  // namespace

HttpClient::HttpClient(HttpOptions options)
    : options_(std::move(options)), pool_(std::make_unique<Pool>()) {
    (void)curl();  // loads and initialises libcurl now, so a missing one fails here
}

HttpClient::~HttpClient() = default;

base::Result<HttpResponse> HttpClient::send(const HttpRequest& request,
                                            const ChunkCallback* on_chunk,
                                            const CallOptions& call) {
    const HttpOptions& options = options_;
    Pool& pool = *pool_;
    const std::string& url = request.url;
    if (request.method != "GET" && request.method != "POST" && request.method != "PUT" &&
        request.method != "DELETE") {
        return make_error(ErrorType::kInvalidRequest,
                          "HTTP method \"" + request.method + "\" is not supported");
    }
    const auto start = Clock::now();
    auto deadline = start + options.timeout;
    if (call.deadline && *call.deadline < deadline) deadline = *call.deadline;

    auto headers = request_headers(request);
    if (!headers) return headers.error();

    const int max_retries = std::max(options.max_retries, 0);
    const std::string where = redact_url(url);
    for (int retry = 0;; ++retry) {
        if (is_cancelled(call)) return cancelled_error(url);
        if (Clock::now() >= deadline) {
            return make_error(ErrorType::kTimeout,
                              "no time left to call " + where + " (deadline passed)");
        }
        Attempt attempt;
        {
            CurlEasy handle = pool.acquire();
            attempt =
                perform(handle.get(), request, headers->get(), options, deadline, on_chunk, call);
            pool.release(std::move(handle));
        }
        if (attempt.response) return std::move(*attempt.response);
        Error error = std::move(*attempt.error);
        if (request.http_errors_as_responses && attempt.error_response &&
            (!attempt.retryable || retry >= max_retries)) {
            return std::move(*attempt.error_response);
        }
        if (!attempt.retryable) return error;
        if (retry >= max_retries) {
            if (max_retries > 0)
                error.message += " (after " + std::to_string(max_retries) + " retries)";
            return error;
        }
        const milliseconds wait =
            attempt.retry_after ? *attempt.retry_after : backoff(options, retry);
        const auto resume = Clock::now() + wait;
        if (resume >= deadline) {
            // Waiting cannot help: the answer would come after the caller stopped listening.
            return make_error(
                ErrorType::kTimeout,
                error.message + "; a retry in " + std::to_string(wait.count()) +
                    " ms would pass the deadline (" +
                    std::to_string(std::max<long long>(to_ms(deadline - Clock::now()), 0)) +
                    " ms left)");
        }
        log()->info("retry={}/{} wait_ms={} url={} reason=\"{}\"", retry + 1, max_retries,
                    wait.count(), where, error.message);
        while (Clock::now() < resume) {
            if (is_cancelled(call)) return cancelled_error(url);
            const auto left = std::chrono::duration_cast<milliseconds>(resume - Clock::now());
            std::this_thread::sleep_for(std::clamp(left, milliseconds{0}, kWaitStep));
        }
    }
}

base::Result<HttpResponse> HttpClient::post_json(const std::string& url, const nlohmann::json& body,
                                                 const Headers& headers, const CallOptions& call) {
    return send(json_post(url, body, headers), nullptr, call);
}

base::Result<HttpResponse> HttpClient::post_stream(const std::string& url,
                                                   const nlohmann::json& body,
                                                   const Headers& headers,
                                                   const ChunkCallback& on_chunk,
                                                   const CallOptions& call) {
    if (!on_chunk)
        return make_error(ErrorType::kInvalidRequest, "post_stream needs a chunk callback");
    HttpRequest request = json_post(url, body, headers);
    request.accept = "text/event-stream";
    return send(request, &on_chunk, call);
}

base::Result<HttpResponse> HttpClient::get(const std::string& url, const Headers& headers,
                                           const CallOptions& call) {
    HttpRequest request;
    request.url = url;
    request.headers = headers;
    return send(request, nullptr, call);
}

base::Result<HttpResponse> HttpClient::request(const HttpRequest& request,
                                               const CallOptions& call) {
    return send(request, nullptr, call);
}

}  // namespace glassbox::http
