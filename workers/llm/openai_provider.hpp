// A provider backed by any OpenAI-compatible `POST /v1/chat/completions` endpoint (OpenAI,
// vLLM, Ollama, llama.cpp server, LM Studio, ...), through the shared HTTP client.
#pragma once

#include <string>

#include "http/openai_client.hpp"
#include "workers/llm/provider.hpp"

namespace glassbox::llm {

struct OpenAiProviderOptions {
    // Scheme, host, port and optional prefix; "/v1/chat/completions" is appended (a trailing
    // "/" or "/v1" is not doubled).
    std::string base_url = "https://api.openai.com";
    std::string model;
    std::string api_key;  // sent as "Authorization: Bearer <key>"; empty: none. Never logged.
    double temperature = 0.0;
    http::HttpOptions http;  // connect and total timeouts, retries on 408/429/5xx
};

// The rendered prompt goes as the user message. JSON templates ask for
// `response_format: {"type": "json_object"}` and are checked against the template's schema;
// an answer that fails is sent back once with the validation error (one repair attempt), and
// a second failure is kUpstreamError naming it; Completion::text is then the JSON itself (a
// Markdown fence around it removed). Text templates under the answer contract
// (answer_contract.hpp) are checked and repaired the same way, asked without streaming, and
// handed to GenerateOptions::on_text whole once checked. Other text templates stream over SSE
// when GenerateOptions::on_text is set (`stream: true` with usage in the stream). Tokens are the
// endpoint's usage (summed over a repair); the model is the one the endpoint names, else the
// configured one. Errors: the HTTP client's (kTimeout, kUpstreamError, kServiceUnavailable,
// kCancelled) and kUpstreamError for an answer without choices[0] content.
class OpenAiProvider final : public Provider {
public:
    explicit OpenAiProvider(OpenAiProviderOptions options);

    base::Result<Completion> generate(const PromptInput& input,
                                      const GenerateOptions& options) override;
    std::string_view name() const override { return "openai"; }

    const std::string& url() const noexcept { return client_.url(); }

private:
    struct Answer {
        std::string content;
        std::string model;
        std::uint64_t in_tokens = 0;
        std::uint64_t out_tokens = 0;
    };
    base::Result<Answer> complete(const nlohmann::json& messages, bool json_output,
                                  const GenerateOptions& options);

    OpenAiProviderOptions options_;
    http::OpenAiClient client_;
};

}  // namespace glassbox::llm
