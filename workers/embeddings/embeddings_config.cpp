// EmbeddingsConfig from JSON (every value checked) and the embedder it describes.
#include "workers/embeddings/embeddings_config.hpp"

#include <cstdlib>
#include <limits>

#include "workers/embeddings/feature_hashing_embedder.hpp"
#include "workers/embeddings/openai_embedder.hpp"

namespace glassbox::embeddings {

using nlohmann::json;
using schema::Error;
using schema::ErrorType;
using schema::make_error;

namespace {

constexpr std::string_view kKnownKeys =
    "provider, dim, base_url, model, api_key_env, batch_size, timeout_ms, max_retries, max_texts, "
    "max_text_bytes";

Error invalid(std::string message) {
    return make_error(ErrorType::kInvalidRequest, std::move(message));
}

std::optional<std::uint64_t> integer_in(const json& value, std::uint64_t min, std::uint64_t max) {
    if (!value.is_number_integer()) return std::nullopt;
    if (value.is_number_unsigned()) {
        const auto v = value.get<std::uint64_t>();
        return v >= min && v <= max ? std::optional{v} : std::nullopt;
    }
    const auto v = value.get<std::int64_t>();
    if (v < 0 || static_cast<std::uint64_t>(v) < min || static_cast<std::uint64_t>(v) > max)
        return std::nullopt;
    return static_cast<std::uint64_t>(v);
}

}  // namespace

std::string_view to_string(Provider provider) noexcept {
    switch (provider) {
        case Provider::kHashing:
            return "hashing";
        case Provider::kOpenAi:
            return "openai";
    }
    return "hashing";
}

schema::Result<EmbeddingsConfig> EmbeddingsConfig::from_json(const json& object) {
    if (!object.is_object()) return invalid("the embeddings settings must be a JSON object");
    EmbeddingsConfig config;
    const auto range = [&](const std::string& key, std::uint64_t min,
                           std::uint64_t max) -> schema::Result<std::uint64_t> {
        const auto v = integer_in(object.at(key), min, max);
        if (!v) {
            return invalid("embeddings setting \"" + key + "\" must be an integer from " +
                           std::to_string(min) + " to " + std::to_string(max));
        }
        return *v;
    };
    const auto text = [&](const std::string& key) -> schema::Result<std::string> {
        const json& v = object.at(key);
        if (!v.is_string()) return invalid("embeddings setting \"" + key + "\" must be a string");
        return v.get<std::string>();
    };
    for (const auto& [key, value] : object.items()) {
        if (key == "provider") {
            auto name = text(key);
            if (!name) return std::move(name).error();
            if (*name == "hashing")
                config.provider = Provider::kHashing;
            else if (*name == "openai")
                config.provider = Provider::kOpenAi;
            else
                return invalid(
                    "embeddings setting \"provider\" must be \"hashing\" or \"openai\", not \"" +
                    *name + "\"");
        } else if (key == "dim") {
            auto v = range(key, 0, 65'536);
            if (!v) return std::move(v).error();
            config.dim = static_cast<std::uint32_t>(*v);
        } else if (key == "base_url") {
            auto v = text(key);
            if (!v) return std::move(v).error();
            if (!v->starts_with("http://") && !v->starts_with("https://")) {
                return invalid(
                    "embeddings setting \"base_url\" must start with http:// or https://");
            }
            config.base_url = std::move(*v);
        } else if (key == "model") {
            auto v = text(key);
            if (!v) return std::move(v).error();
            if (v->empty()) return invalid("embeddings setting \"model\" must not be empty");
            config.model = std::move(*v);
        } else if (key == "api_key_env") {
            auto v = text(key);
            if (!v) return std::move(v).error();
            config.api_key_env = std::move(*v);
        } else if (key == "batch_size") {
            auto v = range(key, 1, 2'048);
            if (!v) return std::move(v).error();
            config.batch_size = static_cast<std::size_t>(*v);
        } else if (key == "timeout_ms") {
            auto v = range(key, 1, 600'000);
            if (!v) return std::move(v).error();
            config.timeout = std::chrono::milliseconds{static_cast<std::int64_t>(*v)};
        } else if (key == "max_retries") {
            auto v = range(key, 0, 10);
            if (!v) return std::move(v).error();
            config.max_retries = static_cast<int>(*v);
        } else if (key == "max_texts") {
            auto v = range(key, 1, 100'000);
            if (!v) return std::move(v).error();
            config.limits.max_texts = static_cast<std::size_t>(*v);
        } else if (key == "max_text_bytes") {
            auto v = range(key, 1, 16'777'216);
            if (!v) return std::move(v).error();
            config.limits.max_text_bytes = static_cast<std::size_t>(*v);
        } else {
            return invalid("unknown embeddings setting \"" + key +
                           "\" (known: " + std::string(kKnownKeys) + ")");
        }
    }
    if (config.provider == Provider::kHashing && object.contains("dim") && config.dim == 0) {
        return invalid(
            "embeddings setting \"dim\" must be from 1 to 65536 for the hashing provider");
    }
    return config;
}

schema::Result<std::shared_ptr<Embedder>> make_embedder(const EmbeddingsConfig& config) {
    if (config.provider == Provider::kHashing) {
        const std::uint32_t dim = config.dim != 0 ? config.dim : kDefaultHashingDim;
        return std::shared_ptr<Embedder>(std::make_shared<FeatureHashingEmbedder>(dim));
    }
    if (config.batch_size == 0)
        return invalid("embeddings setting \"batch_size\" must be at least 1");
    OpenAiEmbedderOptions options;
    options.base_url = config.base_url;
    options.model = config.model;
    options.dim = config.dim;
    options.batch_size = config.batch_size;
    options.http.timeout = config.timeout;
    options.http.max_retries = config.max_retries;
    if (!config.api_key_env.empty()) {
        // Read once at start-up: getenv is not safe against a concurrent setenv later.
        const char* key = std::getenv(config.api_key_env.c_str());
        if (key == nullptr || *key == '\0') {
            return invalid(
                "the environment variable " + config.api_key_env +
                " (embeddings setting \"api_key_env\") is not set; set it to the API key, or set "
                "\"api_key_env\" to \"\" for a server that needs none");
        }
        options.api_key = key;
    }
    return std::shared_ptr<Embedder>(std::make_shared<OpenAiEmbedder>(std::move(options)));
}

}  // namespace glassbox::embeddings
