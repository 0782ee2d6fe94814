// Every setting of the llm service, with its defaults, read from a JSON object.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "base/result.hpp"
#include "workers/llm/provider.hpp"

namespace glassbox::llm {

enum class ProviderKind { kExtractive, kOpenAi };
std::string_view to_string(ProviderKind kind) noexcept;  // "extractive", "openai"

// JSON keys (all optional; unknown keys are an error, to catch typos):
//   "provider":           "extractive" | "openai"; default: openai when "model" is set, else
//                         extractive
//   "base_url":           openai: default "https://api.openai.com"
//   "model":              openai: the model name (required for openai)
//   "api_key_env":        openai: the environment variable holding the key (default
//                         "OPENAI_API_KEY"; "" = send no key, e.g. a local server)
//   "connect_timeout_ms": openai: one TCP/TLS connect (default 5000, 1..600000)
//   "timeout_ms":         openai: one completion, retries included (default 120000,
//                         1..3600000); the request's own deadline bounds it too
//   "max_retries":        openai: retries on 408/429/5xx/connection failures (default 2, 0..10)
//   "temperature":        openai: sampling temperature (default 0, 0..2)
//   "templates":          a folder of <name>.txt templates overriding the built-in ones
//                         (default: <home>/templates when it exists)
//   "extractive_delay_ms": extractive: wait this long before each answer (default 0,
//                         0..600000), a stand-in for a model's latency (demos; tests of live
//                         views and of cancellation); a cancelled request stops waiting
struct LlmConfig {
    std::optional<ProviderKind> provider;
    std::string base_url = "https://api.openai.com";
    std::string model;
    std::string api_key_env = "OPENAI_API_KEY";
    std::chrono::milliseconds connect_timeout{5'000};
    std::chrono::milliseconds timeout{120'000};
    int max_retries = 2;
    double temperature = 0.0;
    std::string templates;
    std::chrono::milliseconds extractive_delay{0};

    // kInvalidRequest naming the key and its allowed values for a bad value or unknown key.
    static base::Result<LlmConfig> from_json(const nlohmann::json& object);

    ProviderKind effective_provider() const noexcept {
        if (provider) return *provider;
        return model.empty() ? ProviderKind::kExtractive : ProviderKind::kOpenAi;
    }
};

// The configured provider. Reads the API key from the environment now: kInvalidRequest when
// api_key_env names a variable that is unset or empty, or openai has no model.
base::Result<std::shared_ptr<Provider>> make_provider(const LlmConfig& config);

}  // namespace glassbox::llm
