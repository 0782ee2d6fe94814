// Every setting of the embeddings service, with its defaults, read from a JSON object.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "workers/embeddings/embedder.hpp"

namespace glassbox::embeddings {

// Per-request bounds the service enforces before embedding (kInvalidRequest naming the limit).
struct Limits {
    std::size_t max_texts = 1'024;        // texts in one request
    std::size_t max_text_bytes = 65'536;  // UTF-8 bytes of one text
};

enum class Provider { kHashing, kOpenAi };

// JSON keys (all optional; unknown keys are an error, to catch typos):
//   "provider":       "hashing" (default) | "openai"
//   "dim":            hashing: the vector size (default 384, 1..65536); openai: the expected
//                     size (default 0 = whatever the model returns)
//   "base_url":       openai: default "https://api.openai.com"
//   "model":          openai: default "text-embedding-3-small" (hashing: ignored; its name
//                     "glassbox-hashing-v1" is fixed by the algorithm)
//   "api_key_env":    openai: the environment variable holding the key (default
//                     "OPENAI_API_KEY"; "" = send no key, e.g. a local server)
//   "batch_size":     openai: texts per HTTP request (default 64, 1..2048)
//   "timeout_ms":     openai: per HTTP request, retries included (default 30000, 1..600000)
//   "max_retries":    openai: retries per HTTP request (default 3, 0..10)
//   "max_texts":      texts per service request (default 1024, 1..100000)
//   "max_text_bytes": bytes per text (default 65536, 1..16777216)
struct EmbeddingsConfig {
    Provider provider = Provider::kHashing;
    std::uint32_t dim = 0;  // 0: the provider's default (hashing 384, openai: learned)
    std::string base_url = "https://api.openai.com";
    std::string model = "text-embedding-3-small";
    std::string api_key_env = "OPENAI_API_KEY";
    std::size_t batch_size = 64;
    std::chrono::milliseconds timeout{30'000};
    int max_retries = 3;
    Limits limits;

    // kInvalidRequest naming the key and its allowed values for a bad value or unknown key.
    static base::Result<EmbeddingsConfig> from_json(const nlohmann::json& object);
};

std::string_view to_string(Provider provider) noexcept;  // "hashing", "openai"

// The configured embedder. Reads the API key from the environment now: kInvalidRequest when
// api_key_env names a variable that is unset or empty.
base::Result<std::shared_ptr<Embedder>> make_embedder(const EmbeddingsConfig& config);

}  // namespace glassbox::embeddings
