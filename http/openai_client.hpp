// One OpenAI-compatible endpoint (`POST /v1/<path>`): its URL, the API key sent with every
// request, and the checks every answer gets before use; shared by the llm and embeddings workers.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "http/http_client.hpp"

namespace glassbox::http {

// `base` (scheme, host, port, optional prefix) with "/v1/<path>" appended; trailing "/"s and
// one trailing "/v1" are not doubled: ("https://api.openai.com/v1/", "embeddings") gives
// "https://api.openai.com/v1/embeddings".
std::string openai_url(std::string base, std::string_view path);

// Thread-safe as HttpClient is. Errors: the HTTP client's (kTimeout, kUpstreamError,
// kServiceUnavailable, kCancelled, kInvalidRequest), and kUpstreamError
// "malformed answer from <url>: <why>" for an answer the caller cannot trust.
class OpenAiClient {
public:
    // `path` under /v1: "embeddings", "chat/completions". `api_key` is sent as
    // "Authorization: Bearer <key>" (empty: no Authorization header); it is never logged.
    OpenAiClient(const std::string& base_url, std::string_view path, const std::string& api_key,
                 const HttpOptions& http);

    const std::string& url() const noexcept { return url_; }

    // POST `body` as JSON; a 2xx answer with its body.
    base::Result<HttpResponse> post_json(const nlohmann::json& body, const CallOptions& call);
    // POST `body` and read the answer as Server-Sent Events (HttpClient::post_stream).
    base::Result<HttpResponse> post_stream(const nlohmann::json& body,
                                           const ChunkCallback& on_chunk, const CallOptions& call);

    // kUpstreamError "malformed answer from <url>: <why>".
    base::Error malformed(const std::string& why) const;
    // `body` as a JSON object, else malformed(): not JSON (the parser's message), or
    // "not a JSON object".
    base::Result<nlohmann::json> read_object(std::string_view body) const;

private:
    std::string url_;
    Headers headers_;
    HttpClient client_;
};

}  // namespace glassbox::http
