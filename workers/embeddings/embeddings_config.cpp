// EmbeddingsConfig from JSON (every value checked) and the embedder it describes.
#include "workers/embeddings/embeddings_config.hpp"

#include "schema/services.hpp"
#include "workers/embeddings/feature_hashing_embedder.hpp"
#include "workers/embeddings/openai_embedder.hpp"
#include "workers/runtime/service_config.hpp"

namespace glassbox::embeddings {

using nlohmann::json;
using runtime::invalid_setting;

namespace {

constexpr std::string_view kService = schema::services::kEmbeddings;
constexpr std::string_view kKnownKeys =
    "provider, dim, base_url, model, api_key_env, batch_size, timeout_ms, max_retries, max_texts, "
    "max_text_bytes";

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

base::Result<EmbeddingsConfig> EmbeddingsConfig::from_json(const json& object) {
    auto settings = runtime::ServiceSettings::of(object, kService);
    if (!settings) return std::move(settings).error();
    EmbeddingsConfig config;
    for (const auto& [key, value] : object.items()) {
        if (key == "provider") {
            auto name = settings->text(key);
            if (!name) return std::move(name).error();
            if (*name == "hashing")
                config.provider = Provider::kHashing;
            else if (*name == "openai")
                config.provider = Provider::kOpenAi;
            else
                return invalid_setting(
                    "embeddings setting \"provider\" must be \"hashing\" or \"openai\", not \"" +
                    *name + "\"");
        } else if (key == "dim") {
            auto v = settings->integer(key, 0, 65'536);
            if (!v) return std::move(v).error();
            config.dim = static_cast<std::uint32_t>(*v);
        } else if (key == "base_url") {
            auto v = settings->url(key);
            if (!v) return std::move(v).error();
            config.base_url = std::move(*v);
        } else if (key == "model") {
            auto v = settings->text(key);
            if (!v) return std::move(v).error();
            if (v->empty())
                return invalid_setting("embeddings setting \"model\" must not be empty");
            config.model = std::move(*v);
        } else if (key == "api_key_env") {
            auto v = settings->text(key);
            if (!v) return std::move(v).error();
            config.api_key_env = std::move(*v);
        } else if (key == "batch_size") {
            auto v = settings->integer(key, 1, 2'048);
            if (!v) return std::move(v).error();
            config.batch_size = static_cast<std::size_t>(*v);
        } else if (key == "timeout_ms") {
            auto v = settings->integer(key, 1, 600'000);
            if (!v) return std::move(v).error();
            config.timeout = std::chrono::milliseconds{static_cast<std::int64_t>(*v)};
        } else if (key == "max_retries") {
            auto v = settings->integer(key, 0, 10);
            if (!v) return std::move(v).error();
            config.max_retries = static_cast<int>(*v);
        } else if (key == "max_texts") {
            auto v = settings->integer(key, 1, 100'000);
            if (!v) return std::move(v).error();
            config.limits.max_texts = static_cast<std::size_t>(*v);
        } else if (key == "max_text_bytes") {
            auto v = settings->integer(key, 1, 16'777'216);
            if (!v) return std::move(v).error();
            config.limits.max_text_bytes = static_cast<std::size_t>(*v);
        } else {
            return settings->unknown(key, kKnownKeys);
        }
    }
    if (config.provider == Provider::kHashing && object.contains("dim") && config.dim == 0) {
        return invalid_setting(
            "embeddings setting \"dim\" must be from 1 to 65536 for the hashing provider");
    }
    return config;
}

base::Result<std::shared_ptr<Embedder>> make_embedder(const EmbeddingsConfig& config) {
    if (config.provider == Provider::kHashing) {
        const std::uint32_t dim = config.dim != 0 ? config.dim : kDefaultHashingDim;
        return std::shared_ptr<Embedder>(std::make_shared<FeatureHashingEmbedder>(dim));
    }
    if (config.batch_size == 0)
        return invalid_setting("embeddings setting \"batch_size\" must be at least 1");
    OpenAiEmbedderOptions options;
    options.base_url = config.base_url;
    options.model = config.model;
    options.dim = config.dim;
    options.batch_size = config.batch_size;
    options.http.timeout = config.timeout;
    options.http.max_retries = config.max_retries;
    auto api_key = runtime::api_key_from_env(kService, config.api_key_env);
    if (!api_key) return std::move(api_key).error();
    options.api_key = std::move(*api_key);
    return std::shared_ptr<Embedder>(std::make_shared<OpenAiEmbedder>(std::move(options)));
}

}  // namespace glassbox::embeddings
