// An embedder backed by any OpenAI-compatible `POST /v1/embeddings` endpoint (OpenAI, vLLM,
// llama.cpp server, Ollama, LocalAI, ...), through the shared HTTP client.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "http/openai_client.hpp"
#include "workers/embeddings/embedder.hpp"

namespace glassbox::embeddings {

struct OpenAiEmbedderOptions {
    // Scheme, host, port and optional prefix; "/v1/embeddings" is appended (a trailing "/" or
    // "/v1" is not doubled).
    std::string base_url = "https://api.openai.com";
    std::string model = "text-embedding-3-small";
    // The key itself (sent as "Authorization: Bearer <key>"); empty: no Authorization header.
    // Never logged.
    std::string api_key;
    // Expected dimension; 0: whatever the first answer has (later answers must match it).
    std::uint32_t dim = 0;
    // Texts per HTTP request; N texts take ceil(N / batch_size) requests, sent in order.
    std::size_t batch_size = 64;
    // Timeouts and retries of each HTTP request.
    http::HttpOptions http;
};

// embed() errors: whatever the HTTP client reports (kTimeout, kUpstreamError,
// kServiceUnavailable, kCancelled), and kUpstreamError for an answer it cannot trust: not JSON,
// no `data` array, a count other than the texts sent, an index out of range or repeated, an
// embedding that is not an array of finite numbers, or a dimension unlike the others (or dim).
class OpenAiEmbedder final : public Embedder {
public:
    explicit OpenAiEmbedder(OpenAiEmbedderOptions options);

    using Embedder::embed;
    base::Result<schema::EmbeddingsResponse> embed(std::span<const std::string> texts,
                                                   const EmbedOptions& options) override;
    std::string model() const override { return options_.model; }
    std::uint32_t dim() const override { return dim_.load(); }

    const std::string& url() const noexcept { return client_.url(); }

private:
    OpenAiEmbedderOptions options_;
    http::OpenAiClient client_;
    std::atomic<std::uint32_t> dim_;  // learned from the first answer when options_.dim is 0
};

}  // namespace glassbox::embeddings
